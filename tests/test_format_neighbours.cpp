// engine/format's classify, next_up / next_down and ulp against the bit layouts of REFERENCE.md's
// table (format_test_support.hpp): hand-worked cases, and for every pattern of every narrow format,
// neighbours that are the adjacent values of the sorted list of all its values.
#include "format_test_support.hpp"

#include <QtTest>

#include <algorithm>

using namespace mpx;
using namespace format_test;

class TestFormatNeighbours : public QObject {
    Q_OBJECT

private slots:
    void classify_cases_data();
    void classify_cases();
    void next_up_down_cases_data();
    void next_up_down_cases();
    void neighbours_are_adjacent_values_data();
    void neighbours_are_adjacent_values();
    void ulp_cases_data();
    void ulp_cases();
};

// ---------------------------------------------------------------------------------------------
// classify, next_up / next_down, ulp

void TestFormatNeighbours::classify_cases_data() {
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
    row("e2m1_-0", Format::e2m1, 0x8, FpClass::zero);
    row("e2m1_0.5_subnormal", Format::e2m1, 0x1, FpClass::subnormal);
    row("e2m1_1_min_normal", Format::e2m1, 0x2, FpClass::normal);
    row("e2m1_6_max_normal", Format::e2m1, 0x7, FpClass::normal);  // E4M3's NaN pattern is a number here
    row("e2m1_-6", Format::e2m1, 0xF, FpClass::normal);
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

void TestFormatNeighbours::classify_cases() {
    QFETCH(Format, format);
    QFETCH(quint32, bits);
    QFETCH(FpClass, expected);
    QCOMPARE(classify(format, bits), expected);
}

void TestFormatNeighbours::next_up_down_cases_data() {
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
    row("e2m1_+0", Format::e2m1, 0x0, 0x1, 0x9);
    row("e2m1_-0", Format::e2m1, 0x8, 0x1, 0x9);
    row("e2m1_one", Format::e2m1, 0x2, 0x3, 0x1);
    row("e2m1_-0.5_up_to_-0", Format::e2m1, 0x9, 0x8, 0xA);
    row("e2m1_max_stays", Format::e2m1, 0x7, 0x7, 0x6);  // no inf, no NaN: nothing past 6
    row("e2m1_-max_stays", Format::e2m1, 0xF, 0xE, 0xF);
    row("fp32_one", Format::fp32, 0x3F800000, 0x3F800001, 0x3F7FFFFF);
    row("fp32_+0", Format::fp32, 0x00000000, 0x00000001, 0x80000001);
    row("fp32_max_to_inf", Format::fp32, 0x7F7FFFFF, 0x7F800000, 0x7F7FFFFE);
    row("fp32_nan_stays", Format::fp32, 0x7FC00000, 0x7FC00000, 0x7FC00000);
}

void TestFormatNeighbours::next_up_down_cases() {
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
void TestFormatNeighbours::neighbours_are_adjacent_values_data() {
    QTest::addColumn<Format>("format");
    for (Format f : {Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2, Format::e2m1})
        QTest::newRow(to_string(f).data()) << f;
}

void TestFormatNeighbours::neighbours_are_adjacent_values() {
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
        else  // past the top: +inf stays +inf, E2M1's 6 stays 6; E4M3's max steps to NaN
            want_up = l.ieee_specials || l.finite_only ? v : std::numeric_limits<double>::quiet_NaN();
        if (below != values.begin())
            want_down = *(below - 1);
        else
            want_down = l.ieee_specials || l.finite_only ? v : std::numeric_limits<double>::quiet_NaN();
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

void TestFormatNeighbours::ulp_cases_data() {
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
    row("e2m1_zero", Format::e2m1, 0.0f, 0.5f);
    row("e2m1_one", Format::e2m1, 1.0f, 0.5f);
    row("e2m1_3", Format::e2m1, 3.0f, 1.0f);
    row("e2m1_6", Format::e2m1, 6.0f, 2.0f);
    row("e2m1_above_max_keeps_top_binade", Format::e2m1, 100.0f, 2.0f);
    row("e2m1_inf", Format::e2m1, k_inf, nan);
}

void TestFormatNeighbours::ulp_cases() {
    QFETCH(Format, format);
    QFETCH(float, x);
    QFETCH(float, expected);
    const float got = ulp(format, x);
    if (std::isnan(expected))
        QVERIFY(std::isnan(got));
    else
        QCOMPARE(got, expected);
}

QTEST_APPLESS_MAIN(TestFormatNeighbours)
#include "test_format_neighbours.moc"
