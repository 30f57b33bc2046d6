// Whole training runs through Session: every precision mode learns the spirals, results are
// bit-reproducible (same seed, reset, save/load), live changes land at the next step, and the
// records report skipped steps, clipping and accumulation as DESIGN.md describes. Memory and
// recomputation: test_training_memory.cpp.
#include "engine/base/error.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <numeric>
#include <nlohmann/json.hpp>

using namespace mpx;
using namespace mpx::test;
using nlohmann::json;

namespace {

// Every parameter's working copy of run i, as exact floats.
std::vector<std::vector<float>> working_weights(const Session& s, std::size_t i) {
    const json p = save_state(s.run(i)).at("params");
    std::vector<std::vector<float>> out;
    for (std::size_t k = 0; k < p.size(); k += 4) out.push_back(p[k].get<std::vector<float>>());
    return out;
}

double change_norm(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    double s = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k)
        for (std::size_t i = 0; i < a[k].size(); ++i) s += std::pow(static_cast<double>(b[k][i]) - a[k][i], 2);
    return std::sqrt(s);
}

struct Tail { double first = 0, tail = 0, lost = 0; };
// Step-0 loss and the mean loss and lost-update fraction over the last 10% of steps, per run.
std::vector<Tail> tails(const std::vector<std::vector<StepRecord>>& recs) {
    const std::size_t n = recs.size(), from = n - n / 10;
    std::vector<Tail> t(recs.front().size());
    for (std::size_t k = 0; k < t.size(); ++k) {
        t[k].first = recs[0][k].loss;
        for (std::size_t i = from; i < n; ++i) {
            t[k].tail += recs[i][k].loss / static_cast<double>(n - from);
            t[k].lost += recs[i][k].lost_update_frac / static_cast<double>(n - from);
        }
    }
    return t;
}

}  // namespace

class TestTraining : public QObject {
    Q_OBJECT

private slots:
    // Adam, lr 0.01, 200 steps. Measured (seed 1): step-0 loss 0.667 in every mode; tail means
    // 0.031 (fp32) to 0.035 (pure-bf16); over seeds 1-5 the worst tail was 0.041. Threshold 0.1.
    // pure-fp16 loses no updates here (Adam's steps are ~lr, far above half an FP16 ulp); its FP16 moments cost it.
    void every_mode_converges_on_spirals_data() {
        QTest::addColumn<QString>("label");
        for (const char* l : {"fp32", "tf32", "amp-fp16", "amp-bf16", "half-fp16", "half-bf16", "pure-fp16",
                              "pure-bf16", "selective-fp16", "adaptive-fp16", "scaling-only"})
            QTest::newRow(l) << QString::fromLatin1(l);
    }
    void every_mode_converges_on_spirals() {
        QFETCH(QString, label);
        SessionConfig c = small_config({label.toStdString()}, 200);
        c.memory_budget = 1000;  // adaptive: the FP32 footprint is over budget, so it trains in amp
        Session s(c);
        if (label.startsWith("adaptive")) QVERIFY(s.run(0).adaptive_low());
        const auto recs = train(s, c.steps);
        for (const auto& r : recs) QVERIFY2(std::isfinite(r[0].loss), qPrintable(QString::number(r[0].step)));
        const Tail t = tails(recs)[0];
        qInfo("%s: step-0 loss %.4f, tail mean %.4f", qPrintable(label), t.first, t.tail);
        QVERIFY(t.first > 0.6 && t.first < 0.8);  // ln 2 ≈ 0.693 for two balanced classes
        // pure-fp16 keeps Adam's moments in FP16 (as plain .half() training does): squared gradients
        // below 2^-24 flush to zero, the denominator falls to eps and small-gradient weights take
        // large steps. Measured (seed 1): tail 0.152 against fp32's 0.031; threshold 0.25.
        const double limit = label == "pure-fp16" ? 0.25 : 0.1;
        QVERIFY2(t.tail < limit, qPrintable(QString::number(t.tail)));
        QVERIFY(t.tail < 1.5 * limit * t.first);
    }

    // SGD (lr 0.003, momentum 0.9), 300 steps. Without a master copy most updates of a BF16 working
    // copy fall below half an ulp and are lost; with the FP32 master the same run follows FP32.
    // Measured: tail lost fraction pure-bf16 0.90, half-bf16 0.85; tail loss fp32 0.5489, half-bf16
    // 0.5490, pure-bf16 0.5938, pure-fp16 0.5508 (FP16's 10 mantissa bits keep most updates).
    void pure_bf16_loses_small_updates_master_keeps_them() {
        SessionConfig c = small_config({"fp32", "half-bf16", "pure-bf16", "pure-fp16"}, 300);
        c.train.optimizer = OptimizerKind::sgd;
        c.train.lr = 0.003;
        Session s(c);
        const auto t = tails(train(s, c.steps));
        qInfo("tail loss fp32 %.4f half-bf16 %.4f pure-bf16 %.4f pure-fp16 %.4f; lost %.3f %.3f %.3f",
              t[0].tail, t[1].tail, t[2].tail, t[3].tail, t[1].lost, t[2].lost, t[3].lost);
        // FP32 weights lose only updates below half an FP32 ulp: measured 0.007 of them here.
        QVERIFY2(t[0].lost < 0.05, qPrintable(QString("fp32 lost %1").arg(t[0].lost)));
        QVERIFY(t[0].tail < t[0].first - 0.08);  // FP32 does learn at this rate
        QVERIFY(t[2].lost > 0.8);
        QVERIFY(t[1].lost > 0.7);
        QVERIFY(std::abs(t[1].tail - t[0].tail) < 0.005);
        QVERIFY(t[2].tail > t[0].tail + 0.02);
        QVERIFY(std::abs(t[3].tail - t[0].tail) < 0.01);
    }

    void same_config_gives_bit_identical_records() {
        SessionConfig c = small_config({"fp32", "amp-fp16", "half-bf16", "pure-fp16"}, 30);
        c.model.dropout = 0.1f;
        Session a(c), b(c);
        const auto ra = train(a, 30), rb = train(b, 30);
        QVERIFY2(differs(ra, rb).isEmpty(), qPrintable(differs(ra, rb)));
        c.seed = 2;
        Session d(c);
        const auto rd = train(d, 1);
        for (std::size_t k = 0; k < rd[0].size(); ++k) QVERIFY(!same_bits(rd[0][k].loss, ra[0][k].loss));
    }

    // Every run starts from the same FP32 initial weights (stored in its own format).
    void runs_start_from_identical_weights() {
        Session s(small_config({"fp32", "amp-fp16", "amp-bf16", "half-fp16", "pure-bf16"}, 10));
        const auto w32 = working_weights(s, 0);
        QCOMPARE(working_weights(s, 1), w32);  // amp keeps FP32 weights
        const auto w16 = working_weights(s, 3), wb = working_weights(s, 4);
        for (std::size_t k = 0; k < w32.size(); ++k)
            for (std::size_t i = 0; i < w32[k].size(); ++i) {
                QCOMPARE(w16[k][i], round_to(Format::fp16, w32[k][i]));
                QCOMPARE(wb[k][i], round_to(Format::bf16, w32[k][i]));
            }
        const auto r = s.step();
        for (std::size_t k = 1; k < r.size(); ++k)  // measured differences ≤ 2e-4
            QVERIFY2(std::abs(r[k].loss - r[0].loss) < 5e-3, qPrintable(QString::number(r[k].loss - r[0].loss)));
    }

    void save_load_resumes_bit_identically_data() {
        QTest::addColumn<QString>("label");
        QTest::addColumn<int>("optimizer");
        for (const char* l : {"fp32", "amp-fp16+pytorch", "half-fp16+deepspeed", "pure-bf16", "pure-bf16+sr", "pure-fp16+kahan"})
            for (auto o : {OptimizerKind::adam, OptimizerKind::sgd})
                QTest::addRow("%s_%s", l, to_string(o).data()) << QString::fromLatin1(l) << int(o);
    }
    void save_load_resumes_bit_identically() {
        QFETCH(QString, label);
        QFETCH(int, optimizer);
        SessionConfig c = small_config({label.toStdString()}, 24);
        c.train.optimizer = static_cast<OptimizerKind>(optimizer);
        c.train.accumulation = 2;
        c.train.schedule = Schedule::warmup_cosine;  // the LR depends on the saved schedule count
        c.train.warmup_steps = 5;
        c.model.dropout = 0.1f;
        Session whole(c);
        const auto all = train(whole, 24);
        Session first(c);
        train(first, 12);
        const std::string text = save_state(first).dump();
        auto resumed = load_session_state(json::parse(text));
        QCOMPARE(resumed->steps_done(), 12LL);
        const auto rest = train(*resumed, 12);
        const std::vector<std::vector<StepRecord>> expected(all.begin() + 12, all.end());
        QVERIFY2(differs(rest, expected).isEmpty(), qPrintable(differs(rest, expected)));
        QCOMPARE(working_weights(*resumed, 0), working_weights(whole, 0));
    }

    // Divergence is data, not an error: a run whose weights became NaN/inf saves and resumes too.
    void save_load_resumes_a_diverged_run() {
        SessionConfig c = small_config({"fp32", "amp-bf16", "amp-fp16"}, 12);
        c.train.optimizer = OptimizerKind::sgd;
        c.train.lr = 1000.0;
        c.data.input_scale = 1e6;
        Session whole(c), first(c);
        const auto all = train(whole, 12), head = train(first, 6);
        QVERIFY(std::isnan(head.back()[0].loss) && std::isnan(head.back()[1].loss));
        const std::string text = save_state(first).dump();
        QVERIFY(text.find("\"nan\"") != std::string::npos || text.find("\"-nan\"") != std::string::npos);
        const json saved = json::parse(text);
        for (const auto& run : saved.at("runs"))
            for (const auto& values : run.at("params"))
                for (const auto& v : values) QVERIFY(!v.is_null());
        std::unique_ptr<Session> resumed;
        try {
            resumed = load_session_state(json::parse(text));
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
        const auto rest = train(*resumed, 6);
        const std::vector<std::vector<StepRecord>> expected(all.begin() + 6, all.end());
        QVERIFY2(differs(rest, expected).isEmpty(), qPrintable(differs(rest, expected)));
    }

    // Records one step late (Session::step_ahead) are step()'s records, bit for bit: with
    // evaluation, histograms and a live change (the steps that cannot stay pending), with
    // overflows the backend skips, with accumulation and FP8's delayed scaling, and with a scaler
    // that stops its run at the minimum (no step is ever left pending there: the step after the
    // stop must not have run). Each call returns the steps it finished, oldest first.
    // On 2 and 3 threads the runs' steps overlap (session_overlap.cpp): a step is left pending,
    // training in the background, on the same steps, and the records are those of step() on one.
    void records_one_step_late_are_the_records_of_step_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<int>("threads");
        for (const char* w : {"eval_hist_live", "overflows", "accumulation_fp8", "stops_at_min"})
            for (int t : {1, 2, 3}) QTest::newRow((std::string(w) + "/" + std::to_string(t)).c_str()) << w << t;
    }
    void records_one_step_late_are_the_records_of_step() {
        QFETCH(QString, what);
        QFETCH(int, threads);
        SessionConfig c = small_config({"fp32", "amp-fp16", "amp-bf16"}, 40, 1024, 256);
        c.eval_every = 0;
        c.instruments.every = 0;
        bool may_pipeline = true;
        if (what == "eval_hist_live") {
            c.eval_every = 7;
            c.instruments.every = 5;
            LiveChange lc;
            lc.step = 11;
            lc.target = LiveTarget::train;
            lc.train = c.train;
            lc.train.lr = 0.003;
            c.live_changes.push_back(lc);
        } else if (what == "overflows") {
            c.scaler.init_scale = std::ldexp(1.0, 40);
            c.scaler.growth_interval = 3;
        } else if (what == "accumulation_fp8") {
            c.runs = {"amp-bf16", "fp8-hybrid+delayed", "mxfp8"};
            c.train.accumulation = 2;
            c.model.dropout = 0.1f;
        } else {
            c.scaler = scaler_preset("deepspeed");
            c.scaler.init_scale = c.scaler.min_scale = std::ldexp(1.0, 40);
            may_pipeline = false;
        }
        set_thread_count(1);
        Session a(c), b(c);
        const auto expected = train(a, c.steps);
        set_thread_count(static_cast<unsigned>(threads));
        std::vector<std::vector<StepRecord>> late;
        int left_pending = 0;
        long long first_pending = -1;
        while (!b.finished()) {
            const auto done = b.step_ahead();
            left_pending += b.pending();
            if (b.pending() && first_pending < 0) first_pending = b.steps_done() - 1;
            for (const auto& recs : done) {
                QCOMPARE(recs.front().step, static_cast<long long>(late.size()));  // oldest first, none skipped
                late.push_back(recs);
            }
            if (b.pending()) {  // what a pending step forbids
                QVERIFY_THROWS_EXCEPTION(std::logic_error, b.step());
                QVERIFY_THROWS_EXCEPTION(std::logic_error, b.set_lr(0.5));
                QVERIFY_THROWS_EXCEPTION(std::logic_error, save_state(b));
                // Overlapping, the pending step trains on another thread: its runs are not to be read.
                if (threads == 1) QVERIFY_THROWS_EXCEPTION(std::logic_error, b.run(0).predict(RowMatrix::Zero(1, 2)));
            }
        }
        set_thread_count(1);
        QVERIFY(!b.pending());  // the last step is never left pending
        QVERIFY(b.finish_pending().empty());
        QVERIFY2(differs(late, expected).isEmpty(), qPrintable(differs(late, expected)));
        if (may_pipeline || threads > 1)  // overlapping, each run's steps follow each other on its chain
            QVERIFY2(left_pending > c.steps / 2, qPrintable(QString::number(left_pending)));
        if (!may_pipeline) {
            // amp-fp16 stopped at its minimum: on one thread no step was left pending until then;
            // from the step after the stop its steps never reach its backend, and the others' may be.
            QVERIFY(a.run(1).failed() && b.run(1).failed());
            long long stub = 0;
            while (stub < c.steps && !std::isnan(late[static_cast<std::size_t>(stub)][1].loss)) ++stub;
            QVERIFY(stub > 0 && stub < c.steps);
            if (threads == 1) QVERIFY2(first_pending >= stub, qPrintable(QStringLiteral("%1 %2").arg(first_pending).arg(stub)));
        }
        if (what == "eval_hist_live") {
            int evaluated = 0;
            for (const auto& recs : late) evaluated += recs[0].eval_loss.has_value();
            QCOMPARE(evaluated, 7);  // steps 0, 7, …, 35 and the last, 39
            for (std::size_t r = 0; r < a.run_count(); ++r) {
                const auto& ha = a.run(r).histograms().snapshots();
                const auto& hb = b.run(r).histograms().snapshots();
                QCOMPARE(hb.size(), std::size_t(8));  // steps 0, 5, …, 35
                QCOMPARE(hb.size(), ha.size());
                for (std::size_t k = 0; k < ha.size(); ++k) {
                    QCOMPARE(hb[k].step, ha[k].step);
                    QVERIFY(same_bits(hb[k].loss_scale, ha[k].loss_scale));
                    QCOMPARE(hb[k].layer_counts.size(), ha[k].layer_counts.size());
                    QCOMPARE(std::memcmp(hb[k].layer_counts.data(), ha[k].layer_counts.data(),
                                         ha[k].layer_counts.size() * sizeof(ha[k].layer_counts[0])), 0);
                }
            }
            QCOMPARE(b.config().live_changes.size(), std::size_t(1));
            QVERIFY2(same_bits(late[11][0].lr, 0.003), qPrintable(QString::number(late[11][0].lr)));
        }
        if (what == "overflows") {
            long long skipped = 0;
            for (const auto& recs : late) skipped += recs[1].skipped;
            QVERIFY(skipped >= 3);
        }
    }

    void reset_replays_from_step_zero() {
        SessionConfig c = small_config({"fp32", "amp-fp16", "half-bf16"}, 20);
        c.model.dropout = 0.1f;
        Session s(c);
        const auto before = train(s, 10);
        s.reset();
        QCOMPARE(s.steps_done(), 0LL);
        const auto after = train(s, 10);
        QCOMPARE(after[0][0].step, 0LL);
        QVERIFY2(differs(before, after).isEmpty(), qPrintable(differs(before, after)));
    }

    // A shorter growth interval set between steps 9 and 10 grows the scale at step 10 (the tracker,
    // at 10, is clamped below the new interval), then every 3 clean steps. An explicitly chosen
    // scaler ("+apex") does not follow the session's scaler.
    void live_set_scaler_takes_effect_at_next_step() {
        SessionConfig c = small_config({"amp-fp16", "half-fp16+apex"}, 30);
        c.scaler.init_scale = 1024.0;
        Session s(c);
        for (const auto& r : train(s, 10)) {
            QCOMPARE(r[0].scale_event, std::uint8_t(ScaleEvent::none));
            QCOMPARE(r[0].new_scale, 1024.0);
        }
        ScalerConfig sc = c.scaler;
        sc.growth_interval = 3;
        s.set_scaler(sc);
        const auto recs = train(s, 4);
        for (const auto& r : recs) QVERIFY(!r[0].found_inf && !r[1].found_inf);
        QCOMPARE(recs[0][0].scale_event, std::uint8_t(ScaleEvent::grow));
        QCOMPARE(recs[0][0].loss_scale, 1024.0);
        QCOMPARE(recs[0][0].new_scale, 2048.0);
        QCOMPARE(recs[1][0].scale_event, std::uint8_t(ScaleEvent::none));
        QCOMPARE(recs[2][0].scale_event, std::uint8_t(ScaleEvent::none));
        QCOMPARE(recs[3][0].scale_event, std::uint8_t(ScaleEvent::grow));
        QCOMPARE(recs[3][0].new_scale, 4096.0);
        for (const auto& r : recs) QCOMPARE(r[1].scale_event, std::uint8_t(ScaleEvent::none));
        QCOMPARE(s.run(1).scaler().config().growth_interval, 2000);
    }

    void set_lr_takes_effect_at_next_step() {
        Session s(small_config({"fp32", "amp-bf16"}, 20));
        train(s, 5);
        s.set_lr(0.0);
        const auto w0 = working_weights(s, 0), w1 = working_weights(s, 1);
        const auto r = s.step();
        QCOMPARE(r[0].lr, 0.0);
        QCOMPARE(working_weights(s, 0), w0);  // Adam with lr 0 moves nothing
        QCOMPARE(working_weights(s, 1), w1);
        QCOMPARE(r[0].lost_update_frac, 0.0);
        s.set_lr(0.02);
        QCOMPARE(s.step()[1].lr, 0.02);
        QVERIFY(working_weights(s, 0) != w0);
    }

    // accumulation 2 × batch 32 takes the same samples as 1 × 64 (the sampler hands out consecutive
    // batches of one permutation) and averages the two micro-batch gradients, so FP32 SGD follows
    // the same trajectory up to FP32 summation order. Measured relative differences ≤ 1e-6.
    void accumulation_two_matches_double_batch() {
        SessionConfig c = small_config({"fp32", "amp-fp16"}, 10);
        c.train.optimizer = OptimizerKind::sgd;
        c.train.lr = 0.1;
        SessionConfig acc = c;
        acc.train.batch = 32;
        acc.train.accumulation = 2;
        Session a(acc), full(c);
        const auto ra = train(a, 10), rf = train(full, 10);
        QCOMPARE(ra.size(), std::size_t(10));
        for (std::size_t i = 0; i < ra.size(); ++i) {
            QCOMPARE(ra[i].size(), std::size_t(2));
            for (const auto& r : ra[i]) QVERIFY(std::isfinite(r.loss) && !r.skipped);
            QVERIFY2(std::abs(ra[i][0].loss - rf[i][0].loss) < 1e-5 * rf[i][0].loss,
                     qPrintable(QStringLiteral("step %1: %2 vs %3").arg(i).arg(ra[i][0].loss, 0, 'g', 10).arg(rf[i][0].loss, 0, 'g', 10)));
            QVERIFY(std::abs(ra[i][0].grad_norm - rf[i][0].grad_norm) < 1e-5 * rf[i][0].grad_norm);
        }
    }

    // clip_grad_norm_ semantics: grad_norm is recorded before clipping; the clipped SGD step
    // (momentum 0) moves the weights by exactly lr · clip_norm, the unclipped one by lr · grad_norm.
    void clipping_records_norm_before_and_shrinks_update() {
        SessionConfig c = small_config({"fp32", "half-fp16"}, 10);
        c.train.optimizer = OptimizerKind::sgd;
        c.train.momentum = 0.0;
        c.train.lr = 0.1;
        SessionConfig clipped = c;
        clipped.train.clip_norm = 0.01;
        Session plain(c), clip(clipped);
        const auto w_free = working_weights(plain, 0), w_clip = working_weights(clip, 0);
        const auto rf = plain.step(), rc = clip.step();
        QVERIFY(same_bits(rf[0].grad_norm, rc[0].grad_norm));
        QVERIFY(same_bits(rf[1].grad_norm, rc[1].grad_norm));
        QVERIFY(rf[0].grad_norm > 0.05);  // well above the clip norm
        const double d_free = change_norm(w_free, working_weights(plain, 0));
        const double d_clip = change_norm(w_clip, working_weights(clip, 0));
        QVERIFY2(std::abs(d_clip - 0.1 * 0.01) < 1e-3 * 0.1 * 0.01, qPrintable(QString::number(d_clip)));
        QVERIFY2(std::abs(d_free - 0.1 * rf[0].grad_norm) < 1e-3 * 0.1 * rf[0].grad_norm, qPrintable(QString::number(d_free)));
        // Later steps: the clipped run's loss falls more slowly.
        const auto more_f = train(plain, 9), more_c = train(clip, 9);
        QVERIFY(more_c.back()[0].loss > more_f.back()[0].loss);
    }

    // 2^40 × the loss overflows FP16: the step is skipped (weights untouched), the scale halves, until
    // it fits. Measured: 20 skipped steps, the first clean one at scale 2^20.
    void too_large_scale_skips_and_backs_off_until_it_fits() {
        SessionConfig c = small_config({"amp-fp16"}, 60);
        c.scaler.init_scale = std::ldexp(1.0, 40);
        Session s(c);
        const json state0 = save_state(s.run(0)).at("params");
        int k = 0;
        StepRecord r = s.step()[0];
        while (r.skipped && k < 40) {
            QCOMPARE(r.found_inf, true);
            QCOMPARE(r.scale_event, std::uint8_t(ScaleEvent::backoff));
            QCOMPARE(r.loss_scale, std::ldexp(1.0, 40 - k));
            QCOMPARE(r.new_scale, std::ldexp(1.0, 39 - k));
            QCOMPARE(r.lost_update_frac, 0.0);
            QCOMPARE(save_state(s.run(0)).at("params"), state0);  // weights and moments untouched
            ++k;
            r = s.step()[0];
        }
        qInfo("%d skipped steps, first clean at scale 2^%d", k, 40 - k);
        QVERIFY(k >= 10 && k < 40);
        QCOMPARE(r.found_inf, false);
        QCOMPARE(r.scale_event, std::uint8_t(ScaleEvent::none));
        QCOMPARE(r.loss_scale, std::ldexp(1.0, 40 - k));
        QVERIFY(save_state(s.run(0)).at("params") != state0);
        // Afterwards the scale never rises again within growth_interval (2000) steps; a later overflow
        // (gradients grow as training proceeds) backs off again, never skipping without backoff.
        double scale = r.new_scale;
        for (int i = 0; i < 20; ++i) {
            const StepRecord n = s.step()[0];
            QCOMPARE(n.loss_scale, scale);
            QCOMPARE(n.skipped, n.found_inf);
            QCOMPARE(n.new_scale, n.skipped ? scale / 2 : scale);
            scale = n.new_scale;
        }
    }

    // headroom_log2 (StepRecord): how many binades the backward pass had left below FP16's largest
    // value. Negative exactly on the steps that overflowed; on the same weights, four times the scale
    // leaves two binades less; an FP32 run has FP32's range left.
    void headroom_says_how_close_the_backward_pass_came_to_overflowing() {
        SessionConfig c = small_config({"amp-fp16", "fp32"}, 40);
        c.scaler.init_scale = std::ldexp(1.0, 40);
        Session s(c);
        int overflowed = 0, clean = 0;
        while (!s.finished()) {
            const auto recs = s.step();
            const StepRecord& r = recs[0];
            QVERIFY(r.headroom_log2.has_value());
            QCOMPARE(r.found_inf, *r.headroom_log2 <= 0.0);
            (r.found_inf ? overflowed : clean)++;
            if (r.found_inf) QVERIFY(*r.headroom_log2 > -40.0);  // at most 2^40 too large
            QVERIFY(recs[1].headroom_log2.has_value() && *recs[1].headroom_log2 > 100.0);  // FP32: 2^128 away
        }
        QVERIFY(overflowed >= 10 && clean >= 10);
        // Step 0 on the same weights at static scales 2^8 and 2^10: the backward values scale by 4.
        double h[2];
        for (int i = 0; i < 2; ++i) {
            SessionConfig d = small_config({"amp-fp16"}, 1);
            d.scaler.init_scale = std::ldexp(1.0, 8 + 2 * i);
            Session one(d);
            const StepRecord r = one.step()[0];
            QVERIFY(!r.found_inf);
            h[i] = *r.headroom_log2;
        }
        qInfo("headroom at 2^8: %.6f, at 2^10: %.6f", h[0], h[1]);
        QVERIFY(h[0] > 2.0);
        QVERIFY(std::fabs((h[0] - h[1]) - 2.0) < 1e-3);
        // The CSV carries it.
        QVERIFY(csv_header().find(",headroom_log2,") != std::string::npos);
    }

    void fp32_records_show_no_rounding_events() {
        Session s(small_config({"fp32"}, 50));
        for (const auto& step : train(s, 50)) {
            const StepRecord& r = step[0];
            QCOMPARE(r.underflow_frac, 0.0);
            QCOMPARE(r.overflow_count, 0LL);
            QCOMPARE(r.found_inf, false);
            QCOMPARE(r.skipped, false);
            QCOMPARE(r.loss_scale, 1.0);
            QCOMPARE(r.scale_event, std::uint8_t(ScaleEvent::none));
            QCOMPARE(r.lost_update_frac, 0.0);
            QCOMPARE(r.lr, 0.01);
            QVERIFY(std::isfinite(r.grad_norm) && r.grad_norm > 0.0);
        }
    }

    // An update the optimizer computed but rounding threw away counts as lost, however small: with
    // a learning rate of 1e-9 every SGD update of an FP16 working copy vanishes.
    void vanishing_updates_count_as_lost() {
        SessionConfig c = small_config({"pure-fp16", "fp32"}, 5);
        c.train.optimizer = OptimizerKind::sgd;
        c.train.momentum = 0.0;
        c.train.lr = 1e-9;
        Session s(c);
        const auto recs = train(s, 5);
        for (const auto& step : recs)  // pure-fp16, and fp32 too: 1e-9 · g is below half an ulp
            for (const auto& r : step)
                QVERIFY2(r.lost_update_frac > 0.99, qPrintable(QString::number(r.lost_update_frac)));
    }

    // A live scaler change re-resolves each run's scaler, so scaler_overrides keep applying and a
    // session rebuilt from the saved configuration trains the same.
    void live_scaler_change_keeps_overrides() {
        SessionConfig c = small_config({"amp-fp16", "amp-fp16+deepspeed"}, 3);
        c.scaler_overrides = json{{"growth_interval", 20}};
        Session s(c);
        ScalerConfig changed = s.config().scaler;
        changed.backoff_factor = 0.25;
        s.set_scaler(changed);
        QCOMPARE(s.run(0).scaler().config().growth_interval, 20);
        QCOMPARE(s.run(0).scaler().config().backoff_factor, 0.25);
        QCOMPARE(s.run(1).scaler().config().growth_interval, 20);
        Session rebuilt(s.config());
        QCOMPARE(rebuilt.run(0).scaler().config(), s.run(0).scaler().config());
    }
};

QTEST_APPLESS_MAIN(TestTraining)
#include "test_training.moc"
