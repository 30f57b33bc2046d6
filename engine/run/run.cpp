// One run's training step, following DESIGN.md "Data flow of one step" point by point.
#include "engine/run/run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/text.hpp"
#include "engine/core/rng.hpp"
#include "engine/model/gpt.hpp"

namespace mpx {
namespace {
// The first site, in the order the step writes them, whose stored values hold an inf or NaN; -1
// when there is none.
std::int16_t first_nonfinite(const StepStats& st, int layers) {
    int where = -1;
    for_each_site_in_step_order(layers, [&](int layer, TensorKind kind) {
        const int i = site_index(layer, kind);
        if (where < 0 && st.site[i].nonfinite != 0) where = i;
    });
    return static_cast<std::int16_t>(where);
}

// StepRecord::headroom_log2 over the backward sites of the first `layers` layers. A scaled FP8/FP4
// cast of dy (grad_operand of a layer whose GEMMs scale) is left out: its scale, not the loss
// scale, puts it in range.
std::optional<double> backward_headroom(const StepStats& st, const Model& model, int layers, const core::Counts& fwd) {
    if (fwd.nonfinite) return std::nullopt;
    using K = TensorKind;
    std::optional<double> best;
    const auto& prec = model.precisions();
    for (int l = 0; l < layers; ++l) {
        const LayerPrecision& p = prec[static_cast<std::size_t>(l)];
        for (K kind : {K::grad_output, K::grad_activation, K::grad_operand, K::grad_weight, K::grad_input}) {
            if (kind == K::grad_operand && p.fp8) continue;
            const core::Counts& c = st.site[site_index(l, kind)];
            const auto a = static_cast<std::uint32_t>(std::max(c.stored_max, c.overflow_max));
            if (a == 0) continue;
            Format f = p.activation;  // grad_output, grad_activation: this layer's; grad_input: the one below's
            if (kind == K::grad_input) f = prec[static_cast<std::size_t>(l > 0 ? l - 1 : 0)].activation;
            if (kind == K::grad_operand) f = p.compute;
            if (kind == K::grad_weight) f = model.stored_format(l, HistTensor::grad_weight);
            const double h = std::log2(static_cast<double>(format_info(f).max_finite)) -
                             std::log2(static_cast<double>(core::float_of(a)));
            if (!best || h < *best) best = h;
        }
    }
    return best;
}
}  // namespace

namespace {
// FP32 footprint of this model and batch, measured by building it on a scratch CPU backend.
std::int64_t fp32_footprint(const SessionConfig& c, const InitialWeights& init) {
    auto be = make_cpu_backend();
    RunSpec fp32;
    const auto m = make_model(*be, c.model, layer_precisions(fp32, c.model.layers(), {}), c.train.batch, init,
                              c.train.optimizer);
    return be->memory().total();
}
}  // namespace

bool adaptive_low(const RunInfo& info, const SessionConfig& cfg, const InitialWeights& init) {
    if (info.spec.mode != Mode::adaptive) return true;
    return static_cast<double>(fp32_footprint(cfg, init)) >
           cfg.adaptive_threshold * static_cast<double>(cfg.memory_budget);
}

std::vector<LayerPrecision> run_precisions(const RunInfo& info, const SessionConfig& cfg, const InitialWeights& init) {
    PolicyOptions opt{cfg.selective_layers, cfg.model.keep_output_fp32};
    if (cfg.model.kind == ModelKind::gpt)
        for (int l = 0; l < cfg.model.layers(); ++l) opt.names.push_back(layer_name(cfg.model, l));
    const bool gpt = cfg.model.kind == ModelKind::gpt;
    if (is_fp4(info.spec.mode) && !gpt) {
        opt.fp4_bf16_first = info.fp4.bf16_first;
        opt.fp4_bf16_last = info.fp4.bf16_last;
    }
    auto prec = layer_precisions(info.spec, cfg.model.layers(), opt, adaptive_low(info, cfg, init), info.write_back,
                                 info.accumulation);
    if (gpt && scales_gemms(info.spec.mode))  // the recipe on the GPT's Linear layers only
        gpt_recipe_layers(cfg.model, is_fp4(info.spec.mode) ? info.fp4.bf16_first : 0,
                          is_fp4(info.spec.mode) ? info.fp4.bf16_last : 0, prec);
    return prec;
}

Run::Run(int index, RunInfo info, const SessionConfig& cfg, const InitialWeights& init,
         std::unique_ptr<Backend> backend)
    : m_index(index),
      m_info(std::move(info)),
      m_cfg(&cfg),
      m_train(cfg.train),
      m_backend(std::move(backend)),
      m_scaler(m_info.scaler) {
    m_adaptive_low = mpx::adaptive_low(m_info, cfg, init);
    if (cfg.model.kind == ModelKind::gpt && m_backend->is_gpu())
        throw ConfigError("device", "run '" + m_info.label + "': the GPT trains on the CPU backend only until the CUDA "
                                    "backend has been measured on a GPU; train it on the CPU backend (device = cpu)");
    // The run's own model: the session's, with its label's GPT switches (+attn-before, +qk-norm, ...)
    // as resolve_run applied them to the run's copy.
    ModelConfig model = cfg.model;
    if (model.kind == ModelKind::gpt && m_info.model.kind == ModelKind::gpt) {
        model.attention = m_info.model.attention;
        model.norm_stats = m_info.model.norm_stats;
        model.autocast = m_info.model.autocast;
    }
    InitialWeights with_qk_norm;
    const bool adds_qk_norm = model.kind == ModelKind::gpt && model.attention.qk_norm && !cfg.model.attention.qk_norm;
    if (adds_qk_norm) with_qk_norm = gpt_weights_with_qk_norm(model.gpt, init);
    const InitialWeights& start = adds_qk_norm ? with_qk_norm : init;
    m_model = make_model(*m_backend, model, run_precisions(m_info, cfg, start), cfg.train.batch, start,
                         cfg.train.optimizer);
    if (is_fp4(m_info.spec.mode) && m_backend->is_gpu())
        throw ConfigError("device", "run '" + m_info.label + "': FP4 runs train on the CPU backend only for now (the "
                                    "CUDA backend has no FP4 casts yet); set the device to cpu");
    if (is_fp4(m_info.spec.mode)) {
        const Fp4Kind kind = fp4_kind(m_info.spec.mode);
        // What an FP4 layer keeps packed in a real implementation (two E2M1 codes a byte, an E4M3 or
        // E8M0 scale per block, NVFP4's FP32 tensor scale): the weight's row- and column-wise
        // copies, and its input's column-wise copy for the weight gradient.
        const auto packed = [&](std::int64_t elements) {
            const int block = kind == Fp4Kind::nvfp4 ? core::k_nvfp4_block : core::k_mxfp4_block;
            return (elements + 1) / 2 + (elements + block - 1) / block + (kind == Fp4Kind::nvfp4 ? 4 : 0);
        };
        std::int64_t weights = 0, inputs = 0;
        for (int l = 0; l < cfg.model.layers(); ++l) {
            if (!m_model->precisions()[static_cast<std::size_t>(l)].fp8) continue;
            Fp8Gemm& g = m_model->fp8_gemms()[static_cast<std::size_t>(l)];
            g.fp4.emplace();
            g.fp4->kind = kind;
            g.fp4->recipe = m_info.fp4;
            g.fp4->layer = l;
            const LinearShape shape = linear_shape(cfg.model, l);
            const std::int64_t in = shape.in, out = shape.out;
            weights += 2 * packed(in * out);
            inputs += packed(std::int64_t{cfg.train.batch} * rows_per_example(cfg.model) * in);
        }
        m_backend->count_held(MemCategory::weights, weights);
        m_backend->count_held(MemCategory::activations, inputs);
    }
    if (scales_gemms(m_info.spec.mode)) {
        // Delayed scaling's amax histories live in the backend, one per layer and tensor (every FP8
        // run keeps them, as its saved state does; only delayed-scaled FP8 layers update theirs).
        const Fp8Recipe recipe = fp8_recipe_of(m_info.spec, cfg.fp8);
        const int L = cfg.model.layers();
        const auto& prec = m_model->precisions();
        std::vector<core::AmaxHistoryState> states;
        for (int l = 0; l < L; ++l) {
            Fp8Gemm& g = m_model->fp8_gemms()[static_cast<std::size_t>(l)];
            g.recipe = recipe;
            g.e4m3_overflow = e4m3_overflow_mode(cfg.fp8.e4m3_overflow);
            for (int t = 0; t < k_fp8_tensors; ++t) {
                AmaxHistory h(cfg.fp8.amax_history_len, cfg.fp8.amax_compute_algo, cfg.fp8.margin,
                              format_info(g.format(static_cast<Fp8Tensor>(t))).max_finite);
                core::AmaxHistoryState s = h.state();
                s.offset = static_cast<long long>(states.size()) * cfg.fp8.amax_history_len;
                s.active = recipe == Fp8Recipe::delayed && prec[static_cast<std::size_t>(l)].fp8;
                states.push_back(s);
            }
        }
        m_fp8_tensors = static_cast<int>(states.size());
        m_backend->set_amax_histories(states, std::vector<float>(states.size() * static_cast<std::size_t>(cfg.fp8.amax_history_len), 0.0f));
    }
    m_backend->set_scaler(m_scaler.rule(), m_scaler.state());
    m_backend->set_applied_steps(0);
    m_backend->set_schedule_steps(0);
    cover_adam_steps(std::clamp(cfg.steps, 1LL, 4096LL));  // grown by step() as needed
    cover_schedule(std::clamp(cfg.steps, 1LL, 4096LL));
    setup_penalty();
}

// The learning rate after k schedule steps for k = 0..n − 1 (float of lr_at, the value the optimizer
// was given from the host), for the backend to index by its own schedule count. Computed again
// when the training settings or the session's length (warmup_cosine's default span) changed.
void Run::cover_schedule(long long n) {
    const bool same = m_lrs_for && m_lrs_for->first == m_cfg->steps && m_lrs_for->second == m_train;
    if (same && n <= static_cast<long long>(m_lrs.size())) return;
    if (!same) m_lrs.clear();
    const long long size = std::max(n, 2 * static_cast<long long>(m_lrs.size()));
    for (long long k = static_cast<long long>(m_lrs.size()); k < size; ++k)
        m_lrs.push_back(static_cast<float>(lr_at(m_train, k, m_cfg->steps)));
    m_lrs_for.emplace(m_cfg->steps, m_train);
    m_backend->set_lr_schedule(m_lrs);
}

// Adam's bias corrections for t = 1..n, computed once here with the expressions optimizer_consts
// uses (bit-equal), for the backend to index by its own applied-step count. The table grows (to at
// least twice its size) when a session is extended past it; a step's t is at most its index + 1.
void Run::cover_adam_steps(long long t) {
    const double b1 = m_train.beta1, b2 = m_train.beta2;
    const bool same_betas = b1 == m_bias_betas[0] && b2 == m_bias_betas[1];
    if (same_betas && t <= static_cast<long long>(m_bias.size())) return;
    if (!same_betas) m_bias.clear();
    const long long n = std::max(t, 2 * static_cast<long long>(m_bias.size()));
    for (long long k = static_cast<long long>(m_bias.size()) + 1; k <= n; ++k) m_bias.push_back(bias_correction(b1, b2, k));
    m_bias_betas[0] = b1;
    m_bias_betas[1] = b2;
    m_backend->set_bias_corrections(m_bias);
}

void Run::set_scaler(const ScalerConfig& c) {
    // Between steps the mirror holds what the last read_stats returned, the backend's own state:
    // the change is computed from it here and handed back whole.
    m_scaler.reconfigure(c);
    m_backend->set_scaler(m_scaler.rule(), m_scaler.state());
}

// The step's FP8 record: its fractions into the StepRecord, each tensor's amax and scale into the
// log. (The backend's delayed-scaling histories took the amaxes: update_amax_histories.)
void Run::fp8_after_step(long long step_index, const StepStats& st, StepRecord& rec) {
    if (!m_fp8_tensors) return;
    const auto& prec = m_model->precisions();
    const auto& gemms = m_model->fp8_gemms();
    unsigned long long sat = 0, under = 0, nonzero = 0, count = 0;
    if (m_fp8_scales.size() > k_max_fp8_scale_rows)
        m_fp8_scales.erase(m_fp8_scales.begin(), m_fp8_scales.begin() + static_cast<std::ptrdiff_t>(m_fp8_scales.size() / 2));
    for (std::size_t l = 0; l < gemms.size(); ++l) {
        if (!prec[l].fp8) continue;
        for (int t = 0; t < k_fp8_tensors; ++t) {
            const auto tensor = static_cast<Fp8Tensor>(t);
            const core::Fp8Record& r = st.fp8[fp8_index(static_cast<int>(l), tensor)];
            sat += r.saturated;
            under += r.underflow;
            nonzero += r.nonzero;
            count += r.count;
            Fp8ScaleRow row;
            row.step = step_index;
            row.layer = static_cast<int>(l);
            row.tensor = tensor;
            row.block = gemms[l].recipe == Fp8Recipe::block || gemms[l].fp4;
            row.format = gemms[l].fp4 ? Format::e2m1 : row.block ? Format::e4m3 : gemms[l].format(tensor);
            if (gemms[l].fp4) row.fp4 = st.fp4[fp8_index(static_cast<int>(l), tensor)];
            row.amax = r.amax;
            row.scale = r.scale;
            row.saturated = r.saturated;
            row.underflow = r.underflow;
            row.count = r.count;
            row.nonzero = r.nonzero;
            if (r.count) m_fp8_scales.push_back(row);  // dy of a layer without backward: none
        }
    }
    rec.fp8_saturated_frac = count ? static_cast<double>(sat) / static_cast<double>(count) : 0.0;
    rec.fp8_underflow_frac = nonzero ? static_cast<double>(under) / static_cast<double>(nonzero) : 0.0;
}

StepRecord Run::step(long long step_index, const std::vector<Batch>& micro, LossKind loss) {
    queue_step(step_index, micro, loss);
    return finish_step();
}

void Run::queue_step(long long step_index, const std::vector<Batch>& micro, LossKind loss) {
    if (!can_queue_next())
        throw std::logic_error("Run::queue_step: the previous step was not finished, and this run cannot "
                               "queue its next step before it is");
    const auto t0 = std::chrono::steady_clock::now();
    Queued q;  // kept only once the whole step is queued: a throw leaves nothing queued
    StepRecord& rec = q.rec;
    rec.run = m_index;
    rec.step = step_index;
    rec.lr = lr_at(m_train, m_schedule_steps, m_cfg->steps);
    // A stopped run records the scale it stopped at; a step's own scale comes from the record.
    rec.loss_scale = m_scaler.scale();
    rec.new_scale = rec.loss_scale;
    if (failed()) {
        rec.loss = std::nan("");
        rec.skipped = true;
        rec.mem = m_backend->memory();
        q.stopped = true;
        m_queued.push_back(std::move(q));
        return;
    }
    Backend& be = *m_backend;
    Model& model = *m_model;
    // The tables the optimizer reads at the backend's counts reach this step before the step
    // starts (Adam's bias corrections; the learning rates), so a table that grows is never
    // uploaded inside the step. A count is at most the steps begun on the backend: the step's
    // index, or more where a step some other run failed to queue was taken by this one.
    const long long begun = std::max(step_index, m_begun) + 1;
    cover_adam_steps(begun);
    cover_schedule(begun);
    be.begin_step();
    q.begun = ++m_begun;
    // An op that throws leaves the step part-queued: the backend drops what it kept of it.
    struct AbortUnlessQueued {
        Backend& be;
        bool queued = false;
        ~AbortUnlessQueued() {
            if (!queued) be.abort_step();
        }
    } guard{be};
    const bool collect = m_histograms.wants(step_index, m_cfg->instruments.every);
    q.collect = collect;
    q.accum = static_cast<int>(micro.size());
    const int model_layers = m_cfg->model.layers();
    be.collect_histograms(collect ? model_layers : 0);
    const int accum = static_cast<int>(micro.size());
    // The factor the loss gradient carries: the backend's own loss scale × loss weight /
    // micro-batches (core::loss_factor), taken where the loss op runs: the host never reads the scale.
    const ScaleBy loss_factor = ScaleBy::loss(m_train.loss_weight, accum);
    for (int k = 0; k < accum; ++k) {
        const Batch& b = micro[static_cast<std::size_t>(k)];
        model.set_input(b.x);
        const std::uint64_t drop_seed = dropout_step_seed(m_cfg->seed, step_index, k);
        if (m_train.gradient_penalty > 0.0) {
            penalty_micro_batch(k, accum, b, loss, drop_seed);
            continue;
        }
        loss_op(b, loss, model.forward(drop_seed, true), loss_factor);
        model.backward(model.dlogits(), drop_seed, k == 0 ? Accumulate::overwrite : Accumulate::add);
    }

    // Unscale by the backend's scale: reciprocal in double, multiply in FP32 (PyTorch's unscale_),
    // check every gradient; then clipping, the optimizer and the scaler's update, which read the
    // backend's own found-inf count, so the step waits for the device only once, at its end.
    // Each op runs over all parameters at once (one launch each on the GPU).
    m_param_refs.clear();
    for (Param& p : model.params())
        m_param_refs.push_back({p.layer, &p.grad, &p.unscaled(), p.has_master() ? &p.master : nullptr,
                                &p.working, &p.state1, p.state2.empty() ? nullptr : &p.state2, p.index,
                                p.compensation.empty() ? nullptr : &p.compensation});
    be.unscale_all(m_param_refs, ScaleBy::unscale());
    if (m_train.clip_norm > 0.0) be.clip_all(m_param_refs, m_train.clip_norm);
    const OnInf on_inf = m_scaler.skips_on_inf() ? OnInf::skip : OnInf::apply;
    OptimizerStep os;
    os.kind = m_train.optimizer;
    os.lr = static_cast<float>(rec.lr);
    os.momentum = m_train.momentum;
    os.beta1 = m_train.beta1;
    os.beta2 = m_train.beta2;
    os.eps = m_train.eps;
    os.weight_decay = m_train.weight_decay;
    // Adam's t is the backend's own count of applied steps + 1 (this step's, if it is applied),
    // its bias corrections from the table: a skipped step leaves the count where it was.
    // The learning rate is the backend's schedule table at its own schedule count, which a skipped
    // step advances only with advance_on_skip.
    os.count = StepCount::backend;
    os.write_back = m_info.write_back;
    os.round_seed = m_cfg->seed;
    be.optimizer_all(os, m_param_refs, on_inf);
    be.count_applied_step(on_inf);
    be.count_schedule_step(on_inf, m_train.advance_on_skip);
    // Delayed scaling: this step's amaxes into the histories, skipped steps included (TE updates
    // them in every forward pass, whether or not the optimizer steps); the next step's scales.
    if (m_fp8_tensors) be.update_amax_histories();

    be.scaler_update();
    be.end_step();
    guard.queued = true;
    q.on_inf = on_inf;
    q.queue_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    m_queued.push_back(std::move(q));
}

void Run::loss_op(const Batch& b, LossKind loss, const Tensor& logits, ScaleBy factor) {
    Backend& be = *m_backend;
    const int last = m_cfg->model.layers() - 1;  // the loss's gradient arrives at the output layer
    if (loss == LossKind::cross_entropy) {
        be.set_site(last, TensorKind::grad_output);
        be.softmax_cross_entropy_z(logits, b.labels, static_cast<float>(m_train.z_loss), factor, m_model->dlogits());
    } else {
        be.set_uncounted();
        be.upload({b.targets.data(), static_cast<std::size_t>(b.targets.size())}, m_model->target());
        be.set_site(last, TensorKind::grad_output);
        be.mse(logits, m_model->target(), factor, m_model->dlogits());
    }
}

void Run::require_idle(const char* what) const {
    if (!m_queued.empty())
        throw std::logic_error(std::string("Run::") + what + ": a step is queued; finish it first");
}

bool Run::can_queue_next() const {
    if (m_queued.empty()) return true;
    if (m_queued.size() > 1 || m_queued.back().collect) return false;
    if (m_queued.back().stopped) return true;  // a stopped run's steps never reach the backend
    return m_backend->holds_two_steps() && m_scaler.config().at_min != AtMin::error;
}

void Run::abandon_step() noexcept {
    while (!m_queued.empty()) {
        try {
            finish_step();  // the mirror follows what the backend did
        } catch (...) {
            m_queued.clear();
        }
    }
}

StepRecord Run::finish_step() {
    if (m_queued.empty()) throw std::logic_error("Run::finish_step: no step was queued");
    const Queued q = std::move(m_queued.front());
    m_queued.pop_front();
    if (q.stopped) return q.rec;
    const auto t0 = std::chrono::steady_clock::now();
    StepRecord rec = q.rec;
    const long long step_index = rec.step;
    const bool collect = q.collect;
    const int accum = q.accum;
    const OnInf on_inf = q.on_inf;
    const int model_layers = m_cfg->model.layers();
    Backend& be = *m_backend;
    const Model& model = *m_model;
    // Its record is the backend's current one, or the previous one where a later step has begun
    // since (queued behind it, or failed to queue).
    if (m_begun - q.begun > 1) throw std::logic_error("Run::finish_step: the step's record was not kept");
    if (q.collect && m_begun != q.begun) throw std::logic_error("Run::finish_step: the step's histograms were not kept");
    const StepStats& st = m_begun == q.begun ? be.read_stats() : be.read_previous_stats();
    const double S = st.scaler.before.scale;  // the scale this step's loss was multiplied by
    rec.loss_scale = S;
    const core::Counts fwd = st.of(Pass::forward, model_layers);
    const core::Counts bwd = st.of(Pass::backward, model_layers);
    const core::Counts upd = st.of(Pass::update, model_layers);
    rec.first_nonfinite = first_nonfinite(st, model_layers);
    if (rec.first_nonfinite >= 0)
        if (const auto bits = st.site[rec.first_nonfinite].overflow_max)
            rec.first_nonfinite_magnitude = core::float_of(static_cast<std::uint32_t>(bits));
    fp8_after_step(step_index, st, rec);
    if (const StepHistograms* h = collect ? be.read_histograms() : nullptr)
        m_histograms.add(HistogramSnapshot::from(step_index, S, st, *h, model_layers, m_cfg->model.layernorm,
                                                 [&](int l, HistTensor t) { return model.stored_format(l, t); }),
                         m_cfg->instruments.every);
    rec.loss = st.loss_sum / accum * m_train.loss_weight;
    if (m_train.gradient_penalty > 0.0) rec.penalty = st.penalty_sum;
    rec.found_inf = st.found_inf();
    rec.grad_norm = rec.found_inf ? std::numeric_limits<double>::infinity() : std::sqrt(st.sum_squares);
    rec.skipped = rec.found_inf && on_inf == OnInf::skip;
    m_applied_steps = st.applied_steps;
    if (!rec.skipped) {
        rec.lost_update_frac =
            upd.changed ? static_cast<double>(upd.lost) / static_cast<double>(upd.changed) : 0.0;
        rec.small_update_frac =
            upd.changed ? static_cast<double>(upd.small) / static_cast<double>(upd.changed) : 0.0;
        rec.small_kept_frac = upd.small ? static_cast<double>(upd.kept) / static_cast<double>(upd.small) : 0.0;
        m_compensation_max = static_cast<std::uint32_t>(upd.compensation_max);
    }
    // The buffers as the step left them (a skipped step: as the last applied one did).
    if (m_info.write_back == WriteBack::kahan) rec.compensation_max = core::float_of(m_compensation_max);
    // The learning rate this step used: the schedule count before the step's own advance.
    m_schedule_steps = st.schedule_steps;
    rec.lr = lr_at(m_train, m_schedule_steps - (!rec.skipped || m_train.advance_on_skip ? 1 : 0), m_cfg->steps);

    // The backend updated its scaler with the one rule; the host only mirrors the result. An update
    // refused at the minimum (at_min = error) left the state as it was and stops the run.
    if (st.scaler.at_minimum) {
        m_failure = ScalerAtMinimumError(st.scaler.before.scale).what();
    } else {
        rec.scale_event = static_cast<std::uint8_t>(st.scaler.event);
        rec.new_scale = st.scaler.after.scale;
    }
    m_scaler.mirror(st.scaler.after);
    // Of the gradient values that were non-zero before a rounding, the fraction it flushed to zero.
    rec.underflow_frac = bwd.nonzero ? static_cast<double>(bwd.underflow) /
                                           static_cast<double>(bwd.nonzero)
                                     : 0.0;
    rec.overflow_count = static_cast<long long>(fwd.overflow + bwd.overflow + upd.overflow);
    rec.headroom_log2 = backward_headroom(st, model, model_layers, fwd);
    rec.mem = be.memory();
    rec.step_time_us =
        q.queue_us + std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return rec;
}

}  // namespace mpx
