// The arithmetic of the GPT's causal self-attention and embeddings, one row at a time, shared by the
// CPU backend and (later) the CUDA kernels, as op_math.hpp is. Rule: every value a framework stores
// is rounded where it stores it — the callers round between these steps into the run's formats
// (scores after q·kᵀ, after the scale, after each op of the soft-cap); these functions only compute
// in FP32 in a fixed order (REFERENCE.md, "Transformers in mixed precision").
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/core/host_device.hpp"
#include "engine/core/op_math.hpp"

namespace mpx {

// Where 1/√d meets the scores (REFERENCE.md): after q·kᵀ (llm.c, nanoGPT's manual attention),
// before it on q ((q/√d)·kᵀ), or split, d^-¼ on each of q and k (PyTorch's math attention).
enum class AttentionScale : std::uint8_t { after, before, split };

namespace core {

// The factors q, k and the scores are multiplied by (1: not multiplied, nothing rounded there).
// Computed in double and rounded to FP32 once, as a Python scalar reaches a kernel.
struct AttentionFactors {
    float q = 1.0f, k = 1.0f, scores = 1.0f;
};
MPX_HOST_DEVICE inline AttentionFactors attention_factors(AttentionScale where, int head_size) {
    const double s = 1.0 / sqrt(static_cast<double>(head_size));
    AttentionFactors f;
    if (where == AttentionScale::after) f.scores = static_cast<float>(s);
    else if (where == AttentionScale::before) f.q = static_cast<float>(s);
    else f.q = f.k = static_cast<float>(sqrt(s));
    return f;
}

// Σ_c a(c)·b(c) over n in c order, FP32 (one element of a batched product: tensor cores multiply
// exactly and add in FP32; the operands arrive already cast).
template <class A, class B>
MPX_HOST_DEVICE float dot(A a, B b, int n) {
    float s = 0.0f;
    for (int c = 0; c < n; ++c) s += a(c) * b(c);
    return s;
}

// Causal softmax of one row of scores s (n): positions 0..i are seen, the rest masked (−inf, so
// their probability is exactly 0). FP32 throughout: max, exp(x − max), the sum in order, then the
// division. Non-finite scores propagate as in PyTorch: a +inf gives NaN (inf − inf), a row whose
// seen scores are all −inf gives NaN (0/0): an FP32 softmax does not rescue an inf input.
MPX_HOST_DEVICE inline void causal_softmax_row(const float* s, int i, int n, float* p) {
    float m = -INFINITY;
    for (int j = 0; j <= i; ++j) m = s[j] > m ? s[j] : m;
    float sum = 0.0f;
    for (int j = 0; j <= i; ++j) {
        p[j] = expf(s[j] - m);
        sum += p[j];
    }
    for (int j = 0; j <= i; ++j) p[j] = p[j] / sum;
    for (int j = i + 1; j < n; ++j) p[j] = 0.0f;
}

// Softmax backward of one causal row: ds_j = p_j (dp_j − Σ_k p_k dp_k), the sum over the seen
// positions in order; masked positions get 0.
MPX_HOST_DEVICE inline void causal_softmax_backward_row(const float* p, const float* dp, int i, int n, float* ds) {
    float dot_pd = 0.0f;
    for (int k = 0; k <= i; ++k) dot_pd += p[k] * dp[k];
    for (int j = 0; j <= i; ++j) ds[j] = p[j] * (dp[j] - dot_pd);
    for (int j = i + 1; j < n; ++j) ds[j] = 0.0f;
}

// Gemma's soft-cap c·tanh(x/c) in its three framework ops (each result rounded by the caller): u =
// x / c, t = tanh(u), y = t · c; backward from the stored t: du = dy·c, dt→du = du·(1 − t²), dx =
// that / c.
MPX_HOST_DEVICE inline float softcap_divide(float x, float c) { return x / c; }
MPX_HOST_DEVICE inline float softcap_tanh(float u) { return tanh_f32(u); }
MPX_HOST_DEVICE inline float softcap_multiply(float t, float c) { return t * c; }
MPX_HOST_DEVICE inline float tanh_backward(float g, float t) { return g * (1.0f - t * t); }

}  // namespace core
}  // namespace mpx
