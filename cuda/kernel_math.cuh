// The arithmetic of every CUDA kernel as MPX_HD functions: one element, one row or one column of
// an op, written as engine/cpu_backend.cpp writes it (same expressions, same order, FP32), so a
// kernel is only the mapping of threads onto these functions. Rule: compiles with g++ too; the
// tests drive these functions on the CPU in the kernels' decomposition and compare with the CPU
// backend. Bit equality needs both sides free of FMA contraction (nvcc --fmad=false here; the
// engine's -ffp-contract, see docs/gpu.md) and holds except for tanhf/expf/logf, which differ by
// an ulp or two between CUDA's libdevice and glibc.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cuda/format_device.cuh"
#include "engine/rng.hpp"

namespace mpx::dev {

// Mirrors of the engine's enums (engine/backend.hpp pulls in Eigen, which stays out of nvcc);
// cuda_backend.cpp converts with exhaustive switches.
enum class Act : std::uint8_t { relu, gelu, tanh, none };
enum class Opt : std::uint8_t { sgd, adam, adamw };

// ---- activations (cpu_backend.cpp: gelu, gelu_grad, activation_forward/backward) --------------

MPX_HD inline float gelu(float x) {  // tanh approximation, as PyTorch's approximate='tanh'
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}
MPX_HD inline float gelu_grad(float x) {
    const float c = 0.7978845608028654f;
    const float u = c * (x + 0.044715f * x * x * x);
    const float t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}
MPX_HD inline float act_forward(Act a, float z) {
    switch (a) {
        case Act::relu: return z > 0.0f ? z : 0.0f;
        case Act::gelu: return gelu(z);
        case Act::tanh: return tanhf(z);
        case Act::none: break;
    }
    return z;
}
// dz = dh ⊙ act'(z)
MPX_HD inline float act_backward(Act a, float z, float g) {
    switch (a) {
        case Act::relu: return z > 0.0f ? g : 0.0f;
        case Act::gelu: return g * gelu_grad(z);
        case Act::tanh: {
            const float t = tanhf(z);
            return g * (1.0f - t * t);
        }
        case Act::none: break;
    }
    return g;
}

// ---- dropout: element i of the flat tensor, mask from hash_uniform(seed, i) --------------------

MPX_HD inline float dropout_value(float v, float p, float keep, std::uint64_t seed, std::size_t i) {
    return hash_uniform(seed, i) < static_cast<double>(p) ? 0.0f : v * keep;
}

// ---- layernorm, one row (x, dy: row-major (rows, D) in their formats; γ, β: (1, D)) ------------

// Sequential sums in column order, as the CPU: mean and rstd of row r.
MPX_HD inline void layernorm_row_stats(Format xf, const void* x, std::size_t row, int D,
                                       float& mean, float& rstd) {
    const std::size_t o = row * static_cast<std::size_t>(D);
    float m = 0.0f;
    for (int c = 0; c < D; ++c) m += load_value(xf, x, o + c);
    m /= static_cast<float>(D);
    float var = 0.0f;
    for (int c = 0; c < D; ++c) {
        const float v = load_value(xf, x, o + c);
        var += (v - m) * (v - m);
    }
    var /= static_cast<float>(D);
    rstd = 1.0f / sqrtf(var + 1e-5f);
    mean = m;
}
MPX_HD inline float layernorm_value(float x, float mean, float rstd, float g, float b) {
    return (x - mean) * rstd * g + b;
}

// Backward, row r: the two row sums, then dx per element.
MPX_HD inline void layernorm_row_sums(Format xf, const void* x, Format gf, const void* gamma,
                                      Format dyf, const void* dy, std::size_t row, int D,
                                      float mean, float rstd, float& sum_dyg, float& sum_dyg_xhat) {
    const std::size_t o = row * static_cast<std::size_t>(D);
    sum_dyg = 0.0f;
    sum_dyg_xhat = 0.0f;
    for (int c = 0; c < D; ++c) {
        const float xhat = (load_value(xf, x, o + c) - mean) * rstd;
        const float dyg = load_value(dyf, dy, o + c) * load_value(gf, gamma, c);
        sum_dyg += dyg;
        sum_dyg_xhat += dyg * xhat;
    }
}
MPX_HD inline float layernorm_dx(float x, float dy, float g, float mean, float rstd, float inv_d,
                                 float sum_dyg, float sum_dyg_xhat) {
    const float xhat = (x - mean) * rstd;
    const float dyg = dy * g;
    return rstd * (dyg - inv_d * sum_dyg - xhat * inv_d * sum_dyg_xhat);
}
// dγ, dβ of column c: sums over rows in row order, from 0 (the CPU's RowMatrix::Zero).
MPX_HD inline void layernorm_column_sums(Format xf, const void* x, Format dyf, const void* dy,
                                         const float* mean, const float* rstd, int rows, int D,
                                         int c, float& dgamma, float& dbeta) {
    float dg = 0.0f, db = 0.0f;
    for (int r = 0; r < rows; ++r) {
        const std::size_t i = static_cast<std::size_t>(r) * D + c;
        const float xhat = (load_value(xf, x, i) - mean[r]) * rstd[r];
        const float d = load_value(dyf, dy, i);
        dg += d * xhat;
        db += d;
    }
    dgamma = dg;
    dbeta = db;
}

// ---- bias gradient: column sums of dy (rows, cols), in the CPU's order -------------------------

// The CPU writes `dy.colwise().sum()` with Eigen 3.4. Columns inside Eigen's packet-vectorised part
// (the first `pairwise_cols`, a multiple of its packet size) are summed as r0 + ((r1+r2)+(r3+r4)) +
// ... + tail; the remaining columns strictly in row order. cuda_backend.cpp passes the split Eigen
// uses in this build, so the bias gradient equals the CPU's bit for bit.
MPX_HD inline float column_sum(Format f, const void* src, int rows, int cols, int c,
                               int pairwise_cols) {
    if (rows == 0) return 0.0f;
    const auto at = [&](int r) {
        return load_value(f, src, static_cast<std::size_t>(r) * cols + c);
    };
    float s = at(0);
    int r = 1;
    if (c < pairwise_cols) {
        const int rows4 = (rows - 1) & ~3;
        for (; r < rows4; r += 4) s = s + ((at(r) + at(r + 1)) + (at(r + 2) + at(r + 3)));
    }
    for (; r < rows; ++r) s = s + at(r);
    return s;
}

// ---- losses ------------------------------------------------------------------------------------

// Softmax cross-entropy of row r: writes the scaled gradient into dlogits (counted) and returns the
// row's loss lse − logit[label] (the CPU adds these in double, in row order).
MPX_HD inline float softmax_xent_row(Format lf, const void* logits, int C, std::size_t row,
                                     int label, float inv_b, float scale, Format df, void* dlogits,
                                     const TallyEdges& edges, Counts& counts) {
    const std::size_t o = row * static_cast<std::size_t>(C);
    float mx = load_value(lf, logits, o);
    for (int c = 1; c < C; ++c) {
        const float v = load_value(lf, logits, o + c);
        mx = mx < v ? v : mx;  // std::max(mx, v), NaN included
    }
    float sum = 0.0f;
    for (int c = 0; c < C; ++c) sum += expf(load_value(lf, logits, o + c) - mx);
    const float lse = mx + logf(sum);
    for (int c = 0; c < C; ++c) {
        const float prob = expf(load_value(lf, logits, o + c) - lse);
        const float grad = (prob - (c == label ? 1.0f : 0.0f)) * inv_b;
        const float v = grad * scale;
        tally(edges, v, store_value(df, dlogits, o + c, v), counts);
    }
    return lse - load_value(lf, logits, o + label);
}

// MSE, element i: the squared error (summed in double by the caller, in order) and the gradient.
MPX_HD inline float mse_grad(float pred, float target, float n, float scale, float& squared) {
    const float d = pred - target;
    squared = d * d;
    return (2.0f * d / n) * scale;
}

// First index of the row's maximum (Eigen's maxCoeff: strict >, so NaN never wins a comparison).
MPX_HD inline int argmax_row(Format f, const void* logits, int C, std::size_t row) {
    const std::size_t o = row * static_cast<std::size_t>(C);
    float best = load_value(f, logits, o);
    int arg = 0;
    for (int c = 1; c < C; ++c) {
        const float v = load_value(f, logits, o + c);
        if (v > best) {
            best = v;
            arg = c;
        }
    }
    return arg;
}

// ---- weight-gradient write-back (cpu_backend.cpp: accumulate_into), element i -------------------

// dst[i] (+)= v rounded through `through`, stored in dst's format; both roundings counted, the
// values' non-zero count once.
MPX_HD inline void accumulate_element(float v, Format through, bool add, Format df, void* dst,
                                      std::size_t i, Counts& counts) {
    const bool through_first = through != Format::fp32 && through != df;
    if (through_first) {
        const float r = round_value(through, v);
        tally(tally_edges(through), v, r, counts);
        v = r;
    }
    if (add) v = v + load_value(df, dst, i);
    tally(tally_edges(df), v, store_value(df, dst, i, v), counts, !through_first);
}

// ---- optimizer, element i (cpu_backend.cpp: optimizer_update) ----------------------------------

// Scalars the host derives once per step with the CPU's own expressions (powf there, so the bias
// corrections are the CPU's bits; CUDA's powf may differ by an ulp).
struct OptConsts {
    Opt kind = Opt::adam;
    float lr = 0.0f, momentum = 0.0f, beta1 = 0.0f, beta2 = 0.0f, eps = 0.0f, weight_decay = 0.0f;
    float step_size = 0.0f;  // Adam: lr / (1 − β1^t)
    float bc2_sqrt = 0.0f;   // Adam: √(1 − β2^t)
};

// Updates w, m1 (and m2 for Adam) in place from the gradient g. Returns whether the optimizer
// computed a non-zero change for this weight (NaN counts), whatever rounding later made of it.
MPX_HD inline bool optimizer_element(const OptConsts& s, float grad, float& w, float& m1,
                                     float& m2) {
    if (s.kind == Opt::sgd) {  // PyTorch SGD: g += wd·w; buf = momentum·buf + g; w −= lr·buf
        const float g = grad + s.weight_decay * w;
        m1 = s.momentum * m1 + g;
        const float delta = s.lr * m1;
        w -= delta;
        return delta != 0.0f;
    }
    float g = grad;
    bool decayed = false;
    if (s.kind == Opt::adamw) {
        decayed = w != 0.0f && s.lr * s.weight_decay != 0.0f;
        w *= 1.0f - s.lr * s.weight_decay;
    } else {
        g += s.weight_decay * w;
    }
    m1 = s.beta1 * m1 + (1.0f - s.beta1) * g;
    m2 = s.beta2 * m2 + (1.0f - s.beta2) * g * g;
    const float denom = sqrtf(m2) / s.bc2_sqrt + s.eps;
    const float delta = s.step_size * (m1 / denom);
    w -= delta;
    return decayed || delta != 0.0f;
}

// The whole write-back of element i: update, master copy, working copy (counted), lost updates.
// `moved`: the optimizer computed a non-zero change; it is lost when the stored working copy
// (FP32 too: an update below half its ulp) does not change.
MPX_HD inline void optimizer_write_back(bool moved, float w, float* master, Format wf, void* working,
                                        std::size_t i, const TallyEdges& edges, Counts& counts) {
    if (master) master[i] = w;
    const float before = load_value(wf, working, i);
    const float after = store_value(wf, working, i, w);
    tally(edges, w, after, counts);
    if (moved) {
        ++counts.changed;
        if (after == before) ++counts.lost;
    }
}

}  // namespace mpx::dev
