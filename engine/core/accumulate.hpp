// What a tensor core keeps when it adds: the accumulation models of REFERENCE.md ("Accumulation
// models"), one dot product at a time, compiled for the CPU and the GPU alike. These are MODELS of
// FP8 tensor-core accumulation (DeepSeek-V3 §3.3.2/§3.5.2), not bit-exact hardware.
// Rule: nothing rounds unless the model says so. Products are exact in double, a group's aligned
// sum is an exact sum of integers in double, and a sum that double might round (the register's
// step, a promotion) takes the fast path only where TwoSum proves it exact, else the integer path
// (Scaled, jammed_sum). The model's only roundings: the register's truncation toward zero to B
// bits, and fl32 (round to nearest even) into the FP32 accumulator.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/core/format_core.hpp"
#include "engine/core/host_device.hpp"

namespace mpx {

// exact: FP32 accumulation of exact products, in k order: A = fl32(A + a_k·b_k) (one rounding per
// step, as an FMA chain; an FP32 GEMM such as Eigen's adds in another order). fp8_fast: groups of
// `group` products aligned to the group's largest exponent and truncated to `bits` bits, added to a
// `bits`-bit truncating register, never promoted. promote: the same with the register added into an
// FP32 accumulator every `promote_every` products (DeepSeek's fix). bits: the alignment model with
// groups of one (per product), no promotion; bits = 24 is FP32 accumulation rounding toward zero.
enum class AccumulateModel : std::uint8_t { exact, fp8_fast, promote, bits };

// Which parameters each model reads (accumulate_dot below): bits every model but exact, group
// fp8_fast and promote (bits adds per product), promote_every promote only. The session's reach
// check and the CLI's refusals ask these, so a setting a model ignores is refused, never dropped.
MPX_HOST_DEVICE constexpr bool reads_bits(AccumulateModel m) { return m != AccumulateModel::exact; }
MPX_HOST_DEVICE constexpr bool reads_group(AccumulateModel m) {
    return m == AccumulateModel::fp8_fast || m == AccumulateModel::promote;
}
MPX_HOST_DEVICE constexpr bool reads_promote_every(AccumulateModel m) { return m == AccumulateModel::promote; }

struct AccumulateParams {
    AccumulateModel model = AccumulateModel::exact;
    int bits = 14;            // B: significant bits the register and the aligned products keep
    int group = 32;           // G: products aligned together (bits uses 1)
    int promote_every = 128;  // N_C: products between promotions to FP32 (promote only)
};

// The models of a layer's three GEMMs, as Transformer Engine sets its split accumulator per GEMM:
// fprop y = x·wᵀ (reduces over the layer's inputs), dgrad dx = dy·w (over its outputs), wgrad
// dw = dyᵀ·x (over the batch). All exact (the default) is FP32 accumulation as today.
struct GemmAccumulation {
    AccumulateParams fprop, dgrad, wgrad;
    MPX_HOST_DEVICE bool all_exact() const {
        return fprop.model == AccumulateModel::exact && dgrad.model == AccumulateModel::exact &&
               wgrad.model == AccumulateModel::exact;
    }
};

// The ranges validate() (engine/precision/accumulation.hpp) enforces; the exactness argument below
// needs them: a register of at most 24 bits, a group sum of at most 24 + 6 = 30 bits.
inline constexpr int k_max_accumulate_bits = 24;
inline constexpr int k_max_accumulate_group = 64;

namespace core {

// m·2^e, exact, |m| < 2^62: the integer path's numbers. Its inputs are products (|m| < 2^53),
// group sums (|m| < 2^30), the register (|m| < 2^B) and the FP32 accumulator (|m| < 2^24).
struct Scaled {
    std::int64_t m = 0;
    int e = 0;
};

MPX_HOST_DEVICE inline std::uint64_t bits_of_double(double x) {
#ifdef __CUDA_ARCH__
    return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
    std::uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

MPX_HOST_DEVICE inline double double_of_bits(std::uint64_t b) {
#ifdef __CUDA_ARCH__
    return __longlong_as_double(static_cast<long long>(b));
#else
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

// 2^k for −1022 ≤ k ≤ 1023, from its bits.
MPX_HOST_DEVICE inline double pow2_double(int k) { return double_of_bits(static_cast<std::uint64_t>(k + 1023) << 52); }

MPX_HOST_DEVICE inline int bit_length(std::uint64_t x) {  // 0 for 0
#ifdef __CUDA_ARCH__
    return 64 - __clzll(static_cast<long long>(x));
#else
    return x == 0 ? 0 : 64 - __builtin_clzll(x);
#endif
}

MPX_HOST_DEVICE inline std::uint64_t magnitude(std::int64_t m) {
    return m < 0 ? 0u - static_cast<std::uint64_t>(m) : static_cast<std::uint64_t>(m);
}
MPX_HOST_DEVICE inline std::int64_t with_sign(bool neg, std::uint64_t mag) {
    return neg ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
}

// A finite double as m·2^e (m carries the sign; zero is {0, 0}).
MPX_HOST_DEVICE inline Scaled scaled_of(double x) {
    const std::uint64_t b = bits_of_double(x);
    const int ef = static_cast<int>((b >> 52) & 0x7ffu);
    std::uint64_t m = b & 0x000fffffffffffffull;
    if (ef != 0) m |= 0x0010000000000000ull;
    return {with_sign((b >> 63) != 0, m), ef == 0 ? -1074 : ef - 1075};
}

// Position of the top bit: floor(log2 |x|) of a non-zero x.
MPX_HOST_DEVICE inline int top_bit(const Scaled& x) { return x.e + bit_length(magnitude(x.m)) - 1; }

// a + b for |a.m|, |b.m| < 2^53, exactly or with a sticky bit: the result is m·2^s with s = T − 60
// (T the larger top bit). An operand's bits below 2^s are dropped and their presence ORed into bit
// 0, which leaves the result in the same open interval between multiples of w = 2^(s+1) as the
// exact sum (the larger operand is a multiple of w: its bits end at T − 52 at the lowest).
// Why that is enough: an operand loses bits only if its top is below T − 8, so |a + b| > 2^(T−1)
// and the result's quantum after any rounding of this file (B ≤ 24 bits, or FP32's 24) is at least
// 2^(T−24), a multiple of 2w: no truncation point, rounding midpoint or power of two lies strictly
// inside that interval, so truncating or rounding the jammed sum gives what the exact sum gives.
// |a| + |b| < 2^(T+2), so the integer stays below 2^62.
MPX_HOST_DEVICE inline Scaled jammed_sum(const Scaled& a, const Scaled& b) {
    if (a.m == 0) return b;
    if (b.m == 0) return a;
    const int ta = top_bit(a), tb = top_bit(b);
    const int s = (ta > tb ? ta : tb) - 60;
    const auto align = [s](const Scaled& x) {
        std::uint64_t mag = magnitude(x.m);
        const int shift = x.e - s;
        if (shift >= 0) {
            mag <<= shift;  // top(x) ≤ T: mag·2^shift < 2^61
        } else if (-shift >= 64) {
            mag = 1u;  // every bit is below 2^s: only the sticky bit stays
        } else {
            const std::uint64_t kept = mag >> -shift;
            mag = kept | ((kept << -shift) != mag ? 1u : 0u);
        }
        return with_sign(x.m < 0, mag);
    };
    return {align(a) + align(b), s};
}

// Toward zero to `bits` significant bits of x's own binade (trunc_B of REFERENCE.md).
MPX_HOST_DEVICE inline Scaled truncate_bits(const Scaled& x, int bits) {
    const std::uint64_t mag = magnitude(x.m);
    const int drop = bit_length(mag) - bits;
    if (drop <= 0) return x;
    return {with_sign(x.m < 0, mag >> drop), x.e + drop};
}

// fl32(x): round to nearest even into FP32, subnormals kept, ±inf past the largest finite value;
// a non-zero value that rounds to zero keeps its sign (IEEE).
MPX_HOST_DEVICE inline float round_to_fp32(const Scaled& x) {
    const bool neg = x.m < 0;
    const std::uint64_t mag = magnitude(x.m);
    if (mag == 0) return 0.0f;
    const int top = x.e + bit_length(mag) - 1;
    const float inf = float_of(neg ? 0xff800000u : 0x7f800000u);
    if (top > 127) return inf;
    int qe = top - 23 > -149 ? top - 23 : -149;  // FP32's quantum in x's binade
    const int shift = qe - x.e;
    std::uint64_t r;
    if (shift <= 0) {
        r = mag << -shift;  // exact: fewer than 24 bits above the quantum
    } else if (shift >= 63) {
        r = 0;  // mag < 2^62 ≤ half a quantum
    } else {
        r = mag >> shift;
        const std::uint64_t rem = mag & ((std::uint64_t{1} << shift) - 1u);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
    }
    if (r == (std::uint64_t{1} << 24)) {  // rounded up into the next binade
        r >>= 1;
        ++qe;
        if (qe + 23 > 127) return inf;
    }
    return make_float(neg, static_cast<std::uint32_t>(r), qe);
}

MPX_HOST_DEVICE inline bool is_finite_double(double x) {
    return (bits_of_double(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

// Every value of the models is a multiple of 2^-321 (a product of floats is one of 2^-298, and a
// group's quantum q is at least 2^(−298 − 23)), so each non-zero one is a normal double and m·2^e
// below converts exactly (|m| < 2^53 after truncate_bits, e ≥ −344).
MPX_HOST_DEVICE inline double double_of(const Scaled& x) { return static_cast<double>(x.m) * pow2_double(x.e); }

// trunc_B(d) of a normal double or zero: its significand cut toward zero to `bits` bits.
MPX_HOST_DEVICE inline double truncated(double d, int bits) {
    if (d == 0.0) return 0.0;
    const std::uint64_t below_b = (std::uint64_t{1} << (53 - bits)) - 1u;
    return double_of_bits(bits_of_double(d) & ~below_b);
}

// The register's step, trunc_B(r + s), for r of at most B bits and s a group sum (≤ 30 bits). Fast
// path: TwoSum (Knuth; no FMA, round to nearest) gives r + s − d exactly, and where that is zero
// d is the exact sum and cutting its significand is the truncation. Otherwise the integer path.
MPX_HOST_DEVICE inline double add_truncated(double r, double s, int bits) {
    const double d = r + s;
    const double sv = d - r;
    if ((r - (d - sv)) + (s - sv) == 0.0) return truncated(d, bits);
    return double_of(truncate_bits(jammed_sum(scaled_of(r), scaled_of(s)), bits));
}

// fl32(a + v) with one rounding, for v of at most 53 bits: the same TwoSum test, then the cast
// (round to nearest even, subnormals kept: the CUDA build has no --ftz), else the integer path.
MPX_HOST_DEVICE inline float add_rounded_fp32(float a, double v) {
    const double ad = a;
    const double d = ad + v;
    const double sv = d - ad;
    if ((ad - (d - sv)) + (v - sv) == 0.0) return static_cast<float>(d);
    return round_to_fp32(jammed_sum(scaled_of(ad), scaled_of(v)));
}

// The running state of one dot product. Non-finite products do not enter the register: they are
// summed apart in IEEE arithmetic (inf + −inf = NaN, NaN absorbs) and added to the finite result
// at the end, which is what IEEE accumulation in any order gives, including an FP32 accumulator
// that itself overflowed to inf.
struct DotState {
    double r = 0.0;        // the B-bit register (alignment models); exact, see double_of
    float a = 0.0f;        // the FP32 accumulator
    float nonfinite = 0.0f;
    bool any_nonfinite = false;

    MPX_HOST_DEVICE void add_nonfinite(double p) {
        nonfinite = any_nonfinite ? nonfinite + static_cast<float>(p) : static_cast<float>(p);
        any_nonfinite = true;
    }
    // A = fl32(A + v): an accumulator already inf or NaN stays so (adding a finite value).
    MPX_HOST_DEVICE void add_to_fp32(double v) {
        if (is_finite(a)) a = add_rounded_fp32(a, v);
    }
    MPX_HOST_DEVICE float result() const { return any_nonfinite ? a + nonfinite : a; }
};

// Products p_k = x(k)·y(k) in double: exact for any two floats (24 + 24 significant bits ≤ 53, and
// |p| between 2^-298 and 2^256 stays in double's normal range), whatever format they came from.
template <class X, class Y>
MPX_HOST_DEVICE double product(X& x, Y& y, int k) {
    return static_cast<double>(x(k)) * static_cast<double>(y(k));
}

// The aligned, truncated sum S of products [begin, end) (REFERENCE.md): e = the largest
// floor(log2|p_k|), q = 2^(e − B + 1), S = Σ sign(p_k)·floor(|p_k| / q)·q.
// In doubles, and still exact: p_k / q = p_k · 2^(B−1−e) only moves the exponent (the result is at
// least 2^-298 · 2^-256, normal), trunc() of it is an integer below 2^B, and a sum of at most 64
// such integers stays below 2^30, far inside double's 53 bits. Non-finite products go to `st` and
// take no part in the alignment.
template <class X, class Y>
MPX_HOST_DEVICE double group_sum(X& x, Y& y, int begin, int end, int bits, DotState& st) {
    constexpr double finite_max = 0x1.fffffffffffffp1023;
    if (end - begin == 1) {  // a group of one (the bits model) is its product cut to B bits
        const double p = product(x, y, begin);
        if (is_finite_double(p)) return truncated(p, bits);
        st.add_nonfinite(p);
        return 0.0;
    }
    double largest = 0.0;
    bool nonfinite = false;
    for (int k = begin; k < end; ++k) {
        const double a = fabs(product(x, y, k));
        const bool finite = a <= finite_max;  // false for inf and NaN
        nonfinite = nonfinite || !finite;
        largest = finite && a > largest ? a : largest;
    }
    if (nonfinite)  // rare: a second look to collect them
        for (int k = begin; k < end; ++k) {
            const double p = product(x, y, k);
            if (!is_finite_double(p)) st.add_nonfinite(p);
        }
    if (largest == 0.0) return 0.0;
    const int e = top_bit(scaled_of(largest));
    const double to_q_units = pow2_double(bits - 1 - e);  // e within [−298, 256]: a normal double
    double s = 0.0;
    for (int k = begin; k < end; ++k) {
        // Products again rather than a buffer of G of them per thread (GPU registers are few).
        const double t = trunc(product(x, y, k) * to_q_units);
        s += fabs(t) <= finite_max ? t : 0.0;
    }
    return s * pow2_double(e - bits + 1);  // exact: see double_of
}

// The dot product Σ_{k<n} x(k)·y(k) under a model, as the FP32 value the model ends with. x and y
// are accessors (x(k) the k-th element as a float), so a GEMM passes a row and a strided column.
// Without promotion the result is fl32(R): exact for a register within FP32's normal range (it has
// at most 24 bits), ±inf beyond FLT_MAX, rounded to nearest even below 2^-126.
template <class X, class Y>
MPX_HOST_DEVICE float accumulate_dot(const AccumulateParams& p, int n, X x, Y y) {
    DotState st;
    if (p.model == AccumulateModel::exact) {
        for (int k = 0; k < n; ++k) {
            const double pk = product(x, y, k);
            if (!is_finite_double(pk)) {
                st.add_nonfinite(pk);
                continue;
            }
            const float pf = static_cast<float>(pk);
            // Fast path: a product that is a float (every FP8/FP16/BF16 product in range) makes the
            // FP32 addition itself the one rounding.
            if (static_cast<double>(pf) == pk) st.a = st.a + pf;
            else st.add_to_fp32(pk);
        }
        return st.result();
    }
    const bool promoting = p.model == AccumulateModel::promote;
    const int window = promoting ? p.promote_every : n;  // groups never straddle a promotion point
    const int g = p.model == AccumulateModel::bits ? 1 : p.group;
    for (int w = 0; w < n; w += window) {
        const int w_end = n - w > window ? w + window : n;
        for (int k = w; k < w_end; k += g) {
            const int k_end = w_end - k > g ? k + g : w_end;
            st.r = add_truncated(st.r, group_sum(x, y, k, k_end, p.bits, st), p.bits);
        }
        if (promoting) {
            st.add_to_fp32(st.r);
            st.r = 0.0;
        }
        if (w_end == n) break;  // w + window may not fit in an int when promote_every is huge
    }
    st.add_to_fp32(st.r);  // A = fl32(A + R); without promotion A is 0 here and this is fl32(R)
    return st.result();
}

// Element i·stride_x of x times element i·stride_y of y: a GEMM's row of A and column of B.
MPX_HOST_DEVICE inline float accumulate_dot(const AccumulateParams& p, int n, const float* x, int stride_x,
                                            const float* y, int stride_y) {
    return accumulate_dot(
        p, n, [x, stride_x](int k) { return x[static_cast<long long>(k) * stride_x]; },
        [y, stride_y](int k) { return y[static_cast<long long>(k) * stride_y]; });
}

}  // namespace core
}  // namespace mpx
