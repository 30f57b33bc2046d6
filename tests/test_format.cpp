// engine/format against first principles (REFERENCE.md, "Number formats"): every FP16, BF16, TF32
// and FP8 pattern decodes to the value its bit fields spell and re-encodes to itself; the tricky
// rounding cases; the fact table. (Neighbours, classes, ulp: test_format_neighbours.cpp; buffer
// fast paths: test_format_fast_paths.cpp.) Rule: expected values come from the bit layout in the
// table, never from the engine itself (the engine only ever appears on the side being checked).
#include "format_test_support.hpp"

#include <QtTest>

#include "engine/core/fp4.hpp"

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
using namespace format_test;

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
    void default_overflow_is_ieee_except_e4m3_and_e2m1();
    void rounding_picks_nearest_even_neighbour_data();
    void rounding_picks_nearest_even_neighbour();
    void e2m1_has_no_nan_or_inf_data();
    void e2m1_has_no_nan_or_inf();
    void e2m1_equals_transformer_engine_cast_except_minus_zero();
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
    QTest::addColumn<bool>("has_nan");

    const auto p2 = [](int e) { return std::ldexp(1.0, e); };
    QTest::newRow("fp32") << Format::fp32 << "fp32" << 8 << 23 << 127 << 4 << true
                          << std::ldexp(2.0 - p2(-23), 127) << 3.4028235e38 << 0x7F7FFFFFu
                          << p2(-126) << p2(-149) << p2(-23) << 0x7F800000u << true;
    QTest::newRow("tf32") << Format::tf32 << "tf32" << 8 << 10 << 127 << 4 << true
                          << std::ldexp(2.0 - p2(-10), 127) << 3.40116e38 << 0x7F7FE000u << p2(-126)
                          << p2(-136) << p2(-10) << 0x7F800000u << true;
    QTest::newRow("fp16") << Format::fp16 << "fp16" << 5 << 10 << 15 << 2 << true << 65504.0
                          << 65504.0 << 0x7BFFu << p2(-14) << p2(-24) << p2(-10) << 0x7C00u << true;
    QTest::newRow("bf16") << Format::bf16 << "bf16" << 8 << 7 << 127 << 2 << true
                          << std::ldexp(2.0 - p2(-7), 127) << 3.3895314e38 << 0x7F7Fu << p2(-126)
                          << p2(-133) << p2(-7) << 0x7F80u << true;
    QTest::newRow("e4m3") << Format::e4m3 << "e4m3" << 4 << 3 << 7 << 1 << false << 448.0 << 448.0
                          << 0x7Eu << p2(-6) << p2(-9) << p2(-3) << 0u << true;
    QTest::newRow("e5m2") << Format::e5m2 << "e5m2" << 5 << 2 << 15 << 1 << true << 57344.0
                          << 57344.0 << 0x7Bu << p2(-14) << p2(-16) << p2(-2) << 0x7Cu << true;
    // REFERENCE.md, "FP4": max 6 = 1.1b·2^2 (0111), min normal 1, min subnormal 0.5, ulp at 1 is 0.5.
    QTest::newRow("e2m1") << Format::e2m1 << "e2m1" << 2 << 1 << 1 << 1 << false << 6.0 << 6.0
                          << 0x7u << p2(0) << p2(-1) << p2(-1) << 0u << false;
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
    QFETCH(bool, has_nan);

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
    QCOMPARE(fi.has_nan, has_nan);
    QCOMPARE(fi.default_overflow, has_inf ? Overflow::infinity : Overflow::saturate);

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
    } else if (has_nan) {
        QCOMPARE(classify(format, next_up(format, max_bits)), FpClass::nan);
    } else {  // nothing past max finite: it stays (format.hpp)
        QCOMPARE(next_up(format, max_bits), max_bits);
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
    QTest::newRow("e2m1_all_16") << Format::e2m1 << 1.0 << 0 << 0;
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

    // E2M1 (REFERENCE.md, "FP4"): every tie of its eight magnitudes, each to the even code, in both
    // overflow modes (it has nothing but saturation); NaN is +0 and inf ±6, as TE's cast.
    for (Overflow m : {inf, sat}) {
        const bool s = m == sat;
        const auto e2 = [&](const char* name, float x, quint32 want) {
            QTest::addRow("e2m1_%s_%s", name, s ? "sat" : "inf") << Format::e2m1 << m << bits_of(x) << want;
        };
        e2("ties_0.25_down_to_0", 0.25f, 0x0);
        e2("rounds_above_0.25_to_0.5", std::nextafter(0.25f, 1.0f), 0x1);
        e2("ties_0.75_up_to_1", 0.75f, 0x2);
        e2("rounds_below_0.75_to_0.5", std::nextafter(0.75f, 0.0f), 0x1);
        e2("ties_1.25_down_to_1", 1.25f, 0x2);
        e2("rounds_above_1.25_to_1.5", std::nextafter(1.25f, 2.0f), 0x3);
        e2("ties_1.75_up_to_2", 1.75f, 0x4);
        e2("rounds_below_1.75_to_1.5", std::nextafter(1.75f, 0.0f), 0x3);
        e2("ties_2.5_down_to_2", 2.5f, 0x4);
        e2("rounds_above_2.5_to_3", std::nextafter(2.5f, 3.0f), 0x5);
        e2("ties_3.5_up_to_4", 3.5f, 0x6);
        e2("rounds_below_3.5_to_3", std::nextafter(3.5f, 0.0f), 0x5);
        e2("ties_5_down_to_4", 5.0f, 0x6);
        e2("rounds_above_5_to_6", std::nextafter(5.0f, 6.0f), 0x7);
        e2("ties_7_up_and_saturates_to_6", 7.0f, 0x7);
        e2("rounds_below_7_to_6", std::nextafter(7.0f, 0.0f), 0x7);
        e2("saturates_largest_fp32_to_6", flt_max, 0x7);
        e2("saturates_inf_to_6", k_inf, 0x7);
        e2("saturates_-inf_to_-6", -k_inf, 0xF);
        e2("ties_-5_down_to_-4", -5.0f, 0xE);
        e2("ties_-0.25_to_-0", -0.25f, 0x8);
        e2("keeps_-0", -0.0f, 0x8);  // IEEE-like; TE's cast gives +0 (e2m1_equals_..._minus_zero)
        e2("keeps_min_subnormal_0.5", 0.5f, 0x1);
        e2("rounds_fp32_min_subnormal_to_0", 0x1p-149f, 0x0);
        QTest::addRow("e2m1_nan_is_+0_%s", s ? "sat" : "inf") << Format::e2m1 << m << 0x7FC00000u << 0x0u;
        QTest::addRow("e2m1_-nan_is_+0_%s", s ? "sat" : "inf") << Format::e2m1 << m << 0xFFC00000u << 0x0u;
        QTest::addRow("e2m1_signalling_nan_is_+0_%s", s ? "sat" : "inf") << Format::e2m1 << m << 0x7F800001u << 0x0u;
    }

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
    for (Format f : all_formats) {
        if (f == Format::e2m1) continue;  // no NaN at all: e2m1_has_no_nan_or_inf
        for (Overflow m : {Overflow::infinity, Overflow::saturate})
            for (quint32 b : {0x7F800001u, 0xFF800001u})
                QTest::addRow("%s_%s_%08X", to_string(f).data(), mode_name(m), b) << f << m << b;
    }
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

void TestFormat::default_overflow_is_ieee_except_e4m3_and_e2m1() {
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
    QCOMPARE(encode(Format::e2m1, 1000.0f), 0x7u);  // saturates: it has nothing else
    std::vector<float> w{7.0f, -1000.0f, 6.5f};
    const RoundStats t = round_in_place(Format::e2m1, w);
    QCOMPARE(w, (std::vector<float>{6.0f, -6.0f, 6.0f}));
    QCOMPARE(t.overflow, std::size_t{2});  // 6.5 rounds to 6 without overflowing
    QCOMPARE(round_to(Format::e2m1, 1000.0f, Overflow::infinity), 6.0f);
}

// Independent of any encoder: the result is a representable value no farther from x than either of
// its neighbours, and on a tie its code is even.
void TestFormat::rounding_picks_nearest_even_neighbour_data() {
    QTest::addColumn<Format>("format");
    for (Format f : {Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2, Format::e2m1})
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
        // E2M1's ±6 is its own neighbour past the top (nothing lies beyond): no rival there.
        const std::uint32_t up = next_up(format, b), down = next_down(format, b);
        const double du = up == b ? std::numeric_limits<double>::infinity() : dist(x, decode(format, up));
        const double dd = down == b ? std::numeric_limits<double>::infinity() : dist(x, decode(format, down));
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
    // E2M1 has 16 tie points (each of them a rounding_cases row); the sample holds each a few times.
    QVERIFY2(ties > (format == Format::e2m1 ? 50u : 100u), "the sample must contain ties");
    QVERIFY(checked > 200000);
}

// ---------------------------------------------------------------------------------------------
// E2M1: no NaN, no inf (REFERENCE.md, "FP4")

void TestFormat::e2m1_has_no_nan_or_inf_data() {
    QTest::addColumn<Overflow>("mode");
    QTest::newRow("infinity") << Overflow::infinity;
    QTest::newRow("saturate") << Overflow::saturate;
}

// Every code decodes to a number, NaN rounds to +0 and inf to ±6 whatever the mode, and the
// buffer paths and the tally agree: nothing non-finite, NaN not counted as an overflow.
void TestFormat::e2m1_has_no_nan_or_inf() {
    QFETCH(Overflow, mode);
    const Format f = Format::e2m1;
    for (std::uint32_t code = 0; code < 16; ++code) {
        QVERIFY(std::isfinite(decode(f, code)));
        QVERIFY(classify(f, code) != FpClass::nan && classify(f, code) != FpClass::inf);
    }
    std::vector<float> v{float_of(0x7FC00000u), float_of(0xFFC00000u), float_of(0x7F800001u), k_inf, -k_inf, 1.0f};
    std::vector<std::uint8_t> packed(v.size());
    const RoundStats enc = encode_buffer(f, v, packed.data(), mode);
    QCOMPARE(packed, (std::vector<std::uint8_t>{0x0, 0x0, 0x0, 0x7, 0xF, 0x2}));
    const RoundStats s = round_in_place(f, v, mode);
    QCOMPARE(v, (std::vector<float>{0.0f, 0.0f, 0.0f, 6.0f, -6.0f, 1.0f}));
    QVERIFY(!std::signbit(v[1]));  // −NaN too is +0
    for (const RoundStats& t : {enc, s}) {
        QCOMPARE(t.nonfinite, std::size_t{0});
        QCOMPARE(t.overflow, std::size_t{0});   // inf is not a finite value that overflowed
        QCOMPARE(t.underflow, std::size_t{0});  // NaN is not a value that became zero
    }
    QVERIFY(!rounding_underflows(f, float_of(0x7FC00000u), mode));
    QCOMPARE(ulp(f, 6.0f), 2.0f);
    QCOMPARE(next_up(f, 0x7u), 0x7u);    // 6 stays: nothing lies beyond (format.hpp)
    QCOMPARE(next_down(f, 0xFu), 0xFu);  // −6 stays
}

// The table's E2M1 encoder is Transformer Engine's cast (core::e2m1_code, cast_to_fp4x2) for every
// input but −0.0, which the table keeps as −0 (code 8, IEEE-like) and TE's cast makes +0: each tie
// point and each value ±1 ulp, a million random bit patterns, and every float of [2^-3, 2^4).
void TestFormat::e2m1_equals_transformer_engine_cast_except_minus_zero() {
    const Format f = Format::e2m1;
    QCOMPARE(encode(f, -0.0f), 0x8u);
    QCOMPARE(core::e2m1_code(-0.0f), 0x0u);
    Failures fail;
    std::size_t checked = 0;
    const auto check = [&](float x) {
        if (bits_of(x) == 0x80000000u) return;
        ++checked;
        const std::uint32_t te = core::e2m1_code(x);
        for (Overflow m : {Overflow::saturate, Overflow::infinity}) {
            const std::uint32_t got = encode(f, x, m), ref = encode_reference(f, x, m);
            if (got != te || ref != te)
                fail.add(hex(bits_of(x)) + ": table " + hex(got) + " / reference " + hex(ref) + ", TE " + hex(te) +
                         " (" + mode_name(m) + ")");
        }
    };
    for (float a : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f,
                    7.0f, 8.0f, 1e30f, k_inf})
        for (float x : {a, -a})
            for (float y : {x, std::nextafter(x, k_inf), std::nextafter(x, -k_inf)}) check(y);
    for (std::uint32_t b : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu}) check(float_of(b));
    Rng rng(0xE2E1);
    for (int i = 0; i < 1000000; ++i) check(float_of(static_cast<std::uint32_t>(rng.next_u64() >> 32)));
    QVERIFY2(fail.ok(), fail.report().constData());
    // Whole binades, both signs, through the scalar calls (no Failures bookkeeping per value).
    std::size_t bad = 0;
    std::uint32_t first_bad = 0;
    for (std::uint32_t e = 127 - 3; e < 127 + 4; ++e)
        for (std::uint32_t m = 0; m < (1u << 23); ++m)
            for (std::uint32_t sign : {0u, 0x80000000u}) {
                const float x = float_of(sign | (e << 23) | m);
                if (core::encode_code(info(f), x, Overflow::saturate) != core::e2m1_code(x) && bad++ == 0)
                    first_bad = bits_of(x);
            }
    QVERIFY2(bad == 0, (std::to_string(bad) + " mismatches, first " + hex(first_bad)).c_str());
    QVERIFY(checked > 1000000);
}

QTEST_APPLESS_MAIN(TestFormat)
#include "test_format.moc"
