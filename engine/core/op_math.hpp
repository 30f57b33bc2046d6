// The arithmetic of every op, one element, row or column at a time, shared by the CPU backend and
// the CUDA kernels: a kernel is only a mapping of threads onto these functions, the CPU backend a
// loop over them. Values come in through small accessors (`x(c)` gives element c of the row as an
// FP32 value, whatever the storage), so the same expressions run on decoded CPU blocks and on
// device buffers. Rule (the bit-exact contract, docs/gpu.md): both backends build without FMA
// contraction (-ffp-contract=off, nvcc --fmad=false) and use these expressions in this order, so
// they agree bit for bit everywhere except (1) expf/logf, whose libraries differ by an ulp or
// two (tanh is the engine's own, tanh_f32), and (2) the GEMMs' FP32 accumulation order (Eigen vs cuBLAS; REFERENCE.md).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/core/format_core.hpp"
#include "engine/core/host_device.hpp"
#include "engine/core/rng.hpp"

namespace mpx {

enum class Activation : std::uint8_t { relu, gelu, tanh, none };
enum class OptimizerKind : std::uint8_t { sgd, adam, adamw };
// train.penalty: PyTorch's gradient penalty ‖g‖ (its AMP examples) or ‖g‖² (engine/core/r_op.hpp).
enum class PenaltyKind : std::uint8_t { norm, squared_norm };
// Where optimizer_update takes a step's numbers from (engine/compute/backend.hpp): given, OptimizerStep::t
// and lr; backend, the backend's own counts: Adam's t is its count of applied steps
// (set_applied_steps, count_applied_step) + 1, with that t's bias corrections from the table the
// host gave (set_bias_corrections), and the learning rate is the host's schedule table
// (set_lr_schedule) at its count of schedule steps (set_schedule_steps, count_schedule_step).
enum class StepCount : std::uint8_t { given, backend };

namespace core {

// ---- tanh ------------------------------------------------------------------------------------------

// tanh in FP32 from +, ×, ÷ and bit operations only, branch-free: the same bits on the CPU, where its
// loops vectorise (glibc's scalar tanhf was 40 % of a GPT step: GELU calls it twice an element), and
// on the GPU (no library's tanhf between them). Within 2 ulp of the exact tanh (tested over every
// binade against double precision, tests/test_format.cpp); odd; ±inf → ±1, NaN → NaN.
//   |x| < 0.5: x·P(x²), the Taylor series through x^17 (the next term is below 1e-8 relative there);
//   else: 1 − 2/(e^{2|x|} + 1), e^y = 2^n · e^r with n = round(y/ln 2), r = y − n·ln 2 (Cody–Waite
//   split), e^r by its series through r^8; |x| is capped at 9, where tanh rounds to 1.
MPX_HOST_DEVICE inline float tanh_f32(float x) {
    const float a = fabsf(x);
    const float z = a * a;
    float p = 6404582.0f / 10854718875.0f;
    p = p * z + (-929569.0f / 638512875.0f);
    p = p * z + (21844.0f / 6081075.0f);
    p = p * z + (-1382.0f / 155925.0f);
    p = p * z + (62.0f / 2835.0f);
    p = p * z + (-17.0f / 315.0f);
    p = p * z + (2.0f / 15.0f);
    p = p * z + (-1.0f / 3.0f);
    const float small = a + a * (z * p);
    const float y = 2.0f * (a < 9.0f ? a : 9.0f);
    // round(y / ln 2) by the 1.5·2^23 trick (floorf would keep GCC from vectorising the loop)
    const float n = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (y - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
    float e = 1.0f / 40320.0f;
    e = e * r + 1.0f / 5040.0f;
    e = e * r + 1.0f / 720.0f;
    e = e * r + 1.0f / 120.0f;
    e = e * r + 1.0f / 24.0f;
    e = e * r + 1.0f / 6.0f;
    e = e * r + 0.5f;
    e = e * r + 1.0f;
    e = e * r + 1.0f;
    e = e * float_of(static_cast<std::uint32_t>(static_cast<int>(n) + 127) << 23);
    const float large = 1.0f - 2.0f / (e + 1.0f);
    const float t = a < 0.5f ? small : large;
    const float signed_t = float_of(bits_of(t) | (bits_of(x) & 0x80000000u));  // x's sign, −0 included
    return x != x ? x : signed_t;
}

// ---- activations ---------------------------------------------------------------------------------

MPX_HOST_DEVICE inline float gelu(float x) {  // tanh approximation, as PyTorch's approximate='tanh'
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanh_f32(c * (x + 0.044715f * x * x * x)));
}
MPX_HOST_DEVICE inline float gelu_grad(float x) {
    const float c = 0.7978845608028654f;
    const float u = c * (x + 0.044715f * x * x * x);
    const float t = tanh_f32(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}
// The activation as a compile-time choice (CPU loops vectorise over it), and at run time.
template <Activation A>
MPX_HOST_DEVICE float act_forward(float z) {
    if constexpr (A == Activation::relu) return z > 0.0f ? z : 0.0f;
    else if constexpr (A == Activation::gelu) return gelu(z);
    else if constexpr (A == Activation::tanh) return tanh_f32(z);
    else return z;
}
// dz = dh ⊙ act'(z)
template <Activation A>
MPX_HOST_DEVICE float act_backward(float z, float g) {
    if constexpr (A == Activation::relu) return z > 0.0f ? g : 0.0f;
    else if constexpr (A == Activation::gelu) return g * gelu_grad(z);
    else if constexpr (A == Activation::tanh) {
        const float t = tanh_f32(z);
        return g * (1.0f - t * t);
    } else return g;
}
// Calls f(std::integral_constant<Activation, a>{}): one switch turns the run-time value into a
// template argument.
template <class F>
MPX_HOST_DEVICE decltype(auto) with_activation(Activation a, F&& f) {
    switch (a) {
        case Activation::relu: return f(std::integral_constant<Activation, Activation::relu>{});
        case Activation::gelu: return f(std::integral_constant<Activation, Activation::gelu>{});
        case Activation::tanh: return f(std::integral_constant<Activation, Activation::tanh>{});
        case Activation::none: break;
    }
    return f(std::integral_constant<Activation, Activation::none>{});
}
MPX_HOST_DEVICE inline float act_forward(Activation a, float z) {
    return with_activation(a, [&](auto k) { return act_forward<decltype(k)::value>(z); });
}
MPX_HOST_DEVICE inline float act_backward(Activation a, float z, float g) {
    return with_activation(a, [&](auto k) { return act_backward<decltype(k)::value>(z, g); });
}

// ---- the bias of a linear layer -------------------------------------------------------------------

// The format a GEMM adds its bias in: autocast casts the bias with the other operands of an FP16 or
// BF16 GEMM (F.linear becomes addmm on the cast bias, and cuBLASLt's bias epilogue reads it in that
// format); TF32 and FP32 GEMMs add it as stored. The value added: round_value(bias_format, bias).
MPX_HOST_DEVICE inline Format bias_format(Format compute) {
    return compute == Format::fp16 || compute == Format::bf16 ? compute : Format::fp32;
}

// The format an FP16 or BF16 GEMM writes its result in (autocast's mm/addmm return the low dtype),
// before it is stored wherever the caller keeps it: the gradient dx a low-precision layer passes
// down is rounded to it even where the layer below holds its gradients in FP32 (a selective run:
// PyTorch's cast back to FP32 receives the low dtype's gradient). TF32 and FP32 GEMMs write FP32.
MPX_HOST_DEVICE inline Format gemm_output_format(Format compute) { return bias_format(compute); }

// ---- dropout: element i of the flat tensor, mask from hash_uniform(seed, i) ----------------------

MPX_HOST_DEVICE inline float dropout_keep_scale(float p) { return 1.0f / (1.0f - p); }
// Whether element i of a mask with stream `seed` is kept (the PyTorch export writes these masks).
MPX_HOST_DEVICE inline bool dropout_keeps(float p, std::uint64_t seed, std::size_t i) {
    return !(hash_uniform(seed, i) < static_cast<double>(p));
}
MPX_HOST_DEVICE inline float dropout_value(float v, float p, float keep, std::uint64_t seed, std::size_t i) {
    return dropout_keeps(p, seed, i) ? v * keep : 0.0f;
}

// ---- layernorm over rows of width D (γ, β: (1, D)); statistics in FP32, sequential sums -----------

constexpr float k_layernorm_eps = 1e-5f;

template <class X>
MPX_HOST_DEVICE void layernorm_row_stats(X x, int D, float& mean, float& rstd) {
    float m = 0.0f;
    for (int c = 0; c < D; ++c) m += x(c);
    m /= static_cast<float>(D);
    float var = 0.0f;
    for (int c = 0; c < D; ++c) var += (x(c) - m) * (x(c) - m);
    var /= static_cast<float>(D);
    rstd = 1.0f / sqrtf(var + k_layernorm_eps);
    mean = m;
}
// The same statistics with every op rounded into s (norm.stats = storage: a kernel whose accumulator
// is the storage format; pytorch#92164): each partial sum of the mean, the mean (sum / D), each
// deviation x − mean, its square, each partial sum of the variance, the variance (sum / D), var + ε,
// its square root and 1/that, each computed in FP32 from the rounded operands and rounded into s,
// in that order. x is read as stored (an FP32 residual is not cast first: the accumulator is what
// rounds). A BF16 sum of ones stalls at 256 (256 + 1 is a tie, to even), so a row's mean stops
// growing there; an FP16 square past 65504 makes the variance inf and rstd 0. With s = FP32 the
// values are layernorm_row_stats' bit for bit.
// The three values a kernel keeps (mean, variance, rstd) are tallied into c (their value before
// the last rounding as `in`): a partial sum that overflowed shows as a non-finite mean or variance.
template <class X>
MPX_HOST_DEVICE void layernorm_row_stats_in(Format s, X x, int D, float& mean, float& rstd, Counts& c) {
    const TallyEdges e = tally_edges(s);
    float m = 0.0f;
    for (int k = 0; k < D; ++k) m = round_value(s, m + x(k));
    const float m_in = m / static_cast<float>(D);
    m = round_value(s, m_in);
    tally(e, m_in, m, c);
    float v = 0.0f;
    for (int k = 0; k < D; ++k) {
        const float d = round_value(s, x(k) - m);
        v = round_value(s, v + round_value(s, d * d));
    }
    const float v_in = v / static_cast<float>(D);
    v = round_value(s, v_in);
    tally(e, v_in, v, c);
    const float r_in = 1.0f / round_value(s, sqrtf(round_value(s, v + k_layernorm_eps)));
    rstd = round_value(s, r_in);
    tally(e, r_in, rstd, c);
    mean = m;
}
MPX_HOST_DEVICE inline float layernorm_value(float x, float mean, float rstd, float g, float b) {
    return (x - mean) * rstd * g + b;
}
// Backward, one row: Σ dy·γ and Σ dy·γ·x̂, then dx per element.
template <class X, class G, class DY>
MPX_HOST_DEVICE void layernorm_row_sums(X x, G g, DY dy, int D, float mean, float rstd, float& sum_dyg,
                               float& sum_dyg_xhat) {
    float s1 = 0.0f, s2 = 0.0f;
    for (int c = 0; c < D; ++c) {
        const float xhat = (x(c) - mean) * rstd;
        const float dyg = dy(c) * g(c);
        s1 += dyg;
        s2 += dyg * xhat;
    }
    sum_dyg = s1;
    sum_dyg_xhat = s2;
}
MPX_HOST_DEVICE inline float layernorm_dx(float x, float dy, float g, float mean, float rstd, int D,
                                 float sum_dyg, float sum_dyg_xhat) {
    const float inv_d = 1.0f / static_cast<float>(D);
    const float xhat = (x - mean) * rstd;
    const float dyg = dy * g;
    return rstd * (dyg - inv_d * sum_dyg - xhat * inv_d * sum_dyg_xhat);
}
// dγ, dβ of one column: sums over the rows in row order, from 0. x(r), dy(r): the column's values.
template <class X, class DY>
MPX_HOST_DEVICE void layernorm_column_sums(X x, DY dy, const float* mean, const float* rstd, int rows,
                                  float& dgamma, float& dbeta) {
    float dg = 0.0f, db = 0.0f;
    for (int r = 0; r < rows; ++r) {
        const float xhat = (x(r) - mean[r]) * rstd[r];
        const float d = dy(r);
        dg += d * xhat;
        db += d;
    }
    dgamma = dg;
    dbeta = db;
}

// ---- bias gradient: the sum of one column of dy over its rows, in row order ----------------------

template <class At>
MPX_HOST_DEVICE float column_sum(At at, int rows) {
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += at(r);
    return s;
}

// ---- losses --------------------------------------------------------------------------------------

// Softmax cross-entropy of one row of C logits (logit(c)): puts the scaled gradient of each logit
// (put(c, value)) and returns the row's loss lse − logit[label]. The loss is taken before any
// gradient is put, so the gradient may overwrite the logits in place.
template <class L, class Put>
MPX_HOST_DEVICE float softmax_xent_row(L logit, int C, int label, float inv_b, float scale, Put put) {
    float mx = logit(0);
    for (int c = 1; c < C; ++c) {
        const float v = logit(c);
        mx = mx < v ? v : mx;  // std::max(mx, v), NaN included
    }
    float sum = 0.0f;
    for (int c = 0; c < C; ++c) sum += expf(logit(c) - mx);
    const float lse = mx + logf(sum);
    const float loss = lse - logit(label);
    for (int c = 0; c < C; ++c) {
        const float prob = expf(logit(c) - lse);
        const float grad = (prob - (c == label ? 1.0f : 0.0f)) * inv_b;
        put(c, grad * scale);
    }
    return loss;
}

// Softmax cross-entropy plus PaLM's z-loss λ·(log Z)² on one row (train.z_loss; Chowdhery et al.
// 2022, §5; Wortsman et al. arXiv 2309.14322), Z = Σ exp(logit), log Z = lse: returns the row's
// loss (lse − logit[label]) + λ·lse·lse and puts ((p_c − [c = label]) + 2λ·lse·p_c)·inv_b·scale,
// each in FP32 in that order (the two losses' gradients summed before the one rounding into the
// logits' gradient, as autograd sums them on PyTorch's FP32 logits). λ = 0 is softmax_xent_row.
template <class L, class Put>
MPX_HOST_DEVICE float softmax_xent_z_row(L logit, int C, int label, float z_loss, float inv_b, float scale, Put put) {
    float mx = logit(0);
    for (int c = 1; c < C; ++c) {
        const float v = logit(c);
        mx = mx < v ? v : mx;
    }
    float sum = 0.0f;
    for (int c = 0; c < C; ++c) sum += expf(logit(c) - mx);
    const float lse = mx + logf(sum);
    const float loss = (lse - logit(label)) + z_loss * lse * lse;
    const float z = 2.0f * z_loss * lse;
    for (int c = 0; c < C; ++c) {
        const float prob = expf(logit(c) - lse);
        const float grad = ((prob - (c == label ? 1.0f : 0.0f)) + z * prob) * inv_b;
        put(c, grad * scale);
    }
    return loss;
}

// MSE, element i: the squared error (summed in double by the caller, in order) and the gradient.
MPX_HOST_DEVICE inline float mse_grad(float pred, float target, float n, float scale, float& squared) {
    const float d = pred - target;
    squared = d * d;
    return (2.0f * d / n) * scale;
}

// A loss op's mean over its rows (or elements), summed in double in order, as a float: the value
// PyTorch's float loss has. The step's loss adds these per micro-batch.
MPX_HOST_DEVICE inline double mean_loss(double total, double count) {
    return static_cast<double>(static_cast<float>(total / count));
}

// First index of the row's maximum (strict >, so NaN never wins a comparison).
template <class L>
MPX_HOST_DEVICE int argmax_row(L logit, int C) {
    float best = logit(0);
    int arg = 0;
    for (int c = 1; c < C; ++c) {
        const float v = logit(c);
        if (v > best) {
            best = v;
            arg = c;
        }
    }
    return arg;
}

// ---- weight-gradient write-back, element i --------------------------------------------------------

// dst[i] (+)= v rounded through `through` (the format the GEMM writes), stored in dst's format; both
// roundings counted, the values' non-zero count once. The CPU backend does the same in blocks.
MPX_HOST_DEVICE inline void accumulate_element(float v, Format through, bool add, Format df, void* dst,
                                      std::size_t i, Counts& counts) {
    const bool through_first = through != Format::fp32 && through != df;
    if (through_first) {
        const float r = round_value(through, v);
        tally(tally_edges(through), v, r, counts);
        v = r;
    }
    if (add) v = v + load_value(df, dst, i);
    tally(tally_edges(df), v, store_value(df, dst, i, v), counts,
          through_first ? CountInputs::no : CountInputs::yes);
}

// ---- unscale, clip and the optimizer --------------------------------------------------------------

// Sum of squares of the unscaled gradients: in double, in element order within chunks of
// k_sum_chunk, the chunk sums added in chunk order (a GPU sums each chunk in one thread).
constexpr std::size_t k_sum_chunk = 1024;

// PyTorch clip_grad_norm_: coefficient max_norm / (norm + 1e-6), applied when below 1 and the
// norm is finite. Returns whether to scale, and the factor (a double rounded once to FP32).
MPX_HOST_DEVICE inline bool clip_factor(double sum_squares, double max_norm, float& factor) {
    const double norm = sqrt(sum_squares);
    if (!(max_norm > 0.0) || !(norm == norm) || norm > 1.7976931348623157e308) return false;
    const double coef = max_norm / (norm + 1e-6);
    factor = static_cast<float>(coef);
    return coef < 1.0;
}

// The per-step scalars of the element arithmetic, as PyTorch's CPU kernels receive them
// (REFERENCE.md, "PyTorch's Adam arithmetic"): torch.optim holds lr, the betas, eps and the weight
// decay as Python doubles, derives 1 − β, the bias corrections, the step size and AdamW's
// 1 − lr·wd in double, and each kernel casts its scalar to FP32 (the opmath type) once. So every
// float here is one rounding of a double expression, formed on the host (optimizer_consts) or,
// where it depends on the backend's counts, by take_backend_counts from the host's tables.
struct OptConsts {
    OptimizerKind kind = OptimizerKind::adam;
    float lr = 0.0f, momentum = 0.0f, beta1 = 0.0f, beta2 = 0.0f, eps = 0.0f, weight_decay = 0.0f;  // fl(x)
    float one_minus_beta1 = 0.0f, one_minus_beta2 = 0.0f;  // fl(1 − β) of the doubles: alpha, value
    double weight_decay_exact = 0.0;  // the double AdamW's 1 − lr·wd is formed from
    float decay = 1.0f;      // AdamW: fl(1 − lr·wd), lr the FP32 schedule value as a double
    float step_size = 0.0f;  // Adam: fl(lr / (1 − β1^t))
    float bc2_sqrt = 0.0f;   // Adam: fl(√(1 − β2^t))
};

// Adam's bias corrections for one step number t, as torch.optim forms them in double:
// 1 − β1^t (kept in double: the step size lr / bc1 is divided in double) and √(1 − β2^t) (used
// only as the FP32 divisor: stored rounded). Computed on the host (bias_correction in backend.hpp,
// std::pow in double as Python's `**`), applied where the optimizer runs.
struct BiasCorrection {
    double bc1 = 1.0;
    float bc2_sqrt = 1.0f;
};
// The scalars that depend on the learning rate (its FP32 schedule value): AdamW's decay factor and
// (Adam) the step size of the bias correction b.
MPX_HOST_DEVICE inline void set_learning_rate(OptConsts& k, float lr) {
    k.lr = lr;
    k.decay = static_cast<float>(1.0 - static_cast<double>(lr) * k.weight_decay_exact);
}
MPX_HOST_DEVICE inline void apply_bias_correction(OptConsts& k, BiasCorrection b) {
    k.step_size = static_cast<float>(static_cast<double>(k.lr) / b.bc1);
    k.bc2_sqrt = b.bc2_sqrt;
}

// The host's tables that a StepCount::backend update reads at the backend's counts: the learning
// rate after k schedule steps (lrs[k]) and Adam's bias corrections for t (bias[t − 1]).
struct StepTables {
    const float* lrs = nullptr;
    long long lrs_size = 0;
    const BiasCorrection* bias = nullptr;
    long long bias_size = 0;
};
// StepCount::backend: k's learning rate from the schedule table at `schedule` steps, then (Adam)
// the bias corrections of t = applied + 1. False, k unchanged, when a count is beyond its table.
MPX_HOST_DEVICE inline bool take_backend_counts(OptConsts& k, const StepTables& t, long long schedule,
                                       long long applied) {
    if (schedule < 0 || schedule >= t.lrs_size) return false;
    const bool adam = k.kind != OptimizerKind::sgd;
    if (adam && (applied < 0 || applied >= t.bias_size)) return false;
    set_learning_rate(k, t.lrs[schedule]);
    if (adam) apply_bias_correction(k, t.bias[applied]);
    return true;
}

// Updates w, m1 (and m2 for Adam) in place from the gradient g. Returns whether the optimizer
// computed a non-zero change for this weight (NaN counts), whatever rounding later made of it, and
// sets `update` to that change as computed in FP32 before it is added to w (AdamW: the decay's
// change plus the step's), which the update-to-ulp histogram compares with w's ulp.
// K is s.kind as a template argument (CPU loops vectorise over it).
//
// Adam and AdamW are torch.optim's `_single_tensor_adam(w)` (torch 1.13; `_multi_tensor_adam` runs
// the same kernels per tensor), op by op, each op one FP32 rounding except where PyTorch's CPU
// kernel fuses (its AVX2 build: `add_(x, alpha)` is vec::fmadd, and GCC contracts addcmul's
// `self + value·t1·t2` to fma(value·t1, t2, self), the scalar tail included; measured against
// torch on 10^5 elements, every bit). fmaf is one IEEE rounding on both backends, so this file's
// no-contraction rule still gives the CPU and the GPU the same bits.
//   AdamW  p.mul_(1 − lr·wd)                   w = w · decay
//   Adam   g = g.add(p, alpha=wd)  (wd ≠ 0)     g = fma(w, wd, g)
//          m.mul_(β1).add_(g, alpha=1 − β1)     m = fma(g, 1 − β1, m · β1)
//          v.mul_(β2).addcmul_(g, g, 1 − β2)    v = fma((1 − β2) · g, g, v · β2)
//          denom = (v.sqrt() / √bc2).add_(eps)  d = √v / √bc2 + eps
//          p.addcdiv_(m, denom, −step_size)     w = w + ((−step_size) · m) / d
// SGD (dampening 0, no Nesterov) keeps mpx's expressions: g + wd·w, momentum·buf + g, w − lr·buf,
// each product rounded apart.
template <OptimizerKind K>
MPX_HOST_DEVICE bool optimizer_element(const OptConsts& s, float grad, float& w, float& m1, float& m2,
                              float& update) {
    if constexpr (K == OptimizerKind::sgd) {  // PyTorch SGD: g += wd·w; buf = momentum·buf + g;
        const float g = grad + s.weight_decay * w;  // w −= lr·buf
        m1 = s.momentum * m1 + g;
        const float delta = s.lr * m1;
        w -= delta;
        update = -delta;
        return delta != 0.0f;
    }
    float g = grad;
    bool decayed = false;
    float decay = 0.0f;
    if constexpr (K == OptimizerKind::adamw) {
        decayed = w != 0.0f && s.decay != 1.0f;
        const float before = w;
        w *= s.decay;
        decay = w - before;
    } else {
        if (s.weight_decay != 0.0f) g = fmaf(w, s.weight_decay, g);
    }
    m1 = fmaf(g, s.one_minus_beta1, m1 * s.beta1);
    m2 = fmaf(s.one_minus_beta2 * g, g, m2 * s.beta2);
    const float denom = sqrtf(m2) / s.bc2_sqrt + s.eps;
    const float step = (-s.step_size * m1) / denom;
    w += step;
    update = decay + step;
    return decayed || step != 0.0f;
}
template <OptimizerKind K>
MPX_HOST_DEVICE bool optimizer_element(const OptConsts& s, float grad, float& w, float& m1, float& m2) {
    float update;
    return optimizer_element<K>(s, grad, w, m1, m2, update);
}
template <class F>
MPX_HOST_DEVICE decltype(auto) with_optimizer(OptimizerKind k, F&& f) {
    switch (k) {
        case OptimizerKind::sgd: return f(std::integral_constant<OptimizerKind, OptimizerKind::sgd>{});
        case OptimizerKind::adam: break;
        case OptimizerKind::adamw:
            return f(std::integral_constant<OptimizerKind, OptimizerKind::adamw>{});
    }
    return f(std::integral_constant<OptimizerKind, OptimizerKind::adam>{});
}
MPX_HOST_DEVICE inline bool optimizer_element(const OptConsts& s, float grad, float& w, float& m1,
                                     float& m2, float& update) {
    return with_optimizer(s.kind, [&](auto k) {
        return optimizer_element<decltype(k)::value>(s, grad, w, m1, m2, update);
    });
}

// The write-back's count for one weight: `moved` (the optimizer computed a non-zero change) is lost
// when the stored working copy (FP32 too: an update below half its ulp) did not change. Rounding to
// nearest keeps nothing of what it loses: each lost update is also a small one, none kept.
MPX_HOST_DEVICE inline void count_update(bool moved, float before, float after, Counts& counts) {
    if (moved) {
        ++counts.changed;
        if (after == before) {
            ++counts.lost;
            ++counts.small;
        }
    }
}
// The same for a stochastic or Kahan write-back: `nearest` is what rounding to nearest would have
// stored, `traced` whether anything stored (the weight, or the compensation) changed. An update is
// small when nearest rounding would lose it, kept when small and traced, lost when not traced.
MPX_HOST_DEVICE inline void count_cured_update(bool moved, float before, float nearest, bool traced,
                                               Counts& counts) {
    if (!moved) return;
    ++counts.changed;
    const bool small = nearest == before;
    counts.small += small;
    counts.kept += small && traced;
    counts.lost += !traced;
}

}  // namespace core
}  // namespace mpx
