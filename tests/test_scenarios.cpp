// The five teaching scenarios (resources/presets) show the effect they are shipped to show. Each
// threshold sits well inside what was measured on the shipped preset (figures in the comments), so
// the test fails when the effect disappears, not when a digit moves.
#include <QtTest>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/compute/site_names.hpp"
#include "engine/run/session.hpp"

using namespace mpx;

namespace {

struct RunTrace {
    std::vector<StepRecord> recs;
    double tail_loss() const {  // mean loss over the last tenth of the steps
        const std::size_t n = std::max<std::size_t>(1, recs.size() / 10);
        double s = 0.0;
        for (std::size_t i = recs.size() - n; i < recs.size(); ++i) s += recs[i].loss;
        return s / static_cast<double>(n);
    }
    template <typename F>
    double mean(F f, bool applied_only = false) const {
        double s = 0.0;
        int n = 0;
        for (const auto& r : recs) {
            if (applied_only && r.skipped) continue;
            s += f(r);
            ++n;
        }
        return n ? s / n : 0.0;
    }
    int count_event(ScaleEvent e) const {
        int n = 0;
        for (const auto& r : recs) n += r.scale_event == static_cast<std::uint8_t>(e);
        return n;
    }
};

std::map<std::string, RunTrace> run_config(const SessionConfig& config) {
    Session s(config);
    std::map<std::string, RunTrace> out;
    while (!s.finished())
        for (const StepRecord& r : s.step()) out[s.run(static_cast<std::size_t>(r.run)).info().label].recs.push_back(r);
    return out;
}

std::map<std::string, RunTrace> run_preset(const char* name) { return run_config(load_config(name)); }

}  // namespace

class TestScenarios : public QObject {
    Q_OBJECT
private slots:
    void underflow_flushes_unscaled_fp16() {
        auto t = run_preset("underflow");
        QCOMPARE(t.size(), std::size_t{3});
        const RunTrace &fp32 = t.at("fp32"), &none = t.at("amp-fp16+none"), &scaled = t.at("amp-fp16+pytorch");
        const double uf = none.mean([](const StepRecord& r) { return r.underflow_frac; });
        // Measured: 0.63 of the non-zero gradient values flushed on average (0.96 at step 0).
        QVERIFY2(uf > 0.4, qPrintable(QString("unscaled underflow_frac %1").arg(uf)));
        // Measured: the scaled run flushes about 0.05.
        QVERIFY(scaled.mean([](const StepRecord& r) { return r.underflow_frac; }) < 0.15);
        QCOMPARE(fp32.mean([](const StepRecord& r) { return r.underflow_frac; }), 0.0);
        // Measured tail losses: FP32 1.28e-8, unscaled 7.05e-7 (55×), scaled 1.27e-8 (0.3 % off).
        QVERIFY2(none.tail_loss() > 10.0 * fp32.tail_loss(), "unscaled FP16 should end clearly worse");
        QVERIFY2(std::fabs(scaled.tail_loss() / fp32.tail_loss() - 1.0) < 0.05,
                 qPrintable(QString("scaled %1 vs fp32 %2").arg(scaled.tail_loss()).arg(fp32.tail_loss())));
    }

    void lost_updates_stall_pure_fp16() {
        auto t = run_preset("lost-updates");
        const RunTrace &fp32 = t.at("fp32"), &amp = t.at("amp-fp16+pytorch"), &pure = t.at("pure-fp16");
        const auto lost_of = [](const RunTrace& r) {
            return r.mean([](const StepRecord& rec) { return rec.lost_update_frac; }, true);
        };
        // Measured: pure-fp16 loses 0.90 of the updates its optimizer computed. FP32 weights (fp32,
        // and amp's) lose 0.086: late in training many SGD updates fall below half an FP32 ulp.
        QVERIFY2(lost_of(pure) > 0.5, qPrintable(QString("pure lost_update_frac %1").arg(lost_of(pure))));
        QVERIFY(lost_of(pure) > 5.0 * lost_of(fp32));
        QVERIFY(std::fabs(lost_of(amp) - lost_of(fp32)) < 0.02);  // amp keeps FP32 weights
        // Measured tail losses: FP32 0.00139, amp 0.00139, pure 0.00886 (6.4×).
        QVERIFY(pure.tail_loss() > 3.0 * fp32.tail_loss());
        QVERIFY(std::fabs(amp.tail_loss() / fp32.tail_loss() - 1.0) < 0.05);
        // The held-out split says the same after the last step: measured FP32 0.00126, amp 0.00126,
        // pure 0.00858 (6.8×).
        QVERIFY(fp32.recs.back().eval_loss && amp.recs.back().eval_loss && pure.recs.back().eval_loss);
        const double held_out = *fp32.recs.back().eval_loss;
        QVERIFY(*pure.recs.back().eval_loss > 3.0 * held_out);
        QVERIFY(std::fabs(*amp.recs.back().eval_loss / held_out - 1.0) < 0.05);
    }

    void bf16_tracks_fp32_without_scaler() {
        auto t = run_preset("bf16-no-scaler");
        const RunTrace &fp32 = t.at("fp32"), &bf16 = t.at("amp-bf16");
        for (const auto& r : bf16.recs) {
            QCOMPARE(r.loss_scale, 1.0);
            QVERIFY(!r.skipped);
        }
        // Measured: tail 0.0194 vs FP32 0.0188 (3 %); the issue asks for 10 %.
        QVERIFY2(std::fabs(bf16.tail_loss() / fp32.tail_loss() - 1.0) < 0.10,
                 qPrintable(QString("bf16 %1 vs fp32 %2").arg(bf16.tail_loss()).arg(fp32.tail_loss())));
        QVERIFY(bf16.tail_loss() < 0.1 * bf16.recs.front().loss);  // it really trained
    }

    void overflow_storm_halves_per_skip() {
        auto t = run_preset("overflow-storm");
        const RunTrace& amp = t.at("amp-fp16+pytorch");
        const double init = 16777216.0;  // 2^24
        int k = 0;
        while (k < static_cast<int>(amp.recs.size()) && amp.recs[static_cast<std::size_t>(k)].skipped) {
            const StepRecord& r = amp.recs[static_cast<std::size_t>(k)];
            QVERIFY(r.found_inf);
            QCOMPARE(r.scale_event, static_cast<std::uint8_t>(ScaleEvent::backoff));
            QCOMPARE(r.loss_scale, init / std::ldexp(1.0, k));
            ++k;
        }
        // Measured: 3 consecutive skips from step 0, then the scale (2^21) fits.
        QVERIFY2(k >= 2, qPrintable(QString("only %1 skips at the start").arg(k)));
        QCOMPARE(amp.recs[static_cast<std::size_t>(k)].loss_scale, init / std::ldexp(1.0, k));
        QVERIFY(!amp.recs[static_cast<std::size_t>(k)].skipped);
        for (const auto& r : t.at("fp32").recs) QVERIFY(!r.skipped);
        // Where: every step with inf/NaN names the first tensor that stored one, never a clean step.
        // Measured: the output layer's weight gradient (dyᵀ·x summed over the batch, written
        // through FP16) on the opening skips, 4 of 5 in all; once fc1's.
        for (std::size_t i = 0; i < amp.recs.size(); ++i) {
            const StepRecord& r = amp.recs[i];
            QCOMPARE(r.found_inf, r.first_nonfinite >= 0);
            if (!r.found_inf) continue;
            const std::string where = site_name(r.first_nonfinite);
            if (i < static_cast<std::size_t>(k)) QCOMPARE(where, std::string("fc3.grad_weight"));
            else QVERIFY2(where.find(".grad_") != std::string::npos, where.c_str());
        }
        for (const auto& r : t.at("fp32").recs) QCOMPARE(r.first_nonfinite, std::int16_t(-1));
    }

    // The first non-finite value moves with its cause: inputs too large for FP16 already overflow
    // in autocast's cast of fc1's operands (1e5 > 65504); inputs that fit reach the gradients first.
    void first_nonfinite_names_where_an_overflow_starts_data() {
        QTest::addColumn<double>("input_scale");
        QTest::addColumn<QString>("where");
        QTest::newRow("inputs_past_fp16_max") << 1e5 << "fc1.operand";
        QTest::newRow("inputs_that_fit") << 6e4 << "fc3.grad_weight";
    }
    void first_nonfinite_names_where_an_overflow_starts() {
        QFETCH(double, input_scale);
        QFETCH(QString, where);
        SessionConfig c = load_config("default");
        c.runs = {"amp-fp16"};
        c.steps = 2;
        c.data.input_scale = input_scale;
        const auto t = run_config(c);
        for (const auto& r : t.begin()->second.recs) {
            QVERIFY(r.found_inf);
            QCOMPARE(QString::fromStdString(site_name(r.first_nonfinite)), where);
        }
    }

    // Issue 13: overflow-storm from 2^24 with a 25-step window, under both DeepSpeed rules. They see
    // the same overflows (the last at step 5) and scales until DeepSpeed <= 0.17.0 grows after 25
    // clean steps (step 30); >= 0.17.1 grows one step later. Replaying 600 steps of these runs
    // through DeepSpeed's own update_scale (0.17.0 and 0.19.5) agreed at every step.
    void deepspeed_rules_part_one_step_after_the_window() {
        SessionConfig c = load_config("overflow-storm");
        // Both runs name their scaler: the preset's session scaler (init_scale 2^24) would reach
        // none and is refused, so it goes back to the default and the overrides carry 2^24.
        apply_overrides(c, {"runs=amp-fp16+deepspeed,amp-fp16+deepspeed-legacy", "steps=40", "scaler.preset=pytorch",
                            R"(scaler_overrides={"init_scale":16777216,"growth_interval":25})"});
        auto t = run_config(c);
        const RunTrace &now = t.at("amp-fp16+deepspeed"), &old = t.at("amp-fp16+deepspeed-legacy");
        int last_inf = -1;
        for (std::size_t i = 0; i < 30; ++i) {
            QCOMPARE(now.recs[i].loss_scale, old.recs[i].loss_scale);
            QCOMPARE(now.recs[i].found_inf, old.recs[i].found_inf);
            QCOMPARE(now.recs[i].scale_event, old.recs[i].scale_event);
            if (now.recs[i].found_inf) last_inf = static_cast<int>(i);
        }
        QCOMPARE(last_inf, 5);  // measured; then 2^20 fits
        const auto grow = static_cast<std::uint8_t>(ScaleEvent::grow);
        QCOMPARE(old.recs[30].scale_event, grow);  // 25 clean steps: 6..30
        QCOMPARE(now.recs[30].scale_event, static_cast<std::uint8_t>(ScaleEvent::none));
        QCOMPARE(now.recs[31].scale_event, grow);  // window + 1 = 26 clean steps: 6..31
        QCOMPARE(old.recs[31].loss_scale, std::ldexp(1.0, 21));
        QCOMPARE(now.recs[31].loss_scale, std::ldexp(1.0, 20));
    }

    void hysteresis_absorbs_isolated_overflows() {
        auto t = run_preset("hysteresis");
        const RunTrace &pt = t.at("amp-fp16+pytorch"), &ds = t.at("amp-fp16+deepspeed"),
                       &mg = t.at("amp-fp16+megatron");
        // Measured: 6 absorbed overflows each for DeepSpeed and Megatron; PyTorch backs off 12 times.
        QCOMPARE(pt.count_event(ScaleEvent::hysteresis), 0);
        QVERIFY(pt.count_event(ScaleEvent::backoff) >= 3);
        QVERIFY(ds.count_event(ScaleEvent::hysteresis) >= 3);
        QVERIFY(mg.count_event(ScaleEvent::hysteresis) >= 3);
        // At an absorbed overflow the step is skipped and the scale kept.
        for (const RunTrace* r : {&ds, &mg})
            for (const auto& rec : r->recs)
                if (rec.scale_event == static_cast<std::uint8_t>(ScaleEvent::hysteresis)) {
                    QVERIFY(rec.skipped);
                    QCOMPARE(rec.new_scale, rec.loss_scale);
                }
        // PyTorch's first overflow halves the scale where DeepSpeed's is absorbed.
        const auto first_inf = [](const RunTrace& r) {
            for (const auto& rec : r.recs)
                if (rec.found_inf) return rec;
            return StepRecord{};
        };
        QCOMPARE(first_inf(pt).new_scale, first_inf(pt).loss_scale / 2);
        QCOMPARE(first_inf(ds).scale_event, static_cast<std::uint8_t>(ScaleEvent::hysteresis));
    }
};

QTEST_APPLESS_MAIN(TestScenarios)
#include "test_scenarios.moc"
