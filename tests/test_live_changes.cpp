// Live tuning of any run (engine/config/live_change.hpp): a scaler edited between steps reaches only the
// runs it names, lands in config().live_changes with its step and full settings, and a session built
// from that configuration (a sidecar, a saved state, a reset) trains the same records bit for bit; a
// bad value is refused with the field named and changes nothing.
#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/base/parallel.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

using namespace mpx;
using namespace mpx::test;
using nlohmann::json;

Q_DECLARE_METATYPE(std::vector<std::string>)

namespace {

constexpr long long k_edit = 250;  // the step the DeepSpeed run is edited at (hysteresis 2 → 4)
const std::string k_deepspeed = "amp-fp16+deepspeed";

// The hysteresis lesson: amp-fp16+pytorch, amp-fp16+deepspeed, amp-fp16+megatron, growth interval 20,
// 600 steps; `steps` shortens it.
SessionConfig hysteresis(long long steps = 600) {
    SessionConfig c = load_config("hysteresis");
    c.steps = steps;
    return c;
}

ScalerConfig with_hysteresis(const Session& s, std::size_t run, int h) {
    ScalerConfig c = s.run(run).scaler().config();
    c.hysteresis = h;
    return c;
}

// The hysteresis lesson trained to the end with DeepSpeed's hysteresis raised to 4 at k_edit.
std::vector<std::vector<StepRecord>> train_edited(Session& s) {
    auto out = train(s, k_edit);
    s.set_scaler({k_deepspeed}, with_hysteresis(s, 1, 4));
    const auto rest = train(s, s.config().steps);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

std::string config_error(const std::function<void()>& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.field() + "|" + e.what();
    }
    return "no error";
}

}  // namespace

class TestLiveChanges : public QObject {
    Q_OBJECT

private slots:
    // The table is the specification: the DeepSpeed run with hysteresis 2 (as shipped) and 4 (edited at
    // step 250; H refills to 4 at the growth of step 277). Both absorb the overflow of step 299; at 310
    // the shipped run backs off while the edited one absorbs it and the one at 312, and backs off only
    // at the fourth overflow, step 327. PyTorch and Megatron train exactly as without the edit.
    void editing_one_run_changes_only_that_run() {
        Session ref(hysteresis()), live(hysteresis());
        const auto expected = train(ref, 600);
        const auto got = train_edited(live);
        QCOMPARE(got.size(), std::size_t(600));
        QVERIFY2(differs(got, expected, 0).isEmpty(), qPrintable(differs(got, expected, 0)));
        QVERIFY2(differs(got, expected, 2).isEmpty(), qPrintable(differs(got, expected, 2)));
        const std::vector<std::vector<StepRecord>> before(got.begin(), got.begin() + 299);
        const std::vector<std::vector<StepRecord>> before_ref(expected.begin(), expected.begin() + 299);
        QVERIFY2(differs(before, before_ref, 1).isEmpty(), qPrintable(differs(before, before_ref, 1)));
        using enum ScaleEvent;
        struct Row {
            long long step;
            ScaleEvent live, shipped;
            double live_scale, shipped_scale;  // new_scale
        };
        const Row rows[] = {
            {299, hysteresis, hysteresis, 0x1p23, 0x1p23},
            {310, hysteresis, backoff, 0x1p23, 0x1p22},
            {312, hysteresis, none, 0x1p23, 0x1p22},
            {327, backoff, none, 0x1p22, 0x1p22},
        };
        for (const Row& row : rows) {
            const StepRecord& a = got[static_cast<std::size_t>(row.step)][1];
            const StepRecord& b = expected[static_cast<std::size_t>(row.step)][1];
            QVERIFY2(a.found_inf && a.skipped == (row.live != none), qPrintable(QString::number(row.step)));
            QCOMPARE(ScaleEvent(a.scale_event), row.live);
            QCOMPARE(ScaleEvent(b.scale_event), row.shipped);
            QCOMPARE(a.new_scale, row.live_scale);
            QCOMPARE(b.new_scale, row.shipped_scale);
        }
        QCOMPARE(live.run(0).scaler().config().hysteresis, 1);
        QCOMPARE(live.run(1).scaler().config().hysteresis, 4);
        QCOMPARE(live.run(2).scaler().config().hysteresis, 2);
        // Only the hysteresis differs from the run's shipped settings (overrides kept).
        ScalerConfig shipped = ref.run(1).scaler().config();
        shipped.hysteresis = 4;
        QCOMPARE(live.run(1).scaler().config(), shipped);
    }

    // What the session hands the event log: one effect, its step, its run and what changed.
    void an_edit_reports_its_step_run_and_change() {
        Session s(hysteresis(300));
        train(s, k_edit);
        QVERIFY(s.take_live_effects().empty());
        s.set_scaler({k_deepspeed}, with_hysteresis(s, 1, 4));
        const auto effects = s.take_live_effects();
        QCOMPARE(effects.size(), std::size_t(1));
        QCOMPARE(effects[0].step, k_edit);
        QCOMPARE(effects[0].target, LiveTarget::run_scalers);
        QCOMPARE(effects[0].runs, std::vector<int>{1});
        QCOMPARE(QString::fromStdString(effects[0].changes), QStringLiteral("hysteresis 2 → 4"));
        s.set_lr(0.005);
        const auto lr = s.take_live_effects();
        QCOMPARE(lr.size(), std::size_t(1));
        QCOMPARE(lr[0].target, LiveTarget::train);
        QCOMPARE(lr[0].runs, (std::vector<int>{0, 1, 2}));
        QCOMPARE(QString::fromStdString(lr[0].changes), QStringLiteral("lr 0.01 → 0.005"));
        QCOMPARE(s.train().lr, 0.005);
        QCOMPARE(s.config().train.lr, 0.01);  // the configuration keeps its start; the change is listed
        // The same settings again change nothing and are not listed.
        s.set_scaler({k_deepspeed}, with_hysteresis(s, 1, 4));
        QVERIFY(s.take_live_effects().empty());
        QCOMPARE(s.config().live_changes.size(), std::size_t(2));
    }

    // The configuration (what the sidecar's "config" holds) lists the edit with its step, run and every
    // scaler setting; a new session from it, through JSON and through an export sidecar, replays it.
    void the_configuration_lists_the_edit_and_replays_it_bit_for_bit() {
        Session live(hysteresis());
        auto got = train(live, k_edit);
        live.set_scaler({k_deepspeed}, with_hysteresis(live, 1, 4));
        auto more = train(live, 150);
        live.set_lr(0.005);  // a training change is replayed too
        const auto rest = train(live, 600);
        got.insert(got.end(), more.begin(), more.end());
        got.insert(got.end(), rest.begin(), rest.end());
        QCOMPARE(got.size(), std::size_t(600));
        QCOMPARE(got[400][0].lr, 0.005);
        QCOMPARE(got[399][0].lr, 0.01);

        const json j = to_json(live.config());
        const json& changes = j.at("live_changes");
        QCOMPARE(changes.size(), std::size_t(2));
        QCOMPARE(changes[0].at("step").get<long long>(), k_edit);
        QVERIFY(changes[0].at("runs") == json::array({k_deepspeed}));
        const json& scaler = changes[0].at("scaler");
        QCOMPARE(scaler.size(), scaler_fields().size() + 1);  // every setting and the preset
        QCOMPARE(scaler.at("preset").get<std::string>(), std::string("deepspeed"));
        QCOMPARE(scaler.at("hysteresis").get<int>(), 4);
        QCOMPARE(scaler.at("growth_interval").get<int>(), 20);  // the override, as the run had it
        QCOMPARE(scaler.at("growth_count").get<std::string>(), std::string("stable_interval"));
        QCOMPARE(changes[1].at("step").get<long long>(), 400LL);
        QCOMPARE(changes[1].at("train").at("lr").get<double>(), 0.005);
        QVERIFY(!changes[1].at("train").contains("batch"));  // a live change never sets what needs a reset

        Session from_json(session_config_from_json(j));
        const auto replayed = train(from_json, 600);
        QVERIFY2(differs(replayed, got).isEmpty(), qPrintable(differs(replayed, got)));

        std::vector<RunInfo> infos;
        for (std::size_t i = 0; i < live.run_count(); ++i) infos.push_back(live.run(i).info());
        const std::string sidecar = sidecar_json(live.config(), infos, "CPU", 600).dump(2);
        const SessionConfig back = parse_config_text(sidecar, "runs.json");
        QCOMPARE(back.live_changes.size(), std::size_t(2));
        QVERIFY(back.live_changes[0] == live.config().live_changes[0]);
        Session from_sidecar(back);
        const auto again = train(from_sidecar, 600);
        QVERIFY2(differs(again, got).isEmpty(), qPrintable(differs(again, got)));
    }

    // On several threads (runs side by side, step_ahead leaving nothing pending) the same edits
    // give the same records, bit for bit, as one thread stepping one step behind.
    void live_edits_on_three_threads_give_the_bits_of_one() {
        const auto edited = [](unsigned threads, bool ahead) {
            set_thread_count(threads);
            Session s(hysteresis(400));
            std::vector<std::vector<StepRecord>> out;
            const auto advance = [&](long long until) {
                while (s.steps_done() < until && !s.finished()) {
                    if (!ahead) {
                        out.push_back(s.step());
                        continue;
                    }
                    for (auto& recs : s.step_ahead()) out.push_back(recs);
                }
                if (s.pending()) out.push_back(s.finish_pending());
            };
            advance(k_edit);
            s.set_scaler({k_deepspeed}, with_hysteresis(s, 1, 4));
            advance(300);
            s.set_lr(0.005);
            advance(400);
            set_thread_count(1);
            return out;
        };
        const auto one = edited(1, true);
        QCOMPARE(one.size(), std::size_t(400));
        for (const bool ahead : {true, false}) {
            const auto three = edited(3, ahead);
            QVERIFY2(differs(three, one).isEmpty(), qPrintable(differs(three, one)));
        }
    }

    void reset_replays_the_live_changes() {
        Session s(hysteresis(340));
        const auto first = train_edited(s);
        s.reset();
        QCOMPARE(s.run(1).scaler().config().hysteresis, 2);  // back to the start...
        const auto second = train(s, 340);
        QCOMPARE(s.run(1).scaler().config().hysteresis, 4);  // ...and the edit replayed at its step
        QVERIFY2(differs(second, first).isEmpty(), qPrintable(differs(second, first)));
    }

    // A state saved after the edits resumes with them in force: the run's scaler from its state, the
    // learning rate from the changes listed up to the saved step.
    void a_saved_state_resumes_with_its_live_changes() {
        Session whole(hysteresis(400)), part(hysteresis(400));
        for (Session* s : {&whole, &part}) {
            train(*s, k_edit);
            s->set_scaler({k_deepspeed}, with_hysteresis(*s, 1, 4));
            train(*s, 10);
            s->set_lr(0.005);
        }
        const auto expected = train(whole, 400);
        train(part, 40);
        const auto resumed = load_session_state(json::parse(save_state(part).dump()));
        QCOMPARE(resumed->steps_done(), 300LL);
        QCOMPARE(resumed->train().lr, 0.005);
        QCOMPARE(resumed->run(1).scaler().config().hysteresis, 4);
        QVERIFY(resumed->take_live_effects().empty());  // nothing new landed
        const auto rest = train(*resumed, 400);
        const std::vector<std::vector<StepRecord>> tail(expected.begin() + 40, expected.end());
        QVERIFY2(differs(rest, tail).isEmpty(), qPrintable(differs(rest, tail)));
    }

    // Every run of a preset at once, and the session scaler, which reaches only the runs whose label
    // names no scaler; both replay from the configuration.
    void a_preset_group_and_the_session_scaler_reach_their_runs() {
        SessionConfig c = hysteresis(120);
        c.runs = {"amp-fp16", "amp-fp16+deepspeed", "half-fp16+deepspeed"};
        Session live(c);
        auto got = train(live, 30);
        ScalerConfig group = live.run(1).scaler().config();
        group.backoff_factor = 0.25;
        live.set_scaler({"amp-fp16+deepspeed", "half-fp16+deepspeed"}, group);
        const auto effects = live.take_live_effects();
        QCOMPARE(effects.size(), std::size_t(2));  // one per run, each with its own change
        QCOMPARE(effects[1].runs, std::vector<int>{2});
        QCOMPARE(QString::fromStdString(effects[1].changes), QStringLiteral("backoff_factor 0.5 → 0.25"));
        QCOMPARE(live.run(0).scaler().config().backoff_factor, 0.5);
        QCOMPARE(live.run(2).scaler().config().backoff_factor, 0.25);
        auto more = train(live, 30);
        ScalerConfig session = live.session_scaler();
        session.hysteresis = 3;
        live.set_scaler(session);
        const auto reached = live.take_live_effects();
        QCOMPARE(reached.size(), std::size_t(1));
        QCOMPARE(reached[0].runs, std::vector<int>{0});
        QCOMPARE(live.run(0).scaler().config().hysteresis, 3);
        QCOMPARE(live.run(0).scaler().config().growth_interval, 20);  // scaler_overrides still apply
        QCOMPARE(live.run(1).scaler().config().hysteresis, 2);
        QCOMPARE(live.session_scaler().hysteresis, 3);
        QCOMPARE(live.config().scaler.hysteresis, 1);
        const auto rest = train(live, 120);
        got.insert(got.end(), more.begin(), more.end());
        got.insert(got.end(), rest.begin(), rest.end());
        Session replay(session_config_from_json(to_json(live.config())));
        const auto again = train(replay, 120);
        QVERIFY2(differs(again, got).isEmpty(), qPrintable(differs(again, got)));
    }

    void a_bad_live_value_is_refused_naming_the_field_data() {
        QTest::addColumn<QString>("target");  // a run's scaler, the session scaler, training
        QTest::addColumn<std::vector<std::string>>("runs");
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("error");  // field|message
        const std::vector<std::string> ds{k_deepspeed};
        QTest::newRow("hysteresis_zero") << "run" << ds << "hysteresis" << 0.0
            << "scaler.hysteresis|scaler.hysteresis: must be at least 1 (got 0); 1 means every overflow backs off, "
               "DeepSpeed and Megatron use 2 (run amp-fp16+deepspeed)";
        QTest::newRow("backoff_one") << "run" << ds << "backoff_factor" << 1.0
            << "scaler.backoff_factor|scaler.backoff_factor: must lie strictly between 0 and 1 (got 1); every "
               "framework uses 0.5 (run amp-fp16+deepspeed)";
        QTest::newRow("growth_nan") << "run" << ds << "growth_factor" << std::nan("")
            << "scaler.growth_factor|scaler.growth_factor: must be a finite number > 1 (got nan); every framework "
               "uses 2 (run amp-fp16+deepspeed)";
        QTest::newRow("min_above_init") << "run" << ds << "min_scale" << 1e9
            << "scaler.min_scale|scaler.min_scale: min_scale 1e+09 is above init_scale 1024; lower min_scale "
               "or raise init_scale (run amp-fp16+deepspeed)";
        QTest::newRow("unknown_run") << "run" << std::vector<std::string>{"amp-fp16+apex"} << "hysteresis" << 2.0
            << "runs|runs: no run 'amp-fp16+apex' in this session; its runs are amp-fp16+pytorch, "
               "amp-fp16+deepspeed, amp-fp16+megatron";
        QTest::newRow("no_run") << "run" << std::vector<std::string>{} << "hysteresis" << 2.0
            << "runs|runs: name at least one run";
        QTest::newRow("session_growth") << "session" << ds << "growth_factor" << 0.5
            << "scaler.growth_factor|scaler.growth_factor: must be a finite number > 1 (got 0.5); every framework "
               "uses 2 (the session scaler)";
        QTest::newRow("negative_lr") << "train" << ds << "lr" << -1.0
            << "train.lr|train.lr: must be between 0 and 1000 (got -1)";
    }
    void a_bad_live_value_is_refused_naming_the_field() {
        QFETCH(QString, target);
        QFETCH(std::vector<std::string>, runs);
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, error);
        Session s(hysteresis(40)), ref(hysteresis(40));
        const auto expected = train(ref, 40);
        auto got = train(s, 20);
        const std::string got_error = config_error([&] {
            if (target == QLatin1String("train")) {
                TrainConfig t = s.train();
                find_field(train_fields(), key.toStdString())->set_number(t, value);
                s.set_train(t);
                return;
            }
            ScalerConfig c = target == QLatin1String("run") ? s.run(1).scaler().config() : s.session_scaler();
            find_field(scaler_fields(), key.toStdString())->set_number(c, value);
            if (target == QLatin1String("run")) s.set_scaler(runs, c);
            else s.set_scaler(c);
        });
        QCOMPARE(QString::fromStdString(got_error), error);
        QVERIFY(got_error.find('\n') == std::string::npos);  // one line
        // Nothing changed: no change listed, nothing reported, and the session trains on as before.
        QVERIFY(s.config().live_changes.empty());
        QVERIFY(s.take_live_effects().empty());
        const auto rest = train(s, 40);
        got.insert(got.end(), rest.begin(), rest.end());
        QVERIFY2(differs(got, expected).isEmpty(), qPrintable(differs(got, expected)));
    }

    void a_configuration_with_a_bad_live_change_is_refused_data() {
        QTest::addColumn<QString>("changes");  // the "live_changes" value
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("message");  // a part of it
        const QString ok = R"("runs": ["amp-fp16+deepspeed"], "scaler": {"preset": "deepspeed"})";
        QTest::newRow("not_a_list") << R"({"step": 1})" << "live_changes" << "must be a list of changes";
        QTest::newRow("negative_step") << "[{\"step\": -1, " + ok + "}]" << "live_changes[0].step"
                                       << "must be between 0 and 100000000 (got -1)";
        QTest::newRow("no_step") << "[{" + ok + "}]" << "live_changes[0].step" << "is missing";
        QTest::newRow("out_of_order") << "[{\"step\": 10, " + ok + "}, {\"step\": 5, " + ok + "}]"
                                      << "live_changes[1].step" << "before the step of the change above it (10)";
        QTest::newRow("unknown_run") << R"([{"step": 1, "runs": ["fp32"], "scaler": {}}])" << "live_changes[0].runs"
                                     << "no run 'fp32' in this session";
        QTest::newRow("runs_alone") << R"([{"step": 1, "runs": ["amp-fp16+deepspeed"], "train": {}}])"
                                    << "live_changes[0].runs" << "\"runs\" and \"scaler\" go together";
        QTest::newRow("bad_scaler_value") << R"([{"step": 1, "runs": ["amp-fp16+deepspeed"],
                                               "scaler": {"preset": "deepspeed", "hysteresis": 0}}])"
                                          << "live_changes[0].scaler.hysteresis" << "must be at least 1 (got 0)";
        QTest::newRow("bad_session_scaler") << R"([{"step": 1, "session_scaler": {"growth_factor": 1}}])"
                                            << "live_changes[0].session_scaler.growth_factor"
                                            << "must be a finite number > 1 (got 1)";
        QTest::newRow("train_needs_reset") << R"([{"step": 1, "train": {"batch": 32}}])"
                                           << "live_changes[0].train.batch" << "needs a reset";
        QTest::newRow("train_bad_lr") << R"([{"step": 1, "train": {"lr": -1}}])" << "live_changes[0].train.lr"
                                      << "must be between 0 and 1000 (got -1)";
        QTest::newRow("two_targets") << R"([{"step": 1, "train": {}, "session_scaler": {}}])" << "live_changes[0]"
                                     << "needs exactly one of";
        QTest::newRow("unknown_key") << "[{\"step\": 1, \"when\": 2, " + ok + "}]" << "live_changes[0].when"
                                     << "unknown setting";
    }
    void a_configuration_with_a_bad_live_change_is_refused() {
        QFETCH(QString, changes);
        QFETCH(QString, field);
        QFETCH(QString, message);
        json j = to_json(hysteresis());
        j["live_changes"] = json::parse(changes.toStdString());
        try {
            parse_config_text(j.dump(), "edits.json");
            QFAIL("no error");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), field);
            const QString what = QString::fromStdString(e.what());
            QVERIFY2(what.contains(message) && what.endsWith(QStringLiteral("(in edits.json)")), qPrintable(what));
            QVERIFY(!what.contains(QLatin1Char('\n')));
        }
    }
};

QTEST_APPLESS_MAIN(TestLiveChanges)
#include "test_live_changes.moc"
