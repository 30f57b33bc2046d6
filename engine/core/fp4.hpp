// FP4 (E2M1) and its block scalings, NVFP4 and MXFP4 (REFERENCE.md, "FP4"), one element or block at
// a time, compiled for the CPU and the GPU alike. Rule: the order of operations is Transformer
// Engine's reference (transformer_engine/pytorch/custom_recipes/quantization_ref_nvfp4.py) to the
// bit: every step below names the FP32 rounding it makes, and nothing else rounds.
#pragma once

#include <cstdint>

#include "engine/core/format_core.hpp"
#include "engine/core/host_device.hpp"

namespace mpx::core {

// ---- E2M1 ------------------------------------------------------------------------------------------

inline constexpr float k_e2m1_max = 6.0f;
inline constexpr float k_e4m3_max = 448.0f;
inline constexpr float k_flt_max = 0x1.fffffep127f;
inline constexpr int k_nvfp4_block = 16;
inline constexpr int k_mxfp4_block = 32;

// Codes 0–7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8–15 their negatives (8 is −0).
MPX_HOST_DEVICE inline float e2m1_value(std::uint32_t code) {
    constexpr float k[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float m = k[code & 7u];
    return (code & 8u) ? -m : m;
}

// v (already clamped to [−6, 6] or not: beyond ±5 is ±6) to its code by round to nearest even,
// as TE's cast_to_fp4x2 thresholds it: NaN matches none of them and gets code 0 (+0), and −0.0
// passes its first test, x >= 0, so it too is +0 (code 8 comes only from −0.25 ≤ v < 0).
MPX_HOST_DEVICE inline std::uint32_t e2m1_code(float v) {
    // The thresholds as a sum of comparisons (branch-free, so block loops vectorise): NaN fails
    // every one, and fabs(−0.0) and NaN give no sign bit.
    const float a = v < 0.0f ? -v : v;
    const std::uint32_t c = static_cast<std::uint32_t>(a > 0.25f) + static_cast<std::uint32_t>(a >= 0.75f) +
                            static_cast<std::uint32_t>(a > 1.25f) + static_cast<std::uint32_t>(a >= 1.75f) +
                            static_cast<std::uint32_t>(a > 2.5f) + static_cast<std::uint32_t>(a >= 3.5f) +
                            static_cast<std::uint32_t>(a > 5.0f);
    return v < 0.0f ? c | 8u : c;
}

// Stochastic rounding to E2M1 (mpx's rule, REFERENCE.md): between the neighbours lo < |v| < hi (or
// on one), away from zero iff u < floor(f · 2^32), f = (|v| − lo) / (hi − lo). f is exact: |v| − lo
// and the power-of-two gap are exact in double. Beyond 6 it saturates; NaN gives code 0 as above.
MPX_HOST_DEVICE inline std::uint32_t e2m1_code_stochastic(float v, std::uint32_t u) {
    if (!(v == v)) return 0u;
    const bool neg = v < 0.0f;  // −0.0 is +0, as e2m1_code has it
    const double a = neg ? -static_cast<double>(v) : static_cast<double>(v);
    std::uint32_t lo = 0;
    if (a >= 6.0) {
        lo = 7;
    } else {
        // the grid points at or below a (the grid is sorted: as many as a while loop would pass)
        lo = static_cast<std::uint32_t>(a >= 0.5) + static_cast<std::uint32_t>(a >= 1.0) +
             static_cast<std::uint32_t>(a >= 1.5) + static_cast<std::uint32_t>(a >= 2.0) +
             static_cast<std::uint32_t>(a >= 3.0) + static_cast<std::uint32_t>(a >= 4.0);
        const double l = e2m1_value(lo), h = e2m1_value(lo + 1);
        const double f = (a - l) / (h - l);  // exact: a − l has at most 24 bits, h − l is 0.5, 1 or 2
        const auto threshold = static_cast<std::uint64_t>(f * 4294967296.0);  // floor: f · 2^32 is exact
        if (static_cast<std::uint64_t>(u) < threshold) ++lo;
    }
    return neg ? lo | 8u : lo;
}

// ---- NVFP4: E2M1 elements, an E4M3 scale per block of 16, an FP32 scale per tensor ---------------

// The tensor's global scales from its amax: S_enc = fl32(2688 / amax), capped at FLT_MAX (NaN stays
// NaN), 1 where that is 0 (amax inf or the quotient underflows; amax 0 gives inf → FLT_MAX);
// S_dec = fl32(1 / S_enc). e4m3_bound is 448, or 256 under 4over6.
struct Nvfp4Global {
    float enc = 1.0f, dec = 1.0f;
    float block_mult = 0.0f;  // fl32(enc · fl32(1/6)): TE folds the reciprocal of 6 in first
};
MPX_HOST_DEVICE inline Nvfp4Global nvfp4_global(float amax, float e4m3_bound = k_e4m3_max) {
    Nvfp4Global g;
    float enc = (e4m3_bound * k_e2m1_max) / amax;  // 2688 (or 1536) is exact in FP32
    if (enc > k_flt_max) enc = k_flt_max;
    if (enc == 0.0f) enc = 1.0f;
    g.enc = enc;
    g.dec = 1.0f / enc;
    g.block_mult = enc * (1.0f / 6.0f);
    return g;
}

// A block's E4M3 scale (as its float value) from the block's amax: fl32(vmax · block_mult), capped
// at FLT_MAX, clamped to ±448, rounded to E4M3 (nearest even; NaN stays NaN).
MPX_HOST_DEVICE inline float nvfp4_block_scale(float vmax, const Nvfp4Global& g) {
    float d = vmax * g.block_mult;
    if (d > k_flt_max) d = k_flt_max;
    if (d > k_e4m3_max) d = k_e4m3_max;  // vmax ≥ 0: the lower clamp never applies
    return decode_bits(Format::e4m3, encode_bits(Format::e4m3, d, Overflow::saturate));
}

// The factor a block's elements are multiplied by before rounding: fl32(1 / fl32(scale · S_dec)),
// capped at FLT_MAX (a scale of 0 gives inf → FLT_MAX: its elements saturate and decode to 0).
MPX_HOST_DEVICE inline float nvfp4_encode_scale(float block_scale, const Nvfp4Global& g) {
    float e = 1.0f / (block_scale * g.dec);
    if (e > k_flt_max) e = k_flt_max;
    return e;
}

// An element's scaled value, fl32(x · enc) clamped to ±6 (NaN stays NaN): what e2m1_code reads.
MPX_HOST_DEVICE inline float fp4_scaled(float x, float enc) {
    float v = x * enc;
    if (v > k_e2m1_max) v = k_e2m1_max;
    if (v < -k_e2m1_max) v = -k_e2m1_max;
    return v;
}

// The value a stored element stands for: fl32(fl32(e2m1 · scale) · S_dec).
MPX_HOST_DEVICE inline float nvfp4_decode(std::uint32_t code, float block_scale, const Nvfp4Global& g) {
    return (e2m1_value(code) * block_scale) * g.dec;
}

// ---- MXFP4: E2M1 elements, a power-of-two (E8M0) scale per block of 32 ---------------------------

// The four rules for a block's shared exponent (torchao's names): floor, OCP MX v1.0:
// floor(log2 vmax) − 2, so values up to 8·2^e clamp to 6; ceil: ceil(log2 vmax) − 2; rceil:
// vmax / 6 (in FP32) rounded up to a power of two (cuBLAS; Blackwell's cvt.rp.ue8m0); even:
// vmax's significand rounded to E2M1's one fractional bit (nearest even), then floor.
enum class MxScaleRule : std::uint8_t { floor, ceil, rceil, even };

inline constexpr int k_mx_nan_exponent = 128;  // E8M0 code 0xFF: the block decodes to NaN

// Whether a finite non-zero float is a power of two (normal: no mantissa bits; subnormal: one bit).
MPX_HOST_DEVICE inline bool is_power_of_two(float x) {
    const std::uint32_t a = bits_of(x) & 0x7fffffffu;
    return (a >> 23) != 0 ? (a & 0x7fffffu) == 0 : (a & (a - 1u)) == 0;
}

// The exponent e of the block's scale 2^e, clamped to E8M0's [−127, 127]; −127 for a block of
// zeros, k_mx_nan_exponent for an inf or NaN amax.
MPX_HOST_DEVICE inline int mxfp4_exponent(float vmax, MxScaleRule rule) {
    if (!is_finite(vmax)) return k_mx_nan_exponent;
    if (!(vmax > 0.0f)) return -127;
    const int f = floor_log2(vmax);
    int e = 0;
    switch (rule) {
        case MxScaleRule::floor: e = f - 2; break;
        case MxScaleRule::ceil: e = (is_power_of_two(vmax) ? f : f + 1) - 2; break;
        case MxScaleRule::rceil: {
            const float d = vmax / 6.0f;  // FP32, as TE and torchao divide
            if (!(d > 0.0f)) return -127;
            e = is_power_of_two(d) ? floor_log2(d) : floor_log2(d) + 1;
            break;
        }
        case MxScaleRule::even: {
            // The 24-bit significand 1.m (subnormals normalised), rounded to 1.x by nearest even.
            const std::uint32_t a = bits_of(vmax) & 0x7fffffffu;
            const std::uint32_t sig = (a >> 23) != 0 ? ((a & 0x7fffffu) | 0x800000u) : a << (leading_zeros(a) - 8);
            std::uint32_t q = sig >> 22;  // 2 or 3: 1.0 or 1.5 in halves
            const std::uint32_t rem = sig & 0x3fffffu;
            if (rem > 0x200000u || (rem == 0x200000u && (q & 1u))) ++q;
            e = (q == 4u ? f + 1 : f) - 2;  // 2.0 carries into the next binade
            break;
        }
    }
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

// 2^e as a float for e in [−127, 127] (exact, built from bits; 2^-127 is subnormal).
MPX_HOST_DEVICE inline float mx_scale_value(int e) { return make_float(false, 1u, e); }

// ---- what casting one tensor to FP4 did on a step (beside its Fp8Record) -------------------------

// codes: elements by magnitude code (0, 0.5, 1, 1.5, 2, 3, 4, 6); blocks: scale blocks cast; top6 and
// top4: blocks whose largest element landed on 6 or on 4 (the rest leave ±4 and ±6 unused: MXFP4's
// lost binade). Summed over micro-batches like Fp8Record.
struct Fp4Record {
    unsigned long long codes[8] = {};
    unsigned long long blocks = 0, top6 = 0, top4 = 0;
    // Weights, on steps that collect histograms: of `compared` elements, those whose row-wise
    // (forward) and column-wise (Dgrad) quantizations differ (none with 16x16 tiles).
    unsigned long long mismatched = 0, compared = 0;
    MPX_HOST_DEVICE void add(const Fp4Record& o) {
        for (int i = 0; i < 8; ++i) codes[i] += o.codes[i];
        blocks += o.blocks;
        top6 += o.top6;
        top4 += o.top4;
        mismatched += o.mismatched;
        compared += o.compared;
    }
};

}  // namespace mpx::core
