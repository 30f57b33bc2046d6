// engine/format against first principles (REFERENCE.md, "Number formats"): every FP16, BF16, TF32
// and FP8 pattern decodes to the value its bit fields spell and re-encodes to itself; the tricky
// rounding cases; the fact table; neighbours and ulp; and the buffer fast paths equal the scalar
// path bit for bit. Rule: expected values come from the bit layout in the table, never from the
// engine itself (the engine only ever appears on the side being checked).
#include "engine/format.hpp"
#include "engine/rng.hpp"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

using namespace mpx;

Q_DECLARE_METATYPE(mpx::Format)
Q_DECLARE_METATYPE(mpx::Overflow)
Q_DECLARE_METATYPE(mpx::FpClass)

namespace {

constexpr float k_inf = std::numeric_limits<float>::infinity();

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}
std::string num(double v) {
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
    int total_bits() const { return 1 + exp_bits + mant_bits; }
};
constexpr Layout k_layouts[] = {
    {Format::tf32, 8, 10, 127, 13, true}, {Format::fp16, 5, 10, 15, 0, true},
    {Format::bf16, 8, 7, 127, 0, true},   {Format::e4m3, 4, 3, 7, 0, false},
    {Format::e5m2, 5, 2, 15, 0, true},
};
const Layout& layout(Format f) {
    for (const Layout& l : k_layouts)
        if (l.format == f) return l;
    qFatal("no layout for format");
    return k_layouts[0];
}

// The value a code spells: (-1)^s · 2^(E-bias) · (1 + m/2^M), or 2^(1-bias) · m/2^M when E = 0.
double value_from_fields(const Layout& l, std::uint32_t code) {
    const bool neg = ((code >> (l.total_bits() - 1)) & 1u) != 0;
    const std::uint32_t e = (code >> l.mant_bits) & ((1u << l.exp_bits) - 1u);
    const std::uint32_t m = code & ((1u << l.mant_bits) - 1u);
    const std::uint32_t e_max = (1u << l.exp_bits) - 1u;
    const std::uint32_t m_max = (1u << l.mant_bits) - 1u;
    double v;
    if (l.ieee_specials && e == e_max)
        v = m == 0 ? std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::quiet_NaN();
    else if (!l.ieee_specials && e == e_max && m == m_max)
        v = std::numeric_limits<double>::quiet_NaN();
    else if (e == 0)
        v = std::ldexp(static_cast<double>(m), 1 - l.bias - l.mant_bits);
    else
        v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -l.mant_bits),
                       static_cast<int>(e) - l.bias);
    return neg ? -v : v;
}

FpClass class_from_fields(const Layout& l, std::uint32_t code, double min_normal) {
    const double v = value_from_fields(l, code);
    if (std::isnan(v)) return FpClass::nan;
    if (std::isinf(v)) return FpClass::inf;
    if (v == 0.0) return FpClass::zero;
    return std::fabs(v) < min_normal ? FpClass::subnormal : FpClass::normal;
}

// Smallest magnitude that rounds past the largest finite value, from REFERENCE.md's table.
double overflow_threshold(Format f) {
    switch (f) {
        case Format::fp32: return std::numeric_limits<double>::infinity();
        case Format::tf32: return std::ldexp(2.0 - std::ldexp(1.0, -11), 127);
        case Format::fp16: return 65520.0;
        case Format::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
        case Format::e4m3: return 464.0;
        case Format::e5m2: return 61440.0;
    }
    return 0.0;
}

int storage_bytes(Format f) {
    switch (f) {
        case Format::fp32:
        case Format::tf32: return 4;
        case Format::fp16:
        case Format::bf16: return 2;
        default: return 1;
    }
}

// The format's code from its container (TF32's low 13 bits are not part of the code).
std::uint32_t code_of(Format f, std::uint32_t bits) {
    return f == Format::tf32 ? bits >> 13 : bits;
}

const char* mode_name(Overflow m) { return m == Overflow::infinity ? "infinity" : "saturate"; }

// A few hundred thousand inputs: FP32 specials and NaN payloads first, then every finite value of
// the 8- and 16-bit formats with its FP32 neighbours and the exact midpoint to the next value (the
// ties), the overflow thresholds, and random values (raw bit patterns, and values whose exponents
// fall in and around the narrow formats' ranges).
const std::vector<float>& sample_inputs() {
    static const std::vector<float> inputs = [] {
        std::vector<float> v;
        for (std::uint32_t b :
             {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
              0x7F800001u, 0xFF800001u, 0x7FA00000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F802000u,
              0xFFE00001u, 0x7F801FFFu, 0x7FB00000u, 0xFFD55555u, 0x00000001u, 0x80000001u,
              0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u})
            v.push_back(float_of(b));
        for (Format f : {Format::fp16, Format::bf16, Format::e4m3, Format::e5m2}) {
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

}  // namespace

class TestFormat : public QObject {
    Q_OBJECT

private slots:
    void facts_match_reference_data();
    void facts_match_reference();
    void every_pattern_matches_its_bit_fields_data();
    void every_pattern_matches_its_bit_fields();
    void rounding_cases_data();
    void rounding_cases();
    void signalling_nan_stays_nan_data();
    void signalling_nan_stays_nan();
    void tf32_container_low_bits_are_zero();
    void default_overflow_is_ieee_except_e4m3();
    void rounding_picks_nearest_even_neighbour_data();
    void rounding_picks_nearest_even_neighbour();
    void classify_cases_data();
    void classify_cases();
    void next_up_down_cases_data();
    void next_up_down_cases();
    void neighbours_are_adjacent_values_data();
    void neighbours_are_adjacent_values();
    void ulp_cases_data();
    void ulp_cases();
    void encode_matches_reference_data();
    void encode_matches_reference();
    void buffer_paths_match_scalar_path_data();
    void buffer_paths_match_scalar_path();
    void buffer_tails_match_scalar_path_data();
    void buffer_tails_match_scalar_path();
    void cpu_has_f16c_matches_cpuid();
};

// ---------------------------------------------------------------------------------------------
// The fact table

void TestFormat::facts_match_reference_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("exp_bits");
    QTest::addColumn<int>("mant_bits");
    QTest::addColumn<int>("bias");
    QTest::addColumn<int>("bytes");
    QTest::addColumn<bool>("has_inf");
    QTest::addColumn<double>("max_finite");
    QTest::addColumn<double>("max_decimal");  // REFERENCE.md's printed value
    QTest::addColumn<quint32>("max_bits");
    QTest::addColumn<double>("min_normal");
    QTest::addColumn<double>("min_subnormal");
    QTest::addColumn<double>("epsilon");
    QTest::addColumn<quint32>("inf_bits");  // 0: no infinity

    const auto p2 = [](int e) { return std::ldexp(1.0, e); };
    QTest::newRow("fp32") << Format::fp32 << "fp32" << 8 << 23 << 127 << 4 << true
                          << std::ldexp(2.0 - p2(-23), 127) << 3.4028235e38 << 0x7F7FFFFFu
                          << p2(-126) << p2(-149) << p2(-23) << 0x7F800000u;
    QTest::newRow("tf32") << Format::tf32 << "tf32" << 8 << 10 << 127 << 4 << true
                          << std::ldexp(2.0 - p2(-10), 127) << 3.40116e38 << 0x7F7FE000u << p2(-126)
                          << p2(-136) << p2(-10) << 0x7F800000u;
    QTest::newRow("fp16") << Format::fp16 << "fp16" << 5 << 10 << 15 << 2 << true << 65504.0
                          << 65504.0 << 0x7BFFu << p2(-14) << p2(-24) << p2(-10) << 0x7C00u;
    QTest::newRow("bf16") << Format::bf16 << "bf16" << 8 << 7 << 127 << 2 << true
                          << std::ldexp(2.0 - p2(-7), 127) << 3.3895314e38 << 0x7F7Fu << p2(-126)
                          << p2(-133) << p2(-7) << 0x7F80u;
    QTest::newRow("e4m3") << Format::e4m3 << "e4m3" << 4 << 3 << 7 << 1 << false << 448.0 << 448.0
                          << 0x7Eu << p2(-6) << p2(-9) << p2(-3) << 0u;
    QTest::newRow("e5m2") << Format::e5m2 << "e5m2" << 5 << 2 << 15 << 1 << true << 57344.0
                          << 57344.0 << 0x7Bu << p2(-14) << p2(-16) << p2(-2) << 0x7Cu;
}

void TestFormat::facts_match_reference() {
    QFETCH(Format, format);
    QFETCH(QString, name);
    QFETCH(int, exp_bits);
    QFETCH(int, mant_bits);
    QFETCH(int, bias);
    QFETCH(int, bytes);
    QFETCH(bool, has_inf);
    QFETCH(double, max_finite);
    QFETCH(double, max_decimal);
    QFETCH(quint32, max_bits);
    QFETCH(double, min_normal);
    QFETCH(double, min_subnormal);
    QFETCH(double, epsilon);
    QFETCH(quint32, inf_bits);

    const FormatInfo& fi = info(format);
    QCOMPARE(fi.format, format);
    QCOMPARE(QString::fromUtf8(fi.name), name);
    QCOMPARE(QString::fromUtf8(to_string(format).data(), qsizetype(to_string(format).size())),
             name);
    QCOMPARE(parse_format(name.toStdString()), std::optional<Format>(format));
    QCOMPARE(fi.exponent_bits, exp_bits);
    QCOMPARE(fi.mantissa_bits, mant_bits);
    QCOMPARE(fi.bias, bias);
    QCOMPARE(fi.storage_bytes, bytes);
    QCOMPARE(fi.has_inf, has_inf);
    QCOMPARE(fi.default_overflow, format == Format::e4m3 ? Overflow::saturate : Overflow::infinity);

    QCOMPARE(static_cast<double>(fi.max_finite), max_finite);
    QVERIFY2(std::fabs(max_finite - max_decimal) <= 5e-6 * max_decimal,
             "max finite disagrees with REFERENCE.md's decimal value");
    QCOMPARE(static_cast<double>(fi.min_normal), min_normal);
    QCOMPARE(static_cast<double>(fi.min_subnormal), min_subnormal);
    QCOMPARE(static_cast<double>(fi.epsilon), epsilon);

    // The facts agree with the codec: max finite is the pattern REFERENCE.md names, the smallest
    // codes are min subnormal and min normal, and epsilon is the step after 1.
    const int shift = format == Format::tf32 ? 13 : 0;
    QCOMPARE(static_cast<double>(decode(format, max_bits)), max_finite);
    QCOMPARE(encode(format, fi.max_finite, Overflow::infinity), max_bits);
    QCOMPARE(static_cast<double>(decode(format, 1u << shift)), min_subnormal);
    QCOMPARE(static_cast<double>(decode(format, 1u << (mant_bits + shift))), min_normal);
    QCOMPARE(static_cast<double>(decode(format, next_up(format, encode(format, 1.0f)))) - 1.0,
             epsilon);
    if (has_inf) {
        QCOMPARE(encode(format, k_inf, Overflow::infinity), inf_bits);
        QCOMPARE(decode(format, inf_bits), k_inf);
        QCOMPARE(next_up(format, max_bits), inf_bits);
    } else {
        QCOMPARE(classify(format, next_up(format, max_bits)), FpClass::nan);
    }
}

// ---------------------------------------------------------------------------------------------
// Every pattern

void TestFormat::every_pattern_matches_its_bit_fields_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<double>("min_normal");
    // REFERENCE.md: E4M3's only NaNs are S.1111.111, E5M2's S.11111.{01,10,11}.
    QTest::addColumn<int>("nan_patterns");
    QTest::addColumn<int>("inf_patterns");
    QTest::newRow("fp16_all_65536") << Format::fp16 << std::ldexp(1.0, -14) << 2 * 1023 << 2;
    QTest::newRow("bf16_all_65536") << Format::bf16 << std::ldexp(1.0, -126) << 2 * 127 << 2;
    QTest::newRow("tf32_all_2^19") << Format::tf32 << std::ldexp(1.0, -126) << 2 * 1023 << 2;
    QTest::newRow("e4m3_all_256") << Format::e4m3 << std::ldexp(1.0, -6) << 2 << 0;
    QTest::newRow("e5m2_all_256") << Format::e5m2 << std::ldexp(1.0, -14) << 6 << 2;
}

void TestFormat::every_pattern_matches_its_bit_fields() {
    QFETCH(Format, format);
    QFETCH(double, min_normal);
    QFETCH(int, nan_patterns);
    QFETCH(int, inf_patterns);
    const Layout& l = layout(format);
    const std::uint32_t sign = 1u << (l.total_bits() - 1);
    Failures fail;
    int nans = 0, infs = 0;
    for (std::uint32_t code = 0; code < (1u << l.total_bits()); ++code) {
        const std::uint32_t bits = code << l.shift;
        const double expect = value_from_fields(l, code);
        const float got = decode(format, bits);
        const bool neg = (code & sign) != 0;
        if (classify(format, bits) != class_from_fields(l, code, min_normal))
            fail.add(hex(bits) + ": classify disagrees with the bit fields");
        if (std::isnan(expect)) {
            ++nans;
            if (!std::isnan(got) || std::signbit(got) != neg)
                fail.add(hex(bits) + ": expected a NaN of the same sign, got " + num(got));
            for (Overflow m : {Overflow::infinity, Overflow::saturate}) {
                const std::uint32_t back = encode(format, got, m);
                if (classify(format, back) != FpClass::nan ||
                    ((code_of(format, back) & sign) != 0) != neg)
                    fail.add(hex(bits) + ": NaN re-encodes to non-NaN or loses its sign: " +
                             hex(back) + " (" + mode_name(m) + ")");
            }
            continue;
        }
        if (std::isinf(expect)) ++infs;
        if (static_cast<double>(got) != expect || std::signbit(got) != std::signbit(expect))
            fail.add(hex(bits) + ": decodes to " + num(got) + ", bit fields say " + num(expect));
        for (Overflow m : {Overflow::infinity, Overflow::saturate}) {
            // A finite value re-encodes to itself in either mode; an infinity saturates to max.
            const bool sat_inf = std::isinf(expect) && m == Overflow::saturate;
            const std::uint32_t max_code = (code & ~sign) - 1u;  // just below the infinity
            const std::uint32_t want = sat_inf ? ((code & sign) | max_code) << l.shift : bits;
            const std::uint32_t back = encode(format, got, m);
            const std::uint32_t back_ref = encode_reference(format, got, m);
            if (back != want || back_ref != want)
                fail.add(hex(bits) + ": re-encodes to " + hex(back) + " / reference " +
                         hex(back_ref) + ", want " + hex(want) + " (" + mode_name(m) + ")");
        }
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    QCOMPARE(nans, nan_patterns);
    QCOMPARE(infs, inf_patterns);
}

// ---------------------------------------------------------------------------------------------
// Rounding: the tricky cases, each derived by hand from the bit layout

void TestFormat::rounding_cases_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<Overflow>("mode");
    QTest::addColumn<quint32>("input_bits");
    QTest::addColumn<quint32>("expected");

    const auto row = [](const char* name, Format f, Overflow m, float x, quint32 want) {
        QTest::newRow(name) << f << m << bits_of(x) << want;
    };
    const Overflow inf = Overflow::infinity, sat = Overflow::saturate;
    const float flt_max = std::numeric_limits<float>::max();

    // FP16 (REFERENCE.md): the overflow threshold is 65504 + half its ulp of 32 = 65520.
    row("fp16_rounds_65519.996_to_65504", Format::fp16, inf, 65519.996f, 0x7BFF);
    row("fp16_rounds_65520_to_inf", Format::fp16, inf, 65520.0f, 0x7C00);
    row("fp16_rounds_-65520_to_-inf", Format::fp16, inf, -65520.0f, 0xFC00);
    row("fp16_rounds_below_65520_to_65504", Format::fp16, inf, std::nextafter(65520.0f, 0.0f),
        0x7BFF);
    row("fp16_saturates_65520_to_65504", Format::fp16, sat, 65520.0f, 0x7BFF);
    row("fp16_saturates_inf_to_65504", Format::fp16, sat, k_inf, 0x7BFF);
    row("fp16_keeps_inf", Format::fp16, inf, -k_inf, 0xFC00);
    // 2^-25 is half the smallest subnormal 2^-24: a tie, to the even code 0.
    row("fp16_rounds_2^-25_to_0", Format::fp16, inf, 0x1p-25f, 0x0000);
    row("fp16_rounds_-2^-25_to_-0", Format::fp16, inf, -0x1p-25f, 0x8000);
    row("fp16_rounds_above_2^-25_to_2^-24", Format::fp16, inf, std::nextafter(0x1p-25f, 1.0f),
        0x0001);
    // 3·2^-25 = 1.5·2^-24: a tie between codes 1 and 2, to the even 2 = 2^-23.
    row("fp16_rounds_3x2^-25_to_2^-23", Format::fp16, inf, 0x1.8p-24f, 0x0002);
    row("fp16_rounds_5x2^-25_to_2^-23", Format::fp16, inf, 0x1.4p-23f, 0x0002);
    row("fp16_rounds_fp32_min_subnormal_to_0", Format::fp16, inf, 0x1p-149f, 0x0000);
    // Midway between the largest subnormal 0x03FF (odd) and min normal 0x0400.
    row("fp16_rounds_subnormal_tie_up_into_min_normal", Format::fp16, inf, 0x1p-14f - 0x1p-25f,
        0x0400);
    row("fp16_ties_1+2^-11_down_to_1", Format::fp16, inf, 1.0f + 0x1p-11f, 0x3C00);
    row("fp16_ties_1+3x2^-11_up_to_even", Format::fp16, inf, 1.0f + 0x1.8p-10f, 0x3C02);
    row("fp16_rounds_just_above_tie_up", Format::fp16, inf, 1.0f + 0x1p-11f + 0x1p-23f, 0x3C01);

    // BF16: the threshold is (2 - 2^-8)·2^127; the largest FP32 lies above it.
    row("bf16_rounds_largest_fp32_to_inf", Format::bf16, inf, flt_max, 0x7F80);
    row("bf16_rounds_-largest_fp32_to_-inf", Format::bf16, inf, -flt_max, 0xFF80);
    row("bf16_saturates_largest_fp32_to_max", Format::bf16, sat, flt_max, 0x7F7F);
    row("bf16_rounds_threshold_to_inf", Format::bf16, inf, 0x1.ffp127f, 0x7F80);
    row("bf16_rounds_below_threshold_to_max", Format::bf16, inf, std::nextafter(0x1.ffp127f, 0.0f),
        0x7F7F);
    row("bf16_ties_1+2^-8_down_to_1", Format::bf16, inf, 1.0f + 0x1p-8f, 0x3F80);
    row("bf16_ties_1+3x2^-8_up_to_even", Format::bf16, inf, 1.0f + 0x1.8p-7f, 0x3F82);
    row("bf16_ties_negative_to_even", Format::bf16, inf, -(1.0f + 0x1p-8f), 0xBF80);
    row("bf16_keeps_min_subnormal_2^-133", Format::bf16, inf, 0x1p-133f, 0x0001);
    row("bf16_rounds_2^-134_to_0", Format::bf16, inf, 0x1p-134f, 0x0000);
    row("bf16_rounds_3x2^-134_to_2^-132", Format::bf16, inf, 0x1.8p-133f, 0x0002);
    row("bf16_saturates_inf_to_max", Format::bf16, sat, -k_inf, 0xFF7F);

    // TF32: 13 mantissa bits dropped; ties to even at the 13th dropped bit (0x1000 in FP32 bits).
    row("tf32_ties_1+2^-11_down_to_1", Format::tf32, inf, 1.0f + 0x1p-11f, 0x3F800000);
    row("tf32_ties_1+3x2^-11_up_to_even", Format::tf32, inf, 1.0f + 0x1.8p-10f, 0x3F804000);
    row("tf32_rounds_just_above_tie_up", Format::tf32, inf, 1.0f + 0x1p-11f + 0x1p-23f, 0x3F802000);
    row("tf32_rounds_just_below_tie_down", Format::tf32, inf, 1.0f + 0x1p-11f - 0x1p-23f,
        0x3F800000);
    row("tf32_rounds_threshold_(2-2^-11)x2^127_to_inf", Format::tf32, inf, 0x1.ffep127f,
        0x7F800000);
    row("tf32_rounds_below_threshold_to_max", Format::tf32, inf, std::nextafter(0x1.ffep127f, 0.0f),
        0x7F7FE000);
    row("tf32_saturates_threshold_to_max", Format::tf32, sat, 0x1.ffep127f, 0x7F7FE000);
    row("tf32_rounds_largest_fp32_to_inf", Format::tf32, inf, flt_max, 0x7F800000);
    row("tf32_keeps_min_subnormal_2^-136", Format::tf32, inf, 0x1p-136f, 0x00002000);
    row("tf32_rounds_2^-137_to_0", Format::tf32, inf, 0x1p-137f, 0x00000000);
    row("tf32_rounds_3x2^-137_to_2^-135", Format::tf32, inf, 0x1.8p-136f, 0x00004000);

    // E4M3 (fn): max 448 = 1.75·2^8 (mantissa 110, even), so the tie at 464 rounds down to it.
    row("e4m3_rounds_464_to_448", Format::e4m3, sat, 464.0f, 0x7E);
    row("e4m3_rounds_464_to_448_without_saturation", Format::e4m3, inf, 464.0f, 0x7E);
    row("e4m3_saturates_above_464_to_448", Format::e4m3, sat, std::nextafter(464.0f, k_inf), 0x7E);
    row("e4m3_gives_nan_above_464_without_saturation", Format::e4m3, inf,
        std::nextafter(464.0f, k_inf), 0x7F);
    row("e4m3_gives_-nan_below_-464_without_saturation", Format::e4m3, inf, -480.0f, 0xFF);
    row("e4m3_saturates_inf_to_448", Format::e4m3, sat, k_inf, 0x7E);
    row("e4m3_saturates_-inf_to_-448", Format::e4m3, sat, -k_inf, 0xFE);
    row("e4m3_gives_nan_for_inf_without_saturation", Format::e4m3, inf, k_inf, 0x7F);
    row("e4m3_keeps_min_subnormal_2^-9", Format::e4m3, sat, 0x1p-9f, 0x01);
    row("e4m3_rounds_2^-10_to_0", Format::e4m3, sat, 0x1p-10f, 0x00);
    row("e4m3_rounds_3x2^-10_to_2^-8", Format::e4m3, sat, 0x1.8p-9f, 0x02);
    row("e4m3_ties_1+2^-4_down_to_1", Format::e4m3, sat, 1.0f + 0x1p-4f, 0x38);
    row("e4m3_ties_1+3x2^-4_up_to_even", Format::e4m3, sat, 1.0f + 0x1.8p-3f, 0x3A);

    // E5M2: max 57344 = 1.75·2^15 (mantissa 11, odd), so the tie at 61440 overflows.
    row("e5m2_rounds_61440_to_inf", Format::e5m2, inf, 61440.0f, 0x7C);
    row("e5m2_rounds_below_61440_to_57344", Format::e5m2, inf, std::nextafter(61440.0f, 0.0f),
        0x7B);
    row("e5m2_saturates_61440_to_57344", Format::e5m2, sat, 61440.0f, 0x7B);
    row("e5m2_saturates_inf_to_57344", Format::e5m2, sat, k_inf, 0x7B);
    row("e5m2_keeps_-inf", Format::e5m2, inf, -k_inf, 0xFC);
    row("e5m2_keeps_min_subnormal_2^-16", Format::e5m2, inf, 0x1p-16f, 0x01);
    row("e5m2_rounds_2^-17_to_0", Format::e5m2, inf, 0x1p-17f, 0x00);
    row("e5m2_rounds_3x2^-17_to_2^-15", Format::e5m2, inf, 0x1.8p-16f, 0x02);
    row("e5m2_ties_1+2^-3_down_to_1", Format::e5m2, inf, 1.125f, 0x3C);
    row("e5m2_ties_1+3x2^-3_up_to_even", Format::e5m2, inf, 1.375f, 0x3E);

    // FP32 is the identity, signalling NaN included.
    row("fp32_keeps_largest", Format::fp32, inf, flt_max, 0x7F7FFFFF);
    QTest::newRow("fp32_keeps_signalling_nan") << Format::fp32 << inf << 0x7F800001u << 0x7F800001u;
    // REFERENCE.md: BF16's canonical NaN is 0x7FC0; a signalling NaN quietens to it (a naive
    // add-and-shift would carry into the exponent and give inf 0x7F80).
    QTest::newRow("bf16_quietens_signalling_nan_to_0x7FC0")
        << Format::bf16 << inf << 0x7F800001u << 0x7FC0u;
    QTest::newRow("bf16_quietens_-signalling_nan_to_0xFFC0")
        << Format::bf16 << inf << 0xFF800001u << 0xFFC0u;
    QTest::newRow("bf16_quietens_all_ones_payload_nan")
        << Format::bf16 << inf << 0x7FFFFFFFu << 0x7FFFu;
}

void TestFormat::rounding_cases() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    QFETCH(quint32, input_bits);
    QFETCH(quint32, expected);
    const float x = float_of(input_bits);
    QCOMPARE(encode(format, x, mode), expected);
    QCOMPARE(encode_reference(format, x, mode), expected);
    // The buffer paths agree on the single value too.
    std::vector<float> one{x};
    round_in_place(format, one, mode);
    QCOMPARE(bits_of(one[0]), bits_of(decode(format, expected)));
}

void TestFormat::signalling_nan_stays_nan_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<Overflow>("mode");
    QTest::addColumn<quint32>("input_bits");
    for (Format f : all_formats)
        for (Overflow m : {Overflow::infinity, Overflow::saturate})
            for (quint32 b : {0x7F800001u, 0xFF800001u})
                QTest::addRow("%s_%s_%08X", to_string(f).data(), mode_name(m), b) << f << m << b;
}

void TestFormat::signalling_nan_stays_nan() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    QFETCH(quint32, input_bits);
    const float x = float_of(input_bits);
    const bool neg = (input_bits >> 31) != 0;
    for (std::uint32_t got : {encode(format, x, mode), encode_reference(format, x, mode)}) {
        QCOMPARE(classify(format, got), FpClass::nan);
        const float back = decode(format, got);
        QVERIFY(std::isnan(back));
        QCOMPARE(std::signbit(back), neg);
    }
    QVERIFY(std::isnan(round_to(format, x, mode)));
    std::vector<float> buf(9, x);  // 9: through a vector path where there is one, and its tail
    const RoundStats s = round_in_place(format, buf, mode);
    for (float v : buf) QVERIFY(std::isnan(v));
    QCOMPARE(s.overflow, std::size_t{0});
    QCOMPARE(s.underflow, std::size_t{0});
    QVERIFY(!rounding_overflows(format, x));
    QVERIFY(!rounding_underflows(format, x, mode));
}

void TestFormat::tf32_container_low_bits_are_zero() {
    Failures fail;
    for (float x : sample_inputs())
        for (Overflow m : {Overflow::infinity, Overflow::saturate}) {
            const std::uint32_t b = encode(Format::tf32, x, m);
            if ((b & 0x1FFFu) != 0) fail.add(hex(bits_of(x)) + " -> " + hex(b));
            // TF32 keeps FP32's exponent, so the kept bits are FP32's top 19 bits, rounded.
            if (std::isfinite(x) && std::fabs(x) < 0x1.ffep127f) {
                const float r = float_of(b);
                const float d = std::fabs(r - x);
                if (d > std::ldexp(std::fabs(x), -11) && d > 0x1p-137f)
                    fail.add(hex(bits_of(x)) + " -> " + hex(b) +
                             ": more than half a TF32 ulp away");
            }
        }
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormat::default_overflow_is_ieee_except_e4m3() {
    QCOMPARE(encode(Format::e4m3, 1000.0f), 0x7Eu);  // saturates by default
    QCOMPARE(encode(Format::e5m2, 1e5f), 0x7Cu);     // inf
    QCOMPARE(encode(Format::fp16, -1e5f), 0xFC00u);  // -inf
    QCOMPARE(encode(Format::bf16, std::numeric_limits<float>::max()), 0x7F80u);
    std::vector<float> v{1000.0f, -1000.0f};
    const RoundStats s = round_in_place(Format::e4m3, v);
    QCOMPARE(v[0], 448.0f);
    QCOMPARE(v[1], -448.0f);
    QCOMPARE(s.overflow, std::size_t{2});
    QVERIFY(std::isnan(round_to(Format::e4m3, 1000.0f, Overflow::infinity)));
}

// Independent of any encoder: the result is a representable value no farther from x than either of
// its neighbours, and on a tie its code is even.
void TestFormat::rounding_picks_nearest_even_neighbour_data() {
    QTest::addColumn<Format>("format");
    for (Format f : {Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2})
        QTest::newRow(to_string(f).data()) << f;
}

void TestFormat::rounding_picks_nearest_even_neighbour() {
    QFETCH(Format, format);
    const double threshold = overflow_threshold(format);
    const auto dist = [](double x, float v) {
        return std::isnan(v) ? std::numeric_limits<double>::infinity()
                             : std::fabs(x - static_cast<double>(v));
    };
    Failures fail;
    std::size_t ties = 0, checked = 0;
    for (float x : sample_inputs()) {
        if (!std::isfinite(x) || std::fabs(static_cast<double>(x)) >= threshold) continue;
        ++checked;
        const std::uint32_t b = encode(format, x, Overflow::infinity);
        const float r = decode(format, b);
        if (!std::isfinite(r)) {
            fail.add(hex(bits_of(x)) + ": below the threshold but not finite: " + num(r));
            continue;
        }
        const double d = dist(x, r);
        const double du = dist(x, decode(format, next_up(format, b)));
        const double dd = dist(x, decode(format, next_down(format, b)));
        if (d > du || d > dd)
            fail.add(hex(bits_of(x)) + " -> " + hex(b) + ": a neighbour is nearer");
        if (d != 0.0 && (d == du || d == dd)) {
            ++ties;
            if ((code_of(format, b) & 1u) != 0)
                fail.add(hex(bits_of(x)) + " -> " + hex(b) + ": tie to odd");
        }
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    qInfo("%zu of %zu inputs were ties", ties, checked);
    QVERIFY2(ties > 100, "the sample must contain ties");
    QVERIFY(checked > 200000);
}

// ---------------------------------------------------------------------------------------------
// classify, next_up / next_down, ulp

void TestFormat::classify_cases_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<quint32>("bits");
    QTest::addColumn<FpClass>("expected");
    const auto row = [](const char* name, Format f, quint32 b, FpClass c) {
        QTest::newRow(name) << f << b << c;
    };
    row("fp32_-0", Format::fp32, 0x80000000, FpClass::zero);
    row("fp32_min_subnormal", Format::fp32, 0x00000001, FpClass::subnormal);
    row("fp32_min_normal", Format::fp32, 0x00800000, FpClass::normal);
    row("fp32_signalling_nan", Format::fp32, 0x7F800001, FpClass::nan);
    row("fp32_-inf", Format::fp32, 0xFF800000, FpClass::inf);
    row("tf32_min_subnormal", Format::tf32, 0x00002000, FpClass::subnormal);
    row("tf32_min_normal", Format::tf32, 0x00800000, FpClass::normal);
    row("tf32_max", Format::tf32, 0x7F7FE000, FpClass::normal);
    row("tf32_inf", Format::tf32, 0x7F800000, FpClass::inf);
    row("tf32_nan", Format::tf32, 0xFFC00000, FpClass::nan);
    row("fp16_0", Format::fp16, 0x0000, FpClass::zero);
    row("fp16_-0", Format::fp16, 0x8000, FpClass::zero);
    row("fp16_min_subnormal", Format::fp16, 0x0001, FpClass::subnormal);
    row("fp16_max_subnormal", Format::fp16, 0x83FF, FpClass::subnormal);
    row("fp16_min_normal", Format::fp16, 0x0400, FpClass::normal);
    row("fp16_max", Format::fp16, 0x7BFF, FpClass::normal);
    row("fp16_inf", Format::fp16, 0x7C00, FpClass::inf);
    row("fp16_signalling_nan", Format::fp16, 0x7C01, FpClass::nan);
    row("fp16_quiet_nan", Format::fp16, 0xFE00, FpClass::nan);
    row("bf16_max_subnormal", Format::bf16, 0x007F, FpClass::subnormal);
    row("bf16_min_normal", Format::bf16, 0x0080, FpClass::normal);
    row("bf16_inf", Format::bf16, 0x7F80, FpClass::inf);
    row("bf16_nan", Format::bf16, 0x7F81, FpClass::nan);
    row("e4m3_max_subnormal", Format::e4m3, 0x07, FpClass::subnormal);
    row("e4m3_min_normal", Format::e4m3, 0x08, FpClass::normal);
    row("e4m3_S.1111.000_is_256", Format::e4m3, 0x78, FpClass::normal);
    row("e4m3_max_448", Format::e4m3, 0x7E, FpClass::normal);
    row("e4m3_nan", Format::e4m3, 0x7F, FpClass::nan);
    row("e4m3_-nan", Format::e4m3, 0xFF, FpClass::nan);
    row("e4m3_-0", Format::e4m3, 0x80, FpClass::zero);
    row("e5m2_max_subnormal", Format::e5m2, 0x03, FpClass::subnormal);
    row("e5m2_min_normal", Format::e5m2, 0x04, FpClass::normal);
    row("e5m2_inf", Format::e5m2, 0x7C, FpClass::inf);
    row("e5m2_nan_01", Format::e5m2, 0x7D, FpClass::nan);
    row("e5m2_-nan_11", Format::e5m2, 0xFF, FpClass::nan);
}

void TestFormat::classify_cases() {
    QFETCH(Format, format);
    QFETCH(quint32, bits);
    QFETCH(FpClass, expected);
    QCOMPARE(classify(format, bits), expected);
}

void TestFormat::next_up_down_cases_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<quint32>("start");
    QTest::addColumn<quint32>("up");  // a NaN pattern here means "some NaN"
    QTest::addColumn<quint32>("down");
    const auto row = [](const char* name, Format f, quint32 s, quint32 u, quint32 d) {
        QTest::newRow(name) << f << s << u << d;
    };
    row("fp16_+0", Format::fp16, 0x0000, 0x0001, 0x8001);
    row("fp16_-0", Format::fp16, 0x8000, 0x0001, 0x8001);
    row("fp16_min_subnormal", Format::fp16, 0x0001, 0x0002, 0x0000);
    row("fp16_-min_subnormal", Format::fp16, 0x8001, 0x8000, 0x8002);
    row("fp16_max_subnormal", Format::fp16, 0x03FF, 0x0400, 0x03FE);
    row("fp16_one", Format::fp16, 0x3C00, 0x3C01, 0x3BFF);
    row("fp16_-one", Format::fp16, 0xBC00, 0xBBFF, 0xBC01);
    row("fp16_max_to_inf", Format::fp16, 0x7BFF, 0x7C00, 0x7BFE);
    row("fp16_-max_to_-inf", Format::fp16, 0xFBFF, 0xFBFE, 0xFC00);
    row("fp16_inf_stays", Format::fp16, 0x7C00, 0x7C00, 0x7BFF);
    row("fp16_-inf_stays", Format::fp16, 0xFC00, 0xFBFF, 0xFC00);
    row("fp16_nan_stays", Format::fp16, 0x7E00, 0x7E00, 0x7E00);
    row("bf16_+0", Format::bf16, 0x0000, 0x0001, 0x8001);
    row("bf16_max_to_inf", Format::bf16, 0x7F7F, 0x7F80, 0x7F7E);
    row("bf16_nan_stays", Format::bf16, 0xFFC0, 0xFFC0, 0xFFC0);
    row("tf32_+0", Format::tf32, 0x00000000, 0x00002000, 0x80002000);
    row("tf32_one", Format::tf32, 0x3F800000, 0x3F802000, 0x3F7FE000);
    row("tf32_max_to_inf", Format::tf32, 0x7F7FE000, 0x7F800000, 0x7F7FC000);
    row("tf32_inf_stays", Format::tf32, 0x7F800000, 0x7F800000, 0x7F7FE000);
    row("e4m3_+0", Format::e4m3, 0x00, 0x01, 0x81);
    row("e4m3_-0", Format::e4m3, 0x80, 0x01, 0x81);
    row("e4m3_max_to_nan", Format::e4m3, 0x7E, 0x7F, 0x7D);
    row("e4m3_-max_to_-nan", Format::e4m3, 0xFE, 0xFD, 0xFF);
    row("e4m3_nan_stays", Format::e4m3, 0x7F, 0x7F, 0x7F);
    row("e5m2_max_to_inf", Format::e5m2, 0x7B, 0x7C, 0x7A);
    row("e5m2_inf_stays", Format::e5m2, 0x7C, 0x7C, 0x7B);
    row("e5m2_nan_stays", Format::e5m2, 0x7E, 0x7E, 0x7E);
    row("fp32_one", Format::fp32, 0x3F800000, 0x3F800001, 0x3F7FFFFF);
    row("fp32_+0", Format::fp32, 0x00000000, 0x00000001, 0x80000001);
    row("fp32_max_to_inf", Format::fp32, 0x7F7FFFFF, 0x7F800000, 0x7F7FFFFE);
    row("fp32_nan_stays", Format::fp32, 0x7FC00000, 0x7FC00000, 0x7FC00000);
}

void TestFormat::next_up_down_cases() {
    QFETCH(Format, format);
    QFETCH(quint32, start);
    QFETCH(quint32, up);
    QFETCH(quint32, down);
    const auto check = [&](std::uint32_t got, std::uint32_t want) {
        if (classify(format, want) == FpClass::nan) return classify(format, got) == FpClass::nan;
        return got == want;
    };
    QVERIFY2(check(next_up(format, start), up), hex(next_up(format, start)).c_str());
    QVERIFY2(check(next_down(format, start), down), hex(next_down(format, start)).c_str());
}

// For every pattern: next_up is the next larger value of the format (from the sorted list of all
// its values), next_down the next smaller, and ulp(v) is the gap to the next value away from zero.
void TestFormat::neighbours_are_adjacent_values_data() {
    QTest::addColumn<Format>("format");
    for (Format f : {Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2})
        QTest::newRow(to_string(f).data()) << f;
}

void TestFormat::neighbours_are_adjacent_values() {
    QFETCH(Format, format);
    const Layout& l = layout(format);
    const std::uint32_t n = 1u << l.total_bits();
    std::vector<double> values;  // every non-NaN value, ±0 merged
    for (std::uint32_t c = 0; c < n; ++c) {
        const double v = value_from_fields(l, c);
        if (!std::isnan(v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    const double max_finite = l.ieee_specials ? values[values.size() - 2] : values.back();

    Failures fail;
    for (std::uint32_t c = 0; c < n; ++c) {
        const std::uint32_t bits = c << l.shift;
        const double v = value_from_fields(l, c);
        const float up = decode(format, next_up(format, bits));
        const float down = decode(format, next_down(format, bits));
        if (std::isnan(v)) {
            if (!std::isnan(up) || !std::isnan(down))
                fail.add(hex(bits) + ": NaN does not stay NaN");
            continue;
        }
        const auto above = std::upper_bound(values.begin(), values.end(), v);
        const auto below = std::lower_bound(values.begin(), values.end(), v);
        double want_up, want_down;
        if (above != values.end())
            want_up = *above;
        else  // past the top: +inf stays +inf; E4M3's max steps to NaN
            want_up = l.ieee_specials ? v : std::numeric_limits<double>::quiet_NaN();
        if (below != values.begin())
            want_down = *(below - 1);
        else
            want_down = l.ieee_specials ? v : std::numeric_limits<double>::quiet_NaN();
        const auto same = [](float got, double want) {
            return std::isnan(want) ? std::isnan(got) : static_cast<double>(got) == want;
        };
        if (!same(up, want_up))
            fail.add(hex(bits) + ": next_up gives " + num(up) + ", want " + num(want_up));
        if (!same(down, want_down))
            fail.add(hex(bits) + ": next_down gives " + num(down) + ", want " + num(want_down));

        if (!std::isfinite(v)) {
            if (!std::isnan(ulp(format, static_cast<float>(v))))
                fail.add(hex(bits) + ": ulp(inf) is not NaN");
            continue;
        }
        const double a = std::fabs(v);
        const double gap = a == max_finite
                               ? a - *(std::lower_bound(values.begin(), values.end(), a) - 1)
                               : *std::upper_bound(values.begin(), values.end(), a) - a;
        const float u = ulp(format, static_cast<float>(v));
        if (static_cast<double>(u) != gap)
            fail.add(hex(bits) + ": ulp " + num(u) + ", gap " + num(gap));
    }
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormat::ulp_cases_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<float>("x");
    QTest::addColumn<float>("expected");  // NaN: expect NaN
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto row = [](const char* name, Format f, float x, float u) {
        QTest::newRow(name) << f << x << u;
    };
    row("fp32_one", Format::fp32, 1.0f, 0x1p-23f);
    row("fp32_zero", Format::fp32, 0.0f, 0x1p-149f);
    row("fp32_max", Format::fp32, std::numeric_limits<float>::max(), 0x1p104f);
    row("tf32_one", Format::tf32, 1.0f, 0x1p-10f);
    row("tf32_fp32_subnormal", Format::tf32, 0x1p-140f, 0x1p-136f);
    row("fp16_one", Format::fp16, 1.0f, 0x1p-10f);
    row("fp16_just_below_one", Format::fp16, 0.999f, 0x1p-11f);
    row("fp16_-3", Format::fp16, -3.0f, 0x1p-9f);
    row("fp16_65504", Format::fp16, 65504.0f, 32.0f);
    row("fp16_above_max_keeps_top_binade", Format::fp16, 1e6f, 32.0f);
    row("fp16_zero", Format::fp16, 0.0f, 0x1p-24f);
    row("fp16_-0", Format::fp16, -0.0f, 0x1p-24f);
    row("fp16_subnormal_range", Format::fp16, 0x1p-20f, 0x1p-24f);
    row("fp16_min_normal", Format::fp16, 0x1p-14f, 0x1p-24f);
    row("fp16_inf", Format::fp16, k_inf, nan);
    row("fp16_nan", Format::fp16, nan, nan);
    row("bf16_one", Format::bf16, 1.0f, 0x1p-7f);
    row("bf16_fp32_max", Format::bf16, std::numeric_limits<float>::max(), 0x1p120f);
    row("bf16_tiny", Format::bf16, 1e-40f, 0x1p-133f);
    row("e4m3_one", Format::e4m3, 1.0f, 0.125f);
    row("e4m3_448", Format::e4m3, 448.0f, 32.0f);
    row("e4m3_above_max", Format::e4m3, 1000.0f, 32.0f);
    row("e4m3_zero", Format::e4m3, 0.0f, 0x1p-9f);
    row("e4m3_-inf", Format::e4m3, -k_inf, nan);
    row("e5m2_one", Format::e5m2, 1.0f, 0.25f);
    row("e5m2_57344", Format::e5m2, 57344.0f, 8192.0f);
    row("e5m2_zero", Format::e5m2, 0.0f, 0x1p-16f);
}

void TestFormat::ulp_cases() {
    QFETCH(Format, format);
    QFETCH(float, x);
    QFETCH(float, expected);
    const float got = ulp(format, x);
    if (std::isnan(expected))
        QVERIFY(std::isnan(got));
    else
        QCOMPARE(got, expected);
}

// ---------------------------------------------------------------------------------------------
// Fast paths against the scalar path

void TestFormat::encode_matches_reference_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<Overflow>("mode");
    for (Format f : all_formats)
        for (Overflow m : {Overflow::infinity, Overflow::saturate})
            QTest::addRow("%s_%s", to_string(f).data(), mode_name(m)) << f << m;
}

void TestFormat::encode_matches_reference() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    Failures fail;
    const auto check = [&](float x) {
        const std::uint32_t a = encode(format, x, mode), b = encode_reference(format, x, mode);
        if (a != b) fail.add(hex(bits_of(x)) + ": encode " + hex(a) + ", reference " + hex(b));
    };
    for (float x : sample_inputs()) check(x);
    Rng rng(77 + static_cast<std::uint64_t>(format));
    for (int i = 0; i < 500000; ++i)
        check(float_of(static_cast<std::uint32_t>(rng.next_u64() >> 32)));
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormat::buffer_paths_match_scalar_path_data() { encode_matches_reference_data(); }

void TestFormat::buffer_paths_match_scalar_path() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    const std::vector<float>& in = sample_inputs();
    const std::size_t n = in.size();
    const int bytes = storage_bytes(format);
    QCOMPARE(info(format).storage_bytes, bytes);

    // One value at a time: the scalar path, and the statistics from their definitions (overflow:
    // a finite value that IEEE rounding would carry past max finite; underflow: non-zero to zero;
    // subnormal: a non-zero subnormal result).
    std::vector<std::uint32_t> want_bits(n);
    RoundStats want;
    Failures fail;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = in[i];
        want_bits[i] = encode(format, x, mode);
        const float r = decode(format, want_bits[i]);
        const bool overflow = std::isfinite(x) &&
                              !std::isfinite(decode(format, encode(format, x, Overflow::infinity)));
        const bool underflow = x != 0.0f && !std::isnan(x) && r == 0.0f;
        want.overflow += overflow;
        want.underflow += underflow;
        want.subnormal += classify(format, want_bits[i]) == FpClass::subnormal;
        if (rounding_overflows(format, x) != overflow)
            fail.add(hex(bits_of(x)) + ": rounding_overflows says " + (overflow ? "no" : "yes"));
        if (rounding_underflows(format, x, mode) != underflow)
            fail.add(hex(bits_of(x)) + ": rounding_underflows says " + (underflow ? "no" : "yes"));
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    if (format != Format::fp32) {
        QVERIFY(want.overflow > 0);
        QVERIFY(want.underflow > 0);
    }
    QVERIFY(want.subnormal > 0);

    // encode_buffer packs exactly the scalar bits.
    std::vector<unsigned char> packed(n * static_cast<std::size_t>(bytes));
    const RoundStats enc_stats = encode_buffer(format, in, packed.data(), mode);
    const auto packed_at = [&](std::size_t i) -> std::uint32_t {
        std::uint32_t v = 0;
        std::memcpy(&v, packed.data() + i * static_cast<std::size_t>(bytes),
                    static_cast<std::size_t>(bytes));
        return v;  // little-endian host: the low bytes are the element
    };
    for (std::size_t i = 0; i < n; ++i)
        if (packed_at(i) != want_bits[i])
            fail.add(hex(bits_of(in[i])) + ": encode_buffer " + hex(packed_at(i)) + ", scalar " +
                     hex(want_bits[i]));
    QVERIFY2(fail.ok(), fail.report().constData());
    QCOMPARE(enc_stats.overflow, want.overflow);
    QCOMPARE(enc_stats.underflow, want.underflow);
    QCOMPARE(enc_stats.subnormal, want.subnormal);

    // decode_buffer unpacks to exactly the scalar decode (NaN payloads included).
    std::vector<float> unpacked(n);
    decode_buffer(format, packed.data(), unpacked);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t want_f = bits_of(decode(format, want_bits[i]));
        if (bits_of(unpacked[i]) != want_f)
            fail.add(hex(want_bits[i]) + ": decode_buffer " + hex(bits_of(unpacked[i])) +
                     ", decode " + hex(want_f));
    }
    QVERIFY2(fail.ok(), fail.report().constData());

    // round_in_place equals decode(encode(x)) bit for bit.
    std::vector<float> rounded = in;
    const RoundStats rip_stats = round_in_place(format, rounded, mode);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t want_f = bits_of(decode(format, want_bits[i]));
        if (bits_of(rounded[i]) != want_f)
            fail.add(hex(bits_of(in[i])) + ": round_in_place " + hex(bits_of(rounded[i])) +
                     ", scalar " + hex(want_f));
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    QCOMPARE(rip_stats.overflow, want.overflow);
    QCOMPARE(rip_stats.underflow, want.underflow);
    QCOMPARE(rip_stats.subnormal, want.subnormal);
}

// Short buffers at odd offsets, so every length of a vector path's tail meets NaN payloads, ties
// and overflows (the sample starts with the FP32 specials).
void TestFormat::buffer_tails_match_scalar_path_data() { encode_matches_reference_data(); }

void TestFormat::buffer_tails_match_scalar_path() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    const std::vector<float>& all = sample_inputs();
    const std::size_t bytes = static_cast<std::size_t>(storage_bytes(format));
    Failures fail;
    for (std::size_t offset = 0; offset < 4; ++offset)
        for (std::size_t len = 0; len <= 40; ++len) {
            const std::span<const float> in(all.data() + offset, len);
            std::vector<unsigned char> packed(len * bytes + 1);
            encode_buffer(format, in, packed.data(), mode);
            std::vector<float> unpacked(len), rounded(in.begin(), in.end());
            decode_buffer(format, packed.data(), unpacked);
            round_in_place(format, rounded, mode);
            for (std::size_t i = 0; i < len; ++i) {
                const std::uint32_t b = encode(format, in[i], mode);
                std::uint32_t got = 0;
                std::memcpy(&got, packed.data() + i * bytes, bytes);
                const std::uint32_t want_f = bits_of(decode(format, b));
                if (got != b || bits_of(unpacked[i]) != want_f || bits_of(rounded[i]) != want_f)
                    fail.add("offset " + std::to_string(offset) + " length " + std::to_string(len) +
                             " index " + std::to_string(i) + ": input " + hex(bits_of(in[i])));
            }
        }
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormat::cpu_has_f16c_matches_cpuid() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool expected = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    QCOMPARE(cpu_has_f16c(), expected);
#else
    QCOMPARE(cpu_has_f16c(), false);
#endif
}

QTEST_APPLESS_MAIN(TestFormat)
#include "test_format.moc"
