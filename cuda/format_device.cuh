// Number-format conversion for kernels: engine/format.cpp's generic encoder and decoder ported to
// MPX_HD functions, plus the rounding tally. Rule: compiles with g++ as well as nvcc (no CUDA types
// outside __CUDA_ARCH__), so tests/test_cuda_backend.cpp holds every function here against
// mpx::encode / mpx::decode / encode_buffer on the CPU, bit for bit, with no GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/format.hpp"
#include "engine/hd.hpp"

#ifndef __CUDA_ARCH__
#include <cstring>
#endif

namespace mpx::dev {

// ---- bits ---------------------------------------------------------------------------------------

MPX_HD inline std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

MPX_HD inline float float_of(std::uint32_t b) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(b);
#else
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

MPX_HD inline int leading_zeros(std::uint32_t x) {  // x != 0
#ifdef __CUDA_ARCH__
    return __clz(static_cast<int>(x));
#else
    return __builtin_clz(x);
#endif
}

// ---- the fact table (the part of engine/format.cpp's k_formats the bit routines need) ---------

struct DevFormat {
    int exponent_bits;
    int mantissa_bits;
    int bias;
    int storage_bytes;
    bool has_inf;
    Overflow default_overflow;
};

MPX_HD inline DevFormat dev_format(Format f) {
    switch (f) {
        case Format::fp32: return {8, 23, 127, 4, true, Overflow::infinity};
        case Format::tf32: return {8, 10, 127, 4, true, Overflow::infinity};
        case Format::fp16: return {5, 10, 15, 2, true, Overflow::infinity};
        case Format::bf16: return {8, 7, 127, 2, true, Overflow::infinity};
        case Format::e4m3: return {4, 3, 7, 1, false, Overflow::saturate};
        case Format::e5m2: return {5, 2, 15, 1, true, Overflow::infinity};
    }
    return {8, 23, 127, 4, true, Overflow::infinity};
}

MPX_HD inline std::uint32_t sign_bit(const DevFormat& d) {
    return 1u << (d.exponent_bits + d.mantissa_bits);
}
MPX_HD inline std::uint32_t exp_all_ones(const DevFormat& d) {
    return ((1u << d.exponent_bits) - 1u) << d.mantissa_bits;
}
// All-ones exponent is inf/NaN, except E4M3 where only S.1111.111 is NaN.
MPX_HD inline std::uint32_t max_finite_code(const DevFormat& d) {
    return d.has_inf ? exp_all_ones(d) - 1u : exp_all_ones(d) | ((1u << d.mantissa_bits) - 2u);
}
MPX_HD inline std::uint32_t nan_code(const DevFormat& d) {
    return d.has_inf ? exp_all_ones(d) | (1u << (d.mantissa_bits - 1))
                     : exp_all_ones(d) | ((1u << d.mantissa_bits) - 1u);
}

// ±m·2^k for an integer m < 2^24, built from bits so the result is exact whatever the device's
// denormal mode (a multiply would flush FP32 subnormals under -ftz).
MPX_HD inline float make_float(bool neg, std::uint32_t m, int k) {
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

// ---- generic encoder / decoder on codes (engine/format.cpp: encode_code, decode_code) ----------

// |x| = m·2^q (m < 2^24). The target's quantum in the binade of x is 2^qt, qt = max(e, emin) − M;
// round m·2^(q−qt) to an integer r, ties to even; the code ((max(e, emin) + bias − 1) << M) + r
// carries into the exponent by itself when rounding reaches the next binade.
MPX_HD inline std::uint32_t encode_code(const DevFormat& d, float x, Overflow mode) {
    const std::uint32_t b = bits_of(x);
    const std::uint32_t sign = (b >> 31) ? sign_bit(d) : 0u;
    const std::uint32_t a = b & 0x7fffffffu;
    const int M = d.mantissa_bits;
    if (a > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits that fit
        if (!d.has_inf) return sign | nan_code(d);
        const std::uint32_t payload = (a & 0x007fffffu) >> (23 - M);
        return sign | exp_all_ones(d) | payload | (1u << (M - 1));
    }
    const std::uint32_t overflowed = mode == Overflow::saturate
                                         ? sign | max_finite_code(d)
                                         : sign | (d.has_inf ? exp_all_ones(d) : nan_code(d));
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
    const int shift = (eff - M) - q;
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

MPX_HD inline float decode_code(const DevFormat& d, std::uint32_t code) {
    const int M = d.mantissa_bits;
    const bool neg = (code & sign_bit(d)) != 0;
    const std::uint32_t a = code & (sign_bit(d) - 1u);
    const std::uint32_t ef = a >> M;
    const std::uint32_t mant = a & ((1u << M) - 1u);
    const std::uint32_t emax_field = (1u << d.exponent_bits) - 1u;
    const bool is_nan = d.has_inf ? (ef == emax_field && mant != 0) : a == nan_code(d);
    if (is_nan)  // quiet, payload kept (as F16C's VCVTPH2PS and the engine's table do)
        return float_of((neg ? 0x80000000u : 0u) | 0x7fc00000u | (mant << (23 - M)));
    if (d.has_inf && ef == emax_field) return float_of((neg ? 0x80000000u : 0u) | 0x7f800000u);
    if (ef == 0) return make_float(neg, mant, 1 - d.bias - M);
    return make_float(neg, mant | (1u << M), static_cast<int>(ef) - d.bias - M);
}

// ---- stored bits <-> float (the container convention of engine/format.hpp) ---------------------

// Stored bits of x: FP16/BF16 in the low 16 bits, FP8 in the low 8, FP32/TF32 as 32-bit containers.
MPX_HD inline std::uint32_t encode_bits(Format f, float x, Overflow mode) {
    const std::uint32_t b = bits_of(x);
    const bool nan = (b & 0x7fffffffu) > 0x7f800000u;
    switch (f) {
        case Format::fp32: return b;
        case Format::bf16:  // the engine's fast path: add 0x7fff plus the lowest kept bit
            if (mode == Overflow::infinity)
                return nan ? (b >> 16) | 0x40u : (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
            break;
        case Format::tf32:
            if (mode == Overflow::infinity)
                return nan ? (b | 0x00400000u) & 0xffffe000u
                           : (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
            return encode_code(dev_format(f), x, mode) << 13;
        default: break;
    }
    return encode_code(dev_format(f), x, mode);
}
MPX_HD inline std::uint32_t encode_bits(Format f, float x) {
    return encode_bits(f, x, dev_format(f).default_overflow);
}

// The value of stored bits, as decode_buffer gives it (FP32/TF32 containers are taken as they are).
MPX_HD inline float decode_bits(Format f, std::uint32_t bits) {
    switch (f) {
        case Format::fp32:
        case Format::tf32: return float_of(bits);
        case Format::bf16: return float_of((bits & 0xffffu) << 16);
        case Format::fp16: return decode_code(dev_format(f), bits & 0xffffu);
        default: return decode_code(dev_format(f), bits & 0xffu);
    }
}

MPX_HD inline float round_value(Format f, float x) { return decode_bits(f, encode_bits(f, x)); }

// Element i of a buffer in format f.
MPX_HD inline float load_value(Format f, const void* p, std::size_t i) {
    switch (dev_format(f).storage_bytes) {
        case 4: return decode_bits(f, static_cast<const std::uint32_t*>(p)[i]);
        case 2: return decode_bits(f, static_cast<const std::uint16_t*>(p)[i]);
        default: return decode_bits(f, static_cast<const std::uint8_t*>(p)[i]);
    }
}
// Rounds x into element i (default overflow mode, as the engine's stores) and returns the value
// stored.
MPX_HD inline float store_value(Format f, void* p, std::size_t i, float x) {
    const std::uint32_t b = encode_bits(f, x);
    switch (dev_format(f).storage_bytes) {
        case 4: static_cast<std::uint32_t*>(p)[i] = b; break;
        case 2: static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(b); break;
        default: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(b); break;
    }
    return decode_bits(f, b);
}

// ---- the rounding tally (engine/format.cpp: FastTally) -----------------------------------------

// Everything a kernel counts. The first four are RoundStats; `changed`/`lost` are the optimizer's
// write-back counts, `bad` the inf/NaN flag of unscale_and_check, `hits` accuracy's correct rows.
struct Counts {
    unsigned long long overflow = 0, underflow = 0, subnormal = 0, nonzero = 0;
    unsigned long long changed = 0, lost = 0, bad = 0, hits = 0;
    MPX_HD Counts& operator+=(const Counts& o) {
        overflow += o.overflow;
        underflow += o.underflow;
        subnormal += o.subnormal;
        nonzero += o.nonzero;
        changed += o.changed;
        lost += o.lost;
        bad += o.bad;
        hits += o.hits;
        return *this;
    }
};

// FastTally's thresholds as bit patterns of |x| (integer order = value order for |x|): overflow
// from the first magnitude that rounds past max finite (the tie rounds up where max finite's
// mantissa is odd, i.e. every format with an infinity; E4M3's 464 rounds down to 448).
struct TallyEdges {
    std::uint32_t over_from;   // finite |x| at or above overflows
    std::uint32_t min_normal;  // a non-zero |result| below is subnormal
};

MPX_HD inline TallyEdges tally_edges(Format f) {
    if (f == Format::fp32) return {0x7f800000u, 0x00800000u};
    const DevFormat d = dev_format(f);
    const std::uint32_t max_bits = bits_of(decode_code(d, max_finite_code(d)));
    const std::uint32_t threshold = max_bits + (1u << (22 - d.mantissa_bits));  // + half an ulp
    return {threshold + (d.has_inf ? 0u : 1u), bits_of(make_float(false, 1u, 1 - d.bias))};
}

// One value rounded: `in` before, `out` the value stored. count_nonzero = false where the same
// values were already counted once (a GEMM's round-through, then the store: CPU accumulate_into).
MPX_HD inline void tally(const TallyEdges& t, float in, float out, Counts& c,
                         bool count_nonzero = true) {
    const std::uint32_t a = bits_of(in) & 0x7fffffffu, b = bits_of(out) & 0x7fffffffu;
    if (count_nonzero && a != 0u) ++c.nonzero;
    if (a >= t.over_from && a < 0x7f800000u) ++c.overflow;
    if (a != 0u && b == 0u) ++c.underflow;
    if (b != 0u && b < t.min_normal) ++c.subnormal;
}

MPX_HD inline bool is_finite(float x) { return (bits_of(x) & 0x7f800000u) != 0x7f800000u; }

}  // namespace mpx::dev
