// The cures for lost updates (REFERENCE.md, "Remedies for lost updates"): how the optimizer's FP32
// result is written back into weights stored narrow (BF16, FP16) — round to nearest even (every
// store of the engine), stochastic rounding, or a Kahan-compensated update. Rule: stochastic
// rounding draws its word from round_word(key, i) only, a pure function of the run's seed, the
// tensor, the applied step and the element, so a run's bits never depend on the thread count or
// the device; g++ and nvcc both compile this header.
#pragma once

#include <cstdint>

#include "engine/core/format_core.hpp"

namespace mpx {

enum class WriteBack : std::uint8_t { nearest, stochastic, kahan };

namespace core {

// ---- the random stream -----------------------------------------------------------------------------

// SplitMix64's finaliser (the same mixing as rng.hpp's streams).
MPX_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
// The stream of one tensor at one step: the run's seed, the parameter's index in the model
// (fc1.weight 0, fc1.bias 1, fc2.weight 2, ...) and the optimizer's applied-step count before this
// update (skipped steps draw nothing; a resumed run continues the same stream).
MPX_HOST_DEVICE inline std::uint64_t round_key(std::uint64_t seed, std::uint32_t param, std::uint64_t applied) {
    return mix64(mix64(seed ^ 0x5352ull /* "SR" */) + (static_cast<std::uint64_t>(param) << 40) + applied);
}
// Element i's 32-bit word: the top half of SplitMix64 at counter i of the key.
MPX_HOST_DEVICE inline std::uint32_t round_word(std::uint64_t key, std::uint64_t i) {
    return static_cast<std::uint32_t>(mix64(key + (i + 1) * 0x9e3779b97f4a7c15ull) >> 32);
}

// ---- stochastic rounding -------------------------------------------------------------------------

// x into format d's code, rounded toward zero or away from it: with f the fraction of the gap
// between the two neighbours that x lies above the one toward zero, away iff u < floor(f · 2^32).
// For BF16 f · 2^32 = (bits(x) & 0xFFFF) << 16, so this is torchao's `_fp32_to_bf16_sr` predicate
// (away iff r < low 16 bits) with r = u >> 16. Exact values never move; NaN stays NaN (quiet, as
// encode_code); ±inf stays; a finite value beyond max finite rounds toward max finite or away to
// the overflow value (inf for FP16/BF16), with the gap taken as if the exponent went on.
MPX_HOST_DEVICE inline std::uint32_t encode_stochastic(const FormatInfo& d, float x, std::uint32_t u) {
    const std::uint32_t b = bits_of(x);
    const std::uint32_t a = b & 0x7fffffffu;
    if (a >= 0x7f800000u || a == 0) return encode_code(d, x, d.default_overflow);  // inf, NaN, ±0
    const std::uint32_t sign = (b >> 31) ? sign_bit(d) : 0u;
    const int M = d.mantissa_bits;
    const int exp_field = static_cast<int>(a >> 23);
    std::uint32_t m;
    int q, e;  // |x| = m · 2^q, e = floor(log2 |x|)
    if (exp_field == 0) {
        m = a;
        q = -149;
        e = -149 + (31 - leading_zeros(m));
    } else {
        m = (a & 0x007fffffu) | 0x00800000u;
        q = exp_field - 150;
        e = exp_field - 127;
    }
    const int emin = 1 - d.bias;
    const int eff = e > emin ? e : emin;
    const int shift = (eff - M) - q;  // bits of m below the format's quantum
    std::uint32_t r, threshold;
    if (shift <= 0) {
        r = m << (-shift);
        threshold = 0;
    } else {
        r = shift >= 32 ? 0u : m >> shift;
        const std::uint32_t rem = shift >= 32 ? m : m & ((1u << shift) - 1u);  // < 2^24
        // floor(rem / 2^shift · 2^32)
        threshold = shift <= 32 ? rem << (32 - shift) : (shift - 32 >= 24 ? 0u : rem >> (shift - 32));
    }
    if (u < threshold) ++r;
    if (r == 0) return sign;
    const std::uint64_t code = (static_cast<std::uint64_t>(eff + d.bias - 1) << M) + static_cast<std::uint64_t>(r);
    if (code > max_finite_code(d)) return sign | overflow_code(d, d.default_overflow);
    return sign | static_cast<std::uint32_t>(code);
}
MPX_HOST_DEVICE inline std::uint32_t encode_bits_stochastic(Format f, float x, std::uint32_t u) {
    if (f == Format::fp32) return bits_of(x);
    return to_container(f, encode_stochastic(format_info(f), x, u));
}

// ---- Kahan-compensated update -----------------------------------------------------------------------

// optimi's kahan_sum update of one element, as its Triton kernels compute it (optimi/sgd.py
// `_sgd_kernel`, optimi/adam.py `_adam_kernel`, commit 17a3d54; the default path on GPUs): theta and
// c are the stored weight and compensation (decoded), `update` the optimizer's FP32 change.
//   comp = c + update                       (FP32)
//   theta_new = round(theta + round(comp))   (the compensated step downcast first, then added)
//   c_new = round((comp + theta) - theta_new) (FP32, left to right, then stored)
// REFERENCE.md's summary adds the unrounded comp to theta and forms comp + (theta - theta_new);
// the code wins (the two differ only where round(comp) moves a tie, and in the last bit of c).
// optimi's CPU for-loop path rounds comp to the parameter's format before both steps instead.
struct KahanResult {
    float theta, c;
};
MPX_HOST_DEVICE inline KahanResult kahan_update(Format f, float theta, float c, float update) {
    const float comp = c + update;
    const float theta_new = round_value(f, theta + round_value(f, comp));
    const float carried = (comp + theta) - theta_new;
    return {theta_new, round_value(f, carried)};
}

}  // namespace core
}  // namespace mpx
