// The CPU backend: Eigen GEMMs on FP32 blocks decoded from the operands' real storage, every other op
// a loop over engine/core/op_math.hpp (the arithmetic the CUDA kernels run), stores through the
// vectorised block paths of engine/precision/format.cpp (equal to format_core.hpp bit for bit).
// Rule: results are deterministic for a given input (single-threaded, fixed summation order).
#include <Eigen/Core>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/compute/backend.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx {
namespace {

using Map = Eigen::Map<RowMatrix>;
using CMap = Eigen::Map<const RowMatrix>;

// Eigen's resize frees the old block before allocating the new one, so a failed allocation leaves a
// dangling pointer that the destructor frees again. Allocating first and swapping keeps the old
// block on failure: out of memory stays an exception, not heap corruption.
void sized(RowMatrix& m, Eigen::Index rows, Eigen::Index cols) {
    if (m.rows() == rows && m.cols() == cols) return;
    RowMatrix fresh(rows, cols);
    m.swap(fresh);
}

bool narrower(Format compute, Format storage) {
    return compute != Format::fp32 && compute != storage;
}

// FP32 view of a tensor: a direct map for FP32 storage, else a decoded copy in `scratch`.
CMap view(const Tensor& t, RowMatrix& scratch) {
    if (t.format() == Format::fp32)
        return CMap(static_cast<const float*>(t.data()), t.rows(), t.cols());
    sized(scratch, t.rows(), t.cols());
    decode_buffer(t.format(), t.data(), {scratch.data(), t.size()});
    return CMap(scratch.data(), t.rows(), t.cols());
}

// Adds n FP32 values to a histogram (nullptr: this store is not binned), with the one binning
// function the kernels use.
void bin_values(core::Bins* bins, const float* v, std::size_t n) {
    if (!bins) return;
    // Slots first, a block at a time (a vectorised pass), then the counts in four interleaved sets:
    // consecutive values often share a bin, and one set would make each increment wait for the last.
    constexpr std::size_t k_block = 1024;
    std::uint8_t slot[k_block];
    std::uint32_t lanes[4][core::k_slots] = {};
    for (std::size_t off = 0; off < n; off += k_block) {
        const std::size_t m = std::min(k_block, n - off);
        for (std::size_t i = 0; i < m; ++i) slot[i] = static_cast<std::uint8_t>(core::bin_slot(v[off + i]));
        std::size_t i = 0;
        for (; i + 4 <= m; i += 4)
            for (std::size_t k = 0; k < 4; ++k) ++lanes[k][slot[i + k]];
        for (; i < m; ++i) ++lanes[0][slot[i]];
    }
    for (int s = 0; s < core::k_slots; ++s)
        bins->n[s] += static_cast<unsigned long long>(lanes[0][s]) + lanes[1][s] + lanes[2][s] + lanes[3][s];
}

// Where a rounding's counts and values go: a site's counts and, on a collecting step, its bins.
struct Sink {
    core::Counts* counts = nullptr;
    core::Bins* bins = nullptr;
};

// A GEMM operand: the tensor's values cast to the compute format (autocast's cast), the cast's
// rounding added to `sink` when given.
CMap operand(const Tensor& t, RowMatrix& scratch, Format compute, Sink sink) {
    if (!narrower(compute, t.format())) return view(t, scratch);
    sized(scratch, t.rows(), t.cols());
    decode_buffer(t.format(), t.data(), {scratch.data(), t.size()});
    bin_values(sink.bins, scratch.data(), t.size());
    const RoundStats cast = round_in_place(compute, {scratch.data(), t.size()});
    if (sink.counts) *sink.counts += cast;
    return CMap(scratch.data(), t.rows(), t.cols());
}


class CpuBackend final : public Backend {
public:
    std::string name() const override { return "CPU (Eigen)"; }
    bool is_gpu() const override { return false; }

    // Two records: a step's ops count into the current one, the previous step's stays readable.
    void begin_step() override {
        m_current ^= 1;
        m_records[m_current] = StepStats{};
        m_collecting = false;
    }
    const StepStats& read_stats() override { return stats(); }
    bool holds_two_steps() const override { return true; }
    const StepStats& read_previous_stats() override { return m_records[m_current ^ 1]; }
    void collect_histograms(int layers) override {
        m_collecting = layers > 0;
        if (!m_collecting) return;
        if (!m_hist) m_hist = std::make_unique<StepHistograms>();
        const int n = std::min(layers, k_max_layers);
        std::fill_n(m_hist->site, n * k_tensor_kinds, core::Bins{});
        std::fill_n(m_hist->update_ulp, n, core::Bins{});
    }
    const StepHistograms* read_histograms() override { return m_collecting ? m_hist.get() : nullptr; }

    void upload(std::span<const float> src, Tensor& dst) override {
        bin_values(bins(), src.data(), dst.size());
        counts() += encode_buffer(dst.format(), src.first(dst.size()), dst.data());
    }
    void download(const Tensor& src, std::span<float> dst) override {
        decode_buffer(src.format(), src.data(), dst.first(src.size()));
    }
    void copy(const Tensor& src, Tensor& dst) override {
        if (src.format() == dst.format()) {
            std::memcpy(dst.data(), src.data(), src.bytes());
            return;
        }
        CMap v = view(src, m_a);
        encode_buffer(dst.format(), {v.data(), dst.size()}, dst.data());
    }
    void fill(Tensor& dst, float value) override {
        sized(m_c, dst.rows(), dst.cols());
        m_c.setConstant(value);
        encode_buffer(dst.format(), {m_c.data(), dst.size()}, dst.data());
    }

    void linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                        Tensor& y) override {
        if (fp8()) {
            const float sx = fp8_operand(x, m_a, Fp8Tensor::x, MxAxis::rows, sink(TensorKind::operand), true);
            const float sw = fp8_operand(w, m_b, Fp8Tensor::w, MxAxis::rows, sink(TensorKind::operand), true);
            sized(m_c, x.rows(), w.rows());
            m_c.noalias() = m_a * m_b.transpose();
            if (fp8()->recipe != Fp8Recipe::block) m_c *= core::descale_factor(sx, sw);
            if (b) {
                CMap bv = view(*b, m_d);  // (1, out)
                m_c.rowwise() += bv.row(0);
            }
            store(m_c.data(), y);
            return;
        }
        CMap xv = operand(x, m_a, compute, sink(TensorKind::operand));  // (B, in)
        CMap wv = operand(w, m_b, compute, sink(TensorKind::operand));  // (out, in)
        sized(m_c, x.rows(), w.rows());
        m_c.noalias() = xv * wv.transpose();
        if (b) {
            CMap bv = view(*b, m_d);  // (1, out)
            m_c.rowwise() += bv.row(0);
        }
        store(m_c.data(), y);
    }

    void linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                               Tensor& dx) override {
        if (fp8()) return fp8_backward(dy, nullptr, &w, Format::fp32, nullptr, nullptr, Accumulate::add, &dx);
        backward_input(operand(dy, m_a, compute, sink(TensorKind::grad_operand)), w, compute, dx);
    }
    void linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                Format round_through, Tensor& dw, Tensor* db,
                                Accumulate acc) override {
        if (fp8()) return fp8_backward(dy, &x, nullptr, round_through, &dw, db, acc, nullptr);
        backward_weight(operand(dy, m_a, compute, sink(TensorKind::grad_operand)), dy, x, compute,
                        round_through, dw, db, acc);
    }
    void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                         Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                         Tensor* dx) override {
        if (fp8()) return fp8_backward(dy, &x, &w, round_through, &dw, db, acc, dx);
        CMap dyv = operand(dy, m_a, compute, sink(TensorKind::grad_operand));  // (B, out), once
        backward_weight(dyv, dy, x, compute, round_through, dw, db, acc);
        if (dx) backward_input(dyv, w, compute, *dx);
    }

    void activation_forward(Activation a, const Tensor& z, Tensor& h) override {
        CMap zv = view(z, m_a);
        sized(m_c, z.rows(), z.cols());
        const float* in = zv.data();
        float* out = m_c.data();
        const std::size_t n = z.size();
        core::with_activation(a, [&](auto k) {
            for (std::size_t i = 0; i < n; ++i) out[i] = core::act_forward<decltype(k)::value>(in[i]);
        });
        store(out, h);
    }

    void activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) override {
        CMap zv = view(z, m_a);
        CMap dhv = view(dh, m_b);
        sized(m_c, z.rows(), z.cols());
        const float* zi = zv.data();
        const float* gi = dhv.data();
        float* out = m_c.data();
        const std::size_t n = z.size();
        core::with_activation(a, [&](auto k) {
            for (std::size_t i = 0; i < n; ++i)
                out[i] = core::act_backward<decltype(k)::value>(zi[i], gi[i]);
        });
        store(out, dz);
    }

    void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                           Tensor& mean, Tensor& rstd) override {
        CMap xv = view(x, m_a);
        CMap g = view(gamma, m_b);
        CMap bt = view(beta, m_d);
        const int B = x.rows(), D = x.cols();
        sized(m_c, B, D);
        auto* mu = static_cast<float*>(mean.data());
        auto* rs = static_cast<float*>(rstd.data());
        for (int r = 0; r < B; ++r) {
            core::layernorm_row_stats([&](int c) { return xv(r, c); }, D, mu[r], rs[r]);
            for (int c = 0; c < D; ++c)
                m_c(r, c) = core::layernorm_value(xv(r, c), mu[r], rs[r], g(0, c), bt(0, c));
        }
        store(m_c.data(), y);
    }

    void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                            const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                            Tensor& dbeta, Accumulate acc) override {
        CMap xv = view(x, m_a);
        CMap g = view(gamma, m_b);
        CMap dyv = view(dy, m_d);
        const int B = x.rows(), D = x.cols();
        const auto* mu = static_cast<const float*>(mean.data());
        const auto* rs = static_cast<const float*>(rstd.data());
        // dγ, dβ first (row 0 of m_e): dx may be dy's own storage.
        RowMatrix& sums = m_e;
        sized(sums, 2, D);
        for (int c = 0; c < D; ++c)
            core::layernorm_column_sums([&](int r) { return xv(r, c); },
                                      [&](int r) { return dyv(r, c); }, mu, rs, B, sums(0, c),
                                      sums(1, c));
        sized(m_c, B, D);
        for (int r = 0; r < B; ++r) {
            float s1, s2;
            core::layernorm_row_sums([&](int c) { return xv(r, c); }, [&](int c) { return g(0, c); },
                                   [&](int c) { return dyv(r, c); }, D, mu[r], rs[r], s1, s2);
            for (int c = 0; c < D; ++c)
                m_c(r, c) = core::layernorm_dx(xv(r, c), dyv(r, c), g(0, c), mu[r], rs[r], D, s1, s2);
        }
        store(m_c.data(), dx);
        accumulate_into(sums.data(), static_cast<std::size_t>(D), dgamma.format(), dgamma, acc, sink());
        accumulate_into(sums.data() + D, static_cast<std::size_t>(D), dbeta.format(), dbeta, acc,
                        sink());
    }

    void dropout(Tensor& h, float p, std::uint64_t seed) override {
        CMap hv = view(h, m_a);
        sized(m_c, h.rows(), h.cols());
        const float keep = core::dropout_keep_scale(p);
        const float* in = hv.data();
        float* out = m_c.data();
        for (std::size_t i = 0; i < h.size(); ++i) out[i] = core::dropout_value(in[i], p, keep, seed, i);
        store(out, h, Sink{&counts(), nullptr});  // the values were binned when first stored
    }

    void softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, ScaleBy by,
                               Tensor& dlogits) override {
        const float scale = by.resolve(m_scaler.scale);
        const int B = logits.rows(), C = logits.cols();
        check_labels(labels, B, C);
        CMap lv = view(logits, m_a);
        sized(m_c, B, C);
        double total = 0.0;
        const float inv_b = 1.0f / static_cast<float>(B);
        for (int r = 0; r < B; ++r) {
            const float row = core::softmax_xent_row(
                [&](int c) { return lv(r, c); }, C, labels[r], inv_b, scale,
                [&](int c, float v) { m_c(r, c) = v; });
            total += static_cast<double>(row);
        }
        stats().loss_sum += core::mean_loss(total, B);
        store(m_c.data(), dlogits);
    }

    void mse(const Tensor& pred, const Tensor& target, ScaleBy by, Tensor& dpred) override {
        const float scale = by.resolve(m_scaler.scale);
        CMap pv = view(pred, m_a);
        CMap tv = view(target, m_b);
        sized(m_c, pred.rows(), pred.cols());
        const float n = static_cast<float>(pred.size());
        double total = 0.0;
        for (Eigen::Index i = 0; i < m_c.size(); ++i) {
            float squared;
            m_c.data()[i] = core::mse_grad(pv.data()[i], tv.data()[i], n, scale, squared);
            total += static_cast<double>(squared);
        }
        stats().loss_sum += core::mean_loss(total, n);
        store(m_c.data(), dpred);
    }

    double accuracy(const Tensor& logits, std::span<const int> labels) override {
        CMap lv = view(logits, m_a);
        const int B = logits.rows(), C = logits.cols();
        if (B == 0 || C == 0) return 0.0;
        int correct = 0;
        for (int r = 0; r < B; ++r)
            if (core::argmax_row([&](int c) { return lv(r, c); }, C) == labels[r]) ++correct;
        return static_cast<double>(correct) / B;
    }

    void set_scaler(const ScalerRule& r, const ScalerState& s) override { m_rule = r; m_scaler = s; }

    void scaler_update() override { core::scaler_step(m_rule, m_scaler, stats().found_inf(), stats().scaler); }

    void set_bias_corrections(std::span<const core::BiasCorrection> t) override { m_bias.assign(t.begin(), t.end()); }
    void set_applied_steps(long long n) override { m_applied = n; }
    void count_applied_step(OnInf on_inf) override {
        m_applied += step_applied(on_inf, stats().found_inf()) ? 1 : 0;
        stats().applied_steps = m_applied;
    }
    void set_amax_histories(std::span<const core::AmaxHistoryState> states, std::span<const float> hist) override {
        if (states.size() > static_cast<std::size_t>(k_max_layers * k_fp8_tensors))
            throw ConfigError("", "set_amax_histories: more histories than the step record has FP8 tensors");
        m_amax.clear();
        for (const core::AmaxHistoryState& s : states) {
            if (s.len < 1 || s.offset < 0 || s.offset + s.len > static_cast<long long>(hist.size()))
                throw ConfigError("", "set_amax_histories: a history lies outside the values given");
            m_amax.emplace_back(s, hist.subspan(static_cast<std::size_t>(s.offset), static_cast<std::size_t>(s.len)));
        }
    }
    void update_amax_histories() override {
        for (std::size_t i = 0; i < m_amax.size(); ++i)
            if (m_amax[i].state().active) m_amax[i].push(stats().fp8[i].amax);
    }
    void read_amax_histories(std::vector<core::AmaxHistoryState>& states, std::vector<float>& hist) override {
        states.clear();
        hist.clear();
        for (const AmaxHistory& h : m_amax) {
            states.push_back(h.state());
            states.back().offset = static_cast<long long>(hist.size());
            hist.insert(hist.end(), h.history().begin(), h.history().end());
        }
    }
    void set_lr_schedule(std::span<const float> lrs) override { m_lrs.assign(lrs.begin(), lrs.end()); }
    void set_schedule_steps(long long n) override { m_schedule = n; }
    void count_schedule_step(OnInf on_inf, bool advance_on_skip) override {
        m_schedule += step_applied(on_inf, stats().found_inf()) || advance_on_skip ? 1 : 0;
        stats().schedule_steps = m_schedule;
    }

    void unscale_and_check(const Tensor& grad, ScaleBy by, Tensor& unscaled) override {
        const float inv_scale = by.resolve(m_scaler.scale);
        if (unscaled.size() != grad.size())
            throw ConfigError("", "unscale_and_check: the unscaled gradient's shape differs");
        CMap gv = view(grad, m_a);
        sized(m_c, grad.rows(), grad.cols());
        const float* in = gv.data();
        float* out = m_c.data();
        core::Counts& c = counts();
        const unsigned long long bad_before = c.bad;
        const std::size_t n = grad.size();
        for (std::size_t off = 0; off < n; off += core::k_sum_chunk) {
            const std::size_t end = std::min(n, off + core::k_sum_chunk);
            double chunk = 0.0;
            for (std::size_t i = off; i < end; ++i) {
                const float v = in[i] * inv_scale;
                out[i] = v;
                c.bad += !core::is_finite(v);
                chunk += static_cast<double>(v) * v;
            }
            stats().sum_squares += chunk;
        }
        stats().found_bad += c.bad - bad_before;
        store(out, unscaled);
    }

    void scale(Tensor& t, float factor) override {
        CMap v = view(t, m_a);
        sized(m_c, t.rows(), t.cols());
        m_c = v * factor;
        encode_buffer(t.format(), {m_c.data(), t.size()}, t.data());
    }

    void clip_to_norm(Tensor& t, double max_norm) override {
        float factor = 1.0f;
        if (stats().found_inf() || !core::clip_factor(stats().sum_squares, max_norm, factor)) return;
        scale(t, factor);
    }

    void optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                          Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf) override {
        if (!step_applied(on_inf, stats().found_inf())) return;
        const std::size_t n = grad.size();
        if (working.size() != n || state1.size() != n || (state2 && state2->size() != n) ||
            (master && (master->size() != n || master->format() != Format::fp32)))
            throw ConfigError("", "optimizer_update: shapes or master format do not match");
        core::OptConsts k = optimizer_consts(s);
        if (s.count == StepCount::backend &&  // lr at m_schedule, Adam's t = m_applied + 1
            !core::take_backend_counts(k, {m_lrs.data(), static_cast<long long>(m_lrs.size()), m_bias.data(),
                                         static_cast<long long>(m_bias.size())},
                                     m_schedule, m_applied))
            throw ConfigError("", "optimizer_update: schedule step " + std::to_string(m_schedule) + " or Adam's step " +
                                      std::to_string(m_applied + 1) + " is beyond the host's tables");
        const float* g = view(grad, m_a).data();
        // The weights the optimizer reads: the FP32 master, else the working copy's values.
        sized(m_c, working.rows(), working.cols());
        if (master) std::memcpy(m_c.data(), master->data(), n * sizeof(float));
        else decode_buffer(working.format(), working.data(), {m_c.data(), n});
        float* w = m_c.data();
        float* m1 = state_values(state1, m_s1);
        float* m2 = state2 ? state_values(*state2, m_s2) : nullptr;
        m_moved.assign(n, 0);
        std::uint8_t* moved = m_moved.data();
        core::Bins* ulp_bins = m_collecting && site() >= 0 ? &m_hist->update_ulp[site() / k_tensor_kinds] : nullptr;
        const Format lands_in = master ? Format::fp32 : working.format();  // the weight updated
        core::with_optimizer(k.kind, [&](auto kind) {
            constexpr OptimizerKind K = decltype(kind)::value;
            float unused = 0.0f;
            float* m2s = K == OptimizerKind::sgd ? &unused : m2;
            const std::size_t m2_step = K == OptimizerKind::sgd ? 0 : 1;
            if (!ulp_bins) {
                for (std::size_t i = 0; i < n; ++i)
                    moved[i] = core::optimizer_element<K>(k, g[i], w[i], m1[i], m2s[i * m2_step]);
                return;
            }
            for (std::size_t i = 0; i < n; ++i) {
                const float before = w[i];
                float update;
                moved[i] = core::optimizer_element<K>(k, g[i], w[i], m1[i], m2s[i * m2_step], update);
                ++ulp_bins->n[core::update_ulp_slot(lands_in, before, update)];
            }
        });
        if (master) std::memcpy(master->data(), w, n * sizeof(float));
        core::Counts& c = counts();
        const Sink states{&c, nullptr};  // counted, not binned: the histogram is of the weights
        if (state1.format() != Format::fp32) store(m1, state1, states);
        if (state2 && state2->format() != Format::fp32) store(m2, *state2, states);
        // Write back and count updates the working copy cannot show (below half its ulp).
        sized(m_b, working.rows(), working.cols());
        decode_buffer(working.format(), working.data(), {m_b.data(), n});
        store(w, working);
        sized(m_d, working.rows(), working.cols());
        decode_buffer(working.format(), working.data(), {m_d.data(), n});
        for (std::size_t i = 0; i < n; ++i)
            core::count_update(m_moved[i] != 0, m_b.data()[i], m_d.data()[i], c);
    }

protected:
    void* raw_alloc(std::size_t bytes) override {
        void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) throw std::bad_alloc();
        return p;
    }
    void raw_free(void* p) noexcept override { std::free(p); }

private:
    // The current site's counts, or those of another kind at its layer; uncounted work adds to a
    // scratch struct nobody reads.
    core::Counts& counts() { return at(site()); }
    core::Counts& at(int index) { return index < 0 ? m_uncounted : stats().site[index]; }
    // The current site's bins (or those of another kind at its layer) on a collecting step.
    core::Bins* bins() { return bins_at(site()); }
    core::Bins* bins_at(int index) { return m_collecting && index >= 0 ? &m_hist->site[index] : nullptr; }
    Sink sink() { return {&counts(), bins()}; }
    Sink sink(TensorKind kind) { return {&at(site(kind)), bins_at(site(kind))}; }

    // Rounds FP32 results into the tensor's storage, counted (and binned) at the current site or
    // `to`.
    void store(const float* src, Tensor& dst) { store(src, dst, sink()); }
    void store(const float* src, Tensor& dst, Sink to) {
        bin_values(to.bins, src, dst.size());
        *to.counts += encode_buffer(dst.format(), {src, dst.size()}, dst.data());
    }

    // dst (+)= values rounded through `through`, then stored in dst's format: core::accumulate_element
    // in blocks (the same roundings, counted the same way).
    void accumulate_into(float* values, std::size_t n, Format through, Tensor& dst, Accumulate acc,
                         Sink to) {
        core::Counts& c = *to.counts;
        bin_values(to.bins, values, n);  // the GEMM's FP32 results, before their first rounding
        const bool through_first = through != Format::fp32 && through != dst.format();
        if (through_first) c += round_in_place(through, {values, n});
        if (acc == Accumulate::add) {
            const float* old = view(dst, m_e2).data();
            for (std::size_t i = 0; i < n; ++i) values[i] = values[i] + old[i];
        }
        RoundStats stored = encode_buffer(dst.format(), {values, n}, dst.data());
        if (through_first) stored.nonzero = 0;  // the same values, already counted once
        c += stored;
    }

    // An FP8 GEMM operand in `scratch` (engine/core/fp8_math.hpp): per-tensor recipes leave
    // round(t · scale) there and return the scale; block leaves the MXFP8 values multiplied back by
    // their block scales and returns 1. Counted into `sink`; `record` adds amax, scale and the
    // cast's counts to the step's FP8 record (a counted site only).
    float fp8_operand(const Tensor& t, RowMatrix& scratch, Fp8Tensor which, MxAxis axis, Sink sink,
                      bool record) {
        const Fp8Gemm& g = *fp8();
        const std::size_t n = t.size();
        sized(scratch, t.rows(), t.cols());
        decode_buffer(t.format(), t.data(), {scratch.data(), n});
        bin_values(sink.bins, scratch.data(), n);
        float* v = scratch.data();
        // The amax is for the record and for current scaling: a recast for backward under a
        // delayed recipe skips it; the block cast finds it on the way.
        float amax = 0.0f;
        core::Counts c;
        float scale = 1.0f;
        if (g.recipe == Fp8Recipe::block) {
            amax = mx_cast_in_place(v, t.rows(), t.cols(), axis, c);
        } else {
            if (record || g.recipe == Fp8Recipe::current) amax = core::amax_of(v, n);
            const Format f = g.format(which);
            scale = g.recipe == Fp8Recipe::current ? core::current_scale(amax, format_info(f).max_finite)
                                                   : delayed_scale(g.layer, which);
            // core::scaled_cast over the buffer: x · scale in FP32, then the vectorised rounding
            // (equal to the scalar encoder bit for bit, with the same tally).
            for (std::size_t i = 0; i < n; ++i) v[i] *= scale;
            c += round_in_place(f, {v, n}, g.overflow(which));
        }
        if (sink.counts) *sink.counts += c;
        if (record && site() >= 0) {
            core::Fp8Record r;
            r.amax = amax;
            r.scale = g.recipe == Fp8Recipe::block ? 0.0f : scale;
            r.saturated = c.overflow;
            r.underflow = c.underflow;
            r.nonzero = c.nonzero;
            r.count = n;
            stats().fp8[fp8_index(layer(), which)].add(r);
        }
        return scale;
    }

    // Both backward GEMMs of an FP8 layer. dy is cast once per GEMM that needs it (MXFP8 blocks it
    // along rows for dx and down columns for dw, as TE keeps row- and column-wise copies) and
    // recorded once; w and x reuse the forward pass's scales (delayed) or amaxes (current), their
    // casts counted there.
    void fp8_backward(const Tensor& dy, const Tensor* x, const Tensor* w, Format round_through,
                      Tensor* dw, Tensor* db, Accumulate acc, Tensor* dx) {
        const bool block = fp8()->recipe == Fp8Recipe::block;
        bool dy_recorded = false;
        float sdy = 1.0f;
        if (dx) {
            sdy = fp8_operand(dy, m_f, Fp8Tensor::dy, MxAxis::rows, sink(TensorKind::grad_operand), true);
            dy_recorded = true;
            const float sw = fp8_operand(*w, m_b, Fp8Tensor::w, MxAxis::cols, Sink{}, false);
            sized(m_c, dy.rows(), w->cols());
            m_c.noalias() = m_f * m_b;  // (B, out) · (out, in)
            if (!block) m_c *= core::descale_factor(sdy, sw);
            store(m_c.data(), *dx, sink(TensorKind::grad_input));
        }
        if (!dw) return;
        if (block || !dy_recorded)
            sdy = fp8_operand(dy, m_f, Fp8Tensor::dy, block ? MxAxis::cols : MxAxis::rows,
                              dy_recorded ? Sink{} : sink(TensorKind::grad_operand), !dy_recorded);
        const float sx = fp8_operand(*x, m_b, Fp8Tensor::x, MxAxis::cols, Sink{}, false);
        sized(m_c, dy.cols(), x->cols());
        m_c.noalias() = m_f.transpose() * m_b;  // (out, B) · (B, in)
        if (!block) m_c *= core::descale_factor(sdy, sx);
        accumulate_into(m_c.data(), dw->size(), round_through, *dw, acc, sink(TensorKind::grad_weight));
        if (db) bias_backward(view(dy, m_d), *db, round_through, acc);
    }

    // dx (B, in) = dy (B, out, cast) · w (out, in, cast; the forward pass counted this cast).
    void backward_input(CMap dyv, const Tensor& w, Format compute, Tensor& dx) {
        CMap wv = operand(w, m_b, compute, Sink{});
        sized(m_c, dyv.rows(), w.cols());
        m_c.noalias() = dyv * wv;
        store(m_c.data(), dx, sink(TensorKind::grad_input));
    }

    // dw (+)= dyᵀ · x through round_through; db (+)= column sums of dy as stored.
    void backward_weight(CMap dyv, const Tensor& dy, const Tensor& x, Format compute,
                         Format round_through, Tensor& dw, Tensor* db, Accumulate acc) {
        CMap xv = operand(x, m_b, compute, Sink{});  // (B, in); cast counted by the forward pass
        sized(m_c, dy.cols(), x.cols());
        m_c.noalias() = dyv.transpose() * xv;
        accumulate_into(m_c.data(), dw.size(), round_through, dw, acc, sink(TensorKind::grad_weight));
        if (!db) return;
        // Bias gradient: FP32 column sums of dy as stored (not cast to the compute format).
        bias_backward(narrower(compute, dy.format()) ? view(dy, m_d) : dyv, *db, round_through, acc);
    }

    // db (+)= round_through(column sums of dy as stored), core::column_sum's order.
    void bias_backward(CMap dys, Tensor& db, Format round_through, Accumulate acc) {
        const int B = static_cast<int>(dys.rows()), out = static_cast<int>(dys.cols());
        // core::column_sum for all columns at once, row by row: each column adds in the same order.
        sized(m_c, 1, out);
        float* sum = m_c.data();
        std::fill(sum, sum + out, 0.0f);
        for (int r = 0; r < B; ++r) {
            const float* row = dys.data() + static_cast<std::size_t>(r) * out;
            for (int c = 0; c < out; ++c) sum[c] += row[c];
        }
        accumulate_into(m_c.data(), static_cast<std::size_t>(out), round_through, db, acc,
                        sink(TensorKind::grad_weight));
    }

    // An optimizer state's values as floats: the FP32 tensor itself, or a decoded copy.
    static float* state_values(Tensor& t, RowMatrix& scratch) {
        if (t.format() == Format::fp32) return static_cast<float*>(t.data());
        sized(scratch, t.rows(), t.cols());
        decode_buffer(t.format(), t.data(), {scratch.data(), t.size()});
        return scratch.data();
    }

    static void check_labels(std::span<const int> labels, int rows, int classes) {
        if (labels.size() < static_cast<std::size_t>(rows))
            throw ConfigError("labels", "fewer labels than rows");
        for (int r = 0; r < rows; ++r)
            if (labels[r] < 0 || labels[r] >= classes)
                throw ConfigError("labels", "label " + std::to_string(labels[r]) +
                                                " is outside 0.." + std::to_string(classes - 1));
    }

    StepStats m_records[2];
    int m_current = 0;
    StepStats& stats() { return m_records[m_current]; }
    ScalerRule m_rule = core::no_scaler();  // the loss scaler's settings and state (set_scaler, scaler_update)
    ScalerState m_scaler;
    long long m_applied = 0;                 // Adam's applied steps (count_applied_step)
    std::vector<core::BiasCorrection> m_bias;  // by t − 1 (set_bias_corrections)
    long long m_schedule = 0;                // the LR schedule's steps (count_schedule_step)
    std::vector<AmaxHistory> m_amax;         // delayed scaling, by fp8_index (set_amax_histories)
    // The scale a layer's delayed-scaled tensor casts with: its history's, else 1.
    float delayed_scale(int layer, Fp8Tensor t) const {
        const auto i = static_cast<std::size_t>(fp8_index(layer, t));
        return i < m_amax.size() ? m_amax[i].scale() : 1.0f;
    }
    std::vector<float> m_lrs;                // by schedule steps (set_lr_schedule)
    core::Counts m_uncounted;
    std::unique_ptr<StepHistograms> m_hist;  // allocated on the first collecting step
    bool m_collecting = false;
    RowMatrix m_a, m_b, m_c, m_d, m_e, m_e2, m_f, m_s1, m_s2;  // scratch, reused between ops
    std::vector<std::uint8_t> m_moved;  // optimizer_update: which weights the optimizer moved
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace mpx
