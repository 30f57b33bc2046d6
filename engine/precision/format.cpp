// Number formats on the host: the fast paths (FP16 through F16C or a table, vectorised block loops)
// over engine/core/format_core.hpp, which holds the facts and the definition; tests hold every fast path
// against it bit for bit.
#include "format.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define MPX_X86 1
#endif

namespace mpx {
namespace {

// Every format's facts, from the one table in format_core.hpp, indexed by the enum's value.
constexpr auto k_formats = [] {
    std::array<FormatInfo, std::size(all_formats)> a{};
    for (Format f : all_formats) a[static_cast<std::size_t>(f)] = format_info(f);
    return a;
}();

using core::bits_of;
using core::float_of;

std::array<float, 65536> make_fp16_table() {
    std::array<float, 65536> t{};
    for (std::uint32_t i = 0; i < 65536; ++i) t[i] = core::decode_code(format_info(Format::fp16), i);
    return t;
}
const std::array<float, 65536>& fp16_table() {
    static const auto t = make_fp16_table();
    return t;
}

#ifdef MPX_X86
bool detect_f16c() {
    __builtin_cpu_init();
#if defined(__clang__) && __clang_major__ < 16
    // Clang before 16 has no "f16c" for __builtin_cpu_supports: CPUID leaf 1, ECX bit 29.
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return (c & bit_F16C) != 0 && __builtin_cpu_supports("avx");
#else
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif
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

// core::tally over a block, with 32-bit counters so the loop vectorises.
struct BlockTally {
    core::TallyEdges edges;
    RoundStats stats;
    explicit BlockTally(Format f) : edges(core::tally_edges(f)) {}
    void add_block(const float* in, const float* out, std::size_t n) {
        if (!add_plain_block(in, out, n)) add_any_block(in, out, n);
    }
    // Most blocks hold only zeros that stayed zero and finite values that stayed normal and in
    // range: then the tally is the non-zero count and the largest stored value, which one cheaper
    // pass finds (and says whether the block was such a block; if not, it counts nothing).
    bool add_plain_block(const float* in, const float* out, std::size_t n) {
        const std::uint32_t over1 = edges.over_from - 1u, normal = edges.min_normal;
        const std::uint32_t normal_span = 0x7f800000u - normal;
        std::uint32_t zeros = 0, plain = 1u, k = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t a = bits_of(in[i]) & 0x7fffffffu, b = bits_of(out[i]) & 0x7fffffffu;
            const std::uint32_t zero = static_cast<std::uint32_t>((a | b) == 0u);
            // 0 < a < over_from: non-zero, finite, no overflow; min normal <= b < inf
            const std::uint32_t value = static_cast<std::uint32_t>(a - 1u < over1) &
                                        static_cast<std::uint32_t>(b - normal < normal_span);
            zeros += zero;
            plain &= zero | value;
            k = k > b ? k : b;
        }
        if (!plain) return false;
        stats.nonzero += n - zeros;
        if (k > stats.stored_max) stats.stored_max = k;
        return true;
    }
    void add_any_block(const float* in, const float* out, std::size_t n) {
        std::uint32_t z = 0, o = 0, u = 0, s = 0, f = 0, m = 0, k = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const core::TallyFlags t = core::tally_flags(edges, bits_of(in[i]), bits_of(out[i]));
            z += t.nonzero;
            o += t.overflow;
            u += t.underflow;
            s += t.subnormal;
            f += t.nonfinite;
            m = m > t.overflow_bits ? m : t.overflow_bits;
            k = k > t.stored_bits ? k : t.stored_bits;
        }
        if (m > stats.overflow_max) stats.overflow_max = m;
        if (k > stats.stored_max) stats.stored_max = k;
        stats.nonzero += z;
        stats.overflow += o;
        stats.underflow += u;
        stats.subnormal += s;
        stats.nonfinite += f;
    }
};
constexpr std::size_t k_chunk = 256;  // block size of the fast loops (fits L1 with its outputs)

}  // namespace

bool cpu_has_f16c() { return k_has_f16c; }

const FormatInfo& info(Format f) { return k_formats[static_cast<std::size_t>(f)]; }
static_assert(k_formats[static_cast<std::size_t>(Format::e2m1)].format == Format::e2m1,
              "all_formats lists the formats in enum order");
std::string_view to_string(Format f) { return info(f).name; }

std::optional<Format> parse_format(std::string_view name) {
    for (const auto& fi : k_formats)
        if (fi.name == name) return fi.format;
    if (name == "float32" || name == "f32") return Format::fp32;
    if (name == "float16" || name == "half" || name == "f16") return Format::fp16;
    if (name == "bfloat16") return Format::bf16;
    if (name == "fp8-e4m3" || name == "e4m3fn") return Format::e4m3;
    if (name == "fp8-e5m2") return Format::e5m2;
    if (name == "fp4" || name == "fp4-e2m1") return Format::e2m1;
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

bool rounding_underflows(Format f, float x, Overflow mode) {
    return x != 0.0f && !std::isnan(x) && decode(f, encode(f, x, mode)) == 0.0f;
}

std::uint32_t encode_reference(Format f, float x, Overflow mode) {
    if (f == Format::fp32) return bits_of(x);
    return core::to_container(f, core::encode_code(info(f), x, mode));
}

std::uint32_t encode(Format f, float x, Overflow mode) { return core::encode_bits(f, x, mode); }

float decode(Format f, std::uint32_t bits) {
    if (f == Format::fp16) return fp16_table()[bits & 0xffffu];
    return core::decode_bits(f, bits);
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
    using core::exp_all_ones, core::max_finite_code, core::nan_code, core::sign_bit;
    const std::uint32_t sb = sign_bit(fi);
    const std::uint32_t a = code & (sb - 1u);
    const bool neg = (code & sb) != 0;
    const std::uint32_t inf = exp_all_ones(fi);
    if (fi.has_inf ? a > inf : fi.has_nan && a == nan_code(fi)) return code;  // NaN
    const bool away_from_zero = (up != neg);
    if (a == 0) return up ? 1u : (sb | 1u);  // ±0 → smallest subnormal of the moving direction
    if (away_from_zero) {
        if (fi.has_inf && a == inf) return code;  // ±inf stays
        // Past max finite: inf, else NaN (E4M3), else nothing (E2M1: ±6 stays, as it saturates).
        if (a == max_finite_code(fi)) return (code & sb) | core::overflow_code(fi, Overflow::infinity);
        return code + 1u;
    }
    if (fi.has_inf && a == inf) return (code & sb) | max_finite_code(fi);
    return code - 1u;  // toward zero; 1 → 0 keeps the sign (−min subnormal up is −0)
}
}  // namespace

std::uint32_t next_up(Format f, std::uint32_t bits) {
    return core::to_container(f, step_code(info(f), core::from_container(f, bits), true));
}
std::uint32_t next_down(Format f, std::uint32_t bits) {
    return core::to_container(f, step_code(info(f), core::from_container(f, bits), false));
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
// E4M3/E5M2 values without their codes (core::Fp8Rounding); values that overflow, infinities and
// NaN (rare) take the scalar path afterwards.
void fp8_round_block(Format f, Overflow mode, const float* src, std::size_t m, float* out) {
    const core::Fp8Rounding round(f);
    const std::uint32_t over_from = core::tally_edges(f).over_from;
    std::uint32_t slow = 0;
    for (std::size_t i = 0; i < m; ++i) {
        const std::uint32_t b = bits_of(src[i]);
        out[i] = round(b);
        slow |= static_cast<std::uint32_t>((b & 0x7fffffffu) >= over_from);
    }
    if (slow)
        for (std::size_t i = 0; i < m; ++i)
            if ((bits_of(src[i]) & 0x7fffffffu) >= over_from) out[i] = decode(f, encode(f, src[i], mode));
}

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
                const std::uint32_t b = core::tf32_bits_fast(bits_of(src[i]));
                out[i] = float_of(b);
                if (bits) bits[i] = static_cast<Store>(b);
            }
            return;
        case Format::bf16:
            if (mode != Overflow::infinity) break;
            for (std::size_t i = 0; i < m; ++i) {
                const std::uint32_t b = core::bf16_bits_fast(bits_of(src[i]));
                out[i] = float_of(b << 16);
                if (bits) bits[i] = static_cast<Store>(b);
            }
            return;
        case Format::fp16:
#ifdef MPX_X86
            if (mode == Overflow::infinity && k_has_f16c) {
                if constexpr (std::is_same_v<Store, std::uint16_t>) {  // FP16 storage: the codes go there
                    if (bits) {
                        fp16_encode_f16c(src, bits, m);
                        fp16_decode_f16c(bits, out, m);
                        return;
                    }
                }
                std::uint16_t tmp[k_chunk];
                fp16_encode_f16c(src, tmp, m);
                fp16_decode_f16c(tmp, out, m);
                if (bits)
                    for (std::size_t i = 0; i < m; ++i) bits[i] = static_cast<Store>(tmp[i]);
                return;
            }
#endif
            break;
        case Format::e4m3:
        case Format::e5m2:
            if (!bits) {  // round_in_place (FP8 GEMM operands): values only
                fp8_round_block(f, mode, src, m, out);
                return;
            }
            break;
        case Format::e2m1: break;  // sixteen values, no fast path: the generic encoder below
        default: break;
    }
    for (std::size_t i = 0; i < m; ++i) {
        const std::uint32_t b = encode(f, src[i], mode);
        out[i] = decode(f, b);
        if (bits) bits[i] = static_cast<Store>(b);
    }
}

// `dst` (when given) gets the rounded values: src itself (in place) or a buffer apart from it.
template <typename Store>
RoundStats round_all(Format f, Overflow mode, const float* src, std::size_t n, Store* bits, float* dst) {
    BlockTally t(f);
    float out[k_chunk];
    for (std::size_t off = 0; off < n; off += k_chunk) {
        const std::size_t m = std::min(k_chunk, n - off);
        float* to = dst && dst != src ? dst + off : out;  // in place: the inputs stay until counted
        round_block(f, mode, src + off, m, bits ? bits + off : nullptr, to);
        t.add_block(src + off, to, m);
        if (dst == src) std::memcpy(dst + off, out, m * sizeof(float));
    }
    return t.stats;
}

// The tally of FP32 values stored as they are (only subnormals and the largest value to count).
RoundStats tally_unchanged(const float* v, std::size_t n) {
    BlockTally t(Format::fp32);
    for (std::size_t off = 0; off < n; off += k_chunk) t.add_block(v + off, v + off, std::min(k_chunk, n - off));
    return t.stats;
}
}  // namespace

RoundStats round_in_place(Format f, std::span<float> values, Overflow mode) {
    if (f == Format::fp32) return tally_unchanged(values.data(), values.size());  // nothing changes
    return round_all<std::uint32_t>(f, mode, values.data(), values.size(), nullptr, values.data());
}

void round_copy_uncounted(Format f, std::span<const float> src, float* dst, Overflow mode) {
    const std::size_t n = src.size();
    if (f == Format::fp32) {
        if (n) std::memcpy(dst, src.data(), n * sizeof(float));
        return;
    }
    for (std::size_t off = 0; off < n; off += k_chunk)
        round_block<std::uint32_t>(f, mode, src.data() + off, std::min(k_chunk, n - off), nullptr, dst + off);
}

RoundStats round_copy(Format f, std::span<const float> src, float* dst, Overflow mode) {
    if (f == Format::fp32) {
        if (!src.empty()) std::memcpy(dst, src.data(), src.size() * sizeof(float));
        return tally_unchanged(dst, src.size());
    }
    return round_all<std::uint32_t>(f, mode, src.data(), src.size(), nullptr, dst);
}

RoundStats encode_buffer(Format f, std::span<const float> values, void* dst, Overflow mode) {
    const std::size_t n = values.size();
    switch (info(f).storage_bytes) {
        case 4:
            if (f == Format::fp32) {
                if (n) std::memcpy(dst, values.data(), n * sizeof(float));
                return tally_unchanged(values.data(), n);
            }
            return round_all(f, mode, values.data(), n, static_cast<std::uint32_t*>(dst), nullptr);
        case 2: return round_all(f, mode, values.data(), n, static_cast<std::uint16_t*>(dst), nullptr);
        default: return round_all(f, mode, values.data(), n, static_cast<std::uint8_t*>(dst), nullptr);
    }
}

void decode_buffer(Format f, const void* src, std::span<float> out) {
    const std::size_t n = out.size();
    if (n == 0) return;  // an empty span's data() may be null, which memcpy must not get
    float* d = out.data();
    switch (f) {
        case Format::fp32:
        case Format::tf32: std::memcpy(d, src, n * 4); return;
        case Format::bf16: {
            const auto* s = static_cast<const std::uint16_t*>(src);
            for (std::size_t i = 0; i < n; ++i) d[i] = float_of(std::uint32_t{s[i]} << 16);
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
