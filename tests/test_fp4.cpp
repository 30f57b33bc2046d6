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
#include "engine/precision/format.hpp"
#include "engine/precision/fp4_recipe.hpp"

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

namespace {

// A matrix of ordinary, heavy-tailed and edge values (ties, ±6 region, subnormals, zeros, −0.0).
std::vector<float> mixed_matrix(int rows, int cols, std::uint64_t seed, bool specials) {
    Rng rng(seed);
    std::vector<float> v(static_cast<std::size_t>(rows) * cols);
    for (std::size_t i = 0; i < v.size(); ++i) {
        const double u = rng.uniform();
        float x = static_cast<float>(rng.normal() * std::exp2(std::floor(rng.uniform() * 12.0) - 6.0));
        if (u < 0.05) x = 0.0f;
        else if (u < 0.07) x = -0.0f;
        else if (u < 0.09) x = from_bits(1u + static_cast<std::uint32_t>(rng.uniform() * 1000.0));
        else if (u < 0.10) x = static_cast<float>(rng.normal() * 1e6);
        v[i] = x;
    }
    if (specials && v.size() > 8) {
        v[3] = INFINITY;
        v[v.size() / 2] = -INFINITY;
    }
    return v;
}

void compare_tallies(const Fp4Tally& a, const Fp4Tally& b) {
    QCOMPARE(bits(a.amax), bits(b.amax));
    QCOMPARE(bits(a.s_enc), bits(b.s_enc));
    QCOMPARE(a.counts.overflow, b.counts.overflow);
    QCOMPARE(a.counts.underflow, b.counts.underflow);
    QCOMPARE(a.counts.nonzero, b.counts.nonzero);
    for (int k = 0; k < 8; ++k) QCOMPARE(a.record.codes[k], b.record.codes[k]);
    QCOMPARE(a.record.blocks, b.record.blocks);
    QCOMPARE(a.record.top6, b.record.top6);
    QCOMPARE(a.record.top4, b.record.top4);
}

}  // namespace

class TestFp4Training : public QObject {
    Q_OBJECT
private slots:
    // Training's casts take a vectorised path (no codes asked for, no stochastic rounding); asking
    // for the codes takes the element-by-element path quantize uses, which the numpy oracle checks.
    // Both must give the same bits and the same tallies, on every layout training uses.
    void fastPathEqualsElementPath() {
        struct Case {
            Fp4Kind kind;
            bool two_d, four_over_six;
            MxAxis axis;
            core::MxScaleRule rule;
        };
        const Case cases[] = {
            {Fp4Kind::nvfp4, false, false, MxAxis::rows, core::MxScaleRule::rceil},
            {Fp4Kind::nvfp4, false, false, MxAxis::cols, core::MxScaleRule::rceil},
            {Fp4Kind::nvfp4, true, false, MxAxis::rows, core::MxScaleRule::rceil},
            {Fp4Kind::nvfp4, true, false, MxAxis::cols, core::MxScaleRule::rceil},
            {Fp4Kind::nvfp4, false, true, MxAxis::rows, core::MxScaleRule::rceil},
            {Fp4Kind::mxfp4, false, false, MxAxis::rows, core::MxScaleRule::floor},
            {Fp4Kind::mxfp4, false, false, MxAxis::cols, core::MxScaleRule::rceil},
            {Fp4Kind::mxfp4, false, false, MxAxis::rows, core::MxScaleRule::even},
        };
        int checked = 0;
        for (const Case& k : cases)
            for (const auto& [rows, cols] : {std::pair{37, 53}, std::pair{64, 128}, std::pair{5, 3}})
                for (bool specials : {false, true}) {
                    const auto x = mixed_matrix(rows, cols, 100 + checked, specials);
                    Fp4Cast c;
                    c.kind = k.kind;
                    c.two_d = k.two_d;
                    c.four_over_six = k.four_over_six;
                    c.mx_rule = k.rule;
                    std::vector<float> fast = x, slow = x;
                    std::vector<std::uint8_t> codes(x.size());
                    const Fp4Tally tf = fp4_cast_in_place(fast.data(), rows, cols, k.axis, c);
                    const Fp4Tally ts = fp4_cast_in_place(slow.data(), rows, cols, k.axis, c, {codes.data(), nullptr});
                    for (std::size_t i = 0; i < x.size(); ++i)
                        if (bits(fast[i]) != bits(slow[i]))
                            QFAIL(qPrintable(QString("element %1 of case %2: fast %3, element path %4 (input %5)")
                                                 .arg(i).arg(checked).arg(fast[i]).arg(slow[i]).arg(x[i])));
                    compare_tallies(tf, ts);
                    ++checked;
                }
        QCOMPARE(checked, 48);
    }

    // Blocks down columns are the transpose's blocks along rows, bit for bit (the Wgrad copies).
    void columnBlocksAreTheTransposesRowBlocks() {
        const int rows = 48, cols = 20;
        const auto x = mixed_matrix(rows, cols, 7, false);
        std::vector<float> t(x.size());
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) t[static_cast<std::size_t>(c) * rows + r] = x[static_cast<std::size_t>(r) * cols + c];
        for (Fp4Kind kind : {Fp4Kind::nvfp4, Fp4Kind::mxfp4}) {
            Fp4Cast c;
            c.kind = kind;
            std::vector<float> a = x, b = t;
            fp4_cast_in_place(a.data(), rows, cols, MxAxis::cols, c);
            fp4_cast_in_place(b.data(), cols, rows, MxAxis::rows, c);
            for (int r = 0; r < rows; ++r)
                for (int col = 0; col < cols; ++col)
                    QCOMPARE(bits(a[static_cast<std::size_t>(r) * cols + col]), bits(b[static_cast<std::size_t>(col) * rows + r]));
        }
    }

    // The Hadamard transform preserves the Wgrad product: (Tᵀ dy)ᵀ (Tᵀ x) = dyᵀ x (T orthogonal), so
    // the transform changes only what the quantization sees.
    void hadamardKeepsTheProduct() {
        const int B = 32, out = 5, in = 7;
        auto dy = mixed_matrix(B, out, 11, false), x = mixed_matrix(B, in, 12, false);
        for (float& v : dy) v = std::isfinite(v) && std::fabs(v) < 1e3f ? v : 1.0f;
        for (float& v : x) v = std::isfinite(v) && std::fabs(v) < 1e3f ? v : 1.0f;
        auto tdy = dy, tx = x;
        rht_in_place(tdy.data(), B, out, MxAxis::cols);
        rht_in_place(tx.data(), B, in, MxAxis::cols);
        for (int o = 0; o < out; ++o)
            for (int i = 0; i < in; ++i) {
                double plain = 0.0, transformed = 0.0, size = 0.0;
                for (int b = 0; b < B; ++b) {
                    plain += double(dy[b * out + o]) * x[b * in + i];
                    transformed += double(tdy[b * out + o]) * tx[b * in + i];
                    size += std::fabs(double(dy[b * out + o]) * x[b * in + i]);
                }
                QVERIFY2(std::fabs(plain - transformed) <= 1e-5 * size + 1e-30,
                         qPrintable(QString("(%1,%2): %3 vs %4").arg(o).arg(i).arg(plain).arg(transformed)));
            }
    }

    // 4over6: the global scale from 256 · 6 / amax; per block the scale mapping its amax to 4 where
    // that errs less (by MSE or MAE) than the one mapping it to 6, each block checked against both
    // candidates built here from the core's single-value functions.
    void fourOverSixKeepsTheBetterScalePerBlock() {
        for (Fp4Metric metric : {Fp4Metric::mse, Fp4Metric::mae}) {
            const int rows = 200, cols = 16;
            auto x = mixed_matrix(rows, cols, 31, false);
            float amax = 0.0f;
            for (float v : x) amax = std::max(amax, std::fabs(v));
            Fp4Cast c;
            c.four_over_six = true;
            c.metric = metric;
            std::vector<float> q = x;
            const Fp4Tally t = fp4_cast_in_place(q.data(), rows, cols, MxAxis::rows, c);
            const core::Nvfp4Global g = core::nvfp4_global(amax, 256.0f);
            QCOMPARE(bits(t.s_enc), bits(g.enc));
            QCOMPARE(bits(g.enc), bits(1536.0f / amax));
            int chose4 = 0, chose6 = 0;
            for (int r = 0; r < rows; ++r) {
                float vmax = 0.0f;
                for (int k = 0; k < cols; ++k) vmax = std::max(vmax, std::fabs(x[r * cols + k]));
                double err[2] = {0.0, 0.0};
                std::vector<float> cand[2];
                const float mult[2] = {g.enc * (1.0f / 6.0f), g.enc * 0.25f};
                for (int w = 0; w < 2; ++w) {
                    const float d = std::min(vmax * mult[w], 448.0f);
                    const float scale = decode(Format::e4m3, encode(Format::e4m3, d, Overflow::saturate));
                    const float factor = core::nvfp4_encode_scale(scale, g);
                    for (int k = 0; k < cols; ++k) {
                        const float xv = x[r * cols + k];
                        const float v = core::nvfp4_decode(core::e2m1_code(core::fp4_scaled(xv, factor)), scale, g);
                        cand[w].push_back(v);
                        const double e = double(v) - xv;
                        err[w] += metric == Fp4Metric::mse ? e * e : std::fabs(e);
                    }
                }
                const int pick = err[1] < err[0] ? 1 : 0;
                (pick ? chose4 : chose6)++;
                for (int k = 0; k < cols; ++k) QCOMPARE(bits(q[r * cols + k]), bits(cand[pick][k]));
            }
            qInfo("%s: %d blocks mapped to 4, %d to 6", metric == Fp4Metric::mse ? "mse" : "mae", chose4, chose6);
            QVERIFY(chose4 > 10 && chose6 > 10);  // both choices happen: the test checks a choice
        }
    }

    // The recipe: which cast each operand of each GEMM takes (TE's NVFP4BlockScaling).
    void recipeCasts() {
        Fp4Gemm g;
        g.recipe = Fp4Config{};
        QVERIFY(g.cast(Fp8Tensor::w, false).two_d);
        QVERIFY(g.cast(Fp8Tensor::w, true).two_d);
        QVERIFY(!g.cast(Fp8Tensor::x, false).two_d);
        QVERIFY(!g.cast(Fp8Tensor::x, true).sr_key);
        QVERIFY(g.cast(Fp8Tensor::dy, false).sr_key);
        QVERIFY(g.cast(Fp8Tensor::dy, true).sr_key);
        QVERIFY(*g.cast(Fp8Tensor::dy, false).sr_key != *g.cast(Fp8Tensor::dy, true).sr_key);
        QVERIFY(g.rht(Fp8Tensor::x, true) && g.rht(Fp8Tensor::dy, true));
        QVERIFY(!g.rht(Fp8Tensor::x, false) && !g.rht(Fp8Tensor::dy, false) && !g.rht(Fp8Tensor::w, true));
        Fp4Overrides o;
        QVERIFY(parse_fp4_switch("no-sr", Fp4Kind::nvfp4, o, "nvfp4+no-sr", "runs"));
        QVERIFY(parse_fp4_switch("bf16-last-2", Fp4Kind::nvfp4, o, "x", "runs"));
        QVERIFY(!parse_fp4_switch("pytorch", Fp4Kind::nvfp4, o, "x", "runs"));
        QCOMPARE(fp4_switch_suffix(o), std::string("+no-sr+bf16-last-2"));
        g.recipe = resolve_fp4(Fp4Kind::nvfp4, Fp4Config{}, o);
        QVERIFY(!g.cast(Fp8Tensor::dy, false).sr_key);
        QCOMPARE(g.recipe.bf16_last, 2);
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_fp4_switch("no-rht", Fp4Kind::mxfp4, o, "mxfp4+no-rht", "runs"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_fp4_switch("floor", Fp4Kind::nvfp4, o, "nvfp4+floor", "runs"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_fp4_switch("bf16-last-x", Fp4Kind::nvfp4, o, "x", "runs"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_fp4_switch("sr", Fp4Kind::nvfp4, o, "x", "runs"));  // twice
        const Fp4Config mx = resolve_fp4(Fp4Kind::mxfp4, Fp4Config{}, {});
        QVERIFY(!mx.rht && !mx.sr && !mx.weights_2d && !mx.four_over_six);
    }
};

int main(int argc, char** argv) {
    int status = 0;
    {
        TestFp4 t;
        status |= QTest::qExec(&t, argc, argv);
    }
    {
        TestFp4Training t;
        status |= QTest::qExec(&t, argc, argv);
    }
    return status;
}
#include "test_fp4.moc"
