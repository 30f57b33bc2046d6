// Every lesson's checked claims (engine/config/claims.hpp) hold: each teaching preset declares the
// numbers and effects its text states, and training it gives them. Also how a claim is read,
// refused and judged, so a claim that should fail does.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <string>
#include <vector>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/config/session_config.hpp"
#include "engine/run/claims_check.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

// records[run][k] of a whole session, and its runs' labels.
struct Trained {
    std::vector<std::string> labels;
    std::vector<std::vector<StepRecord>> records;
    long long last_step = 0;
    std::vector<MismatchResult> mismatches;  // the log-probability mismatch's, for its claims
};

Trained train_all(const SessionConfig& c) {
    Session s(c);
    Trained t;
    for (std::size_t i = 0; i < s.run_count(); ++i) t.labels.push_back(s.run(i).info().label);
    t.records.resize(s.run_count());
    while (!s.finished()) {
        for (const StepRecord& r : s.step()) t.records[static_cast<std::size_t>(r.run)].push_back(r);
        for (MismatchResult& m : s.take_mismatches()) t.mismatches.push_back(std::move(m));
    }
    t.last_step = c.steps - 1;
    return t;
}

std::vector<StepRecord> steps_with(std::vector<double> losses) {
    std::vector<StepRecord> out;
    for (std::size_t i = 0; i < losses.size(); ++i) {
        StepRecord r;
        r.step = static_cast<long long>(i);
        r.loss = losses[i];
        r.skipped = i == 1;
        r.scale_event = i == 1 ? static_cast<std::uint8_t>(ScaleEvent::backoff) : 0;
        if (i == 2) r.eval_loss = 0.5;
        out.push_back(r);
    }
    return out;
}

}  // namespace

class TestLessonClaims : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { set_thread_count(0); }

    // The judge itself: statistics, ranges, ratios, bounds, and what has no value.
    void claimsAreJudgedAsDeclared() {
        SessionConfig c;
        c.lesson = "a b c d e f";
        const auto add = [&](Claim k) { c.claims.push_back(std::move(k)); };
        add({.says = "a", .metric = ClaimMetric::loss, .run = "x", .stat = ClaimStat::mean, .min = 2.0, .max = 2.0});
        add({.says = "b", .metric = ClaimMetric::loss, .run = "x", .from = 1, .to = 2, .stat = ClaimStat::max,
             .relative_to = "y", .min = 3.0, .max = 3.0});
        add({.says = "c", .metric = ClaimMetric::backed_off, .run = "x", .stat = ClaimStat::sum, .min = 1.0, .max = 1.0});
        add({.says = "d", .metric = ClaimMetric::eval_loss, .run = "x", .stat = ClaimStat::last, .max = 0.4});
        add({.says = "e", .metric = ClaimMetric::loss, .run = "z"});
        add({.says = "f", .metric = ClaimMetric::fp8_saturated_frac, .run = "x"});
        const std::vector<std::vector<StepRecord>> rec = {steps_with({1, 2, 3}), steps_with({1, 1, 1})};
        const auto r = check_claims(c, {"x", "y"}, rec, 2);
        QCOMPARE(r.size(), std::size_t(6));
        QVERIFY(r[0].holds && *r[0].value == 2.0);   // mean of 1, 2, 3
        QVERIFY(r[1].holds && *r[1].value == 3.0);   // max over steps 1-2, over y's max (1)
        QVERIFY(r[2].holds && *r[2].value == 1.0);   // one backoff
        QVERIFY(!r[3].holds && *r[3].value == 0.5);  // above its bound: fails, with its value
        QVERIFY(!r[4].holds && !r[4].value && r[4].note.find("no run 'z'") != std::string::npos);
        QVERIFY(!r[5].holds && !r[5].value);         // not an FP8 run: no value, not a pass
        QVERIFY(describe(r[3]).starts_with("FAILS"));
        QVERIFY(describe(r[0]).find("'a'") != std::string::npos);
    }

    // A claim quotes its lesson; bad claims are refused naming the field.
    void badClaimsAreRefused() {
        const auto parse = [](const std::string& claims) {
            return parse_config_text(R"({"lesson": "Predict: about 60 % flush.", "runs": ["fp32"], "claims": )" +
                                         claims + "}",
                                     "t.json");
        };
        const SessionConfig ok = parse(R"([{"says": "about 60 %", "metric": "underflow_frac", "run": "fp32"}])");
        QCOMPARE(ok.claims.size(), std::size_t(1));
        QCOMPARE(session_config_from_json(to_json(ok)).claims, ok.claims);
        const auto refused = [&](const std::string& claims, const std::string& field) {
            try {
                parse(claims);
            } catch (const ConfigError& e) {
                QVERIFY2(e.field() == field, e.what());
                return;
            }
            QFAIL(("accepted: " + claims).c_str());
        };
        refused(R"([{"says": "about 70 %", "metric": "loss", "run": "fp32"}])", "claims[0].says");
        refused(R"([{"says": "about 60 %", "metric": "losss", "run": "fp32"}])", "claims[0].metric");
        refused(R"([{"says": "about 60 %", "metric": "loss"}])", "claims[0].run");
        refused(R"([{"says": "about 60 %", "metric": "loss", "run": "fp32", "steps": [5, 2]}])", "claims[0].steps");
        refused(R"([{"says": "about 60 %", "metric": "loss", "run": "fp32", "min": 2, "max": 1}])", "claims[0].min");
        refused(R"([{"says": "about 60 %", "metric": "loss", "run": "fp32", "stat": "median"}])", "claims[0].stat");
        refused(R"([{"says": "about 60 %", "metric": "loss", "run": "fp32", "typo": 1}])", "claims[0].typo");
    }

    // mpx-cli run --check-claims prints each claim and exits 1 when one fails.
    void cliChecksClaims() {
        QTemporaryDir dir;
        const auto run = [&](QStringList args, QString& out) {
            QProcess p;
            p.setWorkingDirectory(dir.path());
            p.start(QStringLiteral(MPX_CLI_PATH), QStringList{"run", "--config", "overflow-storm", "--quiet", "--check-claims"} + args);
            if (!p.waitForFinished(120000)) return -1;
            out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
            return p.exitCode();
        };
        QString out;
        QCOMPARE(run({}, out), 0);
        QCOMPARE(out.count(QStringLiteral("holds ")), 8);
        QCOMPARE(run({"--set", "scaler.init_scale=65536"}, out), 1);  // no overflow storm: the claims fail
        QVERIFY2(out.contains(QStringLiteral("FAILS   sum skipped of amp-fp16+pytorch, steps 0-end = 0 in [5, 5]")), qPrintable(out));
        QVERIFY(out.contains(QStringLiteral("claims do not hold")));
    }

    void everyLessonHoldsItsClaims_data() {
        QTest::addColumn<QString>("preset");
        for (const std::string& name : preset_names())
            if (!load_config(name).lesson.empty()) QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    // Each teaching preset declares claims, and every one has a value and holds.
    void everyLessonHoldsItsClaims() {
        QFETCH(QString, preset);
        const SessionConfig c = load_config(preset.toStdString());
        QVERIFY2(!c.claims.empty(), "a lesson declares the numbers and effects its text states");
        const Trained t = train_all(c);
        int failed = 0;
        for (const ClaimResult& r : check_claims(c, t.labels, t.records, t.last_step, t.mismatches)) {
            if (!r.holds) ++failed;
            qInfo("%s", describe(r).c_str());
        }
        QCOMPARE(failed, 0);
    }
};

QTEST_APPLESS_MAIN(TestLessonClaims)
#include "test_lesson_claims.moc"
