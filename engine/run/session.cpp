// Lockstep session: one sampler, one gathered batch per micro-step, every run stepped in order; on
// the CPU's threads step_ahead overlaps the runs' steps (step_pipelined), records still in step order.
#include "engine/run/session.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <set>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/base/memory_budget.hpp"
#include "engine/base/parallel.hpp"

namespace mpx {


// Refused before the examples are generated (which takes long for a large set), not by a
// bad_alloc half a minute later: both splits, features and targets, as FP32.
void check_dataset_fits(const DatasetConfig& d) {
    const DatasetShape shape = dataset_shape(d);
    const std::uint64_t examples = static_cast<std::uint64_t>(std::max(0, d.n_train)) +
                                   static_cast<std::uint64_t>(std::max(0, d.n_test));
    const std::uint64_t need = examples * static_cast<std::uint64_t>(shape.features + shape.outputs + 1) * sizeof(float);
    const std::uint64_t have = usable_memory();
    if (need > have / 2)
        throw ConfigError("data.n_train", "the data set needs " + std::to_string(need >> 20) + " MiB, more than half of the " +
                                              std::to_string(have >> 20) +
                                              " MiB this process may use; lower data.n_train or data.n_test");
}

Session::Session(SessionConfig cfg, BackendFactory factory)
    : m_cfg(std::move(cfg)), m_factory(std::move(factory)) {
    validate(m_cfg);
    validate_sample(m_cfg);
    if (!m_factory) m_factory = [] { return make_cpu_backend(); };
    if (m_cfg.data.kind == DatasetKind::text) {
        read_text();
    } else {
        check_dataset_fits(m_cfg.data);
        try {
            m_data = make_dataset(m_cfg.data);
        } catch (const std::bad_alloc&) {
            throw ConfigError("data.n_train", "not enough memory for the data set (" + std::to_string(m_cfg.data.n_train) +
                                                  " training and " + std::to_string(m_cfg.data.n_test) +
                                                  " held-out examples); lower data.n_train or data.n_test");
        }
    }
    gather_eval_split();
    build();
}

std::shared_ptr<const TextCorpus> read_session_text(SessionConfig& cfg) {
    const int T = cfg.model.gpt.block_size;
    auto text = std::make_shared<TextCorpus>(cfg.data.text_file.empty() ? load_fortunes() : load_text_file(cfg.data.text_file));
    const std::size_t held_out = text->characters() - text->train_size;
    if (text->train_size < static_cast<std::size_t>(T) + 1 + static_cast<std::size_t>(cfg.train.batch) ||
        held_out < static_cast<std::size_t>(T) + 1)
        throw ConfigError("model.block_size", std::to_string(T) + " is larger than the text allows: " + text->source +
                                                  " holds " + std::to_string(text->characters()) + " characters, " +
                                                  std::to_string(held_out) + " of them held out; lower model.block_size");
    cfg.model.gpt.vocab = static_cast<int>(text->vocab.size());
    return text;
}

std::vector<std::size_t> eval_window_starts(const TextCorpus& text, int block_size, int batch, int n_test) {
    const std::size_t T = static_cast<std::size_t>(block_size), B = static_cast<std::size_t>(batch);
    const std::size_t first = text.train_size, span = text.characters() - first - T - 1;
    const std::size_t fit = span / T + 1;
    const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, n_test)), fit) / B * B;
    std::vector<std::size_t> starts;
    for (std::size_t w = 0; w < count; ++w) starts.push_back(first + (count > 1 ? w * span / (count - 1) : 0));
    return starts;
}

void Session::read_text() {
    const int T = m_cfg.model.gpt.block_size;
    m_data = Dataset{};
    m_data.config = m_cfg.data;
    m_data.text = read_session_text(m_cfg);
    m_data.features = T;
    m_data.outputs = m_cfg.model.gpt.vocab;
    m_data.loss = LossKind::cross_entropy;
}

void Session::gather_eval_split() {
    if (m_data.text) {
        const int T = m_cfg.model.gpt.block_size, batch = m_cfg.train.batch;
        const std::vector<std::size_t> all = eval_window_starts(*m_data.text, T, batch, m_cfg.data.n_test);
        m_eval.clear();
        for (std::size_t k = 0; k < all.size(); k += static_cast<std::size_t>(batch)) {
            EvalChunk c;
            c.rows = batch;
            const std::vector<std::size_t> starts(all.begin() + static_cast<std::ptrdiff_t>(k),
                                                  all.begin() + static_cast<std::ptrdiff_t>(k) + batch);
            gather_windows(*m_data.text, starts, T, c.data.x, c.data.labels);
            m_eval.push_back(std::move(c));
        }
        return;
    }
    const int n = static_cast<int>(m_data.x_test.rows()), batch = m_cfg.train.batch;
    const bool labels = m_data.loss == LossKind::cross_entropy;
    m_eval.clear();
    for (int first = 0; first < n; first += batch) {
        EvalChunk c;
        c.rows = std::min(batch, n - first);
        c.data.x = RowMatrix::Zero(batch, m_data.x_test.cols());
        c.data.x.topRows(c.rows) = m_data.x_test.middleRows(first, c.rows);
        if (labels) c.data.labels.assign(m_data.y_test.begin() + first, m_data.y_test.begin() + first + c.rows);
        else c.data.targets = m_data.t_test.middleRows(first, c.rows);
        m_eval.push_back(std::move(c));
    }
}

void Session::build() {
    try {
        build_runs();
    } catch (const std::bad_alloc&) {
        m_runs.clear();
        throw ConfigError("model.sizes", "not enough memory for " + std::to_string(m_cfg.runs.size()) +
                                             " runs of this model at batch " + std::to_string(m_cfg.train.batch) +
                                             "; lower model.sizes, train.batch or the number of runs");
    }
}

void Session::build_runs() {
    m_init = init_weights(m_cfg.model, m_cfg.seed);
    m_sampler = std::make_unique<BatchSampler>(sampler_examples(m_data, m_cfg.model.gpt.block_size),
                                               static_cast<std::size_t>(m_cfg.train.batch),
                                               m_cfg.seed);
    m_samplers.clear();
    m_samples.clear();
    m_attention.reset();
    if (m_data.text)  // first: a prompt the text cannot spell is refused before the runs are built
        for (std::size_t i = 0; i < m_cfg.runs.size(); ++i)
            m_samplers.push_back(std::make_unique<TextSampler>(*m_data.text, m_cfg.sample, m_cfg.model.gpt.block_size));
    m_runs.clear();
    for (std::size_t i = 0; i < m_cfg.runs.size(); ++i)
        m_runs.push_back(std::make_unique<Run>(
            static_cast<int>(i), resolve_run(m_cfg.runs[i], m_cfg), m_cfg,
            m_init, m_factory()));
    m_mismatch.reset();
    m_mismatches.clear();
    m_mismatch_measured = false;
    if (m_data.text && m_cfg.mismatch.enabled()) {
        m_mismatch = std::make_unique<LogprobMismatch>(m_cfg, m_init, m_factory);
        for (std::size_t i = 0; i < m_runs.size(); ++i)
            if (m_cfg.runs[i] == m_cfg.mismatch.run || m_runs[i]->info().label == m_cfg.mismatch.run) m_mismatch_run = i;
        if (m_cfg.mismatch.run.empty()) m_mismatch_run = 0;
    }
    m_micro.assign(static_cast<std::size_t>(m_cfg.train.accumulation), Batch{});
    m_micro_odd.assign(m_micro.size(), Batch{});
    for (auto& slot : m_ahead) slot.assign(m_runs.size(), StepRecord{});
    m_pipelined = false;
    m_order.resize(m_runs.size());
    for (std::size_t i = 0; i < m_order.size(); ++i) m_order[i] = i;
    m_last_us.assign(m_runs.size(), 0.0);
    m_step = 0;
    m_start = std::chrono::steady_clock::now();
    m_session_scaler = m_cfg.scaler;
    m_train = m_cfg.train;
    m_applied = 0;
    m_effects.clear();
    apply_due();  // changes at step 0
}

void Session::reset() {
    if (m_chains) m_chains->stop();  // a pending step's training ends before its runs are rebuilt
    m_pending.reset();  // the runs it was queued on are rebuilt
    m_late.clear();
    build();
}

void Session::gather_batches(std::vector<Batch>& micro) {
    for (Batch& b : micro) {
        const auto idx = m_sampler->next();
        if (m_data.text) {  // the sampler's examples are window starts
            m_starts.assign(idx.begin(), idx.end());
            gather_windows(*m_data.text, m_starts, m_cfg.model.gpt.block_size, b.x, b.labels);
            continue;
        }
        gather_rows(m_data.x_train, idx, b.x);
        if (m_data.loss == LossKind::cross_entropy) {
            b.labels.resize(idx.size());
            for (std::size_t k = 0; k < idx.size(); ++k) b.labels[k] = m_data.y_train[static_cast<std::size_t>(idx[k])];
        } else {
            gather_rows(m_data.t_train, idx, b.targets);
        }
    }
}

void Session::queue_runs() {
    // Every run's step is queued before any is waited for: on a GPU one run's work runs while the
    // next is queued, and every run's record is read once its work is done.
    const BatchSampler::State drawn_from = m_sampler->state();
    gather_batches(m_micro);
    try {
        for (auto& r : m_runs) r->queue_step(m_step, m_micro, m_data.loss);
    } catch (...) {
        m_sampler->restore(drawn_from);  // the step is taken again with the same batches
        // The step is not taken: its records are dropped. A pending step is finished first and
        // its records kept for finish_pending().
        if (m_pending) {
            m_pending.reset();
            try {
                std::vector<StepRecord> late;
                for (auto& r : m_runs) late.push_back(r->finish_step());
                m_late = std::move(late);
            } catch (...) {
            }
        }
        for (auto& r : m_runs) r->abandon_step();
        throw;
    }
}

std::vector<StepRecord> Session::step_runs_in_parallel(double wall) {
    // Each run's whole step, its record read too, on the pool: the runs share nothing meanwhile.
    // A run that fails does not stop the others; the step is dropped all the same.
    const BatchSampler::State drawn_from = m_sampler->state();
    gather_batches(m_micro);
    std::vector<StepRecord> out(m_runs.size());
    try {
        parallel_for(m_runs.size(), [&](std::size_t k) {
            const std::size_t i = m_order[k];
            m_runs[i]->queue_step(m_step, m_micro, m_data.loss);
            out[i] = m_runs[i]->finish_step();
        });
    } catch (...) {
        m_sampler->restore(drawn_from);
        for (auto& r : m_runs) r->abandon_step();
        throw;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].wall_time_s = wall;
        m_last_us[i] = out[i].step_time_us;
    }
    order_longest_first();
    return out;
}

void Session::order_longest_first() {
    // The longest step starts first next time: the runs a thread takes after its first then fit
    // in beside the longest instead of running on alone after it (longest processing time first).
    for (std::size_t i = 1; i < m_order.size(); ++i)  // insertion sort: a handful of runs, no allocation
        for (std::size_t j = i; j > 0 && m_last_us[m_order[j]] > m_last_us[m_order[j - 1]]; --j)
            std::swap(m_order[j], m_order[j - 1]);
}

bool Session::steps_in_parallel() const {
    // CPU runs share nothing while they step, so each may take a thread; GPU runs queue work on
    // their own streams from the one engine thread.
    return m_runs.size() > 1 && thread_count() > 1 &&
           std::none_of(m_runs.begin(), m_runs.end(), [](const auto& r) { return r->backend().is_gpu(); });
}

std::vector<StepRecord> Session::finish_runs(double wall) {
    std::vector<StepRecord> out;
    out.reserve(m_runs.size());
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
        StepRecord rec = m_runs[i]->finish_step();
        rec.wall_time_s = wall;
        m_last_us[i] = rec.step_time_us;
        out.push_back(rec);
    }
    order_longest_first();
    return out;
}

std::vector<StepRecord> Session::complete_step(std::vector<StepRecord> out) {
    // After every run's step and its timing: evaluation costs no run step time.
    if (std::exchange(m_keep_attention, false) && m_data.text) {  // first: evaluation reuses the buffers
        auto kept = std::make_shared<AttentionSnapshot>();
        kept->step = m_step;
        for (auto& r : m_runs)
            if (!r->failed()) kept->runs.push_back(r->attention_maps(m_step));
        m_attention = std::move(kept);
    }
    if (evaluates(m_step)) {
        const auto evaluate = [&](std::size_t i) {
            const Evaluation ev = m_runs[i]->evaluate(m_eval, m_data.loss);
            out[i].eval_loss = ev.loss;
            out[i].eval_accuracy = ev.accuracy;
        };
        if (steps_in_parallel()) parallel_for(m_runs.size(), evaluate);
        else for (std::size_t i = 0; i < m_runs.size(); ++i) evaluate(i);
    }
    if (samples(m_step)) write_samples(m_step, evaluates(m_step) ? &out : nullptr);
    if (measures_mismatch(m_step)) measure_mismatch(m_step);
    ++m_step;
    apply_due();  // the next step's changes land now, between steps, as a live edit would
    return out;
}

double Session::wall_now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

void Session::require_nothing_pending(const char* what) const {
    if (pending())
        throw std::logic_error(std::string("Session::") + what +
                               ": a step queued by step_ahead is pending; call finish_pending first");
}

std::vector<StepRecord> Session::step() {
    require_nothing_pending("step");
    const double wall = wall_now();
    if (steps_in_parallel()) return complete_step(step_runs_in_parallel(wall));
    queue_runs();
    return complete_step(finish_runs(wall));
}

bool Session::can_leave_pending() const {
    if (m_step + 1 >= m_cfg.steps || evaluates(m_step) || samples(m_step) || measures_mismatch(m_step) || m_keep_attention)
        return false;
    const auto& list = m_cfg.live_changes;
    if (m_applied < list.size() && list[m_applied].step <= m_step + 1) return false;  // lands before the next
    if (pipelines()) return true;  // each run trains its steps in order on its chain
    if (steps_in_parallel()) return false;  // CPU runs finish their step where they take it
    return std::all_of(m_runs.begin(), m_runs.end(), [](const auto& r) { return r->can_queue_next(); });
}

std::vector<std::vector<StepRecord>> Session::step_ahead() {
    std::vector<std::vector<StepRecord>> out;
    if (!m_late.empty())  // a step failed behind it: its records first
        throw std::logic_error("Session::step_ahead: a pending step was finished when the next failed to queue; "
                               "call finish_pending first");
    if (finished()) return out;
    const double wall = wall_now();
    if (m_pipelined || (!m_pending && pipelines())) return step_pipelined(wall);
    if (!m_pending && steps_in_parallel()) {  // under SerialHere: nothing is left pending
        out.push_back(complete_step(step_runs_in_parallel(wall)));
        return out;
    }
    queue_runs();  // step N, behind the pending step N−1 where there is one
    if (m_pending) {
        const double pending_wall = *m_pending;
        m_pending.reset();
        out.push_back(finish_runs(pending_wall));  // N−1 evaluated nothing and changed nothing
    }
    if (can_leave_pending()) {
        m_pending = wall;
        ++m_step;  // no change is due at the next step (can_leave_pending)
    } else {
        out.push_back(complete_step(finish_runs(wall)));
    }
    return out;
}

std::vector<StepRecord> Session::finish_pending() {
    if (!m_late.empty()) return std::exchange(m_late, {});
    if (!m_pending) return {};
    if (m_pipelined) {
        const long long step = m_step - 1;
        try {
            m_chains->wait_for(step);
        } catch (...) {
            drop_pipelined(step);
            throw;
        }
        m_pipelined = false;
        return take_pipelined(step, *std::exchange(m_pending, std::nullopt));
    }
    const double wall = *m_pending;
    m_pending.reset();
    return finish_runs(wall);
}

bool Session::evaluates(long long step) const {
    if (m_cfg.eval_every < 1 || m_eval.empty()) return false;
    return step % m_cfg.eval_every == 0 || step + 1 == m_cfg.steps;
}

bool Session::samples(long long step) const {
    if (m_samplers.empty() || m_cfg.sample.every < 1) return false;
    return step % m_cfg.sample.every == 0 || step + 1 == m_cfg.steps;
}

void Session::write_samples(long long step, const std::vector<StepRecord>* evaluated) {
    // Each run alone, as evaluation: on the pool's threads where runs step there. Every buffer the
    // sampler writes into is its own; the text is copied out after.
    std::vector<std::optional<double>> loss(m_runs.size());
    std::vector<char> written(m_runs.size(), 0);
    const auto one = [&](std::size_t i) {
        Run& run = *m_runs[i];
        if (run.failed()) return;
        loss[i] = evaluated ? (*evaluated)[i].eval_loss : run.evaluate(m_eval, m_data.loss).loss;
        written[i] = m_samplers[i]->write(run, m_cfg.seed, step, m_interrupt);
    };
    if (steps_in_parallel()) parallel_for(m_runs.size(), one);
    else for (std::size_t i = 0; i < m_runs.size(); ++i) one(i);
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
        if (!written[i]) continue;  // a stopped run, or an interrupted sample
        m_samples.push_back({static_cast<int>(i), step, loss[i], m_samplers[i]->text(), m_samplers[i]->nonfinite()});
    }
}

bool Session::measures_mismatch(long long step) const {
    if (!m_mismatch || m_eval.empty()) return false;
    const int every = m_cfg.mismatch.every;
    return (every > 0 && step % every == 0) || step + 1 == m_cfg.steps;
}

void Session::measure_mismatch(long long step) {
    Run& run = *m_runs[m_mismatch_run];
    if (run.failed()) return;
    for (const MismatchResult& r : m_mismatch->measure(run, m_eval, step)) m_mismatches.push_back(r);
    m_mismatch_measured = true;
}

void Session::sample_now() {
    require_nothing_pending("sample_now");
    if (m_samplers.empty())
        throw ConfigError("model.kind", "an MLP writes no text; samples are the GPT's (model.kind = gpt)");
    write_samples(m_step - 1, nullptr);
}

void Session::apply_due() {
    const auto& list = m_cfg.live_changes;
    while (m_applied < list.size() && list[m_applied].step <= m_step) apply(list[m_applied++]);
}

void Session::apply(const LiveChange& c) {
    const auto effect = [&](std::vector<int> runs, std::string changes) {
        if (!changes.empty()) m_effects.push_back({c.step, c.target, std::move(runs), std::move(changes)});
    };
    switch (c.target) {
        case LiveTarget::session_scaler: {
            const ScalerConfig resolved = with_overrides(c.scaler, m_cfg.scaler_overrides);  // as resolve_run does
            std::vector<int> reached;
            bool runs_changed = false;
            for (std::size_t i = 0; i < m_runs.size(); ++i)
                if (m_runs[i]->info().follows_session_scaler) {
                    runs_changed |= !(m_runs[i]->scaler().config() == resolved);
                    m_runs[i]->set_scaler(resolved);
                    reached.push_back(static_cast<int>(i));
                }
            std::string what = scaler_changes(m_session_scaler, c.scaler);
            if (what.empty() && runs_changed) what = "its runs back to the session scaler's settings";  // after a run's own edit
            effect(std::move(reached), what);
            m_session_scaler = c.scaler;
            break;
        }
        case LiveTarget::run_scalers:
            for (const auto& label : c.runs)
                for (std::size_t i = 0; i < m_runs.size(); ++i)
                    if (m_runs[i]->info().label == label) {
                        const std::string what = scaler_changes(m_runs[i]->scaler().config(), c.scaler);
                        m_runs[i]->set_scaler(c.scaler);
                        effect({static_cast<int>(i)}, what);
                    }
            break;
        case LiveTarget::train: {
            TrainConfig t = m_train;
            copy_live_fields(t, c.train);
            std::vector<int> all;
            for (std::size_t i = 0; i < m_runs.size(); ++i) {
                m_runs[i]->set_train(t);
                all.push_back(static_cast<int>(i));
            }
            effect(std::move(all), train_changes(m_train, t));
            m_train = t;
            break;
        }
    }
}

void Session::change_live(LiveChange c) {
    require_nothing_pending("a live change");
    c.step = m_step;
    validate_live_change(m_cfg, c, "");
    bool changes = false;
    switch (c.target) {
        case LiveTarget::session_scaler: {
            changes = !(c.scaler == m_session_scaler);
            const ScalerConfig resolved = with_overrides(c.scaler, m_cfg.scaler_overrides);
            for (const auto& r : m_runs) changes |= r->info().follows_session_scaler && !(r->scaler().config() == resolved);
            break;
        }
        case LiveTarget::run_scalers:
            for (const auto& r : m_runs)
                for (const auto& label : c.runs) changes |= r->info().label == label && !(r->scaler().config() == c.scaler);
            break;
        case LiveTarget::train: changes = !train_changes(m_train, c.train).empty(); break;
    }
    if (!changes) return;
    // Every change up to this step is in force (apply_due runs after each step), so this one goes
    // after them: a replay applies the list in order at the start of each step and meets the same.
    auto& list = m_cfg.live_changes;
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(m_applied), c);
    apply(list[m_applied++]);
}

void Session::set_scaler(const ScalerConfig& s) {
    LiveChange c;
    c.target = LiveTarget::session_scaler;
    c.scaler = s;
    change_live(std::move(c));
}

void Session::set_scaler(const std::vector<std::string>& runs, const ScalerConfig& s) {
    LiveChange c;
    c.target = LiveTarget::run_scalers;
    c.runs = runs;
    c.scaler = s;
    change_live(std::move(c));
}

void Session::set_train(const TrainConfig& t) {
    LiveChange c;
    c.target = LiveTarget::train;
    c.train = m_train;  // fields that shape the runs (batch, optimizer) need a reset
    copy_live_fields(c.train, t);
    change_live(std::move(c));
}

void Session::set_lr(double lr) {
    TrainConfig t = m_train;
    t.lr = lr;
    t.min_lr = std::min(t.min_lr, lr);
    set_train(t);
}

void Session::set_clip_norm(double clip) {
    TrainConfig t = m_train;
    t.clip_norm = clip;
    set_train(t);
}

void Session::fold_applied() {
    m_session_scaler = m_cfg.scaler;
    m_train = m_cfg.train;
    m_applied = 0;
    const auto& list = m_cfg.live_changes;
    for (; m_applied < list.size() && list[m_applied].step <= m_step; ++m_applied) {
        const LiveChange& c = list[m_applied];
        if (c.target == LiveTarget::session_scaler) m_session_scaler = c.scaler;
        if (c.target == LiveTarget::train) copy_live_fields(m_train, c.train);
    }
    for (auto& r : m_runs) r->set_train(m_train);
    m_effects.clear();
}

}  // namespace mpx
