// Helpers of the format suites (test_format.cpp, test_format_fast_paths.cpp): the bit layouts
// written out from REFERENCE.md's table, independent of the engine, values and classes from bit
// fields, the sample inputs, and a failure collector for sweeps.
#pragma once

#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/rng.hpp"
#include "engine/precision/format.hpp"

Q_DECLARE_METATYPE(mpx::Format)
Q_DECLARE_METATYPE(mpx::Overflow)
Q_DECLARE_METATYPE(mpx::FpClass)

namespace format_test {

using namespace mpx;

inline constexpr float k_inf = std::numeric_limits<float>::infinity();

inline std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
inline float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

inline std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}
inline std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (%a)", v, v);
    return buf;
}

// Collects failures inside a sweep of thousands of values and keeps the first few, so a loop
// reports what went wrong without one QCOMPARE per element.
class Failures {
public:
    void add(const std::string& what) {
        if (m_count++ < 8) m_text += what + "\n";
    }
    bool ok() const { return m_count == 0; }
    QByteArray report() const {
        return QByteArray::number(qulonglong(m_count)) + " mismatches; first:\n" + m_text.c_str();
    }

private:
    std::size_t m_count = 0;
    std::string m_text;
};

// The bit layout of each narrow format, written out from REFERENCE.md's table, independent of
// mpx::info(). `shift` places the code in its container (TF32's 19-bit code is the top of 32 bits).
struct Layout {
    Format format;
    int exp_bits;
    int mant_bits;
    int bias;
    int shift;
    bool ieee_specials;  // all-ones exponent is inf/NaN; otherwise (E4M3 fn) only S.1111.111 is NaN
    bool finite_only = false;  // no inf and no NaN at all: every pattern is a number (E2M1)
    int total_bits() const { return 1 + exp_bits + mant_bits; }
};
inline constexpr Layout k_layouts[] = {
    {Format::tf32, 8, 10, 127, 13, true}, {Format::fp16, 5, 10, 15, 0, true},
    {Format::bf16, 8, 7, 127, 0, true},   {Format::e4m3, 4, 3, 7, 0, false},
    {Format::e5m2, 5, 2, 15, 0, true},    {Format::e2m1, 2, 1, 1, 0, false, true},
};
inline const Layout& layout(Format f) {
    for (const Layout& l : k_layouts)
        if (l.format == f) return l;
    qFatal("no layout for format");
    return k_layouts[0];
}

// The value a code spells: (-1)^s · 2^(E-bias) · (1 + m/2^M), or 2^(1-bias) · m/2^M when E = 0.
inline double value_from_fields(const Layout& l, std::uint32_t code) {
    const bool neg = ((code >> (l.total_bits() - 1)) & 1u) != 0;
    const std::uint32_t e = (code >> l.mant_bits) & ((1u << l.exp_bits) - 1u);
    const std::uint32_t m = code & ((1u << l.mant_bits) - 1u);
    const std::uint32_t e_max = (1u << l.exp_bits) - 1u;
    const std::uint32_t m_max = (1u << l.mant_bits) - 1u;
    double v;
    if (l.ieee_specials && e == e_max)
        v = m == 0 ? std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::quiet_NaN();
    else if (!l.ieee_specials && !l.finite_only && e == e_max && m == m_max)
        v = std::numeric_limits<double>::quiet_NaN();
    else if (e == 0)
        v = std::ldexp(static_cast<double>(m), 1 - l.bias - l.mant_bits);
    else
        v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -l.mant_bits),
                       static_cast<int>(e) - l.bias);
    return neg ? -v : v;
}

inline FpClass class_from_fields(const Layout& l, std::uint32_t code, double min_normal) {
    const double v = value_from_fields(l, code);
    if (std::isnan(v)) return FpClass::nan;
    if (std::isinf(v)) return FpClass::inf;
    if (v == 0.0) return FpClass::zero;
    return std::fabs(v) < min_normal ? FpClass::subnormal : FpClass::normal;
}

// Smallest magnitude that rounds past the largest finite value, from REFERENCE.md's table.
inline double overflow_threshold(Format f) {
    switch (f) {
        case Format::fp32: return std::numeric_limits<double>::infinity();
        case Format::tf32: return std::ldexp(2.0 - std::ldexp(1.0, -11), 127);
        case Format::fp16: return 65520.0;
        case Format::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
        case Format::e4m3: return 464.0;
        case Format::e5m2: return 61440.0;
        // 6 = 1.1b·2^2 (odd mantissa): the tie at 6 + 1 rounds up, past 6, and saturates.
        case Format::e2m1: return 7.0;
    }
    return 0.0;
}

inline int storage_bytes(Format f) {
    switch (f) {
        case Format::fp32:
        case Format::tf32: return 4;
        case Format::fp16:
        case Format::bf16: return 2;
        default: return 1;
    }
}

// The format's code from its container (TF32's low 13 bits are not part of the code).
inline std::uint32_t code_of(Format f, std::uint32_t bits) {
    return f == Format::tf32 ? bits >> 13 : bits;
}

inline const char* mode_name(Overflow m) { return m == Overflow::infinity ? "infinity" : "saturate"; }

// A few hundred thousand inputs: FP32 specials and NaN payloads first, then every finite value of
// the 4-, 8- and 16-bit formats with its FP32 neighbours and the exact midpoint to the next value
// (the ties), the overflow thresholds, and random values (raw bit patterns, and values whose
// exponents fall in and around the narrow formats' ranges).
inline const std::vector<float>& sample_inputs() {
    static const std::vector<float> inputs = [] {
        std::vector<float> v;
        for (std::uint32_t b :
             {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
              0x7F800001u, 0xFF800001u, 0x7FA00000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F802000u,
              0xFFE00001u, 0x7F801FFFu, 0x7FB00000u, 0xFFD55555u, 0x00000001u, 0x80000001u,
              0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u})
            v.push_back(float_of(b));
        for (Format f : {Format::fp16, Format::bf16, Format::e4m3, Format::e5m2, Format::e2m1}) {
            const Layout& l = layout(f);
            std::vector<double> values;
            for (std::uint32_t c = 0; c < (1u << l.total_bits()); ++c) {
                const double x = value_from_fields(l, c);
                if (std::isfinite(x)) values.push_back(x);
            }
            std::sort(values.begin(), values.end());
            for (std::size_t i = 0; i < values.size(); ++i) {
                const float x = static_cast<float>(values[i]);
                v.push_back(x);
                v.push_back(std::nextafter(x, k_inf));
                v.push_back(std::nextafter(x, -k_inf));
                if (i + 1 < values.size())  // exact in FP32: one more mantissa bit than the format
                    v.push_back(static_cast<float>((values[i] + values[i + 1]) / 2.0));
            }
        }
        for (Format f : all_formats) {
            const float t = static_cast<float>(overflow_threshold(f));
            for (float s : {1.0f, -1.0f}) {
                v.push_back(s * t);
                v.push_back(s * std::nextafter(t, k_inf));
                v.push_back(s * std::nextafter(t, 0.0f));
            }
        }
        Rng rng(20240607);
        for (int i = 0; i < 100000; ++i)
            v.push_back(float_of(static_cast<std::uint32_t>(rng.next_u64())));
        for (int i = 0; i < 100000; ++i) {
            const std::uint64_t r = rng.next_u64();
            const int e = -150 + static_cast<int>(rng.below(280));  // all of FP32 and a bit past
            const int e_narrow = -30 + static_cast<int>(rng.below(52));
            const std::uint32_t sign = (r >> 63) ? 0x80000000u : 0u;
            const std::uint32_t mant = static_cast<std::uint32_t>(r) & 0x7FFFFFu;
            const int exp = (i & 1) ? e : e_narrow;
            const int field = std::clamp(exp + 127, 0, 255);
            std::uint32_t b = sign | (static_cast<std::uint32_t>(field) << 23) | mant;
            if (field == 255) b = sign | 0x7F7FFFFFu;
            v.push_back(float_of(b));
        }
        return v;
    }();
    return inputs;
}


}  // namespace format_test
