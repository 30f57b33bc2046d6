// The loss scaler as the backend holds it (issue 15): set_scaler / scaler_update on the CPU twin
// against LossScaler, the loss and unscale ops reading the backend's scale, and whole runs with
// overflows whose records, skipped steps, Adam step count and resumption come out of that state.
// LossScaler (the framework-by-framework table of test_scaler) is the specification here: the
// backend must give its sequence step for step.
#include "engine/base/error.hpp"
#include "engine/compute/backend.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/run/session.hpp"
#include "engine/scaler/scaler.hpp"
#include "session_test_support.hpp"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

using namespace mpx;
using namespace mpx::test;
using nlohmann::json;

namespace {

bool same_state(const ScalerState& a, const ScalerState& b) {
    return same_bits(a.scale, b.scale) && a.growth_tracker == b.growth_tracker &&
           a.hysteresis_left == b.hysteresis_left && a.iteration == b.iteration &&
           a.last_overflow_iteration == b.last_overflow_iteration;
}

QString state_text(const ScalerState& s) {
    return QStringLiteral("scale %1 T %2 H %3 it %4 last %5")
        .arg(s.scale, 0, 'g', 17).arg(s.growth_tracker).arg(s.hysteresis_left).arg(s.iteration)
        .arg(s.last_overflow_iteration);
}

// One backend step that finds inf/NaN or not: a gradient (1, 4) unscaled by the backend's own scale.
const StepStats& backend_step(Backend& be, Tensor& grad, Tensor& unscaled, bool overflow) {
    be.begin_step();
    be.set_uncounted();
    const float g[4] = {3.0f, -0.5f, overflow ? INFINITY : 1.0f, 0.25f};
    be.upload(g, grad);
    be.set_site(0, TensorKind::unscaled);
    be.unscale_and_check(grad, ScaleBy::unscale(), unscaled);
    be.scaler_update();
    return be.read_stats();
}

// Trains a preset to its end; records[step][run].
std::vector<std::vector<StepRecord>> train_preset(Session& s) { return train(s, s.config().steps); }

}  // namespace

class TestDeviceScaler : public QObject {
    Q_OBJECT

private slots:
    // The rule both backends run reports DeepSpeed's refusal at the minimum instead of throwing.
    void the_rule_reports_at_minimum_without_throwing() {
        ScalerConfig c = scaler_preset("deepspeed");
        c.init_scale = 1.0;
        c.hysteresis = 1;
        const LossScaler ls(c);
        ScalerState s = ls.state();
        const ScalerState before = s;
        const ScalerOutcome out = core::update_scaler(ls.rule(), s, true);
        QVERIFY(out.at_minimum);
        QCOMPARE(out.event, ScaleEvent::none);
        QVERIFY(same_state(s, before));
        const ScalerOutcome clean = core::update_scaler(ls.rule(), s, false);
        QVERIFY(!clean.at_minimum);
        QCOMPARE(s.iteration, 1LL);
    }

    // scaler_update on the CPU backend, fed random overflow patterns (a quarter of the steps
    // overflow; runs of overflows make hysteresis and backoff to the floor happen), gives exactly
    // LossScaler's state and event after every step, for every preset; at_min = error stops both
    // at the same step, with the state untouched.
    void backend_scaler_update_follows_loss_scaler_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("overrides");
        for (const std::string& p : scaler_preset_names())
            QTest::addRow("%s", p.c_str()) << QString::fromStdString(p) << QString();
        QTest::addRow("deepspeed_at_min_error") << "deepspeed" << R"({"init_scale": 64, "growth_interval": 5})";
        QTest::addRow("megatron_short") << "megatron" << R"({"init_scale": 1024, "growth_interval": 3, "hysteresis": 3})";
        QTest::addRow("pytorch_to_inf") << "pytorch" << R"({"init_scale": 1e38, "growth_interval": 2})";
        QTest::addRow("keras_apply_inf") << "keras" << R"({"init_scale": 1e38, "growth_interval": 2})";
    }
    void backend_scaler_update_follows_loss_scaler() {
        QFETCH(QString, preset);
        QFETCH(QString, overrides);
        json j = overrides.isEmpty() ? json::object() : json::parse(overrides.toStdString());
        j["preset"] = preset.toStdString();
        LossScaler host(scaler_config_from_json(j));
        auto be = make_cpu_backend();
        Tensor grad = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        Tensor unscaled = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        be->set_scaler(host.rule(), host.state());
        std::mt19937 rng(7);
        int events[4] = {}, steps = 0;
        bool stopped = false;
        for (; steps < 400 && !stopped; ++steps) {
            const bool overflow = rng() % 4 == 0;
            const ScalerState before = host.state();
            const StepStats& st = backend_step(*be, grad, unscaled, overflow);
            QCOMPARE(st.found_inf(), overflow);
            QVERIFY(st.scaler.updated);
            QVERIFY2(same_state(st.scaler.before, before), qPrintable(state_text(st.scaler.before)));
            try {
                const ScalerUpdate u = host.update(overflow);
                QVERIFY2(!st.scaler.at_minimum, qPrintable(QString("step %1").arg(steps)));
                QCOMPARE(st.scaler.event, u.event);
                ++events[static_cast<int>(u.event)];
            } catch (const ScalerAtMinimumError&) {
                QVERIFY2(st.scaler.at_minimum, qPrintable(QString("step %1").arg(steps)));
                QCOMPARE(st.scaler.event, ScaleEvent::none);
                stopped = true;
            }
            QVERIFY2(same_state(st.scaler.after, host.state()),
                     qPrintable(QString("step %1: backend %2, host %3").arg(steps)
                                    .arg(state_text(st.scaler.after), state_text(host.state()))));
        }
        qInfo("%d steps: %d grow, %d backoff, %d hysteresis%s", steps, events[1], events[2], events[3],
              stopped ? ", stopped at the minimum" : "");
        if (host.config().kind == ScalerKind::dynamic) QVERIFY(events[static_cast<int>(ScaleEvent::backoff)] > 0);
        if (preset == QLatin1String("deepspeed") && !overrides.isEmpty()) QVERIFY(stopped);
        if (host.config().hysteresis > 1) QVERIFY(events[static_cast<int>(ScaleEvent::hysteresis)] > 0);
    }

    // The loss ops and unscale take their factors from the backend's scale, with the expressions the
    // host used before (float(S · weight / parts), float(1 / S) in double): equal bits to the same
    // ops given those values.
    void loss_and_unscale_read_the_backends_scale() {
        auto be = make_cpu_backend();
        ScalerConfig c = scaler_preset("apex");  // fp64 storage: a scale no float holds exactly
        c.init_scale = 3000.3;
        const LossScaler host(c);
        be->set_scaler(host.rule(), host.state());
        const double S = host.scale(), weight = 0.7;
        const int parts = 3;
        Tensor pred = be->alloc(Format::fp32, 2, 3, MemCategory::activations);
        Tensor target = be->alloc(Format::fp32, 2, 3, MemCategory::activations);
        Tensor a = be->alloc(Format::fp16, 2, 3, MemCategory::grads);
        Tensor b = be->alloc(Format::fp16, 2, 3, MemCategory::grads);
        be->set_uncounted();
        be->upload(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, pred);
        be->upload(std::vector<float>{0.0f, 0.1f, 0.2f, -0.3f, 0.4f, 0.5f}, target);
        std::vector<float> va(6), vb(6);
        be->mse(pred, target, ScaleBy::loss(weight, parts), a);
        be->mse(pred, target, static_cast<float>(S * weight / parts), b);
        be->download(a, va);
        be->download(b, vb);
        QCOMPARE(va, vb);
        QVERIFY(va[0] != 0.0f);
        be->softmax_cross_entropy(pred, std::vector<int>{2, 0}, ScaleBy::loss(weight, parts), a);
        be->softmax_cross_entropy(pred, std::vector<int>{2, 0}, static_cast<float>(S * weight / parts), b);
        be->download(a, va);
        be->download(b, vb);
        QCOMPARE(va, vb);
        Tensor ua = be->alloc(Format::fp32, 2, 3, MemCategory::grads);
        Tensor ub = be->alloc(Format::fp32, 2, 3, MemCategory::grads);
        be->unscale_and_check(pred, ScaleBy::unscale(), ua);
        be->unscale_and_check(pred, static_cast<float>(1.0 / S), ub);
        be->download(ua, va);
        be->download(ub, vb);
        QCOMPARE(va, vb);
        QCOMPARE(va[0], 0.1f * static_cast<float>(1.0 / S));
    }

    // Whole runs with overflows (the shipped presets): every record's scale, event and new scale is
    // what LossScaler gives for the run's own found-inf sequence, and the run's scaler ends in the
    // same state. pytorch backs off, deepspeed and megatron spend hysteresis first.
    void a_run_with_overflows_scales_as_loss_scaler_data() {
        QTest::addColumn<QString>("preset");
        QTest::addRow("overflow-storm") << "overflow-storm";
        QTest::addRow("hysteresis") << "hysteresis";
    }
    void a_run_with_overflows_scales_as_loss_scaler() {
        QFETCH(QString, preset);
        Session s(load_config(preset.toStdString()));
        const auto recs = train_preset(s);
        for (std::size_t r = 0; r < s.run_count(); ++r) {
            const Run& run = s.run(r);
            LossScaler host(run.info().scaler);
            int overflows = 0, events[4] = {};
            for (const auto& step : recs) {
                const StepRecord& rec = step[r];
                QVERIFY2(same_bits(rec.loss_scale, host.scale()),
                         qPrintable(QString("%1 step %2").arg(QString::fromStdString(run.info().label)).arg(rec.step)));
                const ScalerUpdate u = host.update(rec.found_inf);
                QCOMPARE(rec.scale_event, static_cast<std::uint8_t>(u.event));
                QVERIFY(same_bits(rec.new_scale, u.new_scale));
                QCOMPARE(rec.skipped, rec.found_inf && host.skips_on_inf());
                overflows += rec.found_inf;
                ++events[rec.scale_event];
            }
            QVERIFY(same_state(run.scaler().state(), host.state()));
            const std::string& label = run.info().label;
            qInfo("%s: %d overflows, %d backoff, %d hysteresis, %d grow", label.c_str(), overflows,
                  events[2], events[3], events[1]);
            if (label == "fp32") continue;
            QVERIFY(overflows > 0);
            QVERIFY(events[static_cast<int>(ScaleEvent::backoff)] > 0);
            const bool hysteresis = label.find("deepspeed") != std::string::npos ||
                                    label.find("megatron") != std::string::npos;
            QCOMPARE(events[static_cast<int>(ScaleEvent::hysteresis)] > 0, hysteresis);
        }
    }

    // A skipped step changes nothing the optimizer owns, with clipping on: the clip and the update
    // are gated by the backend's found-inf count; the scaler backs off on the backend.
    void a_skipped_step_leaves_weights_unchanged_with_clipping() {
        SessionConfig c = small_config({"amp-fp16", "half-fp16"}, 40);  // both follow c.scaler
        c.scaler.init_scale = std::ldexp(1.0, 40);
        c.train.clip_norm = 0.01;
        Session s(c);
        json params[2] = {save_state(s.run(0)).at("params"), save_state(s.run(1)).at("params")};
        int skipped = 0, applied = 0;
        for (int i = 0; i < 40; ++i) {
            const auto recs = s.step();
            for (int r = 0; r < 2; ++r) {
                const json now = save_state(s.run(r)).at("params");
                if (recs[r].skipped) {
                    ++skipped;
                    QVERIFY(recs[r].found_inf);
                    QCOMPARE(now, params[r]);  // weights, master and moments untouched
                } else {
                    ++applied;
                    QVERIFY(now != params[r]);
                }
                params[r] = now;
            }
        }
        QVERIFY(skipped >= 10);
        QVERIFY(applied >= 10);
    }

    // Adam's t from the backend: the applied-step count + 1 indexes the host's table of bias
    // corrections, giving the bits optimizer_consts gives for that t; count_applied_step counts a
    // step unless it was skipped, and a t beyond the table is refused.
    void adam_takes_t_from_the_backends_count_data() {
        QTest::addColumn<int>("kind");
        QTest::addRow("adam") << int(OptimizerKind::adam);
        QTest::addRow("adamw") << int(OptimizerKind::adamw);
    }
    void adam_takes_t_from_the_backends_count() {
        QFETCH(int, kind);
        auto be = make_cpu_backend();
        std::vector<core::BiasCorrection> table;
        for (long long t = 1; t <= 5; ++t) table.push_back(bias_correction(0.9, 0.999, t));
        be->set_bias_corrections(table);
        be->set_lr_schedule(std::vector<float>{0.02f, 0.01f});
        be->set_schedule_steps(1);  // StepCount::backend: lr 0.01
        const std::vector<float> w0 = {0.5f, -0.25f, 1e-3f, 2.0f}, g0 = {0.1f, -0.2f, 0.3f, 1e-4f};
        Tensor g = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        be->set_uncounted();
        be->upload(g0, g);
        std::vector<float> by_count, by_t;
        for (StepCount count : {StepCount::backend, StepCount::given}) {
            Tensor w = be->alloc(Format::fp16, 1, 4, MemCategory::weights);
            Tensor master = be->alloc(Format::fp32, 1, 4, MemCategory::master);
            Tensor m1 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
            Tensor m2 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
            for (Tensor* t : {&w, &master}) be->upload(w0, *t);
            be->fill(m1, 0.0f);
            be->fill(m2, 0.0f);
            OptimizerStep st;
            st.kind = static_cast<OptimizerKind>(kind);
            st.lr = count == StepCount::given ? 0.01f : 1.0f;  // backend: the table's
            st.weight_decay = 0.01f;
            st.count = count;
            st.t = 4;  // StepCount::given
            be->set_applied_steps(3);  // StepCount::backend: t = 4
            be->begin_step();
            be->optimizer_update(st, g, &master, w, m1, &m2, OnInf::skip);
            std::vector<float> v(4);
            be->download(master, v);
            (count == StepCount::backend ? by_count : by_t) = v;
        }
        QCOMPARE(by_count, by_t);
        QVERIFY(by_count != w0);

        be->set_applied_steps(7);
        be->begin_step();
        be->count_applied_step(OnInf::skip);
        QCOMPARE(be->read_stats().applied_steps, 8LL);  // a clean step counts
        Tensor bad = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        const auto found_inf = [&](OnInf on_inf) {
            be->begin_step();
            be->set_uncounted();
            be->upload(std::vector<float>{1.0f, INFINITY, 0.0f, 0.0f}, bad);
            be->unscale_and_check(bad, 1.0f, bad);
            be->count_applied_step(on_inf);
            return be->read_stats().applied_steps;
        };
        QCOMPARE(found_inf(OnInf::skip), 8LL);   // skipped: not counted
        QCOMPARE(found_inf(OnInf::apply), 9LL);  // no scaler: the NaN update is applied, and counted

        Tensor w = be->alloc(Format::fp32, 1, 4, MemCategory::weights);
        Tensor m1 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
        Tensor m2 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
        OptimizerStep st;
        st.count = StepCount::backend;
        be->set_applied_steps(5);  // t = 6: beyond the table of 5
        be->begin_step();
        QVERIFY_THROWS_EXCEPTION(ConfigError, be->optimizer_update(st, g, nullptr, w, m1, &m2, OnInf::skip));
    }

    // The LR schedule's count on the backend: the optimizer takes the table's learning rate at the
    // count (the bits a given lr gives, for SGD and Adam), a step advances it when it was applied or
    // when skipped steps advance the schedule, and a count beyond the table is refused.
    void the_lr_schedule_counts_on_the_backend() {
        auto be = make_cpu_backend();
        const std::vector<float> lrs = {0.1f, 0.05f, 0.025f};
        be->set_lr_schedule(lrs);
        be->set_bias_corrections(std::vector<core::BiasCorrection>{bias_correction(0.9, 0.999, 1)});
        be->set_applied_steps(0);
        const std::vector<float> w0 = {0.5f, -0.25f, 1e-3f, 2.0f}, g0 = {0.1f, -0.2f, 0.3f, 1e-4f};
        Tensor g = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        be->set_uncounted();
        be->upload(g0, g);
        for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam})
            for (long long k = 0; k < 3; ++k) {
                std::vector<float> got[2];
                for (StepCount count : {StepCount::backend, StepCount::given}) {
                    Tensor w = be->alloc(Format::fp32, 1, 4, MemCategory::weights);
                    Tensor m1 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
                    Tensor m2 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
                    be->upload(w0, w);
                    be->fill(m1, 0.0f);
                    be->fill(m2, 0.0f);
                    OptimizerStep st;
                    st.kind = kind;
                    st.count = count;
                    st.lr = count == StepCount::given ? lrs[static_cast<std::size_t>(k)] : 7.0f;
                    st.t = 1;
                    be->set_schedule_steps(k);
                    be->begin_step();
                    be->optimizer_update(st, g, nullptr, w, m1, &m2, OnInf::skip);
                    got[count == StepCount::backend ? 0 : 1].resize(4);
                    be->download(w, got[count == StepCount::backend ? 0 : 1]);
                }
                QCOMPARE(got[0], got[1]);
                QVERIFY(got[0] != w0);
            }
        be->set_schedule_steps(4);
        be->begin_step();
        be->count_schedule_step(OnInf::skip, false);
        QCOMPARE(be->read_stats().schedule_steps, 5LL);  // a clean step advances it
        Tensor bad = be->alloc(Format::fp32, 1, 4, MemCategory::grads);
        const auto skipped_step = [&](bool advance_on_skip) {
            be->begin_step();
            be->set_uncounted();
            be->upload(std::vector<float>{1.0f, INFINITY, 0.0f, 0.0f}, bad);
            be->unscale_and_check(bad, 1.0f, bad);
            be->count_schedule_step(OnInf::skip, advance_on_skip);
            return be->read_stats().schedule_steps;
        };
        QCOMPARE(skipped_step(false), 5LL);  // DeepSpeed's rule: a skipped step does not advance it
        QCOMPARE(skipped_step(true), 6LL);
        Tensor w = be->alloc(Format::fp32, 1, 4, MemCategory::weights);
        Tensor m1 = be->alloc(Format::fp32, 1, 4, MemCategory::optimizer);
        OptimizerStep st;
        st.kind = OptimizerKind::sgd;
        st.count = StepCount::backend;
        be->set_schedule_steps(3);  // beyond the table of 3
        be->begin_step();
        QVERIFY_THROWS_EXCEPTION(ConfigError, be->optimizer_update(st, g, nullptr, w, m1, nullptr, OnInf::skip));
    }

    // Through a run with overflows: each record's learning rate is the schedule's at the count of
    // steps before it that advanced the schedule (applied ones only with advance_on_skip off), and a
    // resumed run continues the count.
    void the_lr_schedule_advances_as_configured_through_overflows_data() {
        QTest::addColumn<bool>("advance_on_skip");
        QTest::addRow("skips advance") << true;
        QTest::addRow("skips do not advance") << false;
    }
    void the_lr_schedule_advances_as_configured_through_overflows() {
        QFETCH(bool, advance_on_skip);
        SessionConfig c = load_config("hysteresis");
        c.eval_every = 0;
        c.train.schedule = Schedule::step;
        c.train.step_size = 7;
        c.train.gamma = 0.5;
        c.train.advance_on_skip = advance_on_skip;
        Session s(c);
        const auto recs = train(s, c.steps);
        long long skipped = 0;
        for (std::size_t r = 0; r < s.run_count(); ++r) {
            long long taken = 0;
            for (const auto& step : recs) {
                QCOMPARE(step[r].lr, lr_at(c.train, taken, c.steps));
                skipped += step[r].skipped;
                taken += !step[r].skipped || advance_on_skip;
            }
            QCOMPARE(save_state(s.run(r)).at("schedule_steps").get<long long>(), taken);
        }
        QVERIFY(skipped > 5);  // the schedule's count met skipped steps
        Session first(c);
        train(first, c.steps / 2);
        auto resumed = load_session_state(json::parse(save_state(first).dump()));
        const auto rest = train(*resumed, c.steps - c.steps / 2);
        for (std::size_t k = 0; k < rest.size(); ++k)
            for (std::size_t r = 0; r < rest[k].size(); ++r)
                QCOMPARE(rest[k][r].lr, recs[static_cast<std::size_t>(c.steps / 2) + k][r].lr);
    }

    // Adam's step count (the backend's, mirrored by the run) counts applied steps only: after a run
    // with overflows it equals the number of records that were not skipped.
    void adam_counts_applied_steps_through_overflows() {
        Session s(load_config("hysteresis"));
        const auto recs = train_preset(s);
        for (std::size_t r = 0; r < s.run_count(); ++r) {
            long long applied = 0, skipped = 0;
            for (const auto& step : recs) (step[r].skipped ? skipped : applied) += 1;
            QVERIFY(skipped > 0);
            QCOMPARE(save_state(s.run(r)).at("applied_steps").get<long long>(), applied);
        }
    }

    // Resuming restores the backend's scaler from the saved state: the rest of a run with
    // overflows, hysteresis and growth continues bit for bit.
    void a_resumed_run_continues_bit_identically_through_overflows() {
        const SessionConfig c = load_config("hysteresis");
        const long long half = c.steps / 2;
        Session whole(c), first(c);
        const auto all = train_preset(whole);
        train(first, half);
        auto resumed = load_session_state(json::parse(save_state(first).dump()));
        const auto rest = train(*resumed, c.steps - half);
        const std::vector<std::vector<StepRecord>> expected(all.begin() + half, all.end());
        QVERIFY2(differs(rest, expected).isEmpty(), qPrintable(differs(rest, expected)));
        int overflows = 0;
        for (const auto& step : rest)
            for (const auto& rec : step) overflows += rec.found_inf;
        QVERIFY(overflows > 0);  // the second half has overflows for the restored state to act on
        for (std::size_t r = 0; r < whole.run_count(); ++r)
            QVERIFY(same_state(resumed->run(r).scaler().state(), whole.run(r).scaler().state()));
    }

    // A session trained past the step count it was built for grows Adam's table on the fly: the
    // same records as a session built for the whole length.
    void adam_table_grows_when_a_session_is_extended() {
        const SessionConfig whole_cfg = small_config({"amp-fp16", "fp32"}, 30);
        SessionConfig short_cfg = whole_cfg;
        short_cfg.steps = 3;  // a table of 3 bias corrections
        Session whole(whole_cfg), extended(short_cfg);
        const auto all = train(whole, 30);
        auto got = train(extended, 3);
        extended.extend_to(30);
        const auto rest = train(extended, 27);
        got.insert(got.end(), rest.begin(), rest.end());
        QVERIFY2(differs(got, all).isEmpty(), qPrintable(differs(got, all)));
    }

    // DeepSpeed's at_min = error: a run whose gradients overflow at every scale stops with
    // DeepSpeed's message when the backend's update is refused at the minimum, its scaler state as
    // LossScaler leaves it (untouched by the refused update), and records nothing more.
    void at_minimum_error_stops_the_run_as_deepspeed_does() {
        SessionConfig c = small_config({"amp-fp16"}, 40);
        c.scaler = scaler_preset("deepspeed");  // at_min error, min_scale 1, hysteresis 2
        c.scaler.init_scale = 256.0;
        c.data.input_scale = 1e6;  // forward overflows in FP16 whatever the scale
        Session s(c);
        LossScaler host(s.run(0).info().scaler);
        std::string thrown;
        long long stop = -1;
        for (int i = 0; i < 40; ++i) {
            const StepRecord rec = s.step()[0];
            if (stop >= 0) {  // a stopped run records skipped NaN steps at its last scale
                QVERIFY(rec.skipped && std::isnan(rec.loss));
                QCOMPARE(rec.loss_scale, host.scale());
                continue;
            }
            QVERIFY(rec.found_inf);
            try {
                host.update(true);
            } catch (const ScalerAtMinimumError& e) {
                thrown = e.what();
                stop = rec.step;
            }
            QCOMPARE(s.run(0).failed(), stop >= 0);
        }
        QVERIFY(stop > 0);
        QCOMPARE(s.run(0).failure(), thrown);
        QVERIFY(thrown.rfind("Current loss scale already at minimum", 0) == 0);
        QVERIFY(same_state(s.run(0).scaler().state(), host.state()));
        QCOMPARE(s.run(0).scaler().state().iteration, stop);  // the refused update did not count
        const json saved = save_state(s.run(0));
        QCOMPARE(saved.at("failure").get<std::string>(), thrown);
    }
};

QTEST_APPLESS_MAIN(TestDeviceScaler)
#include "test_device_scaler.moc"
