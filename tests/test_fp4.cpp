// FP4 (engine/core/fp4.hpp, engine/precision/fp4_quant.hpp): every E2M1 code and tie point, NVFP4's
// block scales at their edges, MXFP4's four scale rules against definitions written here from
// REFERENCE.md, the 2D tiles' transposition identity, and stochastic rounding's unbiasedness and
// thread independence. Bit-for-bit agreement with an independent reference of Transformer
// Engine's procedure is tests/test_fp4_reference.cpp.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/core/fp4.hpp"
#include "engine/core/rng.hpp"
#include "engine/core/write_back.hpp"
#include "engine/precision/fp4_quant.hpp"

using namespace mpx;

namespace {

std::uint32_t bits(float x) {
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}
float from_bits(std::uint32_t b) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}

const double k_grid[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// Round to nearest E2M1 magnitude, ties to the even code (0, 2, 4, 6), beyond 6 → 6: REFERENCE.md's
// definition, by distance to every grid point.
std::uint32_t nearest_even_code(double v) {
    const bool neg = v < 0.0;  // −0.0 is +0 (TE's cast_to_fp4x2 tests x >= 0 first)
    const double a = std::fabs(v);
    std::uint32_t best = 7;
    if (a <= 6.0) {
        double d = 1e300;
        for (std::uint32_t c = 0; c < 8; ++c) {
            const double dc = std::fabs(a - k_grid[c]);
            if (dc < d || (dc == d && c % 2 == 0)) {
                d = dc;
                best = c;
            }
        }
    }
    return neg ? best | 8u : best;
}

FloatMatrix matrix(int rows, int cols, std::uint64_t seed, double spread) {
    Rng rng(seed);
    FloatMatrix m{rows, cols, std::vector<float>(static_cast<std::size_t>(rows) * cols)};
    for (float& v : m.values) v = static_cast<float>((2.0 * rng.uniform() - 1.0) * std::exp2(spread * (rng.uniform() - 0.5)));
    return m;
}

}  // namespace

class TestFp4 : public QObject {
    Q_OBJECT
private slots:
    void everyCodeDecodesAndRoundTrips() {
        for (std::uint32_t c = 0; c < 16; ++c) {
            const float v = core::e2m1_value(c);
            QCOMPARE(static_cast<double>(std::fabs(v)), k_grid[c & 7]);
            QCOMPARE(std::signbit(v), (c & 8) != 0);
            QCOMPARE(core::e2m1_code(v), c == 8 ? 0u : c);  // −0.0 encodes as +0, as TE's thresholds have it
        }
    }

    // Every tie point, its float neighbours, and a million random values in [−8, 8], against the
    // definition by distance.
    void roundingToNearestEvenEverywhere() {
        for (int i = 0; i < 7; ++i) {
            const float mid = static_cast<float>((k_grid[i] + k_grid[i + 1]) / 2);
            for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 10.0f)})
                for (float s : {v, -v}) QCOMPARE(core::e2m1_code(s), nearest_even_code(s));
        }
        QCOMPARE(core::e2m1_code(0.25f), 0u);  // ties: 0.25 → 0, 0.75 → 1, 1.25 → 1, 1.75 → 2,
        QCOMPARE(core::e2m1_code(0.75f), 2u);  //       2.5 → 2, 3.5 → 4, 5 → 4
        QCOMPARE(core::e2m1_code(1.25f), 2u);
        QCOMPARE(core::e2m1_code(1.75f), 4u);
        QCOMPARE(core::e2m1_code(2.5f), 4u);
        QCOMPARE(core::e2m1_code(3.5f), 6u);
        QCOMPARE(core::e2m1_code(5.0f), 6u);
        QCOMPARE(core::e2m1_code(std::nextafter(5.0f, 6.0f)), 7u);
        QCOMPARE(core::e2m1_code(1e30f), 7u);
        QCOMPARE(core::e2m1_code(-1e30f), 15u);
        QCOMPARE(core::e2m1_code(NAN), 0u);  // as TE's cast_to_fp4x2: NaN matches no threshold
        QCOMPARE(core::e2m1_code(-0.0f), 0u);  // −0.0 passes x >= 0 first
        QCOMPARE(core::e2m1_code(-0x1p-30f), 8u);  // a negative value that rounds to zero is −0
        Rng rng(3);
        for (int i = 0; i < 1000000; ++i) {
            const float v = static_cast<float>(16.0 * rng.uniform() - 8.0);
            QCOMPARE(core::e2m1_code(v), nearest_even_code(v));
        }
    }

    // NVFP4's scales at their edges: saturation at 448, E4M3 subnormal scales, a scale that rounds
    // to 0 (its elements encode with FLT_MAX and decode to 0), amax 0 and inf.
    void nvfp4ScaleEdges() {
        const core::Nvfp4Global g = core::nvfp4_global(6.0f);
        QCOMPARE(g.enc, 448.0f);
        QCOMPARE(g.dec, 1.0f / 448.0f);
        QCOMPARE(g.block_mult, 448.0f * (1.0f / 6.0f));
        QCOMPARE(core::nvfp4_block_scale(6.0f, g), 448.0f);    // the tensor's largest block: 448
        QCOMPARE(core::nvfp4_block_scale(1e30f, g), 448.0f);   // saturates, never NaN
        const float sub = core::nvfp4_block_scale(6.0f * 0x1p-9f / 448.0f * 448.0f / 448.0f, g);
        QCOMPARE(sub, 0x1p-9f);                                 // E4M3's smallest subnormal
        QCOMPARE(core::nvfp4_block_scale(1e-6f, g), 0.0f);      // below half of it: 0
        QCOMPARE(core::nvfp4_encode_scale(0.0f, g), FLT_MAX);   // 1/0 capped
        QCOMPARE(core::nvfp4_decode(core::e2m1_code(core::fp4_scaled(1e-6f, FLT_MAX)), 0.0f, g), 0.0f);
        QCOMPARE(core::nvfp4_global(0.0f).enc, FLT_MAX);        // 2688/0 = inf, capped
        QCOMPARE(core::nvfp4_global(INFINITY).enc, 1.0f);       // 2688/inf = 0 → 1
        QVERIFY(std::isnan(core::nvfp4_global(NAN).enc));
        QCOMPARE(core::nvfp4_global(2688.0f).enc, 1.0f);
    }

    // The four MXFP4 rules on every 61st positive float (about 35 million), against definitions
    // from frexp and round-to-even in double.
    void mxfp4RulesOnBruteForce() {
        using R = core::MxScaleRule;
        for (std::uint32_t b = 1; b < 0x7f800000u; b += 61) {
            const float v = from_bits(b);
            int ex = 0;
            const double m = std::frexp(static_cast<double>(v), &ex);  // v = m · 2^ex, m in [0.5, 1)
            const int fl = ex - 1;
            const int ce = m == 0.5 ? fl : fl + 1;
            const float d = v / 6.0f;
            int dex = 0;
            const double dm = std::frexp(static_cast<double>(d), &dex);
            const int rc = d == 0.0f ? -127 : (dm == 0.5 ? dex - 1 : dex);
            const double q = std::nearbyint(m * 4.0);  // 1.x in halves: 2, 3 or 4 (round half to even)
            const int ev = (q == 4.0 ? fl + 1 : fl) - 2;
            const auto clamp = [](int e) { return e < -127 ? -127 : e > 127 ? 127 : e; };
            if (core::mxfp4_exponent(v, R::floor) != clamp(fl - 2) || core::mxfp4_exponent(v, R::ceil) != clamp(ce - 2) ||
                core::mxfp4_exponent(v, R::rceil) != clamp(rc) || core::mxfp4_exponent(v, R::even) != clamp(ev))
                QFAIL(qPrintable(QString("vmax %1 (bits %2)").arg(static_cast<double>(v)).arg(b, 0, 16)));
        }
        QCOMPARE(core::mxfp4_exponent(0.0f, R::rceil), -127);
        QCOMPARE(core::mxfp4_exponent(INFINITY, R::floor), core::k_mx_nan_exponent);
        QCOMPARE(core::mxfp4_exponent(3.1f, R::floor), -1);  // the lost binade: 3.1 → 6.2 > 6 clamps
        QCOMPARE(core::mxfp4_exponent(3.1f, R::rceil), 0);   // 3.1/6 → 2^0: 3.1 maps to 3.1, ±4 and ±6 unused
        QCOMPARE(core::mx_scale_value(-127), 0x1p-127f);
    }

    // 2D tiles: the quantization of Xᵀ is the transpose of X's (the forward and backward copies of
    // a weight agree); with 1×16 blocks they do not.
    void twoDimensionalTilesTranspose() {
        const FloatMatrix x = matrix(48, 80, 5, 12.0);
        FloatMatrix xt{x.cols, x.rows, std::vector<float>(x.values.size())};
        for (int r = 0; r < x.rows; ++r)
            for (int c = 0; c < x.cols; ++c) xt.values[static_cast<std::size_t>(c) * x.rows + r] = x.values[static_cast<std::size_t>(r) * x.cols + c];
        for (bool two_d : {true, false}) {
            Fp4Options o;
            o.two_d = two_d;
            const Fp4Matrix a = quantize_fp4(x, o), b = quantize_fp4(xt, o);
            int differ = 0;
            for (int r = 0; r < x.rows; ++r)
                for (int c = 0; c < x.cols; ++c)
                    differ += bits(a.values[static_cast<std::size_t>(r) * x.cols + c]) !=
                              bits(b.values[static_cast<std::size_t>(c) * x.rows + r]);
            if (two_d) QCOMPARE(differ, 0);
            else QVERIFY2(differ > 100, qPrintable(QString::number(differ)));
        }
    }

    // Stochastic rounding: P(away) is the fractional distance, the mean error is within 3σ of 0 over
    // a million draws, and the bits are the same on 1, 2 and 3 threads.
    void stochasticRoundingIsUnbiasedAndThreadIndependent() {
        const float v = 2.3f;  // between 2 and 3: P(3) = 0.3 (to FP32's precision)
        const double f = (static_cast<double>(v) - 2.0) / 1.0;
        const std::uint64_t key = core::round_key(11, 0, 0);
        const int n = 1000000;
        long long up = 0;
        double sum_err = 0.0;
        for (int i = 0; i < n; ++i) {
            const std::uint32_t c = core::e2m1_code_stochastic(v, core::round_word(key, static_cast<std::uint64_t>(i)));
            QVERIFY(c == 4u || c == 5u);
            up += c == 5u;
            sum_err += core::e2m1_value(c) - static_cast<double>(v);
        }
        const double sigma = std::sqrt(f * (1.0 - f) / n);
        QVERIFY2(std::fabs(static_cast<double>(up) / n - f) < 3.0 * sigma, qPrintable(QString::number(static_cast<double>(up) / n)));
        QVERIFY2(std::fabs(sum_err / n) < 3.0 * sigma * 1.0, qPrintable(QString::number(sum_err / n)));
        QCOMPARE(core::e2m1_code_stochastic(3.0f, 0u), 5u);           // on the grid: never moves
        QCOMPARE(core::e2m1_code_stochastic(7.0f, 0u), 7u);           // beyond 6: saturates
        QCOMPARE(core::e2m1_code_stochastic(-2.5f, 0x7fffffffu), 13u);  // u < 2^31: away (−3)
        QCOMPARE(core::e2m1_code_stochastic(-2.5f, 0x80000000u), 12u);  // else toward zero (−2)
        const FloatMatrix x = matrix(64, 96, 9, 8.0);
        Fp4Options o;
        o.sr_seed = 42;
        std::vector<std::vector<float>> runs;
        for (unsigned t : {1u, 2u, 3u}) {
            set_thread_count(t);
            runs.push_back(quantize_fp4(x, o).values);
        }
        set_thread_count(0);
        QVERIFY(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(runs[0].data(), runs[2].data(), runs[0].size() * sizeof(float)) == 0);
        o.sr_seed.reset();
        QVERIFY(quantize_fp4(x, o).values != runs[0]);  // SR is not nearest rounding in disguise
    }

    void badOptionsAreRefused() {
        const FloatMatrix x = matrix(4, 32, 1, 2.0);
        Fp4Options o;
        o.kind = Fp4Kind::mxfp4;
        o.two_d = true;
        QVERIFY_THROWS_EXCEPTION(ConfigError, quantize_fp4(x, o));
        o.two_d = false;
        o.rht = true;
        QVERIFY_THROWS_EXCEPTION(ConfigError, quantize_fp4(x, o));
        QVERIFY_THROWS_EXCEPTION(ConfigError, quantize_fp4(FloatMatrix{}, Fp4Options{}));
    }

    // TE's RHT matrix is orthogonal up to its 1/4: T·Tᵀ = I (16 · 1/16), so a transformed block keeps
    // its sum of squares.
    void hadamardIsOrthogonal() {
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                double s = 0.0;
                for (int k = 0; k < 16; ++k) s += static_cast<double>(rht_entry(i, k)) * rht_entry(j, k);
                QCOMPARE(s, i == j ? 1.0 : 0.0);
            }
        QCOMPARE(rht_entry(0, 0), 0.25f);
        QCOMPARE(rht_entry(3, 0), -0.25f);  // s[3] = −1
        QCOMPARE(rht_entry(1, 1), -0.25f);  // H16[1][1] = −1
    }
};

QTEST_APPLESS_MAIN(TestFp4)
#include "test_fp4.moc"
