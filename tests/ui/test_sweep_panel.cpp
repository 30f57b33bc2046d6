// The Sweep tab on the offscreen platform: a grid trains in the background while the window stays
// live, the heatmap fills with the engine's outcomes, a clicked cell loads exactly that point into
// the main view, Cancel keeps the finished points, and the CSV export reads back; the heatmap writes
// each cell's value, parts the cells and labels an axis in one notation (MPX_HEATMAP_PNG=FILE.png
// saves it). With MPX_SWEEP_SCREENSHOT=FILE.png set, one more row makes the README's screenshot.
#include <QImage>
#include <QSignalSpy>
#include <QDockWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <fstream>
#include <sys/resource.h>

#include <QDir>
#include <QFile>

#include "engine/run/session.hpp"
#include "engine/sweep/sweep.hpp"
#include "ui/panels/setup_panel.hpp"
#include "ui/panels/sweep_panel.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/session/sweep_job.hpp"
#include "ui/views/sweep_heatmap.hpp"
#include "ui/window/main_window.hpp"

using mpx::ui::MainWindow;
using mpx::ui::SweepPanel;

namespace {
mpx::SessionConfig smallBase() {
    mpx::SessionConfig c = mpx::load_config("default");
    mpx::apply_overrides(c, {"data.n_train=512", "data.n_test=128", "train.batch=64", "eval_every=20"});
    return c;
}
}  // namespace

class TestSweepPanel : public QObject {
    Q_OBJECT
private slots:
    // A sweep's workers run at a lower priority than the session the main view trains, so both go
    // on: the main session advances while the sweep runs, and every sweep thread is at nice 10.
    void a_sweep_and_the_main_session_share_the_cores() {
        mpx::gui::SweepJob job;
        mpx::SessionConfig base = smallBase();
        base.steps = 300;
        QVERIFY(job.start(base, {"scaler.init_scale=2^4..2^28*2^4", "scaler.growth_interval=10,100"}, 2)
                    .isEmpty());
        // The threads of this process and their niceness (field 19 of /proc/self/task/*/stat).
        const auto niceness = [] {
            std::vector<int> out;
            for (const QString& tid : QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
                QFile f("/proc/self/task/" + tid + "/stat");
                if (!f.open(QIODevice::ReadOnly)) continue;
                const QString stat = QString::fromUtf8(f.readAll());
                const QStringList fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
                if (fields.size() > 16) out.push_back(fields[16].toInt());  // field 19 counted from 1
            }
            return out;
        };
        int low = 0;
        mpx::Session main(smallBase());
        long long trained = 0;
        while (job.running() && trained < 100000) {
            main.step();  // the main view's session, on this (nice 0) thread
            ++trained;
            if (trained % 20 == 0) {
                const auto n = niceness();
                low = std::max(low, static_cast<int>(std::count(n.begin(), n.end(),
                                                                mpx::gui::SweepJob::k_workerNice)));
                QCoreApplication::processEvents();
            }
            if (low >= 2 && !job.points().empty() && trained >= 200) break;  // both went on
        }
        QVERIFY2(low >= 2, qPrintable(QString::number(low)));  // both workers (caller included)
        QVERIFY(!job.points().empty());
        QVERIFY(trained >= 200);
        job.cancel();
        QCOMPARE(getpriority(PRIO_PROCESS, 0), 0);  // this thread was never lowered
    }

    void sweep_fills_the_heatmap_and_a_cell_loads_its_point() {
        MainWindow w;
        w.applyConfig(smallBase(), QStringLiteral("test"));
        SweepPanel* p = w.sweepPanel();
        QVERIFY(p);
        p->setGrid("scaler.init_scale", "2^8..2^28*2^10", "scaler.growth_interval", "5,50", "pytorch,megatron");
        p->setRuns("amp-fp16");
        p->setSteps(40);
        QSignalSpy done(p->job(), &mpx::gui::SweepJob::finished);
        QCOMPARE(p->start(), QString());
        QVERIFY(done.wait(60000));
        QCOMPARE(done.at(0).at(0).toBool(), false);  // not cancelled
        QCOMPARE(p->job()->points().size(), std::size_t(12));
        // Every cell is drawn inside the map, in its own place
        for (std::size_t i = 0; i < 12; ++i) {
            const QRect r = p->heatmap()->cellRect(i);
            QVERIFY(!r.isEmpty());
            QCOMPARE(p->heatmap()->pointAt(r.center()), std::optional<std::size_t>(i));
        }
        // One notation an axis: every init_scale is a power of two and some are large, so all read
        // 2ᵏ (not "256" beside "2¹⁸"); growth_interval's are plain numbers.
        const auto axis = [&](const std::string& field) {
            const auto& axes = p->job()->grid().axes();
            for (std::size_t i = 0; i < axes.size(); ++i)
                if (axes[i].field == field) return static_cast<int>(i);
            return -1;
        };
        QCOMPARE(p->heatmap()->axisLabels(axis("scaler.init_scale")),
                 (QStringList{QStringLiteral("2⁸"), QStringLiteral("2¹⁸"), QStringLiteral("2²⁸")}));
        QCOMPARE(p->heatmap()->axisLabels(axis("scaler.growth_interval")), (QStringList{QStringLiteral("5"), QStringLiteral("50")}));
        QCOMPARE(p->heatmap()->axisLabels(axis("scaler.preset")), (QStringList{QStringLiteral("pytorch"), QStringLiteral("megatron")}));
        // Each cell writes its value and is parted from the next by a line of the background.
        p->setOutcome("skipped");
        p->heatmap()->resize(900, 500);
        const QImage map = p->heatmap()->grab().toImage();
        const QRgb base = p->heatmap()->palette().color(QPalette::Base).rgb();
        for (std::size_t i = 0; i < 12; ++i) {
            const auto v = mpx::outcome_value(p->job()->points()[i].runs[0], "skipped");
            QVERIFY(v);
            QCOMPARE(p->heatmap()->cellText(i), QString::number(*v, 'g', 4));
            const QRect r = p->heatmap()->cellRect(i);
            QVERIFY(map.pixel(r.left() + 1, r.top() + 1) != base);  // filled
            if (p->job()->grid().coordinates(i)[static_cast<std::size_t>(axis("scaler.init_scale"))] < 2)  // the frame is on the last
                QCOMPARE(map.pixel(r.right(), r.center().y()), base);
        }

        if (const QString shot = qEnvironmentVariable("MPX_HEATMAP_PNG"); !shot.isEmpty()) QVERIFY(p->heatmap()->grab().save(shot));

        // A click on point 7 loads its configuration into the main view
        QSignalSpy chosen(p, &SweepPanel::pointChosen);
        p->heatmap()->show();
        emit p->heatmap()->pointClicked(7);
        QCOMPARE(chosen.count(), 1);
        const mpx::SessionConfig want = p->job()->pointConfig(7);
        QCOMPARE(QString::fromStdString(mpx::to_json(w.currentConfig()).dump()),
                 QString::fromStdString(mpx::to_json(want).dump()));
        // ... and the point's outcomes equal that configuration trained alone
        const auto alone = mpx::run_sweep_point(want, 7);
        QVERIFY(alone);
        QCOMPARE(p->job()->points()[7].runs[0].final_loss, alone->runs[0].final_loss);
        QCOMPARE(p->job()->points()[7].runs[0].skipped, alone->runs[0].skipped);

        QTemporaryDir dir;
        QCOMPARE(p->job()->exportCsv(dir.path() + "/s.csv"), QString());
        const auto spec = mpx::read_sweep_sidecar((dir.path() + "/s.csv").toStdString());
        QCOMPARE(spec.grid.size(), std::size_t(12));
    }

    void cancel_keeps_finished_points() {
        SweepPanel p;
        p.setBaseConfig([] { return smallBase(); });
        p.setGrid("scaler.growth_interval", "1:40:1", "", "", "");
        p.setRuns("amp-fp16");
        p.setSteps(300);
        QSignalSpy progressed(p.job(), &mpx::gui::SweepJob::progressed);
        QSignalSpy done(p.job(), &mpx::gui::SweepJob::finished);
        QCOMPARE(p.start(), QString());
        QVERIFY(progressed.wait(60000));  // the event loop runs while the sweep trains
        p.cancel();
        QVERIFY(done.count() == 1 || done.wait(60000));
        QCOMPARE(done.at(0).at(0).toBool(), true);
        const auto& pts = p.job()->points();
        QVERIFY(!pts.empty() && pts.size() < 40);
        for (std::size_t i = 1; i < pts.size(); ++i) QVERIFY(pts[i - 1].index < pts[i].index);
    }

    void bad_field_is_named() {
        SweepPanel p;
        p.setBaseConfig([] { return smallBase(); });
        p.setGrid("scaler.nope", "1,2", "", "", "");
        QVERIFY(p.start().contains("scaler.nope"));
        QVERIFY(!p.job()->running());
    }

    void screenshot() {
        const QString path = qEnvironmentVariable("MPX_SWEEP_SCREENSHOT");
        if (path.isEmpty()) QSKIP("set MPX_SWEEP_SCREENSHOT=FILE.png to make the README's screenshot");
        MainWindow w;
        w.applyConfig(mpx::load_config("default"), QStringLiteral("default"));
        w.show();
        auto* tabs = w.findChild<QTabWidget*>();
        tabs->setCurrentIndex(tabs->count() - 1);
        if (auto* dock = tabs->parentWidget()) w.resizeDocks({qobject_cast<QDockWidget*>(dock)}, {760}, Qt::Horizontal);
        SweepPanel* p = w.sweepPanel();
        p->setGrid("scaler.init_scale", "2^8..2^36*2^4", "scaler.growth_interval", "2^4..2^11*2", "pytorch");
        p->setRuns("amp-fp16");
        p->setSteps(1000);
        p->setOutcome("skipped");
        QSignalSpy done(p->job(), &mpx::gui::SweepJob::finished);
        QCOMPARE(p->start(), QString());
        QVERIFY(done.wait(600000));
        // Load one cell as normal runs and let it train, as a user would after clicking it
        emit p->heatmap()->pointClicked(27);
        w.run();
        QTRY_VERIFY_WITH_TIMEOUT(w.engine()->step() >= 1000, 120000);
        QTest::qWait(300);
        QVERIFY(w.grab().save(path));
    }
};

QTEST_MAIN(TestSweepPanel)
#include "test_sweep_panel.moc"
