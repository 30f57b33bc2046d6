// FP8 scaling arithmetic, one definition for the CPU backend and the CUDA kernels: per-tensor scaled
// casts (Transformer Engine's delayed and current scaling) and MXFP8 block scaling (OCP MX v1.0).
// Rule: a scaled FP8 operand stores round(x · scale) and its GEMM multiplies the FP32 accumulator by
// descale_factor(scale_a, scale_b) before rounding into the output; an MX operand stores its elements already
// multiplied back by their block's power-of-two scale (exact), so its GEMM needs no descale.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "engine/core/format_core.hpp"
#include "engine/core/host_device.hpp"

namespace mpx {

// How a run scales its FP8 GEMM operands: per tensor from an amax history (delayed), per tensor
// from this step's amax (current), or per block of 32 with a power-of-two scale (block: MXFP8).
enum class Fp8Recipe : std::uint8_t { delayed, current, block };
enum class AmaxAlgo : std::uint8_t { max, most_recent };
// The operands of a linear layer that are cast to FP8, in step order.
enum class Fp8Tensor : std::uint8_t { x, w, dy };
inline constexpr int k_fp8_tensors = 3;

namespace core {

inline constexpr int k_mx_block = 32;  // OCP MX: elements sharing one E8M0 scale
inline constexpr int k_e4m3_emax = 8;  // OCP MX: exponent of E4M3's largest normal (448 = 1.75·2^8)

// |x| folded into a running amax the way Transformer Engine's amax kernels do (fmaxf): NaN is
// ignored, inf is kept (and then keeps the previous scale, see below).
// Written as a compare (amax never NaN: it starts at 0); equal to fmaxf(amax, fabsf(x)).
MPX_HOST_DEVICE inline float amax_fold(float amax, float x) {
    const float a = fabsf(x);
    return a > amax ? a : amax;
}

// amax_fold over n values from 0, on the bits: |x|'s bits order as |x| does, and a NaN's bits
// (above inf's) count as 0. An integer max, so the CPU's loop vectorises (a float max reduction
// does not without fast-math); equal to folding amax_fold value by value.
MPX_HOST_DEVICE inline float amax_of(const float* v, std::size_t n) {
    std::uint32_t m = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = bits_of(v[i]) & 0x7fffffffu;
        const std::uint32_t k = a & (0u - static_cast<std::uint32_t>(a <= 0x7f800000u));  // NaN → 0
        m = m > k ? m : k;
    }
    return float_of(m);
}

// 2^k exactly, for k in [−149, 127] (subnormal below −126), built from bits: multiplying by it is
// the correctly rounded x·2^k, as ldexpf is.
MPX_HOST_DEVICE inline float exp2i(int k) {
    return float_of(k >= -126 ? static_cast<std::uint32_t>(k + 127) << 23 : 1u << (k + 149));
}

// Current scaling (TE Float8CurrentScaling; recipe_common.cuh compute_scale_from_amax with
// force_pow_2_scales = false, epsilon = 0): 1 when amax is 0, inf or NaN; FP32's max when the
// quotient overflows. No margin (TE's current-scaling recipe has none).
MPX_HOST_DEVICE inline float current_scale(float amax, float fp8_max) {
    if (!(amax > 0.0f) || !is_finite(amax)) return 1.0f;
    const float s = fp8_max / amax;
    return is_finite(s) ? s : FLT_MAX;
}

// Delayed scaling's target (TE delayed_scaling.cu: scaled_max = fp8_max · 2^-margin, in float).
MPX_HOST_DEVICE inline float delayed_scaled_max(float fp8_max, int margin) {
    return fp8_max * ldexpf(1.0f, -margin);
}
// Delayed scaling's update from the amax its algorithm chose (TE delayed_scaling.cu
// amax_and_scale_update kernel): scaled_max / amax when amax is finite and > 0, else the previous
// scale (the inf case is not clamped there, unlike current scaling: a tiny amax gives scale inf,
// as TE would).
MPX_HOST_DEVICE inline float delayed_scale(float amax, float scaled_max, float previous) {
    return (is_finite(amax) && amax > 0.0f) ? scaled_max / amax : previous;
}

// One tensor's delayed scaling between steps: its amax history (`len` values kept elsewhere, from
// `offset` in its owner's flat buffer; the oldest is overwritten at `next`), the algorithm, the
// target (delayed_scaled_max) and the scale the next step casts with. `active`: updated after every
// step (a delayed-scaled FP8 layer); an inactive one is only kept. TE starts at scale 1, history 0.
struct AmaxHistoryState {
    long long offset = 0;
    int len = 1;
    int next = 0;
    AmaxAlgo algo = AmaxAlgo::max;
    bool active = false;
    float scaled_max = 448.0f;
    float scale = 1.0f;
};
// Records the amax of the step that just ran into `hist` (the state's len values) and computes
// the next step's scale (TE delayed_scaling.cu; fmaxf: a NaN entry is skipped, as there).
MPX_HOST_DEVICE inline void amax_history_push(AmaxHistoryState& s, float* hist, float amax) {
    hist[s.next] = amax;
    s.next = (s.next + 1) % s.len;
    float a = amax;  // most_recent
    if (s.algo == AmaxAlgo::max) {
        a = 0.0f;
        for (int i = 0; i < s.len; ++i) a = fmaxf(a, hist[i]);
    }
    s.scale = delayed_scale(a, s.scaled_max, s.scale);
}

// x · scale rounded into an FP8 format (or any format) with the given overflow mode; `scaled`
// receives x · scale before rounding (for the tally). Returns the stored value (not descaled).
MPX_HOST_DEVICE inline float scaled_cast(Format f, float x, float scale, Overflow mode, float& scaled) {
    scaled = x * scale;
    return decode_bits(f, encode_bits(f, scaled, mode));
}

// The factor a per-tensor scaled GEMM multiplies its FP32 accumulator by: the product of the
// operands' scale_inv = 1/scale, each a float reciprocal as Transformer Engine stores it.
MPX_HOST_DEVICE inline float descale_factor(float scale_a, float scale_b) {
    return (1.0f / scale_a) * (1.0f / scale_b);
}

// OCP MX v1.0 §6.3: the shared exponent of a block is floor(log2(amax)) − emax_elem, clamped to
// E8M0's range [−127, 127]; a block of zeros (or only NaN, which fmaxf skips) gets −127. An inf or
// NaN amax would make the E8M0 scale NaN (code 0xFF): reported as 128 and every element NaN.
MPX_HOST_DEVICE inline int mx_shared_exponent(float block_amax, int emax_elem = k_e4m3_emax) {
    if (!is_finite(block_amax)) return 128;
    if (!(block_amax > 0.0f)) return -127;
    const std::uint32_t b = bits_of(block_amax);
    int e = static_cast<int>((b >> 23) & 0xffu) - 127;  // floor(log2) of a normal float
    if (e == -127) e = 31 - leading_zeros(b & 0x7fffffu) - 149;  // subnormal: m·2^-149
    e -= emax_elem;
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}
// E8M0 code of a shared exponent (bias 127; 0xFF is NaN).
MPX_HOST_DEVICE inline std::uint8_t e8m0_code(int shared_exponent) {
    return static_cast<std::uint8_t>(shared_exponent + 127);
}

// One MXFP8 element: x / 2^e rounded into E4M3 saturating (OCP MX: conversion to the element
// type saturates), multiplied back by 2^e. Both power-of-two steps multiply by an exact 2^k
// (exp2i), exact unless the result leaves FP32's normal range. `q` receives the E4M3
// value before the multiply (the tally's output) and `scaled` x / 2^e (the tally's input).
MPX_HOST_DEVICE inline float mx_element(float x, int shared_exponent, float& scaled, float& q) {
    if (shared_exponent == 128) {
        scaled = x;
        q = float_of(0x7fc00000u);
        return q;
    }
    scaled = x * exp2i(-shared_exponent);
    q = decode_bits(Format::e4m3, encode_bits(Format::e4m3, scaled, Overflow::saturate));
    return q * exp2i(shared_exponent);
}

// What casting one tensor to FP8 did on a step (summed over micro-batches; the backends add to it
// only on counted sites). amax is of the values before scaling; scale the one used (MX: 0, its
// scales are per block); saturated: finite values that overflowed the format after scaling
// (saturated, or became NaN/inf); underflow: non-zero values that became zero.
struct Fp8Record {
    float amax = 0.0f;
    float scale = 0.0f;
    unsigned long long saturated = 0, underflow = 0, nonzero = 0, count = 0;
    MPX_HOST_DEVICE void add(const Fp8Record& o) {
        amax = fmaxf(amax, o.amax);
        scale = o.scale;
        saturated += o.saturated;
        underflow += o.underflow;
        nonzero += o.nonzero;
        count += o.count;
    }
};

}  // namespace core
}  // namespace mpx
