// Accumulation models in training (engine/config/accumulate_config.hpp): each GEMM kind of a layer
// runs under its own model, the plans give Transformer Engine's and torchao's per-GEMM choices, the
// defaults train exactly as before, bad settings are refused naming the field, and a run under a
// model gives the same bits on any thread count.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/compute/backend.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "engine/core/accumulate.hpp"
#include "engine/core/rng.hpp"
#include "engine/precision/accumulation.hpp"
#include "engine/precision/format.hpp"
#include "engine/precision/fp8_snippet.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

std::uint32_t bits(float x) { return core::bits_of(x); }

// rows × cols of uniform values in [-1, 1), already rounded to `f` (so the backend's cast to `f` is
// exact and the reference below reads the same operands).
std::vector<float> operand_values(Rng& rng, int rows, int cols, Format f) {
    std::vector<float> v(static_cast<std::size_t>(rows) * cols);
    for (float& x : v) x = static_cast<float>(2.0 * rng.uniform() - 1.0);
    round_in_place(f, v);
    return v;
}

AccumulateParams params(AccumulateModel m, int bits = 14, int promote_every = 128) {
    AccumulateParams p;
    p.model = m;
    p.bits = bits;
    p.promote_every = promote_every;
    return p;
}

template <class F>
void expect_config_error(const QString& what, const std::string& field, F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        QVERIFY2(e.field() == field, qPrintable(what + ": field '" + QString::fromStdString(e.field()) + "', expected '" +
                                                QString::fromStdString(field) + "'"));
        return;
    }
    QFAIL(qPrintable(what + ": no ConfigError"));
}

}  // namespace

class TestAccumulationTraining : public QObject {
    Q_OBJECT
private slots:
    // A layer's three GEMMs on the CPU backend, each under its own model, element for element
    // equal to core::accumulate_dot over the same operands in k order (the bias added afterwards,
    // rounded to the compute format as autocast casts it: core::bias_format): the backend reads the layer's models, not one for all.
    void eachGemmKindRunsUnderItsModel() {
        auto be = make_cpu_backend();
        const int B = 300, in = 200, out = 150;  // K = 200 (fprop), 150 (dgrad), 300 (wgrad)
        const Format f = Format::bf16;
        Rng rng(7);
        const auto xv = operand_values(rng, B, in, f), wv = operand_values(rng, out, in, f),
                   bv = operand_values(rng, 1, out, Format::fp32), dyv = operand_values(rng, B, out, f);
        Tensor x = be->alloc(Format::fp32, B, in, MemCategory::activations);
        Tensor w = be->alloc(Format::fp32, out, in, MemCategory::weights);
        Tensor b = be->alloc(Format::fp32, 1, out, MemCategory::weights);
        Tensor dy = be->alloc(Format::fp32, B, out, MemCategory::grads);
        Tensor y = be->alloc(Format::fp32, B, out, MemCategory::activations);
        Tensor dx = be->alloc(Format::fp32, B, in, MemCategory::grads);
        Tensor dw = be->alloc(Format::fp32, out, in, MemCategory::grads);
        Tensor db = be->alloc(Format::fp32, 1, out, MemCategory::grads);
        be->upload(xv, x), be->upload(wv, w), be->upload(bv, b), be->upload(dyv, dy);
        GemmAccumulation acc{params(AccumulateModel::fp8_fast), params(AccumulateModel::bits, 10),
                             params(AccumulateModel::promote, 14, 64)};
        be->begin_step();
        be->set_uncounted();
        be->set_accumulation(&acc);
        be->linear_forward(x, w, &b, f, y);
        be->linear_backward(dy, x, w, f, Format::fp32, dw, &db, Accumulate::overwrite, &dx);
        be->set_accumulation(nullptr);
        std::vector<float> yv(y.size()), dxv(dx.size()), dwv(dw.size());
        be->download(y, yv), be->download(dx, dxv), be->download(dw, dwv);
        const auto at = [](const std::vector<float>& m, int cols) {
            return [&m, cols](int r, int c) { return m[static_cast<std::size_t>(r) * cols + c]; };
        };
        const auto X = at(xv, in), W = at(wv, in), DY = at(dyv, out);
        int checked = 0, differs_from_fp32 = 0;
        for (int i = 0; i < B; i += 7)
            for (int j = 0; j < out; j += 5) {
                const float dot = core::accumulate_dot(acc.fprop, in, [&](int k) { return X(i, k); },
                                                       [&](int k) { return W(j, k); });
                const float want = dot + core::round_value(core::bias_format(f), bv[static_cast<std::size_t>(j)]);
                QCOMPARE(bits(yv[static_cast<std::size_t>(i) * out + j]), bits(want));
                double exact = 0.0;
                for (int k = 0; k < in; ++k) exact += static_cast<double>(X(i, k)) * W(j, k);
                differs_from_fp32 += static_cast<float>(exact) != dot;
                ++checked;
            }
        // The model is not FP32 accumulation in disguise: most elements lose bits under it.
        QVERIFY2(differs_from_fp32 > checked / 2, qPrintable(QString("%1 of %2").arg(differs_from_fp32).arg(checked)));
        for (int i = 0; i < B; i += 11)
            for (int j = 0; j < in; j += 3) {
                // dx as a BF16 GEMM writes it (core::gemm_output_format), then stored in dx's FP32.
                const float want = core::round_value(core::gemm_output_format(f),
                                                     core::accumulate_dot(acc.dgrad, out, [&](int k) { return DY(i, k); },
                                                                          [&](int k) { return W(k, j); }));
                QCOMPARE(bits(dxv[static_cast<std::size_t>(i) * in + j]), bits(want));
            }
        for (int i = 0; i < out; i += 3)
            for (int j = 0; j < in; j += 7) {
                const float want = core::accumulate_dot(acc.wgrad, B, [&](int k) { return DY(k, i); },
                                                        [&](int k) { return X(k, j); });
                QCOMPARE(bits(dwv[static_cast<std::size_t>(i) * in + j]), bits(want));
            }
    }

    // The plans, as REFERENCE.md states the frameworks' defaults (and their code does: see
    // accumulate_config.cpp), with the section's bits and promote_every in every model.
    void plansGiveTheFrameworksChoices() {
        using M = AccumulateModel;
        AccumulateConfig c;
        c.bits = 13;
        c.promote_every = 64;
        const auto models = [&](AccumulatePlan p, bool block) {
            const GemmAccumulation g = gemm_accumulation(p, c, block);
            // The fourth entry: exact where every model carries the section's bits and N_C, bits where not.
            const bool carried = g.fprop.bits == 13 && g.dgrad.bits == 13 && g.wgrad.promote_every == 64;
            return std::vector<M>{g.fprop.model, g.dgrad.model, g.wgrad.model, carried ? M::exact : M::bits};
        };
        QCOMPARE(models(AccumulatePlan::te, false), (std::vector<M>{M::fp8_fast, M::promote, M::promote, M::exact}));
        QCOMPARE(models(AccumulatePlan::te, true), (std::vector<M>{M::promote, M::promote, M::promote, M::exact}));
        QCOMPARE(models(AccumulatePlan::torchao, false), (std::vector<M>{M::fp8_fast, M::promote, M::promote, M::exact}));
        QCOMPARE(models(AccumulatePlan::fast, true), (std::vector<M>{M::fp8_fast, M::fp8_fast, M::fp8_fast, M::exact}));
        QCOMPARE(models(AccumulatePlan::exact, false), (std::vector<M>{M::exact, M::exact, M::exact, M::exact}));
        c.wgrad = M::bits;
        QCOMPARE(models(AccumulatePlan::custom, false), (std::vector<M>{M::exact, M::exact, M::bits, M::exact}));
    }

    // Labels: a plan named on a run, the section's plan reaching FP8 runs only, the canonical label
    // naming the plan wherever a GEMM is not exact, and mxfp8 under te promoting all three.
    void labelsAndTheSectionResolve() {
        SessionConfig c = small_config({"fp8-hybrid", "fp8-e4m3+acc-fast", "amp-bf16", "mxfp8+acc-te"}, 1);
        c.accumulate.plan = AccumulatePlan::te;
        validate(c);
        const RunInfo hybrid = resolve_run("fp8-hybrid", c), e4m3 = resolve_run("fp8-e4m3+acc-fast", c),
                      amp = resolve_run("amp-bf16", c), mx = resolve_run("mxfp8+acc-te", c);
        QCOMPARE(hybrid.label, std::string("fp8-hybrid+acc-te"));
        QCOMPARE(hybrid.accumulation.fprop.model, AccumulateModel::fp8_fast);
        QCOMPARE(hybrid.accumulation.wgrad.model, AccumulateModel::promote);
        QCOMPARE(e4m3.label, std::string("fp8-e4m3+acc-fast"));
        QCOMPARE(e4m3.accumulation.wgrad.model, AccumulateModel::fp8_fast);
        QCOMPARE(amp.label, std::string("amp-bf16"));  // a what-if only where the label asks
        QVERIFY(amp.accumulation.all_exact());
        QCOMPARE(mx.accumulation.fprop.model, AccumulateModel::promote);
        // acc-exact is the plain run: the same label, so naming both is a duplicate.
        SessionConfig dup = small_config({"fp8-e4m3", "fp8-e4m3+acc-exact"}, 1);
        expect_config_error("plain and acc-exact", "runs", [&] { validate(dup); });
        // The defaults write no section: presets and sidecars read as before.
        QVERIFY(!to_json(small_config({"fp8-e4m3"}, 1)).contains("accumulate"));
        QVERIFY(to_json(c).contains("accumulate"));
        QCOMPARE(session_config_from_json(to_json(c)).accumulate, c.accumulate);
    }

    // The snippet names each GEMM's switch as the run's models set it: TE's MMParams under current
    // scaling, torchao's use_fast_accum, and says where a recipe has no such setting.
    void snippetNamesTheSplitAccumulator() {
        SessionConfig c = small_config({"fp8-hybrid+current+acc-te", "fp8-e4m3+acc-fast"}, 1);
        const RunInfo te = resolve_run(c.runs[0], c), fast = resolve_run(c.runs[1], c);
        const QString s = QString::fromStdString(fp8_recipe_snippet(c.fp8, te.spec.mode, te.spec.fp8_recipe, te.accumulation));
        QVERIFY2(s.contains("fp8_gemm_fprop=MMParams(use_split_accumulator=False)"), qPrintable(s));
        QVERIFY(s.contains("fp8_gemm_dgrad=MMParams(use_split_accumulator=True)"));
        QVERIFY(s.contains("fp8_gemm_wgrad=MMParams(use_split_accumulator=True)"));
        QVERIFY(s.contains("gemm_config_output=Float8GemmConfig(use_fast_accum=True)"));
        QVERIFY(s.contains("gemm_config_grad_weight=Float8GemmConfig(use_fast_accum=False)"));
        const QString d = QString::fromStdString(
            fp8_recipe_snippet(c.fp8, fast.spec.mode, fast.spec.fp8_recipe, fast.accumulation));
        QVERIFY2(d.contains("DelayedScaling has no per-GEMM accumulation setting"), qPrintable(d));
        QVERIFY(d.contains("gemm_config_grad_weight=Float8GemmConfig(use_fast_accum=True)"));
        QVERIFY(!d.contains("MMParams("));
        // Exact accumulation adds nothing to the recipe.
        const QString plain = QString::fromStdString(fp8_recipe_snippet(c.fp8, Mode::fp8_hybrid, Fp8Recipe::current));
        QVERIFY(!plain.contains("MMParams") && !plain.contains("torchao"));
    }

    void badSettingsAreRefusedNamingTheField() {
        const auto with = [](std::vector<std::string> runs, std::vector<std::string> sets) {
            SessionConfig c = small_config(std::move(runs), 1);
            apply_overrides(c, sets);
        };
        expect_config_error("fp32 run", "runs", [&] { with({"fp32+acc-fast"}, {}); });
        expect_config_error("tf32 run", "runs", [&] { with({"tf32+acc-te"}, {}); });
        expect_config_error("unknown plan", "runs", [&] { with({"fp8-e4m3+acc-slow"}, {}); });
        expect_config_error("two plans", "runs", [&] { with({"fp8-e4m3+acc-fast+acc-te"}, {}); });
        expect_config_error("bits 0", "accumulate.bits", [&] { with({"fp8-e4m3"}, {"accumulate.bits=0"}); });
        expect_config_error("bits 25", "accumulate.bits", [&] { with({"fp8-e4m3"}, {"accumulate.bits=25"}); });
        expect_config_error("N_C 0", "accumulate.promote_every",
                            [&] { with({"fp8-e4m3"}, {"accumulate.promote_every=0"}); });
        expect_config_error("group 65", "accumulate.group", [&] { with({"fp8-e4m3"}, {"accumulate.group=65"}); });
        expect_config_error("unknown model", "accumulate.wgrad",
                            [&] { with({"fp8-e4m3"}, {"accumulate.wgrad=fastest"}); });
        expect_config_error("a model the plan overrides", "accumulate.fprop",
                            [&] { with({"fp8-e4m3"}, {"accumulate.plan=te", "accumulate.fprop=bits"}); });
        expect_config_error("reaches no run", "accumulate.plan",
                            [&] { with({"fp32", "amp-bf16"}, {"accumulate.plan=te"}); });
        // A parameter reaches a run only where its run's models read it (issue 41, class 8).
        expect_config_error("bits under the exact plan", "accumulate.bits",
                            [&] { with({"fp8-e4m3"}, {"accumulate.bits=3"}); });
        expect_config_error("group under bits", "accumulate.group",
                            [&] { with({"amp-bf16+acc-custom"}, {"accumulate.fprop=bits", "accumulate.group=8"}); });
        expect_config_error("promote_every under fp8-fast", "accumulate.promote_every",
                            [&] { with({"fp8-e4m3+acc-fast"}, {"accumulate.promote_every=32"}); });
        // ... and the same settings where they reach a run are taken.
        with({"amp-bf16+acc-custom"}, {"accumulate.wgrad=bits", "accumulate.bits=20"});
        with({"fp8-e4m3"}, {"accumulate.plan=torchao", "accumulate.promote_every=32"});
        with({"fp8-hybrid+acc-fast"}, {"accumulate.bits=3"});
        with({"fp8-e4m3+acc-fast"}, {"accumulate.group=8"});
    }

    // Exact accumulation is the default and trains bit for bit as before; a model changes the
    // run, and gives the same bits on one thread and on two.
    void defaultsUnchangedAndModelsThreadIndependent() {
        const auto run = [](std::vector<std::string> runs, unsigned threads) {
            set_thread_count(threads);
            SessionConfig c = small_config(std::move(runs), 12);
            c.train.batch = 256;  // wgrad reduces over 256 rows: past one promotion window of 128
            Session s(c);
            return train(s, 12);
        };
        const auto plain = run({"fp8-hybrid", "amp-bf16"}, 2);
        const auto named = run({"fp8-hybrid+acc-exact", "amp-bf16+acc-exact"}, 2);
        QCOMPARE(differs(plain, named), QString());
        const auto fast1 = run({"fp8-hybrid+acc-fast", "fp8-hybrid+acc-te", "amp-bf16+acc-fast"}, 1);
        const auto fast2 = run({"fp8-hybrid+acc-fast", "fp8-hybrid+acc-te", "amp-bf16+acc-fast"}, 2);
        set_thread_count(0);
        QCOMPARE(differs(fast1, fast2), QString());
        const StepRecord& exact = plain.back()[0];
        const StepRecord &fast = fast1.back()[0], &te = fast1.back()[1];
        QVERIFY(!same_bits(exact.loss, fast.loss));
        QVERIFY(!same_bits(fast.loss, te.loss));  // wgrad promoted every 128 of 256: not all-fast
        QVERIFY(!same_bits(plain.back()[1].loss, fast1.back()[2].loss));
    }

    // What the `accumulation` lesson says of the lab, checked: its figures at K = 4096 (E4M3, seed 1,
    // the lab's and gemm-error's default 64 x 64, and 32 x 32).
    void lessonClaimsHold() {
        for (int size : {32, 64}) {
            const RelativeError fast = gemm_error_at(1, size, size, 4096, Format::e4m3, params(AccumulateModel::fp8_fast));
            const RelativeError promoted = gemm_error_at(1, size, size, 4096, Format::e4m3, params(AccumulateModel::promote));
            const RelativeError at64 = gemm_error_at(1, size, size, 64, Format::e4m3, params(AccumulateModel::fp8_fast));
            QVERIFY2(fast.max > 0.002 && fast.max < 0.004, qPrintable(QString::number(fast.max)));  // "about 0.3 %"
            QVERIFY(at64.max < fast.max / 4);                                                        // "grows with K"
            QVERIFY2(promoted.max * 10 < fast.max, qPrintable(QString::number(promoted.max)));      // "more than tenfold"
        }
        // The runs' claims (100 % accuracy, within a factor of two) are the preset's declared claims,
        // trained and checked by tests/test_lesson_claims.cpp.
        const SessionConfig c = load_config("accumulation");
        QCOMPARE(c.train.batch, 1024);  // "adds up the 1024 rows of each batch"
        QVERIFY(!c.claims.empty());
    }
};

QTEST_APPLESS_MAIN(TestAccumulationTraining)
#include "test_accumulation_training.moc"
