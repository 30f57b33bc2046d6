// The CPU backend's class: Eigen GEMMs on FP32 blocks decoded from the operands' real storage, every
// other op a loop over engine/core/op_math.hpp (the arithmetic the CUDA kernels run), stores through
// the vectorised block paths of engine/precision/format.cpp (equal to format_core.hpp bit for bit).
// Rule: results are deterministic for a given input, whatever the thread count: GEMMs split by
// output rows and loops by element pieces, both cut by shape alone, never along a sum.
// The GEMMs live in cpu_gemm.hpp, the scratch blocks in cpu_scratch.hpp. Internal to engine/compute:
// cpu_backend.cpp (transfers, activations, norms, losses, the step's state), cpu_linear.cpp (the GEMMs, FP8 casts included) and cpu_update.cpp (unscale, clipping, the
// optimizer) define it; everyone else reaches it through make_cpu_backend() (backend.hpp).
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/compute/backend.hpp"
#include "engine/compute/cpu_gemm.hpp"
#include "engine/compute/cpu_scratch.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/fp4_cast.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx::cpu {

// Element loops in pieces whose bounds depend on the length alone (parallel.hpp's rule): at least
// k_piece elements a piece, at most k_max_pieces pieces.
inline constexpr std::size_t k_piece = std::size_t{1} << 12;
inline constexpr std::size_t k_max_pieces = 64;
inline std::size_t piece_count(std::size_t n) {
    return std::clamp<std::size_t>(n / k_piece, 1, k_max_pieces);
}

// fn(begin, end) over [0, n) in pieces, each returning its counts; the sum of all (Counts add and
// take maxima, so the order of the pieces changes nothing).
template <class F>
core::Counts counted_pieces(std::size_t n, F&& fn) {
    const std::size_t pieces = piece_count(n);
    if (pieces == 1) return fn(std::size_t{0}, n);
    core::Counts part[k_max_pieces];
    parallel_for(pieces, [&](std::size_t i) {
        const auto [b, e] = piece_range(n, pieces, i);
        part[i] = fn(b, e);
    });
    core::Counts total;
    for (std::size_t i = 0; i < pieces; ++i) total += part[i];
    return total;
}

// fn(begin, end) over [0, n) in pieces.
template <class F>
void pieces(std::size_t n, F&& fn) {
    const std::size_t count = piece_count(n);
    if (count == 1) return fn(std::size_t{0}, n);
    parallel_for(count, [&](std::size_t i) {
        const auto [b, e] = piece_range(n, count, i);
        fn(b, e);
    });
}

// FP32 values stored in `f` at dst (storage_bytes a value), counted: encode_buffer in pieces.
inline RoundStats encode_pieces(Format f, const float* src, std::size_t n, void* dst, Overflow mode) {
    const std::size_t bytes = format_info(f).storage_bytes;
    return counted_pieces(n, [&](std::size_t b, std::size_t e) {
        return encode_buffer(f, {src + b, e - b}, static_cast<char*>(dst) + b * bytes, mode);
    });
}
inline RoundStats encode_pieces(Format f, const float* src, std::size_t n, void* dst) {
    return encode_pieces(f, src, n, dst, format_info(f).default_overflow);
}
inline void decode_pieces(Format f, const void* src, float* dst, std::size_t n) {
    const std::size_t bytes = format_info(f).storage_bytes;
    pieces(n, [&](std::size_t b, std::size_t e) {
        decode_buffer(f, static_cast<const char*>(src) + b * bytes, {dst + b, e - b});
    });
}
inline RoundStats round_pieces(Format f, float* values, std::size_t n, Overflow mode) {
    return counted_pieces(n, [&](std::size_t b, std::size_t e) { return round_in_place(f, {values + b, e - b}, mode); });
}
inline RoundStats round_pieces(Format f, float* values, std::size_t n) {
    return round_pieces(f, values, n, format_info(f).default_overflow);
}

// Element loops that read tensors and store one go a block at a time: each block decoded onto the
// stack (FP32 storage read in place), computed, and rounded into the destination's storage while it
// is in L1, in one pass and one parallel dispatch instead of a decode, a loop and a store each over
// full-size buffers.
inline constexpr std::size_t k_fused_block = 256;

// n values of t from element `at` as floats: FP32 storage in place, anything else decoded into tmp.
inline const float* block_of(const Tensor& t, std::size_t at, std::size_t n, float* tmp) {
    if (t.format() == Format::fp32) return static_cast<const float*>(t.data()) + at;
    decode_buffer(t.format(), static_cast<const char*>(t.data()) + at * format_info(t.format()).storage_bytes,
                  {tmp, n});
    return tmp;
}

// dst's values from fn(at, m, out), which writes the m values from element `at` into out (at most
// k_fused_block); stored in dst's format, counted. Every element is read before its block is
// stored, so fn may read dst itself (an in-place op).
template <class F>
RoundStats store_blocks(Tensor& dst, F&& fn) {
    const std::size_t bytes = format_info(dst.format()).storage_bytes;
    char* d = static_cast<char*>(dst.data());
    return counted_pieces(dst.size(), [&](std::size_t b, std::size_t e) {
        RoundStats c;
        float out[k_fused_block];
        for (std::size_t at = b; at < e; at += k_fused_block) {
            const std::size_t m = std::min(k_fused_block, e - at);
            fn(at, m, out);
            c += encode_buffer(dst.format(), {out, m}, d + at * bytes);
        }
        return c;
    });
}

inline bool narrower(Format compute, Format storage) {
    return compute != Format::fp32 && compute != storage;
}

// FP32 view of a tensor: a direct map for FP32 storage, else a decoded copy in `scratch`.
inline CMap view(const Tensor& t, Scratch& scratch) {
    if (t.format() == Format::fp32)
        return CMap(static_cast<const float*>(t.data()), t.rows(), t.cols());
    decode_pieces(t.format(), t.data(), scratch.shape(t.rows(), t.cols()).data(), t.size());
    return CMap(scratch.data(), t.rows(), t.cols());
}

// Adds n FP32 values to a histogram (nullptr: this store is not binned), with the one binning
// function the kernels use.
inline void bin_values(core::Bins* bins, const float* v, std::size_t n) {
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
inline CMap operand(const Tensor& t, Scratch& scratch, Format compute, Sink sink) {
    if (!narrower(compute, t.format())) return view(t, scratch);
    float* v = scratch.shape(t.rows(), t.cols()).data();
    RoundStats cast;
    if (t.format() == Format::fp32) {  // FP32 weights: rounded from their storage, one pass
        const auto* src = static_cast<const float*>(t.data());
        bin_values(sink.bins, src, t.size());
        if (!sink.counts) {  // counted where it was cast before (the forward pass): the values alone
            pieces(t.size(), [&](std::size_t b, std::size_t e) { round_copy_uncounted(compute, {src + b, e - b}, v + b); });
            return CMap(v, t.rows(), t.cols());
        }
        cast = counted_pieces(t.size(), [&](std::size_t b, std::size_t e) {
            return round_copy(compute, {src + b, e - b}, v + b);
        });
    } else {
        decode_pieces(t.format(), t.data(), v, t.size());
        bin_values(sink.bins, v, t.size());
        cast = round_pieces(compute, v, t.size());
    }
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
    void collect_histograms(int layers) override;
    const StepHistograms* read_histograms() override { return m_collecting ? m_hist.get() : nullptr; }

    void upload(std::span<const float> src, Tensor& dst) override {
        bin_values(bins(), src.data(), dst.size());
        counts() += encode_pieces(dst.format(), src.data(), dst.size(), dst.data());
    }
    void download(const Tensor& src, std::span<float> dst) override {
        decode_pieces(src.format(), src.data(), dst.data(), src.size());
    }
    void copy(const Tensor& src, Tensor& dst) override;
    void fill(Tensor& dst, float value) override {
        m_c.shape(dst.rows(), dst.cols()).setConstant(value);
        encode_pieces(dst.format(), m_c.data(), dst.size(), dst.data());
    }

    void linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                        Tensor& y) override;

    void linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                               Tensor& dx) override {
        if (fp8()) return fp8_backward(dy, nullptr, &w, Format::fp32, nullptr, nullptr, Accumulate::add, &dx);
        backward_input(operand(dy, m_a, compute, sink(TensorKind::grad_operand)), w, compute, dx);
    }
    void linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                Format round_through, Tensor& dw, Tensor* db,
                                Accumulate acc) override;
    void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                         Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                         Tensor* dx) override;

    void activation_forward(Activation a, const Tensor& z, Tensor& h) override;

    void activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) override;

    void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                           Tensor& mean, Tensor& rstd) override;

    void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                            const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                            Tensor& dbeta, Accumulate acc) override;
    void dropout_from(const Tensor& src, Tensor& dst, float p, std::uint64_t seed) override;
    void copy_columns(const Tensor& src, int col0, Tensor& dst) override;
    void set_columns(const Tensor& src, int col0, Tensor& dst) override;
    void layernorm_forward_stats_in(Format stats, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                    Tensor& mean, Tensor& rstd) override;

    void dropout(Tensor& h, float p, std::uint64_t seed) override;

    // The GPT's ops: cpu_gpt.cpp.
    void embedding_forward(std::span<const int> tokens, int T, const Tensor& wte, const Tensor& wpe,
                           Tensor& x) override;
    void embedding_backward(std::span<const int> tokens, int T, const Tensor& dx, Tensor& dwte,
                            Accumulate acc_wte, Tensor& dwpe, Accumulate acc_wpe) override;
    void add(const Tensor& a, const Tensor& b, Tensor& out) override;
    void attention_forward(const Tensor& qkv, const AttentionShape& s, const AttentionOptions& o,
                           Tensor& scores, Tensor& probs, Tensor& y) override;
    void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dy,
                            const AttentionShape& s, const AttentionOptions& o, Tensor& dqkv) override;

    // The R-operator's ops and the gradient penalty (cpu_r_op.cpp).
    void linear_r_forward(const Tensor& x, const Tensor* rx, const Tensor& w, const Tensor& v, const Tensor* c,
                          Format compute, Tensor& rz) override;
    void linear_r_backward(const Tensor& dy, const Tensor& rdy, const Tensor& x, const Tensor* rx, const Tensor& w,
                           const Tensor& v, Format compute, Format round_through, Tensor& hw, Tensor* hb,
                           Accumulate acc, Tensor* rdx) override;
    void activation_r_forward(Activation a, const Tensor& z, const Tensor& rz, Tensor& rh) override;
    void activation_r_backward(Activation a, const Tensor& z, const Tensor& rz, const Tensor& dh, const Tensor& rdh,
                               Tensor& rdz) override;
    void layernorm_r_forward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                             const Tensor& rbeta, const Tensor& mean, const Tensor& rstd, Tensor& ry) override;
    void layernorm_r_backward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                              const Tensor& mean, const Tensor& rstd, const Tensor& dy, const Tensor& rdy, Tensor& rdx,
                              Tensor& hgamma, Tensor& hbeta, Accumulate acc) override;
    void softmax_cross_entropy_r(const Tensor& logits, const Tensor& rlogits, ScaleBy by, Tensor& rdlogits) override;
    void mse_r(const Tensor& rpred, ScaleBy by, Tensor& rdpred) override;
    void gradient_penalty(std::span<const PenaltyRef> ps, const PenaltyOptions& o) override;

    void softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, ScaleBy by,
                               Tensor& dlogits) override;

    void softmax_cross_entropy_z(const Tensor& logits, std::span<const int> labels, float z_loss, ScaleBy by,
                                 Tensor& dlogits) override;

    void mse(const Tensor& pred, const Tensor& target, ScaleBy by, Tensor& dpred) override;

    double accuracy(const Tensor& logits, std::span<const int> labels) override;

    void set_scaler(const ScalerRule& r, const ScalerState& s) override { m_rule = r; m_scaler = s; }

    void scaler_update() override { core::scaler_step(m_rule, m_scaler, stats().found_inf(), stats().scaler); }

    void set_bias_corrections(std::span<const core::BiasCorrection> t) override { m_bias.assign(t.begin(), t.end()); }
    void set_applied_steps(long long n) override { m_applied = n; }
    void count_applied_step(OnInf on_inf) override {
        m_applied += step_applied(on_inf, stats().found_inf()) ? 1 : 0;
        stats().applied_steps = m_applied;
    }
    void set_amax_histories(std::span<const core::AmaxHistoryState> states, std::span<const float> hist) override;
    void update_amax_histories() override {
        for (std::size_t i = 0; i < m_amax.size(); ++i)
            if (m_amax[i].state().active) m_amax[i].push(stats().fp8[i].amax);
    }
    void read_amax_histories(std::vector<core::AmaxHistoryState>& states, std::vector<float>& hist) override;
    void set_lr_schedule(std::span<const float> lrs) override { m_lrs.assign(lrs.begin(), lrs.end()); }
    void set_schedule_steps(long long n) override { m_schedule = n; }
    void count_schedule_step(OnInf on_inf, bool advance_on_skip) override {
        m_schedule += step_applied(on_inf, stats().found_inf()) || advance_on_skip ? 1 : 0;
        stats().schedule_steps = m_schedule;
    }

    void unscale_and_check(const Tensor& grad, ScaleBy by, Tensor& unscaled) override;

    void scale(Tensor& t, float factor) override {
        const float* v = view(t, m_a).data();
        float* out = m_c.shape(t.rows(), t.cols()).data();
        pieces(t.size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) out[i] = v[i] * factor;
        });
        encode_pieces(t.format(), out, t.size(), t.data());
    }

    void clip_to_norm(Tensor& t, double max_norm) override {
        float factor = 1.0f;
        if (stats().found_inf() || !core::clip_factor(stats().sum_squares, max_norm, factor)) return;
        scale(t, factor);
    }

    void optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                          Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf,
                          Tensor* compensation = nullptr, int param = 0) override;

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
    core::Counts& counts_at(TensorKind kind) { return at(site(kind)); }
    Sink counted();                 // the current site's counts, no bins (cpu_r_op.cpp)
    Sink counted(TensorKind kind);  // another kind's at its layer, no bins

    // Rounds FP32 results into the tensor's storage, counted (and binned) at the current site or
    // `to`.
    void store(const float* src, Tensor& dst) { store(src, dst, sink()); }
    void store(const float* src, Tensor& dst, Sink to) {
        bin_values(to.bins, src, dst.size());
        *to.counts += encode_pieces(dst.format(), src, dst.size(), dst.data());
    }

    // dst (+)= values rounded through `through`, then stored in dst's format: core::accumulate_element
    // in blocks (the same roundings, counted the same way).
    void accumulate_into(float* values, std::size_t n, Format through, Tensor& dst, Accumulate acc,
                         Sink to);

    // An FP8 GEMM operand in `scratch` (engine/core/fp8_math.hpp): per-tensor recipes leave
    // round(t · scale) there and return the scale; block leaves the MXFP8 values multiplied back by
    // their block scales and returns 1. Counted into `sink`; `record` adds amax, scale and the
    // cast's counts to the step's FP8 record (a counted site only).
    float fp8_operand(const Tensor& t, Scratch& scratch, Fp8Tensor which, MxAxis axis, Sink sink,
                      bool record);
    // The FP4 layer's cast of an operand (fp8_operand's, Fp8Gemm::fp4): blocks along rows, or down
    // columns for the column-wise copies (w's Dgrad copy, x's and dy's Wgrad copies), those of x and
    // dy after the Hadamard transform where the recipe has it, their rows zero-padded to 16 (so
    // both Wgrad operands have the same, padded depth). Returns 1: the values are decoded.
    float fp4_operand(const Tensor& t, Scratch& scratch, Fp8Tensor which, MxAxis axis, Sink sink, bool record);

    // Both backward GEMMs of an FP8 layer. dy is cast once per GEMM that needs it (MXFP8 blocks it
    // along rows for dx and down columns for dw, as TE keeps row- and column-wise copies) and
    // recorded once; w and x reuse the forward pass's scales (delayed) or amaxes (current), their
    // casts counted there.
    void fp8_backward(const Tensor& dy, const Tensor* x, const Tensor* w, Format round_through,
                      Tensor* dw, Tensor* db, Accumulate acc, Tensor* dx);

    // dx (B, in) = dy (B, out, cast) · w (out, in, cast; the forward pass counted this cast).
    // Written in the GEMM's output format first (core::gemm_output_format), then stored in dx's.
    void backward_input(CMap dyv, const Tensor& w, Format compute, Tensor& dx) {
        CMap wv = operand(w, m_b, compute, Sink{});
        product(m_c.shape(dyv.rows(), w.cols()), dyv, wv, m_panels, model(&GemmAccumulation::dgrad));
        const Format written = core::gemm_output_format(compute);
        if (written != Format::fp32 && written != dx.format())
            accumulate_into(m_c.data(), dx.size(), written, dx, Accumulate::overwrite, sink(TensorKind::grad_input));
        else
            store(m_c.data(), dx, sink(TensorKind::grad_input));
    }

    // dw (+)= dyᵀ · x through round_through; db (+)= column sums of dy as stored.
    void backward_weight(CMap dyv, const Tensor& dy, const Tensor& x, Format compute,
                         Format round_through, Tensor& dw, Tensor* db, Accumulate acc);

    // db (+)= round_through(column sums of dy as stored), core::column_sum's order, counted into `to`.
    void bias_backward(CMap dys, Tensor& db, Format round_through, Accumulate acc, Sink to);

    static void check_labels(std::span<const int> labels, int rows, int classes);

    // The model of one GEMM kind of the layer's accumulation (nullptr: none set, all exact).
    const AccumulateParams* model(AccumulateParams GemmAccumulation::*gemm) const {
        return accumulation() ? &(accumulation()->*gemm) : nullptr;
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
    Scratch m_a, m_b, m_c, m_d, m_e, m_e2, m_f;  // scratch, reused between ops
    Fp4Workspace m_fp4_ws;                         // the FP4 casts' per-piece buffers, reused
    // Attention's stages (cpu_gpt.cpp): q, k, v as cast; scores and probabilities; their gradients.
    Scratch m_q, m_k, m_v, m_s, m_p, m_ds, m_dp, m_dy, m_out, m_t, m_dq, m_dk, m_dv;
    // The attention's operands q, k, v (B·T, C each) from qkv, as the batched products read them:
    // q and k times their factors, all rounded to o.compute; counted into `to` (nullptr: not).
    void attention_operands(const Tensor& qkv, const AttentionShape& s, const AttentionOptions& o,
                            core::Counts* to);
    // The scores into m_s (B·H·T, T), every stage rounded as the forward pass rounds it (counted
    // into `to`, nullptr: not); the soft-cap's tanh output kept in m_t where there is a cap.
    void attention_scores(const AttentionShape& s, const AttentionOptions& o, core::Counts* to);
    std::vector<GemmPanels> m_panels;            // the GEMMs' packed panels, one set per lane
    std::vector<double> m_chunk_sums;  // unscale_and_check: the sum of squares by k_sum_chunk
};

}  // namespace mpx::cpu
