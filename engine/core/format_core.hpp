// The number formats' facts and their bit-level arithmetic, compiled for the CPU and the GPU alike:
// the fact table, the generic round-to-nearest-even encoder and decoder on codes, stored bits <->
// float, and the rounding tally. Rule: this is the one definition; engine/precision/format.cpp's fast paths
// (F16C, the FP16 table, block loops) must equal it bit for bit, and the CUDA kernels call it
// directly. No CUDA types outside __CUDA_ARCH__, no Eigen, no Qt: g++ and nvcc both compile it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/host_device.hpp"

#ifndef __CUDA_ARCH__
#include <cstring>
#endif

namespace mpx {

enum class Format : std::uint8_t { fp32, tf32, fp16, bf16, e4m3, e5m2, e2m1 };

// What a finite value too large for the format becomes. `infinity` is IEEE behaviour (for E4M3,
// which has no infinity, it gives NaN; for E2M1, which has neither, ±max finite all the same);
// `saturate` clamps to ±max finite (REFERENCE.md).
enum class Overflow : std::uint8_t { infinity, saturate };

struct FormatInfo {
    Format format;
    const char* name;
    int exponent_bits;
    int mantissa_bits;
    int bias;
    int storage_bytes;     // bytes one element occupies in memory (TF32 lives in a 32-bit container)
    bool has_inf;
    bool has_nan;          // E2M1 has neither: NaN encodes to +0, inf and overflow to ±max finite
    Overflow default_overflow;
    float max_finite;
    float min_normal;
    float min_subnormal;
    float epsilon;         // ulp at 1
};

// Facts from REFERENCE.md, "Number formats" (E2M1: "FP4").
MPX_HOST_DEVICE constexpr FormatInfo format_info(Format f) {
    switch (f) {
        case Format::fp32: break;
        case Format::tf32:
            return {Format::tf32, "tf32", 8, 10, 127, 4, true, true, Overflow::infinity,
                    0x1.ffcp127f, 0x1p-126f, 0x1p-136f, 0x1p-10f};
        case Format::fp16:
            return {Format::fp16, "fp16", 5, 10, 15, 2, true, true, Overflow::infinity, 65504.0f,
                    0x1p-14f, 0x1p-24f, 0x1p-10f};
        case Format::bf16:
            return {Format::bf16, "bf16", 8, 7, 127, 2, true, true, Overflow::infinity, 0x1.fep127f,
                    0x1p-126f, 0x1p-133f, 0x1p-7f};
        case Format::e4m3:
            return {Format::e4m3, "e4m3", 4, 3, 7, 1, false, true, Overflow::saturate, 448.0f,
                    0x1p-6f, 0x1p-9f, 0x1p-3f};
        case Format::e5m2:
            return {Format::e5m2, "e5m2", 5, 2, 15, 1, true, true, Overflow::infinity, 57344.0f,
                    0x1p-14f, 0x1p-16f, 0x1p-2f};
        case Format::e2m1:  // one code a byte in buffers (low nibble); packing two is fp4_quant's
            return {Format::e2m1, "e2m1", 2, 1, 1, 1, false, false, Overflow::saturate, 6.0f,
                    1.0f, 0.5f, 0.5f};
    }
    return {Format::fp32, "fp32", 8, 23, 127, 4, true, true, Overflow::infinity, 3.40282347e38f,
            0x1p-126f, 0x1p-149f, 0x1p-23f};
}

namespace core {

// ---- bits ---------------------------------------------------------------------------------------

MPX_HOST_DEVICE inline std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

MPX_HOST_DEVICE inline float float_of(std::uint32_t b) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(b);
#else
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

MPX_HOST_DEVICE inline int leading_zeros(std::uint32_t x) {  // x != 0
#ifdef __CUDA_ARCH__
    return __clz(static_cast<int>(x));
#else
    return __builtin_clz(x);
#endif
}

MPX_HOST_DEVICE inline bool is_finite(float x) { return (bits_of(x) & 0x7f800000u) != 0x7f800000u; }

// ---- codes: the format's own bit patterns (TF32: a 19-bit code, FP16/BF16: 16, FP8: 8, E2M1: 4) -

MPX_HOST_DEVICE constexpr int code_bits(const FormatInfo& d) { return 1 + d.exponent_bits + d.mantissa_bits; }
MPX_HOST_DEVICE constexpr std::uint32_t sign_bit(const FormatInfo& d) { return 1u << (code_bits(d) - 1); }
MPX_HOST_DEVICE constexpr std::uint32_t exp_all_ones(const FormatInfo& d) {
    return ((1u << d.exponent_bits) - 1u) << d.mantissa_bits;
}
// Largest finite magnitude code: all-ones exponent is inf/NaN, except E4M3 where only S.1111.111
// is NaN, and E2M1 where every code is finite (0111 = 6).
MPX_HOST_DEVICE constexpr std::uint32_t max_finite_code(const FormatInfo& d) {
    if (!d.has_nan) return sign_bit(d) - 1u;
    return d.has_inf ? exp_all_ones(d) - 1u : exp_all_ones(d) | ((1u << d.mantissa_bits) - 2u);
}
// The magnitude code a NaN input gets: the format's quiet NaN, or 0 (+0) where it has no NaN
// (E2M1, as Transformer Engine's cast_to_fp4x2: core::e2m1_code). Only a NaN where d.has_nan.
MPX_HOST_DEVICE constexpr std::uint32_t nan_code(const FormatInfo& d) {
    if (!d.has_nan) return 0u;
    return d.has_inf ? exp_all_ones(d) | (1u << (d.mantissa_bits - 1))
                     : exp_all_ones(d) | ((1u << d.mantissa_bits) - 1u);
}
// The magnitude code a too-large value (or an infinity) gets: ±max finite under `saturate` and in
// a format with neither inf nor NaN (E2M1: nothing else it could become), else inf, else NaN (E4M3).
MPX_HOST_DEVICE constexpr std::uint32_t overflow_code(const FormatInfo& d, Overflow mode) {
    if (mode == Overflow::saturate || !d.has_nan) return max_finite_code(d);
    return d.has_inf ? exp_all_ones(d) : nan_code(d);
}
// TF32's code lives in the top 19 bits of its 32-bit container.
MPX_HOST_DEVICE constexpr std::uint32_t to_container(Format f, std::uint32_t code) {
    return f == Format::tf32 ? code << 13 : code;
}
MPX_HOST_DEVICE constexpr std::uint32_t from_container(Format f, std::uint32_t bits) {
    return f == Format::tf32 ? bits >> 13 : bits;
}

// ±m·2^k for an integer m < 2^24, built from bits so the result is exact whatever the device's
// denormal mode (a multiply would flush FP32 subnormals under -ftz).
MPX_HOST_DEVICE inline float make_float(bool neg, std::uint32_t m, int k) {
    std::uint32_t b = 0;
    if (m != 0) {
        const int p = 31 - leading_zeros(m);  // m = 1.xxx · 2^p
        const int e = p + k;
        if (e >= -126)
            b = (static_cast<std::uint32_t>(e + 127) << 23) | ((m << (23 - p)) & 0x007fffffu);
        else
            b = m << (k + 149);  // FP32 subnormal: every format's quantum is a multiple of 2^-149
    }
    return float_of(b | (neg ? 0x80000000u : 0u));
}

// The generic encoder (the definition of every conversion). |x| = m·2^q (m < 2^24 integer). The
// target's quantum in the binade of x is 2^qt, qt = max(e, emin) − M; round m·2^(q−qt) to an
// integer r, ties to even; the code ((max(e, emin) + bias − 1) << M) + r carries into the exponent
// by itself when rounding reaches the next binade (and turns a rounded-up subnormal into min normal).
MPX_HOST_DEVICE inline std::uint32_t encode_code(const FormatInfo& d, float x, Overflow mode) {
    const std::uint32_t b = bits_of(x);
    const std::uint32_t sign = (b >> 31) ? sign_bit(d) : 0u;
    const std::uint32_t a = b & 0x7fffffffu;
    const int M = d.mantissa_bits;
    if (a > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits that fit
        if (!d.has_nan) return 0u;  // E2M1: +0 whatever the sign, as TE's cast
        if (!d.has_inf) return sign | nan_code(d);
        const std::uint32_t payload = (a & 0x007fffffu) >> (23 - M);
        return sign | exp_all_ones(d) | payload | (1u << (M - 1));
    }
    const std::uint32_t overflowed = sign | overflow_code(d, mode);
    if (a == 0x7f800000u) return overflowed;
    if (a == 0) return sign;

    const int exp_field = static_cast<int>(a >> 23);
    std::uint32_t m;
    int q, e;  // e = floor(log2 |x|)
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
    const int shift = (eff - M) - q;  // > 0 for every format narrower than FP32
    std::uint32_t r;
    if (shift <= 0) {
        r = m << (-shift);
    } else if (shift > 25) {
        r = 0;  // below a quarter of the smallest quantum
    } else {
        r = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
    }
    if (r == 0) return sign;
    const std::uint64_t code =
        (static_cast<std::uint64_t>(eff + d.bias - 1) << M) + static_cast<std::uint64_t>(r);
    if (code > max_finite_code(d)) return overflowed;
    return sign | static_cast<std::uint32_t>(code);
}

// NaN keeps its payload (top of the FP32 mantissa) and comes back quiet, exactly as F16C's
// VCVTPH2PS does; a TF32 container's NaN is already this float. E2M1 decodes to finite values only.
MPX_HOST_DEVICE inline float decode_code(const FormatInfo& d, std::uint32_t code) {
    const int M = d.mantissa_bits;
    const bool neg = (code & sign_bit(d)) != 0;
    const std::uint32_t a = code & (sign_bit(d) - 1u);
    const std::uint32_t ef = a >> M;
    const std::uint32_t mant = a & ((1u << M) - 1u);
    const std::uint32_t emax_field = (1u << d.exponent_bits) - 1u;
    const bool is_nan = d.has_inf ? (ef == emax_field && mant != 0) : d.has_nan && a == nan_code(d);
    if (is_nan) return float_of((neg ? 0x80000000u : 0u) | 0x7fc00000u | (mant << (23 - M)));
    if (d.has_inf && ef == emax_field) return float_of((neg ? 0x80000000u : 0u) | 0x7f800000u);
    if (ef == 0) return make_float(neg, mant, 1 - d.bias - M);
    return make_float(neg, mant | (1u << M), static_cast<int>(ef) - d.bias - M);
}

// ---- stored bits <-> float (FP16/BF16 in the low 16 bits, FP8 in the low 8, E2M1 in the low 4 of
// a byte, FP32/TF32 as 32-bit containers) ------------------------------------------------------

// BF16 and TF32 by adding half the dropped range plus the lowest kept bit: exact round-to-nearest-
// even for every finite input and for overflow (the carry reaches the all-ones exponent = inf); NaN
// handled apart so a signalling NaN cannot carry into an infinity (REFERENCE.md). Equal to
// encode_code (the tests hold every BF16 input against it).
MPX_HOST_DEVICE inline std::uint32_t bf16_bits_fast(std::uint32_t b) {
    const std::uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (b >> 16) | 0x40u;
    return (b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;  // branch-free: vectorises
}
MPX_HOST_DEVICE inline std::uint32_t tf32_bits_fast(std::uint32_t b) {
    const std::uint32_t rounded = (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
    const std::uint32_t quiet_nan = (b | 0x00400000u) & 0xffffe000u;
    return (b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

MPX_HOST_DEVICE inline std::uint32_t encode_bits(Format f, float x, Overflow mode) {
    switch (f) {
        case Format::fp32: return bits_of(x);
        case Format::bf16:
            if (mode == Overflow::infinity) return bf16_bits_fast(bits_of(x));
            break;
        case Format::tf32:
            if (mode == Overflow::infinity) return tf32_bits_fast(bits_of(x));
            break;
        default: break;
    }
    return to_container(f, encode_code(format_info(f), x, mode));
}
MPX_HOST_DEVICE inline std::uint32_t encode_bits(Format f, float x) {
    return encode_bits(f, x, format_info(f).default_overflow);
}

MPX_HOST_DEVICE inline float decode_bits(Format f, std::uint32_t bits) {
    switch (f) {
        case Format::fp32:
        case Format::tf32: return float_of(bits);
        case Format::bf16: return float_of((bits & 0xffffu) << 16);
        case Format::fp16: return decode_code(format_info(f), bits & 0xffffu);
        default: return decode_code(format_info(f), bits & 0xffu);
    }
}

MPX_HOST_DEVICE inline float round_value(Format f, float x) { return decode_bits(f, encode_bits(f, x)); }

// Element i of a buffer in format f.
MPX_HOST_DEVICE inline float load_value(Format f, const void* p, std::size_t i) {
    switch (format_info(f).storage_bytes) {
        case 4: return decode_bits(f, static_cast<const std::uint32_t*>(p)[i]);
        case 2: return decode_bits(f, static_cast<const std::uint16_t*>(p)[i]);
        default: return decode_bits(f, static_cast<const std::uint8_t*>(p)[i]);
    }
}
// Rounds x into element i (default overflow mode, as every store of the engine) and returns the
// value stored.
MPX_HOST_DEVICE inline float store_value(Format f, void* p, std::size_t i, float x) {
    const std::uint32_t b = encode_bits(f, x);
    switch (format_info(f).storage_bytes) {
        case 4: static_cast<std::uint32_t*>(p)[i] = b; break;
        case 2: static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(b); break;
        default: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(b); break;
    }
    return decode_bits(f, b);
}

// ---- the rounding tally --------------------------------------------------------------------------

// Everything an op counts. The first four say what rounding into a format did: finite values that
// became ±inf or were saturated (overflow), non-zero values that became zero (underflow), non-zero
// results that are subnormal, and non-zero inputs (the underflow fraction's denominator; NaN
// counts). `changed`/`lost` are the optimizer's (weights it moved / whose working copy did not
// show it), `bad` the inf/NaN values found by unscale-and-check, `hits` accuracy's correct rows,
// `nonfinite` stored results that are inf or NaN (whatever made them so: where a step's first one
// appears). `small`: of the changed weights, those whose update rounding to nearest would lose
// (below half an ulp); `kept`: of those, the ones a stochastic or Kahan write-back kept a trace of
// (rounded away from the old value, or carried in the compensation) (engine/core/write_back.hpp).
struct Counts {
    unsigned long long overflow = 0, underflow = 0, subnormal = 0, nonzero = 0;
    unsigned long long changed = 0, lost = 0, bad = 0, hits = 0, nonfinite = 0, small = 0, kept = 0;
    // The largest finite |x| that overflowed, as its FP32 bits (0: none): what a value was before
    // rounding made it inf/NaN (or saturated it). Combined by max, not summed; the last three fields
    // are maxima.
    unsigned long long overflow_max = 0;
    // The largest |c| of a Kahan compensation buffer after the update, as FP32 bits (0: none).
    unsigned long long compensation_max = 0;
    // The largest finite |value| stored (after rounding), as FP32 bits (0: none): with overflow_max,
    // how close a site came to its format's largest value (the run CSV's headroom_log2).
    unsigned long long stored_max = 0;
    MPX_HOST_DEVICE Counts& operator+=(const Counts& o) {
        overflow_max = overflow_max > o.overflow_max ? overflow_max : o.overflow_max;
        compensation_max = compensation_max > o.compensation_max ? compensation_max : o.compensation_max;
        stored_max = stored_max > o.stored_max ? stored_max : o.stored_max;
        small += o.small;
        kept += o.kept;
        overflow += o.overflow;
        underflow += o.underflow;
        subnormal += o.subnormal;
        nonzero += o.nonzero;
        nonfinite += o.nonfinite;
        changed += o.changed;
        lost += o.lost;
        bad += o.bad;
        hits += o.hits;
        return *this;
    }
};

// The tally's thresholds as bit patterns of |x| (for non-negative floats the integer order of the
// bits is the order of the values): overflow from the first magnitude that rounds past max finite,
// i.e. max finite + half an ulp (a tie there rounds up where max finite's mantissa is odd, every
// format with an infinity and E2M1, whose 7 saturates to 6; E4M3's 464 rounds down to 448,
// REFERENCE.md).
struct TallyEdges {
    std::uint32_t over_from;   // a finite |x| at or above overflows
    std::uint32_t min_normal;  // a non-zero |result| below is subnormal
};

MPX_HOST_DEVICE inline TallyEdges tally_edges(Format f) {
    const FormatInfo d = format_info(f);
    const std::uint32_t min_normal = bits_of(d.min_normal);
    if (f == Format::fp32) return {0x7f800000u, min_normal};
    const std::uint32_t max_bits = bits_of(decode_code(d, max_finite_code(d)));
    const std::uint32_t threshold = max_bits + (1u << (22 - d.mantissa_bits));  // + half an ulp
    return {threshold + ((max_finite_code(d) & 1u) ? 0u : 1u), min_normal};  // tie to even
}

// One value rounded, as 0/1 flags (branch-free: the CPU's block loops vectorise it).
struct TallyFlags {
    std::uint32_t nonzero, overflow, underflow, subnormal, nonfinite;
    std::uint32_t overflow_bits;  // |x|'s bits where it overflowed, else 0 (for Counts::overflow_max)
    std::uint32_t stored_bits;    // |result|'s bits where it is finite, else 0 (for Counts::stored_max)
};
MPX_HOST_DEVICE inline TallyFlags tally_flags(const TallyEdges& t, std::uint32_t in_bits,
                                     std::uint32_t out_bits) {
    const std::uint32_t a = in_bits & 0x7fffffffu, b = out_bits & 0x7fffffffu;
    const std::uint32_t over =
        static_cast<std::uint32_t>(a >= t.over_from) & static_cast<std::uint32_t>(a < 0x7f800000u);
    return {static_cast<std::uint32_t>(a != 0u),
            over,
            // a NaN is not a value that became zero (E2M1 stores it as +0; elsewhere it stays NaN)
            static_cast<std::uint32_t>(a != 0u) & static_cast<std::uint32_t>(a <= 0x7f800000u) &
                static_cast<std::uint32_t>(b == 0u),
            static_cast<std::uint32_t>(b != 0u) & static_cast<std::uint32_t>(b < t.min_normal),
            static_cast<std::uint32_t>(b >= 0x7f800000u),
            (0u - over) & a,
            (0u - static_cast<std::uint32_t>(b < 0x7f800000u)) & b};
}

// E4M3/E5M2 rounding of a finite value below tally_edges(f).over_from, without its code and
// branch-free (the CPU's loops vectorise it): a normal result rounds to nearest even on the FP32
// bits (the carry moves into the exponent by itself); a subnormal one by adding 2^(q+23), q the
// format's quantum, whose FP32 sum has exactly that spacing. Equal to decode(encode(x)) there.
struct Fp8Rounding {
    std::uint32_t shift, half, keep, min_normal;
    float magic;  // 2^(emin − M + 23)
    MPX_HOST_DEVICE explicit Fp8Rounding(Format f) {
        const FormatInfo d = format_info(f);
        shift = static_cast<std::uint32_t>(23 - d.mantissa_bits);
        half = (1u << (shift - 1u)) - 1u;
        keep = ~((1u << shift) - 1u);
        min_normal = bits_of(d.min_normal);
        magic = float_of(min_normal - (static_cast<std::uint32_t>(d.mantissa_bits) << 23) + (23u << 23));
    }
    MPX_HOST_DEVICE float operator()(std::uint32_t b) const {
        const std::uint32_t a = b & 0x7fffffffu;
        const std::uint32_t normal = (a + half + ((a >> shift) & 1u)) & keep;
        const std::uint32_t sub = bits_of((float_of(a) + magic) - magic);
        return float_of((a >= min_normal ? normal : sub) | (b & 0x80000000u));
    }
};

enum class CountInputs : std::uint8_t { yes, no };

// One value rounded: `in` before, `out` the value stored. CountInputs::no where the same values
// were already counted once (a GEMM's round-through, then the store).
MPX_HOST_DEVICE inline void tally(const TallyEdges& t, float in, float out, Counts& c,
                         CountInputs count = CountInputs::yes) {
    const TallyFlags f = tally_flags(t, bits_of(in), bits_of(out));
    if (count == CountInputs::yes) c.nonzero += f.nonzero;
    c.overflow += f.overflow;
    c.underflow += f.underflow;
    c.subnormal += f.subnormal;
    c.nonfinite += f.nonfinite;
    c.overflow_max = c.overflow_max > f.overflow_bits ? c.overflow_max : f.overflow_bits;
    c.stored_max = c.stored_max > f.stored_bits ? c.stored_max : f.stored_bits;
}

// Whether rounding a finite x overflows (becomes ±inf, NaN for E4M3, or saturates; E2M1 always
// saturates, from 7 up).
MPX_HOST_DEVICE inline bool rounding_overflows(Format f, float x) {
    return tally_flags(tally_edges(f), bits_of(x), 0u).overflow != 0u;
}

// ---- exponent histograms -------------------------------------------------------------------------

// A histogram of log2|x| in integer bins: bin b (k_bin_min ≤ b ≤ k_bin_max) counts finite non-zero
// values with b ≤ log2|x| < b + 1; the edge bins also hold everything beyond them (|x| < 2^-63 in
// the lowest, |x| ≥ 2^63 in the highest). Exact zeros (either sign), infinities and NaNs have their
// own slots. Integer counts: the CPU and GPU sums agree whatever the order.
inline constexpr int k_bin_min = -64, k_bin_max = 63;
inline constexpr int k_log2_bins = k_bin_max - k_bin_min + 1;  // 128
inline constexpr int k_slot_zero = k_log2_bins, k_slot_inf = k_log2_bins + 1,
                     k_slot_nan = k_log2_bins + 2;
inline constexpr int k_slots = k_log2_bins + 3;

struct Bins {
    unsigned long long n[k_slots] = {};
    MPX_HOST_DEVICE Bins& operator+=(const Bins& o) {
        for (int i = 0; i < k_slots; ++i) n[i] += o.n[i];
        return *this;
    }
};

// floor(log2|x|) of a finite non-zero float, from its bits (exact for subnormals too).
MPX_HOST_DEVICE inline int floor_log2(float x) {
    const std::uint32_t a = bits_of(x) & 0x7fffffffu;
    const int exp_field = static_cast<int>(a >> 23);
    return exp_field == 0 ? -149 + (31 - leading_zeros(a)) : exp_field - 127;
}

MPX_HOST_DEVICE inline int clamp_bin(int log2) {
    return log2 < k_bin_min ? k_bin_min : log2 > k_bin_max ? k_bin_max : log2;
}

// The one binning function (CPU and GPU): the slot of x's FP32 value, taken before it is rounded
// into its storage format, so a value that flushes to zero is counted where it was.
// Branch-free (the CPU's block loops vectorise it): every FP32 subnormal and every normal below
// 2^-63 falls in the lowest bin, so the exponent field alone decides a finite value's bin.
MPX_HOST_DEVICE inline int bin_slot(float x) {
    const std::uint32_t a = bits_of(x) & 0x7fffffffu;
    const int e = static_cast<int>(a >> 23);       // 0: zero or subnormal, 255: inf or NaN
    int slot = e - 127 - k_bin_min;                 // floor(log2|x|) − k_bin_min for normals
    slot = slot < 0 ? 0 : slot > k_log2_bins - 1 ? k_log2_bins - 1 : slot;
    slot = a == 0 ? k_slot_zero : slot;
    slot = e == 255 ? (a == 0x7f800000u ? k_slot_inf : k_slot_nan) : slot;
    return slot;
}

// log2 of the ulp of a value stored in format f: the spacing of f's values in stored's binade
// (subnormals and zero: the smallest subnormal).
MPX_HOST_DEVICE inline int ulp_log2(Format f, float stored) {
    const FormatInfo d = format_info(f);
    const int emin = 1 - d.bias;
    const std::uint32_t a = bits_of(stored) & 0x7fffffffu;
    const int e = a == 0 ? emin : floor_log2(stored);
    return (e > emin ? e : emin) - d.mantissa_bits;
}

// The update-to-ulp slot of one weight: log2(|update| / ulp(weight in f)) binned as bin_slot bins
// log2|x| (both logs are exact: the ulp is a power of two), so bins below −1 are updates smaller
// than half an ulp, which rounding to nearest cannot show. `update` is the optimizer's change as it
// computed it (core::optimizer_element), `weight` the value it is added to, stored in f.
MPX_HOST_DEVICE inline int update_ulp_slot(Format f, float weight, float update) {
    const int s = bin_slot(update);
    if (s >= k_log2_bins || !is_finite(weight)) return s;
    return clamp_bin(floor_log2(update) - ulp_log2(f, weight)) - k_bin_min;
}

}  // namespace core
}  // namespace mpx
