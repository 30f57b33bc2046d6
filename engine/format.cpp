// Number formats: the fact table, the generic round-to-nearest-even encoder (the definition) and the
// fast paths (BF16 bit trick, FP16 through F16C) that tests hold against it bit for bit.
#include "format.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MPX_X86 1
#endif

namespace mpx {
namespace {

// Facts from REFERENCE.md, "Number formats".
constexpr std::array<FormatInfo, 6> k_formats{{
    {Format::fp32, "fp32", 8, 23, 127, 4, true, Overflow::infinity, 3.40282347e38f, 0x1p-126f,
     0x1p-149f, 0x1p-23f},
    {Format::tf32, "tf32", 8, 10, 127, 4, true, Overflow::infinity, 0x1.ffcp127f, 0x1p-126f,
     0x1p-136f, 0x1p-10f},
    {Format::fp16, "fp16", 5, 10, 15, 2, true, Overflow::infinity, 65504.0f, 0x1p-14f, 0x1p-24f,
     0x1p-10f},
    {Format::bf16, "bf16", 8, 7, 127, 2, true, Overflow::infinity, 0x1.fep127f, 0x1p-126f,
     0x1p-133f, 0x1p-7f},
    {Format::e4m3, "e4m3", 4, 3, 7, 1, false, Overflow::saturate, 448.0f, 0x1p-6f, 0x1p-9f,
     0x1p-3f},
    {Format::e5m2, "e5m2", 5, 2, 15, 1, true, Overflow::infinity, 57344.0f, 0x1p-14f, 0x1p-16f,
     0x1p-2f},
}};

constexpr std::uint32_t f32_bits(float x) { return std::bit_cast<std::uint32_t>(x); }
constexpr float f32_from(std::uint32_t b) { return std::bit_cast<float>(b); }

// Width of the code (sign included) the generic routines work on; TF32 is a 19-bit code that
// lives in the top of a 32-bit container.
constexpr int code_bits(const FormatInfo& fi) { return 1 + fi.exponent_bits + fi.mantissa_bits; }
constexpr std::uint32_t sign_bit(const FormatInfo& fi) { return 1u << (code_bits(fi) - 1); }
constexpr std::uint32_t exp_all_ones(const FormatInfo& fi) {
    return ((1u << fi.exponent_bits) - 1u) << fi.mantissa_bits;
}
// Largest finite magnitude code: all-ones exponent is inf/NaN, except E4M3 where only S.1111.111
// is NaN.
constexpr std::uint32_t max_finite_code(const FormatInfo& fi) {
    return fi.has_inf ? exp_all_ones(fi) - 1u : exp_all_ones(fi) | ((1u << fi.mantissa_bits) - 2u);
}
constexpr std::uint32_t nan_code(const FormatInfo& fi) {
    return fi.has_inf ? exp_all_ones(fi) | (1u << (fi.mantissa_bits - 1))
                      : exp_all_ones(fi) | ((1u << fi.mantissa_bits) - 1u);
}

std::uint32_t to_container(Format f, std::uint32_t code) {
    return f == Format::tf32 ? code << 13 : code;
}
std::uint32_t from_container(Format f, std::uint32_t bits) {
    return f == Format::tf32 ? bits >> 13 : bits;
}

// Generic encoder on codes. The magnitude |x| = m·2^q (m < 2^24 integer). The target's quantum in
// the binade of x is 2^qt with qt = max(e, emin) - M; round m·2^(q-qt) to an integer r with ties to
// even; the code is then ((max(e, emin) + bias - 1) << M) + r, which carries into the exponent
// by itself when rounding reaches the next binade (and turns a rounded-up subnormal into min normal).
std::uint32_t encode_code(const FormatInfo& fi, float x, Overflow mode) {
    const std::uint32_t b = f32_bits(x);
    const std::uint32_t sign = (b >> 31) ? sign_bit(fi) : 0u;
    const std::uint32_t a = b & 0x7fffffffu;
    const int M = fi.mantissa_bits;
    if (a > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits that fit
        if (!fi.has_inf) return sign | nan_code(fi);
        const std::uint32_t payload = (a & 0x007fffffu) >> (23 - M);
        return sign | exp_all_ones(fi) | payload | (1u << (M - 1));
    }
    const auto overflowed = [&]() -> std::uint32_t {
        if (mode == Overflow::saturate) return sign | max_finite_code(fi);
        return sign | (fi.has_inf ? exp_all_ones(fi) : nan_code(fi));
    };
    if (a == 0x7f800000u) return overflowed();
    if (a == 0) return sign;

    const int exp_field = static_cast<int>(a >> 23);
    std::uint32_t m;
    int q;
    int e;  // floor(log2 |x|)
    if (exp_field == 0) {
        m = a;
        q = -149;
        e = -149 + (31 - std::countl_zero(m));
    } else {
        m = (a & 0x007fffffu) | 0x00800000u;
        q = exp_field - 150;
        e = exp_field - 127;
    }
    const int emin = 1 - fi.bias;
    const int eff = e > emin ? e : emin;
    const int qt = eff - M;
    const int shift = qt - q;  // > 0 for every format narrower than FP32
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
        (static_cast<std::uint64_t>(eff + fi.bias - 1) << M) + static_cast<std::uint64_t>(r);
    if (code > max_finite_code(fi)) return overflowed();
    return sign | static_cast<std::uint32_t>(code);
}

float decode_code(const FormatInfo& fi, std::uint32_t code) {
    const int M = fi.mantissa_bits;
    const bool neg = (code & sign_bit(fi)) != 0;
    const std::uint32_t a = code & (sign_bit(fi) - 1u);
    const std::uint32_t ef = a >> M;
    const std::uint32_t mant = a & ((1u << M) - 1u);
    const std::uint32_t emax_field = (1u << fi.exponent_bits) - 1u;
    float v;
    // NaN keeps its payload (top of the FP32 mantissa) and comes back quiet, exactly as F16C's
    // VCVTPH2PS does: the FP16 table and the vector path must agree bit for bit, and a TF32
    // container's NaN is already this float.
    const bool is_nan = fi.has_inf ? (ef == emax_field && mant != 0) : a == nan_code(fi);
    if (is_nan) {
        return f32_from((neg ? 0x80000000u : 0u) | 0x7fc00000u | (mant << (23 - M)));
    }
    if (fi.has_inf && ef == emax_field) {
        v = std::numeric_limits<float>::infinity();
    } else if (ef == 0) {
        v = std::ldexp(static_cast<float>(mant), 1 - fi.bias - M);
    } else {
        v = std::ldexp(static_cast<float>(mant | (1u << M)), static_cast<int>(ef) - fi.bias - M);
    }
    return neg ? -v : v;
}

// BF16 fast path: round-to-nearest-even by adding 0x7fff plus the lowest kept bit. Exact for every
// finite input and for overflow (it carries into the all-ones exponent = inf); NaN handled apart so
// a signalling NaN cannot carry into an infinity (REFERENCE.md).
inline std::uint16_t bf16_encode_fast(float x) {
    const std::uint32_t b = f32_bits(x);
    const std::uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (b >> 16) | 0x40u;
    // Both computed, one selected: branch-free so the block loops vectorise.
    return static_cast<std::uint16_t>((b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

std::array<float, 65536> make_fp16_table() {
    std::array<float, 65536> t{};
    for (std::uint32_t i = 0; i < 65536; ++i) t[i] = decode_code(k_formats[2], i);
    return t;
}
const std::array<float, 65536>& fp16_table() {
    static const auto t = make_fp16_table();
    return t;
}

#ifdef MPX_X86
bool detect_f16c() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}
__attribute__((target("avx,f16c"))) void fp16_encode_f16c(const float* src, std::uint16_t* dst,
                                                          std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
    for (; i < n; ++i) {
        const __m128 v = _mm_set_ss(src[i]);
        dst[i] = static_cast<std::uint16_t>(
            _mm_extract_epi16(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0));
    }
}
__attribute__((target("avx,f16c"))) void fp16_decode_f16c(const std::uint16_t* src, float* dst,
                                                          std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    const auto& t = fp16_table();
    for (; i < n; ++i) dst[i] = t[src[i]];
}
#else
bool detect_f16c() { return false; }
#endif

const bool k_has_f16c = detect_f16c();

// Smallest magnitude that rounds past max finite: the midpoint to the next binade step. A tie there
// overflows where max finite's mantissa is odd (all formats with an infinity) and rounds down to
// max where it is even (E4M3: 464 → 448, REFERENCE.md). Exact in FP32 for every format.
struct OverflowEdge {
    float threshold;
    bool tie_overflows;
};
OverflowEdge overflow_edge(Format f) {
    const FormatInfo& fi = info(f);
    if (f == Format::fp32) return {std::numeric_limits<float>::infinity(), false};
    const float half_ulp = std::ldexp(1.0f, std::ilogb(fi.max_finite) - fi.mantissa_bits - 1);
    return {fi.max_finite + half_ulp, fi.has_inf};
}

// TF32 fast path: the BF16 trick on 13 dropped bits; NaN handled apart (quieted, payload kept).
inline std::uint32_t tf32_encode_fast(float x) {
    const std::uint32_t b = f32_bits(x);
    const std::uint32_t rounded = (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
    const std::uint32_t quiet_nan = (b | 0x00400000u) & 0xffffe000u;
    return (b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

// Branch-free tally for the hot loops, on bit patterns: for non-negative floats the integer order of
// the bits is the order of the values, so every test is an integer compare the compiler vectorises.
// Same rule as the scalar one: overflow = finite input at or past the format's overflow edge.
using u32_alias = std::uint32_t __attribute__((may_alias));
struct FastTally {
    std::size_t overflow = 0, underflow = 0, subnormal = 0, nonzero = 0;
    std::uint32_t over_from, min_normal_bits;
    FastTally(const OverflowEdge& e, float mn)
        : over_from(e.threshold == std::numeric_limits<float>::infinity()
                        ? 0x7f800000u
                        : f32_bits(e.threshold) + (e.tie_overflows ? 0u : 1u)),
          min_normal_bits(f32_bits(mn)) {}
    void add_block(const float* in, const float* out, std::size_t n) {
        const auto* ib = reinterpret_cast<const u32_alias*>(in);
        const auto* ob = reinterpret_cast<const u32_alias*>(out);
        std::uint32_t o = 0, u = 0, s = 0, z = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t a = ib[i] & 0x7fffffffu, b = ob[i] & 0x7fffffffu;
            z += static_cast<std::uint32_t>(a != 0u);
            o += static_cast<std::uint32_t>(a >= over_from) & static_cast<std::uint32_t>(a < 0x7f800000u);
            u += static_cast<std::uint32_t>(a != 0u) & static_cast<std::uint32_t>(b == 0u);
            s += static_cast<std::uint32_t>(b != 0u) & static_cast<std::uint32_t>(b < min_normal_bits);
        }
        overflow += o;
        underflow += u;
        subnormal += s;
        nonzero += z;
    }
    void add(float in, float out) { add_block(&in, &out, 1); }
    RoundStats stats() const {
        RoundStats r;
        r.overflow = overflow;
        r.underflow = underflow;
        r.subnormal = subnormal;
        r.nonzero = nonzero;
        return r;
    }
};
constexpr std::size_t k_chunk = 256;  // block size of the fast loops (fits L1 with its outputs)

}  // namespace

bool cpu_has_f16c() { return k_has_f16c; }

const FormatInfo& info(Format f) { return k_formats[static_cast<std::size_t>(f)]; }
std::string_view to_string(Format f) { return info(f).name; }

std::optional<Format> parse_format(std::string_view name) {
    for (const auto& fi : k_formats)
        if (fi.name == name) return fi.format;
    if (name == "float32" || name == "f32") return Format::fp32;
    if (name == "float16" || name == "half" || name == "f16") return Format::fp16;
    if (name == "bfloat16") return Format::bf16;
    if (name == "fp8-e4m3" || name == "e4m3fn") return Format::e4m3;
    if (name == "fp8-e5m2") return Format::e5m2;
    return std::nullopt;
}

std::string_view to_string(FpClass c) {
    switch (c) {
        case FpClass::zero: return "zero";
        case FpClass::subnormal: return "subnormal";
        case FpClass::normal: return "normal";
        case FpClass::inf: return "inf";
        case FpClass::nan: return "nan";
    }
    return "?";
}

bool rounding_overflows(Format f, float x) {
    const OverflowEdge edge = overflow_edge(f);
    const float a = std::fabs(x);
    if (std::isnan(x) || a == std::numeric_limits<float>::infinity()) return false;
    return a > edge.threshold || (a == edge.threshold && edge.tie_overflows);
}

bool rounding_underflows(Format f, float x, Overflow mode) {
    return x != 0.0f && !std::isnan(x) && decode(f, encode(f, x, mode)) == 0.0f;
}

std::uint32_t encode_reference(Format f, float x, Overflow mode) {
    if (f == Format::fp32) return f32_bits(x);
    return to_container(f, encode_code(info(f), x, mode));
}

std::uint32_t encode(Format f, float x, Overflow mode) {
    if (f == Format::fp32) return f32_bits(x);
    if (mode == Overflow::infinity) {
        if (f == Format::bf16) return bf16_encode_fast(x);
        if (f == Format::tf32) return tf32_encode_fast(x);
    }
    return encode_reference(f, x, mode);
}

float decode(Format f, std::uint32_t bits) {
    switch (f) {
        case Format::fp32: return f32_from(bits);
        case Format::bf16: return f32_from((bits & 0xffffu) << 16);
        case Format::fp16: return fp16_table()[bits & 0xffffu];
        default: return decode_code(info(f), from_container(f, bits));
    }
}

FpClass classify(Format f, std::uint32_t bits) {
    const float v = decode(f, bits);
    if (std::isnan(v)) return FpClass::nan;
    if (std::isinf(v)) return FpClass::inf;
    if (v == 0.0f) return FpClass::zero;
    return std::fabs(v) < info(f).min_normal ? FpClass::subnormal : FpClass::normal;
}

namespace {
// Steps a code one representable value up (toward +inf) in sign-magnitude order.
std::uint32_t step_code(const FormatInfo& fi, std::uint32_t code, bool up) {
    const std::uint32_t sb = sign_bit(fi);
    const std::uint32_t a = code & (sb - 1u);
    const bool neg = (code & sb) != 0;
    const std::uint32_t inf = exp_all_ones(fi);
    if (fi.has_inf ? a > inf : a == nan_code(fi)) return code;  // NaN
    const bool away_from_zero = (up != neg);
    if (a == 0) return up ? 1u : (sb | 1u);  // ±0 → smallest subnormal of the moving direction
    if (away_from_zero) {
        if (fi.has_inf && a == inf) return code;  // ±inf stays
        if (a == max_finite_code(fi)) return (code & sb) | (fi.has_inf ? inf : nan_code(fi));
        return code + 1u;
    }
    if (fi.has_inf && a == inf) return (code & sb) | max_finite_code(fi);
    return code - 1u;  // toward zero; 1 → 0 keeps the sign (−min subnormal up is −0)
}
}  // namespace

std::uint32_t next_up(Format f, std::uint32_t bits) {
    return to_container(f, step_code(info(f), from_container(f, bits), true));
}
std::uint32_t next_down(Format f, std::uint32_t bits) {
    return to_container(f, step_code(info(f), from_container(f, bits), false));
}

float ulp(Format f, float x) {
    if (!std::isfinite(x)) return std::numeric_limits<float>::quiet_NaN();
    const FormatInfo& fi = info(f);
    const int emin = 1 - fi.bias;
    int e = emin;
    if (x != 0.0f) e = std::ilogb(x);
    if (e < emin) e = emin;
    const int emax = std::ilogb(fi.max_finite);
    if (e > emax) e = emax;
    return std::ldexp(1.0f, e - fi.mantissa_bits);
}

namespace {
// Rounds one block of at most k_chunk values through the format: `bits` gets the stored bits
// (when given) and `out` the decoded values.
template <typename Store>
void round_block(Format f, Overflow mode, const float* src, std::size_t m, Store* bits, float* out) {
    switch (f) {
        case Format::fp32:
            std::memcpy(out, src, m * sizeof(float));
            if (bits) std::memcpy(bits, src, m * sizeof(float));
            return;
        case Format::tf32:
            if (mode != Overflow::infinity) break;
            for (std::size_t i = 0; i < m; ++i) {
                const std::uint32_t b = tf32_encode_fast(src[i]);
                out[i] = f32_from(b);
                if (bits) bits[i] = static_cast<Store>(b);
            }
            return;
        case Format::bf16:
            if (mode != Overflow::infinity) break;
            for (std::size_t i = 0; i < m; ++i) {
                const std::uint16_t b = bf16_encode_fast(src[i]);
                out[i] = f32_from(std::uint32_t{b} << 16);
                if (bits) bits[i] = static_cast<Store>(b);
            }
            return;
        case Format::fp16:
#ifdef MPX_X86
            if (mode == Overflow::infinity && k_has_f16c) {
                std::uint16_t tmp[k_chunk];
                fp16_encode_f16c(src, tmp, m);
                fp16_decode_f16c(tmp, out, m);
                if (bits)
                    for (std::size_t i = 0; i < m; ++i) bits[i] = static_cast<Store>(tmp[i]);
                return;
            }
#endif
            break;
        default: break;
    }
    for (std::size_t i = 0; i < m; ++i) {
        const std::uint32_t b = encode(f, src[i], mode);
        out[i] = decode(f, b);
        if (bits) bits[i] = static_cast<Store>(b);
    }
}

template <typename Store>
RoundStats round_all(Format f, Overflow mode, const float* src, std::size_t n, Store* bits, float* inplace) {
    FastTally t(overflow_edge(f), info(f).min_normal);
    float out[k_chunk];
    for (std::size_t off = 0; off < n; off += k_chunk) {
        const std::size_t m = std::min(k_chunk, n - off);
        round_block(f, mode, src + off, m, bits ? bits + off : nullptr, out);
        t.add_block(src + off, out, m);
        if (inplace) std::memcpy(inplace + off, out, m * sizeof(float));
    }
    return t.stats();
}
}  // namespace

RoundStats round_in_place(Format f, std::span<float> values, Overflow mode) {
    if (f == Format::fp32) {  // nothing changes; only subnormals to count
        FastTally t(overflow_edge(f), info(f).min_normal);
        t.add_block(values.data(), values.data(), values.size());
        return t.stats();
    }
    return round_all<std::uint32_t>(f, mode, values.data(), values.size(), nullptr, values.data());
}

RoundStats encode_buffer(Format f, std::span<const float> values, void* dst, Overflow mode) {
    const std::size_t n = values.size();
    switch (info(f).storage_bytes) {
        case 4:
            if (f == Format::fp32) {
                std::memcpy(dst, values.data(), n * sizeof(float));
                FastTally t(overflow_edge(f), info(f).min_normal);
                t.add_block(values.data(), values.data(), n);
                return t.stats();
            }
            return round_all(f, mode, values.data(), n, static_cast<std::uint32_t*>(dst), nullptr);
        case 2: return round_all(f, mode, values.data(), n, static_cast<std::uint16_t*>(dst), nullptr);
        default: return round_all(f, mode, values.data(), n, static_cast<std::uint8_t*>(dst), nullptr);
    }
}

void decode_buffer(Format f, const void* src, std::span<float> out) {
    const std::size_t n = out.size();
    float* d = out.data();
    switch (f) {
        case Format::fp32:
        case Format::tf32: std::memcpy(d, src, n * 4); return;
        case Format::bf16: {
            const auto* s = static_cast<const std::uint16_t*>(src);
            for (std::size_t i = 0; i < n; ++i) d[i] = f32_from(std::uint32_t{s[i]} << 16);
            return;
        }
        case Format::fp16: {
            const auto* s = static_cast<const std::uint16_t*>(src);
#ifdef MPX_X86
            if (k_has_f16c) {
                fp16_decode_f16c(s, d, n);
                return;
            }
#endif
            const auto& t = fp16_table();
            for (std::size_t i = 0; i < n; ++i) d[i] = t[s[i]];
            return;
        }
        default: {
            const auto* s = static_cast<const std::uint8_t*>(src);
            for (std::size_t i = 0; i < n; ++i) d[i] = decode(f, s[i]);
        }
    }
}

}  // namespace mpx
