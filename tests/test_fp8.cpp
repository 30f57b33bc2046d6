// FP8 scaling arithmetic (engine/core/fp8_math.hpp, engine/precision/fp8_scaling.hpp) against brute-force
// references and hand-worked tables: E8M0 block exponents, MXFP8 element rounding at every block
// position, and Transformer Engine's delayed-scaling sequence (history max vs most_recent, margin).
#include "engine/core/fp8_math.hpp"
#include "engine/core/rng.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/mxfp8_cast.hpp"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace mpx;

namespace {

// floor(log2 a) by doubling, independent of the bit tricks under test.
int brute_floor_log2(double a) {
    int k = 0;
    while (std::ldexp(1.0, k) > a) --k;
    while (std::ldexp(1.0, k + 1) <= a) ++k;
    return k;
}

// Every finite E4M3 value, by code (0..126 are the non-negative finite codes, 127 is NaN).
std::vector<double> e4m3_grid() {
    std::vector<double> g;
    for (int c = 0; c < 127; ++c) {
        const int e = c >> 3, m = c & 7;
        g.push_back(e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7));
    }
    return g;
}

// Nearest grid value, ties to the even code, saturating at 448: the reference rounding.
double brute_e4m3_saturating(double x) {
    static const std::vector<double> g = e4m3_grid();
    const double a = std::fabs(x);
    int best = 0;
    for (int c = 1; c < 127; ++c) {
        const double d = std::fabs(g[c] - a), db = std::fabs(g[best] - a);
        if (d < db || (d == db && (c % 2) == 0)) best = c;
    }
    if (a > 448.0) best = 126;
    return std::copysign(g[best], x);
}

}  // namespace

class TestFp8 : public QObject {
    Q_OBJECT
private slots:
    void e8m0_exponent_is_floor_log2_minus_8() {
        Rng rng(7);
        for (int i = 0; i < 20000; ++i) {
            // magnitudes spread over FP32's whole range, subnormals included
            const float a = std::ldexp(static_cast<float>(rng.uniform(1.0, 2.0)),
                                       static_cast<int>(rng.uniform(-149.0, 127.0)));
            if (!(a > 0.0f)) continue;
            int want = brute_floor_log2(a) - 8;
            want = std::max(-127, std::min(127, want));
            QCOMPARE(core::mx_shared_exponent(a), want);
            QCOMPARE(int(core::e8m0_code(want)), want + 127);
        }
        QCOMPARE(core::mx_shared_exponent(0.0f), -127);
        QCOMPARE(core::mx_shared_exponent(448.0f), 0);    // 448 = 1.75·2^8: scale 1
        QCOMPARE(core::mx_shared_exponent(512.0f), 1);
        QCOMPARE(core::mx_shared_exponent(std::ldexp(1.0f, -149)), -127);  // clamped
        QCOMPARE(core::mx_shared_exponent(INFINITY), 128);                 // E8M0 NaN
    }

    // Each block position in turn holds the block's largest magnitude; every element is checked
    // against the brute-force rounding of x / 2^e, including the ones that saturate (amax / 2^e
    // lies in [256, 512): above 464 it saturates to 448, as the OCP spec's floor rule implies).
    void mxfp8_elements_match_brute_force_at_every_block_position() {
        Rng rng(11);
        for (int pos = 0; pos < core::k_mx_block; ++pos) {
            for (int trial = 0; trial < 40; ++trial) {
                float block[core::k_mx_block];
                const int top = static_cast<int>(rng.uniform(-30.0, 30.0));
                for (int i = 0; i < core::k_mx_block; ++i)
                    block[i] = std::ldexp(static_cast<float>(rng.uniform(-1.0, 1.0)),
                                          top - static_cast<int>(rng.uniform(0.0, 14.0)));
                block[pos] = std::ldexp(static_cast<float>(rng.uniform(1.0, 2.0)) *
                                            (trial % 2 ? -1.0f : 1.0f), top + 1);
                float amax = 0.0f;
                for (float v : block) amax = core::amax_fold(amax, v);
                QCOMPARE(amax, std::fabs(block[pos]));
                const int e = core::mx_shared_exponent(amax);
                QCOMPARE(e, brute_floor_log2(amax) - 8);
                for (int i = 0; i < core::k_mx_block; ++i) {
                    float scaled, q;
                    const float out = core::mx_element(block[i], e, scaled, q);
                    const double want_q = brute_e4m3_saturating(std::ldexp(double(block[i]), -e));
                    QCOMPARE(double(q), want_q);
                    QCOMPARE(double(out), std::ldexp(want_q, e));
                }
            }
        }
    }

    // The CPU's whole-matrix MXFP8 cast equals core::mx_element block by block: along rows and down
    // columns, with short last blocks (37 = 32 + 5), zeros, subnormal and huge magnitudes, a block
    // with an inf (E8M0's NaN scale: the whole block NaN), a NaN among finite values (its block
    // keeps a finite scale), values that saturate (mantissa ≥ 1.8125 at the block's top), the
    // counts core::tally gives and the amax it returns (core::amax_of of the input).
    void mx_cast_in_place_equals_mx_element_block_by_block_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<bool>("alongRows");
        QTest::addColumn<QByteArray>("special");
        for (bool along : {true, false})
            for (const char* special : {"", "inf", "nan"}) {
                const QByteArray tag = QByteArray(along ? "rows" : "cols") + (*special ? "_" : "") + special;
                QTest::newRow(tag + "_37x70") << 37 << 70 << along << QByteArray(special);
                QTest::newRow(tag + "_64x32") << 64 << 32 << along << QByteArray(special);
                QTest::newRow(tag + "_1x1") << 1 << 1 << along << QByteArray(special);
            }
    }
    void mx_cast_in_place_equals_mx_element_block_by_block() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(bool, alongRows);
        QFETCH(QByteArray, special);
        const bool withInf = special == "inf";
        Rng rng(static_cast<std::uint64_t>(rows * 1000 + cols));
        std::vector<float> v(static_cast<std::size_t>(rows) * cols);
        for (float& x : v) {
            const double u = rng.uniform(0.0, 1.0);
            x = u < 0.05 ? 0.0f
                         : std::ldexp(static_cast<float>(rng.uniform(-2.0, 2.0)), static_cast<int>(rng.uniform(-140.0, 120.0)));
        }
        if (withInf) v[v.size() / 2] = -INFINITY;
        if (special == "nan") v[v.size() / 2] = -NAN;
        const float want_amax = core::amax_of(v.data(), v.size());
        const auto at = [&](int line, int k) -> std::size_t {
            return alongRows ? static_cast<std::size_t>(line) * cols + k : static_cast<std::size_t>(k) * cols + line;
        };
        std::vector<float> want = v;
        core::Counts want_counts;
        const core::TallyEdges edges = core::tally_edges(Format::e4m3);
        const int lines = alongRows ? rows : cols, len = alongRows ? cols : rows;
        for (int l = 0; l < lines; ++l)
            for (int b0 = 0; b0 < len; b0 += core::k_mx_block) {
                const int b1 = std::min(len, b0 + core::k_mx_block);
                float amax = 0.0f;
                for (int k = b0; k < b1; ++k) amax = std::max(amax, std::fabs(v[at(l, k)]));
                const int e = core::mx_shared_exponent(amax);
                for (int k = b0; k < b1; ++k) {
                    float scaled, q;
                    want[at(l, k)] = core::mx_element(v[at(l, k)], e, scaled, q);
                    core::tally(edges, scaled, q, want_counts);
                }
            }
        core::Counts got_counts;
        const float got_amax = mx_cast_in_place(v.data(), rows, cols, alongRows ? MxAxis::rows : MxAxis::cols, got_counts);
        QCOMPARE(core::bits_of(got_amax), core::bits_of(want_amax));
        int nan_blocks = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            QVERIFY2(core::bits_of(v[i]) == core::bits_of(want[i]),
                     qPrintable(QStringLiteral("element %1: %2 vs %3").arg(i).arg(v[i]).arg(want[i])));
            nan_blocks += std::isnan(want[i]);
        }
        QCOMPARE(nan_blocks, withInf ? std::min(len, core::k_mx_block) : special == "nan" ? 1 : 0);  // the inf's block is all NaN
        QVERIFY(want_counts.overflow > 0 || rows * cols < 64);  // some values saturate
        QCOMPARE(got_counts.overflow, want_counts.overflow);
        QCOMPARE(got_counts.underflow, want_counts.underflow);
        QCOMPARE(got_counts.subnormal, want_counts.subnormal);
        QCOMPARE(got_counts.nonzero, want_counts.nonzero);
        QCOMPARE(got_counts.nonfinite, want_counts.nonfinite);
        QCOMPARE(got_counts.overflow_max, want_counts.overflow_max);
        QVERIFY(want_counts.underflow > 0 || rows * cols < 64);  // the spread reaches below E4M3's range
    }

    // The vectorised amax (integer max on the bits) against amax_fold value by value: random bit
    // patterns (NaNs of every payload, infinities, zeros of both signs, subnormals) in runs of
    // every length up to 70, and the all-NaN run, whose amax is 0.
    void amax_of_equals_amax_fold() {
        Rng rng(11);
        std::vector<float> v(70);
        for (int trial = 0; trial < 20000; ++trial) {
            const std::size_t n = static_cast<std::size_t>(trial % 71);
            for (std::size_t i = 0; i < n; ++i) {
                std::uint32_t b = static_cast<std::uint32_t>(rng.next_u64());
                switch (rng.below(6)) {
                    case 0: b |= 0x7f800000u; break;                 // inf or NaN
                    case 1: b &= 0x807fffffu; break;                 // zero or subnormal
                    case 2: b = (b & 0x80000000u) | 0x7f800000u; break;  // ±inf
                    default: break;
                }
                v[i] = core::float_of(b);
            }
            float want = 0.0f;
            for (std::size_t i = 0; i < n; ++i) want = core::amax_fold(want, v[i]);
            QCOMPARE(core::bits_of(core::amax_of(v.data(), n)), core::bits_of(want));
        }
        const std::vector<float> nans(5, core::float_of(0xffc00001u));
        QCOMPARE(core::bits_of(core::amax_of(nans.data(), nans.size())), 0u);
    }

    void current_scale_follows_transformer_engine() {
        QCOMPARE(core::current_scale(2.0f, 448.0f), 224.0f);
        QCOMPARE(core::current_scale(0.0f, 448.0f), 1.0f);
        QCOMPARE(core::current_scale(INFINITY, 448.0f), 1.0f);
        QCOMPARE(core::current_scale(NAN, 448.0f), 1.0f);
        QCOMPARE(core::current_scale(1e-40f, 448.0f), FLT_MAX);  // quotient overflows
    }

    void scaled_cast_counts_on_e4m3_modes() {
        float s;
        QCOMPARE(core::scaled_cast(Format::e4m3, 100.0f, 4.0f, Overflow::saturate, s), 384.0f);  // tie to even
        QCOMPARE(s, 400.0f);
        QCOMPARE(core::scaled_cast(Format::e4m3, 120.0f, 4.0f, Overflow::saturate, s), 448.0f);  // 480 > 464
        QVERIFY(std::isnan(core::scaled_cast(Format::e4m3, 120.0f, 4.0f, Overflow::infinity, s)));
        QCOMPARE(core::scaled_cast(Format::e5m2, 1.0f, 3.0f, Overflow::infinity, s), 3.0f);
    }

    // The table is the specification: amaxes measured on steps 0..6, then the scale each step
    // uses (step 0 uses TE's initial scale 1). History length 3.
    void delayed_scale_sequence_data() {
        QTest::addColumn<int>("algo");
        QTest::addColumn<int>("margin");
        QTest::addColumn<QList<float>>("scales");
        // amax:            1    2    4    0     0     0    8
        // max of last 3:   1    2    4    4     4     0→keep 8
        QTest::newRow("max, margin 0")
            << int(AmaxAlgo::max) << 0
            << QList<float>{1.0f, 448.0f, 224.0f, 112.0f, 112.0f, 112.0f, 112.0f, 56.0f};
        QTest::newRow("most_recent, margin 0")
            << int(AmaxAlgo::most_recent) << 0
            << QList<float>{1.0f, 448.0f, 224.0f, 112.0f, 112.0f, 112.0f, 112.0f, 56.0f};
        QTest::newRow("max, margin 1")
            << int(AmaxAlgo::max) << 1
            << QList<float>{1.0f, 224.0f, 112.0f, 56.0f, 56.0f, 56.0f, 56.0f, 28.0f};
    }
    void delayed_scale_sequence() {
        QFETCH(int, algo);
        QFETCH(int, margin);
        QFETCH(QList<float>, scales);
        const float amax[] = {1, 2, 4, 0, 0, 0, 8};
        AmaxHistory h(3, static_cast<AmaxAlgo>(algo), margin, 448.0f);
        QCOMPARE(h.scale(), scales[0]);
        for (int t = 0; t < 7; ++t) {
            h.push(amax[t]);
            QCOMPARE(h.scale(), scales[t + 1]);
        }
    }

    // Where max and most_recent differ: a falling amax. max keeps the largest of the window until
    // it leaves; most_recent follows at once.
    void delayed_max_waits_for_the_window_most_recent_does_not() {
        const float amax[] = {8, 1, 1, 1, 1};
        const float want_max[] = {56, 56, 56, 448, 448};
        const float want_recent[] = {56, 448, 448, 448, 448};
        AmaxHistory hm(3, AmaxAlgo::max, 0, 448.0f), hr(3, AmaxAlgo::most_recent, 0, 448.0f);
        for (int t = 0; t < 5; ++t) {
            hm.push(amax[t]);
            hr.push(amax[t]);
            QCOMPARE(hm.scale(), want_max[t]);
            QCOMPARE(hr.scale(), want_recent[t]);
        }
        // inf and NaN amaxes keep the previous scale (TE: isfinite(amax) && amax > 0)
        hr.push(INFINITY);
        QCOMPARE(hr.scale(), 448.0f);
        hr.push(NAN);
        QCOMPARE(hr.scale(), 448.0f);
        // E5M2 with margin 2: 57344 / 4 / amax
        AmaxHistory he(1, AmaxAlgo::max, 2, 57344.0f);
        he.push(7.0f);
        QCOMPARE(he.scale(), 14336.0f / 7.0f);
    }
};

QTEST_APPLESS_MAIN(TestFp8)
#include "test_fp8.moc"
