// The pace of Run (engine/config/pace.hpp, issue 47 item 6): a paced Run delivers steps no faster
// than its rate and slows around events; Step and a run to a given step are never paced; a reset,
// a new pace or closing the window is served at once however slow the pace; the toolbar, the
// preset's "pace" and mpx --pace are one setting. Timings are lower bounds (a loaded machine only
// makes them slower) or generous upper bounds ten times what the unpaced code needs.
#include <QAction>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/command_line.hpp"
#include "engine/run/step_pacer.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/window/main_window.hpp"

using mpx::Pace;
using mpx::Timing;
using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::MainWindow;

namespace {

mpx::SessionConfig small(long long steps) {
    mpx::SessionConfig c = mpx::load_config("default");
    c.steps = steps;
    return c;
}

// A window showing `c`, its session built.
std::unique_ptr<MainWindow> windowWith(const mpx::SessionConfig& c) {
    auto w = std::make_unique<MainWindow>();
    QSignalSpy started(w->store(), &RecordStore::sessionStarted);
    w->applyConfig(c, QStringLiteral("test"));
    if (!started.wait(10'000)) return nullptr;
    return w;
}

}  // namespace

class TestPace : public QObject {
    Q_OBJECT
    QTemporaryDir dir;
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test-pace"));
        QVERIFY(dir.isValid());
        QDir::setCurrent(dir.path());
    }

    // The pacer's spacing after each step of a pattern: "." a plain step, "E" one where a run
    // skipped, changed its scale or found inf/NaN.
    void the_pacer_spaces_steps_and_slows_after_events_data() {
        QTest::addColumn<QString>("pace");
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QList<double>>("intervals");
        QTest::newRow("fast") << "fast" << "E.." << QList<double>{0, 0, 0};
        QTest::newRow("ten") << "10" << "E.." << QList<double>{0.1, 0.1, 0.1};
        QTest::newRow("fast_events") << "fast,events" << ".E.....E"
                                     << QList<double>{0, 0.5, 0.5, 0.5, 0.5, 0, 0, 0.5};
        QTest::newRow("twenty_events_twice") << "20,events" << "E..E....."
                                             << QList<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.05, 0.05};
        QTest::newRow("slower_than_events") << "1,events" << "E." << QList<double>{1, 1};
    }
    void the_pacer_spaces_steps_and_slows_after_events() {
        QFETCH(QString, pace);
        QFETCH(QString, pattern);
        QFETCH(QList<double>, intervals);
        mpx::StepPacer p;
        p.set_pace(mpx::parse_pace(pace.toStdString()));
        QCOMPARE(p.wait(0.0), 0.0);  // the first step at once
        double now = 100.0;
        for (int i = 0; i < pattern.size(); ++i) {
            mpx::StepRecord plain, event;
            event.skipped = pattern[i] == QLatin1Char('E');
            p.stepped(now, {plain, event});
            QCOMPARE(p.interval(), intervals[i]);
            QCOMPARE(p.wait(now + intervals[i] / 4), intervals[i] * 3 / 4);
            QCOMPARE(p.wait(now + intervals[i] + 1), 0.0);
            now += 1.0;
        }
        p.restart();
        QCOMPARE(p.wait(now), 0.0);
    }

    void events_are_skips_scale_changes_and_overflows() {
        mpx::StepRecord r;
        QVERIFY(!mpx::is_pace_event(r));
        r.overflow_count = 12;  // an FP8 run's saturations every step: not an event
        QVERIFY(!mpx::is_pace_event(r));
        for (auto set : {+[](mpx::StepRecord& x) { x.skipped = true; }, +[](mpx::StepRecord& x) { x.found_inf = true; },
                         +[](mpx::StepRecord& x) { x.scale_event = 1; }, +[](mpx::StepRecord& x) { x.scale_event = 3; }}) {
            mpx::StepRecord e;
            set(e);
            QVERIFY(mpx::is_pace_event(e));
        }
    }

    void a_paced_run_is_no_faster_than_its_pace() {
        auto w = windowWith(small(400));
        QVERIFY(w);
        w->setPace(Pace{20.0, false});
        QElapsedTimer t;
        t.start();
        w->run(-1, Timing::paced);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= 10, 20'000);
        // Step 0 at once, step 9 no sooner than 9 / 20 s later.
        QVERIFY2(t.elapsed() >= 400, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(w->engine()->state(), EngineState::running);
        w->pause();
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 5'000);
    }

    // A run to a step (a screenshot's --after-steps, a test) and Step ignore the pace.
    void step_and_a_run_to_a_step_are_never_paced() {
        auto w = windowWith(small(400));
        QVERIFY(w);
        w->setPace(Pace{0.1, false});  // one step every ten seconds
        QElapsedTimer t;
        t.start();
        for (int i = 0; i < 3; ++i) w->stepOnce();
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 3, 5'000);
        w->run(60);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 60, 9'000);
        QVERIFY2(t.elapsed() < 10'000, qPrintable(QString::number(t.elapsed())));  // paced: 590 s
    }

    // At one step in ten seconds the worker waits between steps; a reset, a new pace and closing
    // the window are served at once, not after the wait.
    void reset_pace_and_close_are_prompt_during_a_slow_pace() {
        auto w = windowWith(small(60));
        QVERIFY(w);
        w->setPace(Pace{0.1, false});
        w->run(-1, Timing::paced);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= 1, 5'000);
        QTest::qWait(300);
        QCOMPARE(w->store()->steps(), 1);  // waiting for the second
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        QElapsedTimer t;
        t.start();
        w->reset();
        QVERIFY(started.wait(5'000));
        QVERIFY2(t.elapsed() < 3'000, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(w->engine()->pace(), (Pace{0.1, false}));  // Reset keeps the pace
        // A new Run's first step comes at once, not when the old Run's wait ends.
        t.restart();
        w->run(-1, Timing::paced);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= 1, 5'000);
        QVERIFY2(t.elapsed() < 3'000, qPrintable(QString::number(t.elapsed())));
        // A faster pace takes over from the wait in progress.
        t.restart();
        w->setPace(Pace{});
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::finished, 8'000);
        // The state arrives by signal, the records at the store's next drain of the buffer: drain
        // now, as the other views' tests do (without it CI under ASan once read 59 of 60).
        w->store()->drainNow();
        QCOMPARE(w->store()->steps(), 60);
        // Closing in the middle of a wait.
        w->reset();
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 0, 5'000);
        w->setPace(Pace{0.1, false});
        w->run(-1, Timing::paced);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= 1, 5'000);
        t.restart();
        w.reset();
        QVERIFY2(t.elapsed() < 3'000, qPrintable(QString::number(t.elapsed())));
    }

    // The toolbar shows a preset's pace, edits the configuration's (so Save writes it) and the
    // engine's; mpx --pace arrives the same way.
    void the_toolbar_the_preset_and_the_command_line_are_one_pace() {
        MainWindow w;
        w.loadConfigFile(QStringLiteral("underflow"));
        const Pace preset = mpx::load_config("underflow").pace;
        QVERIFY(preset.steps_per_second > 0);  // the lesson sets one
        QCOMPARE(w.pace(), preset);
        QCOMPARE(w.engine()->pace(), preset);
        QCOMPARE(w.paceBox()->currentData().toDouble(), preset.steps_per_second);
        QCOMPARE(w.paceEventsAction()->isChecked(), preset.events);

        const int five = w.paceBox()->findData(5.0);
        QVERIFY(five > 0);
        w.paceBox()->setCurrentIndex(five);
        emit w.paceBox()->activated(five);  // as a click chooses it
        if (!w.paceEventsAction()->isChecked()) w.paceEventsAction()->trigger();
        QCOMPARE(w.pace(), (Pace{5.0, true}));
        QCOMPARE(w.engine()->pace(), (Pace{5.0, true}));
        QCOMPARE(w.currentConfig().pace, (Pace{5.0, true}));
        const QString saved = dir.filePath(QStringLiteral("paced.json"));
        QCOMPARE(mpx::gui::saveConfig(w.currentConfig(), saved), QString());
        QCOMPARE(mpx::load_config(saved.toStdString()).pace, (Pace{5.0, true}));

        const auto cl = mpx::gui::parseCommandLine({"mpx", "--config", "underflow", "--pace", "0.5,events"});
        QVERIFY2(cl.options, qPrintable(cl.error));
        const auto cfg = mpx::gui::resolveConfig(*cl.options, std::nullopt);
        QVERIFY2(cfg.config, qPrintable(cfg.error));
        w.applyConfig(*cfg.config, cfg.origin);
        QCOMPARE(w.engine()->pace(), (Pace{0.5, true}));
        QCOMPARE(w.paceBox()->currentText(), QStringLiteral("0.5 steps/s"));  // a rate of its own
        QVERIFY(w.paceEventsAction()->isChecked());
        w.engine()->pause();
    }
};

QTEST_MAIN(TestPace)
#include "test_pace.moc"
