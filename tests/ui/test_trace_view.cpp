// A trace opened in the window (File ▸ Open trace…) is the window's session, and every number it
// shows is replay_trace's: the records of its runs (recording, replay, frontier) against a direct
// replay; the Scaler tab replays at once and keeps the zoom; the Sweep tab sweeps the rule over the
// trace and its cell sets the rule; the CSV export is `mpx-cli replay`'s; Run and Step wait while a
// trace is shown and Reset goes back to training; a bad file is refused with the reader's message,
// leaving the app as it was. MPX_TRACE_PNG=path saves the window there (for looking at it).
#include <QAction>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QTabWidget>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

#include "engine/io/trace.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/live_panel.hpp"
#include "ui/panels/setup_panel.hpp"
#include "ui/panels/sweep_panel.hpp"
#include "ui/session/trace_session.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx;

namespace {

// Six steps recorded at 1024 without an overflow: amax 8, 16, 32, 60, 0.5, 0.5 (at 1024 the largest,
// 61440, fits). At a static 2^12 the products are 32768, 65536 (> 65504: overflow), 131072, 245760
// (overflows), 2048, 2048: three overflows; at 2^10 none.
const char* k_trace = "# mpx-trace 1; test\n"
                      "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                      "0,1024.0,0,0,1.0,8.0,fc2,0,0,,1,0.01\n"
                      "1,1024.0,0,0,0.9,16.0,fc2,0,0,,1,0.01\n"
                      "2,1024.0,0,0,0.8,32.0,fc2,0,0,,1,0.01\n"
                      "3,1024.0,0,0,0.7,60.0,fc2,0,0,,1,0.01\n"
                      "4,1024.0,0,0,0.6,0.5,fc1,0,0,,1,0.01\n"
                      "5,1024.0,0,0,0.5,0.5,fc1,0,0,,1,0.01\n";

// A PyTorch recording that overflowed at step 1 and backed off (its amax censored there), and a
// forward overflow at `enc.fc2` from step 3.
const char* k_forward = "# mpx-trace 1; test\n"
                        "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                        "0,65536.0,0,0,1.0,0.25,fc2,0,0,,1,0.01\n"
                        "1,65536.0,1,1,1.0,2.0,fc2,1,0,,,0.01\n"
                        "2,32768.0,0,0,0.9,0.5,fc2,0,0,,1,0.01\n"
                        "3,32768.0,1,1,0.9,1.0,fc2,1,4,enc.fc2,,0.01\n"
                        "4,16384.0,1,1,0.9,1.0,fc2,1,4,enc.fc2,,0.01\n";

ScalerConfig staticAt(double scale) {
    ScalerConfig c = scaler_preset("static");
    c.init_scale = scale;
    return c;
}

bool write(const QString& path, const QByteArray& text) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

// A model's trace as a user brings it: module names as PyTorch gives them (long, dotted), 60 steps,
// histograms every 10 (the recorder's every=10), an overflow at step 30 that halved the scale.
const QStringList k_modules{QStringLiteral("embed.tok"), QStringLiteral("encoder.layers.0.self_attn.qkv_proj"),
                            QStringLiteral("encoder.layers.1.self_attn.out_proj"), QStringLiteral("encoder.layers.1.mlp.fc2"),
                            QStringLiteral("pooler.dense"), QStringLiteral("sampler.fc1")};

bool writeModelTrace(const QString& path) {
    QByteArray t = "# mpx-trace 1; torch 2.4.0; every 10\n"
                   "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n";
    QByteArray h = "run,step,layer,tensor,bin_log2,count\n";
    for (int s = 0; s < 60; ++s) {
        const bool over = s == 30;
        t += QStringLiteral("%1,%2,%3,%3,%4,%5,sampler.fc1,%3,0,,%6,0.001\n")
                 .arg(s).arg(s <= 30 ? 65536.0 : 32768.0, 0, 'f', 1).arg(over ? 1 : 0).arg(2.0 - s / 60.0)
                 .arg(over ? 2.0 : 0.25).arg(over ? QString() : QStringLiteral("0.5")).toUtf8();
        if (s % 10 == 0)
            for (int m = 0; m < k_modules.size(); ++m)
                for (int b = -30 + m; b <= -2; b += 4)
                    h += QStringLiteral("trace,%1,%2,grad_output,%3,%4\n").arg(s).arg(k_modules[m]).arg(b).arg(10 + m).toUtf8();
    }
    return write(path, t) && write(QString(path).replace(QStringLiteral(".csv"), QStringLiteral(".histograms.csv")), h);
}

// The tab page (a scroll area) that holds `panel`, made current.
QScrollArea* showTab(mpx::ui::MainWindow& w, QWidget* panel) {
    for (QTabWidget* tabs : w.findChildren<QTabWidget*>())
        for (int i = 0; i < tabs->count(); ++i)
            if (auto* area = qobject_cast<QScrollArea*>(tabs->widget(i)); area && area->widget() == panel) {
                tabs->setCurrentIndex(i);
                return area;
            }
    return nullptr;
}

}  // namespace

class TestTraceSession : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // The records hold the recording, the replay and the frontier, as replay_trace computes them.
    void recordsAreTheReplay() {
        auto trace = std::make_shared<const Trace>(parse_trace(k_trace, "t.csv"));
        const gui::TraceSession t = gui::traceSession(trace, staticAt(4096), 1);
        QCOMPARE(t.info->runs.size(), std::size_t{3});
        QCOMPARE(t.records.size(), std::size_t{18});
        const ReplayResult direct = replay_trace(*trace, staticAt(4096));
        QCOMPARE(t.replay.skipped, 3LL);
        for (std::size_t i = 0; i < 6; ++i) {
            const StepRecord& rec = t.records[3 * i + gui::k_trace_recorded];
            const StepRecord& rep = t.records[3 * i + gui::k_trace_replay];
            const StepRecord& fr = t.records[3 * i + gui::k_trace_frontier];
            QCOMPARE(rec.loss_scale, 1024.0);
            QCOMPARE(rec.loss, trace->steps[i].loss);
            QVERIFY(!rec.skipped);
            QCOMPARE(*rec.headroom_log2, std::log2(65504.0 / (trace->steps[i].amax * 1024.0)));
            QCOMPARE(rep.loss_scale, direct.steps[i].scale);
            QCOMPARE(rep.skipped, direct.steps[i].skipped);
            QCOMPARE(*rep.headroom_log2, *direct.steps[i].headroom_log2);
            QVERIFY(std::isnan(rep.loss));  // a replay predicts decisions, not another run's losses
            QCOMPARE(fr.loss_scale, 65504.0 / trace->steps[i].amax);
        }
        // Above the frontier exactly where the replay overflows.
        for (std::size_t i = 0; i < 6; ++i)
            QCOMPARE(t.records[3 * i + 1].loss_scale > t.records[3 * i + 2].loss_scale, t.records[3 * i + 1].found_inf);
        QVERIFY2(t.verdict.contains(QStringLiteral("3 of 6 steps skipped (recorded: 0)")), qPrintable(t.verdict));
        QCOMPARE(t.notes.size(), std::size_t{1});
        QCOMPARE(t.notes[0].kind, gui::NoteKind::verdict);
    }

    // The recording's own events are read from its scales; a forward overflow's verdict names the
    // site at the step it starts, and those steps have no frontier (no scale avoids them).
    void forwardOverflowVerdict() {
        auto trace = std::make_shared<const Trace>(parse_trace(k_forward, "f.csv"));
        ScalerConfig rule = scaler_preset("pytorch");
        rule.init_scale = 65536;
        const gui::TraceSession t = gui::traceSession(trace, rule, 1);
        const auto recorded = [&](std::size_t i) { return t.records[3 * i + gui::k_trace_recorded]; };
        QCOMPARE(static_cast<ScaleEvent>(recorded(1).scale_event), ScaleEvent::backoff);
        QCOMPARE(recorded(1).new_scale, 32768.0);
        QCOMPARE(static_cast<ScaleEvent>(recorded(0).scale_event), ScaleEvent::none);
        QVERIFY(!recorded(1).headroom_log2);  // censored: only a bound is known
        QVERIFY(std::isnan(t.records[3 * 3 + gui::k_trace_frontier].loss_scale));
        QCOMPARE(t.records[3 * 0 + gui::k_trace_frontier].loss_scale, 65504.0 / 0.25);
        QCOMPARE(t.notes.at(0).step, 3LL);
        QVERIFY2(t.verdict.contains(QStringLiteral("forward overflow at `enc.fc2` from step 3")), qPrintable(t.verdict));
        // A rule that is not valid is refused.
        ScalerConfig bad = rule;
        bad.backoff_factor = 2.0;
        QVERIFY_THROWS_EXCEPTION(std::exception, gui::traceSession(trace, bad, 2));
    }

    // Issue 43: a forward inf that stopped short of the loss and gradients (step 1: loss and
    // gradients finite) keeps its frontier, 65504 / 0.5, and its headroom; one that reached the loss
    // (step 2: inf) has none, and the verdict's note stands at it.
    void forwardInfThatStopsShortKeepsItsFrontier() {
        auto trace = std::make_shared<const Trace>(parse_trace(
            "# mpx-trace 1; test\n"
            "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
            "0,1024.0,0,0,1.0,0.25,fc2,0,0,,1,0.01\n"
            "1,1024.0,0,0,1.0,0.5,fc2,0,3,fc1,1,0.01\n"
            "2,1024.0,1,1,inf,0.5,fc2,1,3,fc1,,0.01\n",
            "s.csv"));
        const gui::TraceSession t = gui::traceSession(trace, staticAt(1024), 1);
        QCOMPARE(t.records[3 * 1 + gui::k_trace_frontier].loss_scale, 65504.0 / 0.5);
        QVERIFY(t.records[3 * 1 + gui::k_trace_recorded].headroom_log2.has_value());
        QVERIFY(std::isnan(t.records[3 * 2 + gui::k_trace_frontier].loss_scale));
        QCOMPARE(t.notes.at(0).step, 2LL);
    }

    // The recorded histograms become each run's snapshots, one layer per module: the recording's as
    // read, the replay's moved by log2(replayed / recorded scale), with the Where view's counts.
    void histogramsForRangeAndWhere() {
        Trace tr = parse_trace(k_trace, "t.csv");
        parse_trace_histograms(tr,
                               "run,step,layer,tensor,bin_log2,count\n"
                               "0,0,enc.fc1,grad_output,-20,5\n"
                               "0,0,enc.fc1,grad_output,-3,7\n"
                               "0,0,enc.fc1,grad_output,zero,2\n"
                               "0,0,head,grad_output,4,3\n"
                               "0,0,head,grad_output,14,1\n"
                               "0,0,head,grad_input,9,100\n"  // not an output gradient: left out
                               "0,4,head,grad_output,-26,4\n"
                               "0,4,head,grad_output,0,4\n",
                               "t.histograms.csv");
        auto trace = std::make_shared<const Trace>(tr);
        const gui::TraceSession t = gui::traceSession(trace, staticAt(4096), 1);  // 4 x the recorded 1024
        QCOMPARE(t.info->layerNames, (QStringList{QStringLiteral("enc.fc1"), QStringLiteral("head")}));
        QCOMPARE(gui::layerCount(*t.info), 2);
        QCOMPARE(t.info->config.instruments.every, 4);
        QCOMPARE(t.histograms.size(), std::size_t{4});  // steps 0 and 4, recorded and replayed
        const auto& [run0, rec] = t.histograms[0];
        QCOMPARE(run0, gui::k_trace_recorded);
        QCOMPARE(rec.loss_scale, 1024.0);
        const Histogram* fc1 = rec.find(0, HistTensor::grad_output);
        QVERIFY(fc1);
        QCOMPARE(rec.count(*fc1, -20), 5ULL);
        QCOMPARE(rec.count(*fc1, -3), 7ULL);
        QCOMPARE(fc1->zero, 2ULL);
        QCOMPARE(fc1->format, Format::fp16);
        QCOMPARE(rec.layer(1, Pass::backward).nonzero, 4ULL);
        QCOMPARE(rec.layer(1, Pass::backward).overflow, 0ULL);
        // Replayed at 4x: every bin two up; head's 2^14 value reaches 2^16 and overflows.
        const auto& [run1, rep] = t.histograms[1];
        QCOMPARE(run1, gui::k_trace_replay);
        QCOMPARE(rep.loss_scale, 4096.0);
        const Histogram* head = rep.find(1, HistTensor::grad_output);
        QVERIFY(head);
        QCOMPARE(rep.count(*head, 6), 3ULL);
        QCOMPARE(rep.count(*head, 16), 1ULL);
        QCOMPARE(rep.layer(1, Pass::backward).overflow, 1ULL);
        // Step 4 replayed: head's 2^-26 values move to 2^-24, above the flush line; at 2^10 (the
        // recorded scale) they were at it. The underflow count is replay_trace's share.
        const auto& [run3, rep4] = t.histograms[3];
        QCOMPARE(run3, gui::k_trace_replay);
        QCOMPARE(rep4.layer(1, Pass::backward).underflow, 0ULL);
        QCOMPARE(t.histograms[2].second.layer(1, Pass::backward).underflow, 4ULL);
        QCOMPARE(*t.replay.steps[4].underflow_share, 0.0);
        const gui::TraceSession low = gui::traceSession(trace, staticAt(256), 1);  // 1/4 of the recorded
        QCOMPARE(low.histograms[3].second.layer(1, Pass::backward).underflow, 4ULL);
        QCOMPARE(*low.replay.steps[4].underflow_share, 0.5);
    }

    // A model of more modules than a trace keeps one by one: the totals count them all, the first
    // k_trace_max_sites are kept per module and become the session's layers.
    void manyModules() {
        Trace tr = parse_trace(k_trace, "t.csv");
        std::string text = "run,step,layer,tensor,bin_log2,count\n";
        for (int m = 0; m < 300; ++m) text += "0,0,m" + std::to_string(m) + ",grad_output,-3,1\n";
        parse_trace_histograms(tr, text, "t.histograms.csv");
        QCOMPARE(tr.sites.size(), std::size_t{300});
        QCOMPARE(tr.histograms.at(0).nonzero(), 300ULL);
        QCOMPARE(tr.histograms.at(0).sites.size(), std::size_t(k_trace_max_sites));
        const gui::TraceSession t = gui::traceSession(std::make_shared<const Trace>(tr), staticAt(1024), 1);
        QCOMPARE(t.info->layerNames.size(), qsizetype(k_trace_max_sites));
        QCOMPARE(t.info->layerNames.back(), QStringLiteral("m254"));
    }

    void openInTheWindow() {
        QVERIFY(m_dir.isValid());
        mpx::ui::MainWindow w;
        w.resize(1400, 900);
        const QString good = m_dir.filePath(QStringLiteral("good.csv")), bad = m_dir.filePath(QStringLiteral("bad.csv"));
        QVERIFY(write(good, k_trace));
        QVERIFY(write(bad, "step,loss\n0,1\n"));
        // A training session running first: the trace replaces it, and its late records stay out.
        mpx::SessionConfig c = mpx::load_config("default");
        c.steps = 400;
        w.applyConfig(c, QStringLiteral("default"));
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->session() && w.store()->session()->config.name == "default", 10'000);
        w.run();
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->steps() > 0, 10'000);
        QSettings().remove(QStringLiteral("trace/folder"));
        QVERIFY(!w.openTrace(bad));
        QCOMPARE(w.traceFolder(), QString());  // none opened yet (a file that is no trace counts for none): the working folder
        QVERIFY(w.openTrace(good));
        QCOMPARE(w.traceFolder(), QFileInfo(good).absolutePath());  // the next Open trace… starts beside it
        QVERIFY(w.store()->showsOutsideSession());
        const auto s = w.store()->session();
        QCOMPARE(s->runs.size(), std::size_t{3});
        QCOMPARE(s->runs[1].label, QStringLiteral("replay (pytorch)"));
        QCOMPARE(w.store()->steps(), 6LL);
        QTest::qWait(300);  // drains of the paused engine's last records
        QCOMPARE(w.store()->steps(), 6LL);
        QCOMPARE(w.store()->session()->runs.size(), std::size_t{3});
        // The rule starts at the recording's first scale: PyTorch's rule with no overflow at 2^10.
        QCOMPARE(w.store()->history(1).at(gui::Metric::lossScale, 3).max, 1024.0);
        // The window's histories keep single precision: the frontier to 1e-6.
        QVERIFY(std::fabs(w.store()->history(2).at(gui::Metric::lossScale, 1).max / (65504.0 / 16.0) - 1.0) < 1e-6);
        bool verdictRow = false;
        for (const gui::LogRow& r : w.store()->log())
            verdictRow = verdictRow || (r.kind == gui::LogKind::verdict && w.store()->noteText(r.note).contains(QStringLiteral("Verdict")));
        QVERIFY(verdictRow);
        QAction* run = nullptr;  // Run / Pause (Space)
        for (QAction* a : w.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(Qt::Key_Space)) run = a;
        QVERIFY(run);
        QVERIFY(!run->isEnabled());  // a trace is replayed, not trained

        // The Scaler tab: an edit replays at once, the zoom stays.
        w.charts()->zoomTo(1, 4);  // widened to the closest zoom the charts allow
        const double x0 = w.charts()->viewX0(), x1 = w.charts()->viewX1();
        QVERIFY(!w.charts()->following());
        emit w.livePanel()->scalerEdited(staticAt(4096));
        QCOMPARE(w.traceSession()->rule.init_scale, 4096.0);
        QCOMPARE(w.store()->skippedSteps(1), 3LL);
        QCOMPARE(w.store()->history(1).at(gui::Metric::lossScale, 2).max, 4096.0);
        QVERIFY(!w.charts()->following());
        QCOMPARE(w.charts()->viewX0(), x0);
        QCOMPARE(w.charts()->viewX1(), x1);
        QVERIFY2(w.statusBar()->currentMessage().contains(QStringLiteral("3 of 6 steps skipped")), qPrintable(w.statusBar()->currentMessage()));

        // The Sweep tab sweeps the rule over the trace: each point's skips are replay_trace's.
        mpx::ui::SweepPanel* p = w.sweepPanel();
        p->setGrid("scaler.init_scale", "1024,4096,16384", "", "", "static");
        QSignalSpy done(p->job(), &gui::SweepJob::finished);
        QCOMPARE(p->start(), QString());
        QVERIFY(done.wait(10'000));
        QCOMPARE(p->job()->points().size(), std::size_t{3});
        const Trace direct = parse_trace(k_trace, "t.csv");
        for (const SweepPoint& pt : p->job()->points()) {
            const double init = p->job()->pointConfig(pt.index).scaler.init_scale;
            QCOMPARE(pt.runs.at(0).skipped, replay_trace(direct, staticAt(init)).skipped);
        }
        const QString sweepCsv = m_dir.filePath(QStringLiteral("sweep.csv"));
        QCOMPARE(p->job()->exportCsv(sweepCsv), QString());
        QFile side(m_dir.filePath(QStringLiteral("sweep.json")));
        QVERIFY(side.open(QIODevice::ReadOnly));
        QVERIFY(side.readAll().contains("\"trace\""));
        // A cell chosen: its rule is replayed over the trace (no training session is built).
        emit p->pointChosen(p->job()->pointConfig(2), QStringLiteral("sweep point"));
        QVERIFY(w.store()->showsOutsideSession());
        QCOMPARE(w.traceSession()->rule.init_scale, 16384.0);
        QCOMPARE(w.store()->skippedSteps(1), replay_trace(direct, staticAt(16384)).skipped);

        // The CSV export is the replay's, as `mpx-cli replay --csv` writes it.
        const QString csv = m_dir.filePath(QStringLiteral("replay.csv"));
        w.exportCsv(csv);
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().toStdString(), replay_csv(direct, replay_trace(direct, staticAt(16384))));

        // A bad file changes nothing and says why.
        QVERIFY(!w.openTrace(bad));
        QVERIFY(!w.openTrace(m_dir.filePath(QStringLiteral("missing.csv"))));
        QVERIFY(w.messages()->text().contains(QStringLiteral("Cannot open the trace")));
        QCOMPARE(w.traceSession()->rule.init_scale, 16384.0);
        QVERIFY(w.store()->showsOutsideSession());

        if (const QByteArray png = qgetenv("MPX_TRACE_PNG"); !png.isEmpty()) {
            w.show();
            QTest::qWait(300);
            (void)w.grab().save(QString::fromLocal8Bit(png));
        }

        // Reset goes back to training: the engine's new session replaces the trace.
        w.reset();
        QTRY_VERIFY_WITH_TIMEOUT(!w.store()->showsOutsideSession(), 10'000);
        QVERIFY(!w.traceSession());
        QVERIFY(!p->job()->trace());
        QVERIFY(run->isEnabled());
        QVERIFY(w.store()->session()->runs[0].label != QStringLiteral("recorded"));
    }

    // Issue 47 item 13: a trace of one's own model, at 1280x800 (normal and classroom), shows only
    // what a trace has, whole: the Setup tab the trace's facts (no MLP/GPT/data/training forms), no
    // chart tile for a measure a trace lacks, the Sweep tab without Runs and Steps and no sideways
    // scroll after a sweep, the Where view's module names whole or cut in the middle with their last
    // component whole and a hint about the recorder, and the status bar's verdict in whole clauses
    // with no training field (backend, state, rate, progress) beside it.
    void traceShowsOnlyWhatATraceHas_data() {
        QTest::addColumn<bool>("classroom");
        QTest::newRow("normal") << false;
        QTest::newRow("classroom") << true;
    }
    void traceShowsOnlyWhatATraceHas() {
        QFETCH(bool, classroom);
        QVERIFY(m_dir.isValid());
        const QString path = m_dir.filePath(QStringLiteral("model.csv"));
        QVERIFY(writeModelTrace(path));
        mpx::ui::MainWindow w;
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.applyConfig(mpx::load_config("default"), QStringLiteral("default"));  // a training session for Reset to return to
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->session() && w.store()->session()->config.name == "default", 10'000);
        w.setClassroom(classroom);
        QVERIFY(w.openTrace(path));
        QCOMPARE(w.store()->session()->layerNames, k_modules);
        QTest::qWait(200);

        // Setup: the trace's facts; no training form shows.
        mpx::ui::SetupPanel* setup = w.setupPanel();
        QVERIFY(showTab(w, setup));
        QTest::qWait(100);
        QVERIFY(setup->showsTrace());
        for (QWidget* field : setup->findChildren<QWidget*>())
            if (qobject_cast<QAbstractSpinBox*>(field) || qobject_cast<QComboBox*>(field) || qobject_cast<QCheckBox*>(field) ||
                qobject_cast<QLineEdit*>(field))
                QVERIFY2(!field->isVisibleTo(setup), qPrintable(field->toolTip().left(80)));
        QStringList texts;
        for (QLabel* l : setup->findChildren<QLabel*>())
            if (l->isVisibleTo(setup)) texts << l->text();
        const QString shown = texts.join(QLatin1Char('\n'));
        QVERIFY2(shown.contains(QStringLiteral("model.csv")) && shown.contains(QStringLiteral("60 recorded")) &&
                     shown.contains(QStringLiteral("6 recorded")) && shown.contains(QStringLiteral("every 10 steps")),
                 qPrintable(shown));
        for (const char* training : {"Hidden", "Blocks", "Optimizer", "Batch", "Data set", "Precisions to compare"})
            QVERIFY2(!shown.contains(QLatin1String(training)), training);

        // The charts: only those the trace has data for, none titled as missing.
        QVERIFY(w.charts()->chartOrder().size() >= 2);
        QVERIFY(w.charts()->chartOrder().size() < mpx::ui::k_chart_count);
        for (int c = 0; c < mpx::ui::k_chart_count; ++c) {
            mpx::ui::PlotWidget* plot = w.charts()->plot(static_cast<mpx::ui::ChartId>(c));
            QCOMPARE(plot->isVisibleTo(w.charts()), w.charts()->chartOrder().contains(static_cast<mpx::ui::ChartId>(c)));
            QVERIFY2(!plot->title().contains(QStringLiteral("not in a trace")), qPrintable(plot->title()));
        }

        // The status bar (where the classroom keeps it): the verdict in whole clauses, alone.
        QStatusBar* bar = w.statusBar();
        bar->show();
        QTest::qWait(100);
        for (QWidget* field : bar->findChildren<QWidget*>())
            if (qobject_cast<QLabel*>(field) || qobject_cast<QProgressBar*>(field))
                QVERIFY2(!field->isVisibleTo(bar) || field->parentWidget() != bar, qPrintable(field->objectName()));
        const QString verdict = bar->currentMessage();
        QVERIFY2(verdict.startsWith(QStringLiteral("Verdict (pytorch rule): ")), qPrintable(verdict));
        QVERIFY2(QFontMetrics(bar->font()).horizontalAdvance(verdict) <= bar->width() - 20, qPrintable(verdict));
        QString whole = verdict;
        if (whole.endsWith(QStringLiteral("; …"))) whole.chop(3);
        QVERIFY2(w.traceSession()->verdict.startsWith(whole) &&
                     (whole.size() == w.traceSession()->verdict.size() || w.traceSession()->verdict.mid(whole.size()).startsWith(QStringLiteral("; "))),
                 qPrintable(verdict));

        // The Where view: the modules' names whole, or their middle cut and the last component whole;
        // the hint names the recorder's every=, not a setting of mpx's.
        w.setView(mpx::ui::MainWindow::View::where);
        QTest::qWait(200);
        const QStringList labels = w.whereView()->rowLabels();
        QCOMPARE(labels.size(), k_modules.size());
        for (int m = 0; m < k_modules.size(); ++m) {
            const QString last = k_modules[m].mid(k_modules[m].lastIndexOf(QLatin1Char('.')));
            QVERIFY2(labels[m] == k_modules[m] || (labels[m].endsWith(last) && labels[m].contains(QStringLiteral("…")) &&
                                                   k_modules[m].startsWith(labels[m].left(labels[m].indexOf(QStringLiteral("…"))))),
                     qPrintable(labels[m]));
        }
        QVERIFY(!w.whereView()->subtitle().contains(QStringLiteral("instruments.every")));
        QVERIFY2(w.whereView()->subtitle().contains(QStringLiteral("every=1")), qPrintable(w.whereView()->subtitle()));
        const QFontMetrics fm(w.whereView()->font());
        QCOMPARE(mpx::ui::WhereView::rowLabel(fm, QStringLiteral("encoder.layers.1.mlp.fc1"), fm.horizontalAdvance(QStringLiteral("encoder.l….fc1"))).right(4),
                 QStringLiteral(".fc1"));

        // The Sweep tab: a trace's sweep has no runs or steps to set, and stays within its width.
        mpx::ui::SweepPanel* sweep = w.sweepPanel();
        QScrollArea* area = showTab(w, sweep);
        QVERIFY(area);
        QVERIFY(!sweep->rowShown(sweep->runsField()));
        QVERIFY(!sweep->rowShown(sweep->stepsField()));
        sweep->setGrid("scaler.init_scale", "2^8..2^20*2", "scaler.growth_interval", "2^4..2^10*2", "pytorch");
        QSignalSpy done(sweep->job(), &gui::SweepJob::finished);
        QCOMPARE(sweep->start(), QString());
        QVERIFY(done.wait(20'000));
        QTest::qWait(200);
        QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
        // The sweep's message has the status bar for a while; once it goes, the verdict is back.
        bar->clearMessage();
        QTRY_VERIFY(bar->currentMessage().startsWith(QStringLiteral("Verdict (pytorch rule): ")));
        w.resize(1280, 600);  // shorter: a vertical scroll bar takes its width from the form, which still fits
        QTest::qWait(200);
        QVERIFY(area->verticalScrollBar()->maximum() > 0);
        QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
        if (const QByteArray png = qgetenv("MPX_TRACE_PNG"); !png.isEmpty())
            (void)w.grab().save(QString::fromLocal8Bit(png).replace(QStringLiteral(".png"), classroom ? QStringLiteral("-classroom.png") : QStringLiteral("-1280.png")));

        // Back to training: the forms return, the Sweep tab's rows too, the status fields.
        w.reset();
        QTRY_VERIFY_WITH_TIMEOUT(!w.store()->showsOutsideSession(), 10'000);
        QVERIFY(!setup->showsTrace());
        QVERIFY(sweep->rowShown(sweep->runsField()));
        QVERIFY(sweep->rowShown(sweep->stepsField()));
    }
};

int main(int argc, char** argv) {
    QTemporaryDir home;
    qputenv("HOME", home.path().toUtf8());
    qputenv("XDG_CONFIG_HOME", (home.path() + "/.config").toUtf8());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestTraceSession t;
    return QTest::qExec(&t, argc, argv);
}
#include "test_trace_view.moc"
