// The desktop app end to end on the offscreen platform: a three-run comparison trains on the worker
// thread, the charts hold exactly what the engine records, a live scaler change lands at the next
// step, reset starts over identically, the CSV export reads back, and errors leave the app usable.
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/config_bridge.hpp"
#include "engine/export.hpp"
#include "engine/session.hpp"
#include "ui/charts_panel.hpp"
#include "ui/event_log_panel.hpp"
#include "ui/main_window.hpp"
#include "ui/message_bar.hpp"
#include "ui/setup_panel.hpp"

using mpx::gui::EngineController;
using mpx::gui::EngineState;
using mpx::gui::Metric;
using mpx::gui::RecordStore;
using mpx::ui::ChartId;
using mpx::ui::MainWindow;

namespace {

mpx::SessionConfig smallConfig(long long steps = 400) {
    mpx::SessionConfig c = mpx::load_config("default");
    c.steps = steps;
    c.runs = {"fp32", "amp-fp16", "amp-bf16"};
    return c;
}

// The records an independent Session makes for the same configuration (the engine is deterministic).
std::vector<std::vector<mpx::StepRecord>> reference(const mpx::SessionConfig& c, int steps) {
    mpx::Session s(c);
    std::vector<std::vector<mpx::StepRecord>> out;
    for (int i = 0; i < steps; ++i) out.push_back(s.step());
    return out;
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;
    QTemporaryDir dir;

    // Runs to exactly `steps` (the worker stops there) and waits until the window has drawn them.
    void runTo(qint64 steps) {
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
    }
    void applyAndWait(const mpx::SessionConfig& c) {
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
    }
    void init() {
        w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    }
    void cleanup() { w.reset(); }

    void three_runs_train_and_the_charts_hold_the_engine_records() {
        const mpx::SessionConfig c = smallConfig();
        applyAndWait(c);
        QCOMPARE(w->store()->runCount(), 3);
        QSignalSpy recorded(w->store(), &RecordStore::stepsRecorded);
        runTo(60);
        QVERIFY(recorded.count() >= 1);
        QVERIFY(recorded.count() <= 60);  // never one signal per step... at most one per drain
        w->charts()->refresh();
        const auto ref = reference(c, 60);
        auto* loss = w->charts()->plot(ChartId::loss);
        auto* scale = w->charts()->plot(ChartId::scale);
        for (int r = 0; r < 3; ++r) {
            const QList<QPointF> pts = loss->points(w->charts()->rawLossSeries(r));
            QCOMPARE(pts.size(), 60);  // the plot is wider than 60 pixels: one point per step
            const QList<QPointF> sc = scale->points(w->charts()->scaleSeries(r));
            QCOMPARE(sc.size(), 60);
            for (int i = 0; i < 60; ++i) {
                const mpx::StepRecord& e = ref[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)];
                QCOMPARE(pts[i].x(), double(i));
                QCOMPARE(pts[i].y(), double(float(e.loss)));
                QCOMPARE(sc[i].y(), e.loss_scale);
            }
        }
        // FP16 runs with PyTorch's scaler at 2^16; FP32 and BF16 need none (scale 1).
        QCOMPARE(scale->points(w->charts()->scaleSeries(1)).front().y(), 65536.0);
        QCOMPARE(scale->points(w->charts()->scaleSeries(2)).front().y(), 1.0);
    }

    void a_live_scaler_change_takes_effect_at_the_next_step() {
        applyAndWait(smallConfig(100'000));
        w->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= 20, 60'000);
        QSignalSpy applied(w->engine(), &EngineController::settingsApplied);
        mpx::ScalerConfig s = mpx::scaler_preset("pytorch");
        s.kind = mpx::ScalerKind::fixed;
        s.init_scale = 1024;
        w->engine()->setScaler(s);  // while the worker is running
        QVERIFY(applied.wait(10'000));
        const qint64 k = applied.front().at(0).toLongLong();
        QVERIFY(k >= 20);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->steps() >= k + 10, 60'000);
        w->pause();
        const auto& h = w->store()->history(1);  // amp-fp16 follows the session's scaler
        QCOMPARE(h.at(Metric::lossScale, k - 1).min, 65536.0);
        for (qint64 step = k; step < k + 10; ++step) QCOMPARE(h.at(Metric::lossScale, step).min, 1024.0);
        QCOMPARE(w->store()->history(0).at(Metric::lossScale, k).min, 1.0);  // fp32: no scaler, untouched
        // The change is in the event log at step k.
        bool logged = false;
        for (const auto& row : w->store()->log())
            logged |= row.kind == mpx::gui::LogKind::setting && row.step == k;
        QVERIFY(logged);
    }

    void reset_starts_over_with_identical_steps() {
        applyAndWait(smallConfig());
        runTo(30);
        const double before = w->store()->history(1).at(Metric::loss, 29).min;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->reset();
        QVERIFY(started.wait(10'000));
        QCOMPARE(w->store()->steps(), 0);
        QCOMPARE(int(w->store()->log().size()), 0);
        QTRY_COMPARE(w->engine()->state(), EngineState::ready);
        runTo(30);
        QCOMPARE(w->store()->history(1).at(Metric::loss, 29).min, before);
    }

    void a_setting_that_needs_a_reset_says_so_until_reset() {
        applyAndWait(smallConfig());
        QVERIFY(w->resetBanner()->text().isEmpty());
        w->setupPanel()->setRunChecked(QStringLiteral("tf32"), true);
        QVERIFY(w->resetBanner()->text().contains(QStringLiteral("need a reset")));
        QCOMPARE(w->store()->runCount(), 3);  // the running session is unchanged
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->reset();
        QVERIFY(started.wait(10'000));
        QCOMPARE(w->store()->runCount(), 4);
        QCOMPARE(w->store()->session()->runs.back().label, QStringLiteral("tf32"));
        QVERIFY(w->resetBanner()->text().isEmpty());
    }

    void export_csv_reads_back_every_step_of_every_run() {
        const mpx::SessionConfig c = smallConfig();
        applyAndWait(c);
        runTo(25);
        const QString path = dir.filePath(QStringLiteral("runs.csv"));
        QSignalSpy exported(w->engine(), &EngineController::exported);
        w->exportCsv(path);
        QVERIFY(exported.wait(10'000));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1 + 25 * 3);
        QCOMPARE(lines.front() + QStringLiteral("\r\n"), QString::fromStdString(mpx::csv_header()));
        const auto ref = reference(c, 25);
        // Row 1 + 3·i + r is step i of run r; the loss column round-trips exactly.
        for (int i : {0, 12, 24})
            for (int r = 0; r < 3; ++r) {
                const QStringList cols = lines[1 + 3 * i + r].split(QLatin1Char(','));
                QCOMPARE(cols[3].toLongLong(), qint64(i));
                QCOMPARE(cols[4].toDouble(), ref[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)].loss);
            }
        // The sidecar reproduces the configuration.
        const mpx::gui::ConfigResult back = mpx::gui::configFromSidecar(dir.filePath(QStringLiteral("runs.json")));
        QVERIFY2(back.config.has_value(), qPrintable(back.error));
        QCOMPARE(mpx::gui::configToJson(*back.config), mpx::gui::configToJson(c));
    }

    void each_scaler_preset_says_which_release_it_reproduces() {
        // The preset list's tooltips are the engine's table (issue 13), not a copy of it.
        QComboBox* presets = nullptr;
        for (auto* box : w->findChildren<QComboBox*>())
            if (box->findText(QStringLiteral("deepspeed-legacy")) >= 0) presets = box;
        QVERIFY(presets);
        const auto text = [](std::string_view v) {
            return QString::fromUtf8(v.data(), static_cast<qsizetype>(v.size()));
        };
        for (const auto& name : mpx::scaler_preset_names()) {
            const int i = presets->findText(QString::fromStdString(name));
            QVERIFY2(i >= 0, name.c_str());
            const QString tip = presets->itemData(i, Qt::ToolTipRole).toString();
            const mpx::ScalerPresetSource src = mpx::scaler_preset_source(name);
            QVERIFY2(tip.contains(text(src.framework)) && tip.contains(text(src.source)), qPrintable(tip));
        }
        presets->setCurrentIndex(presets->findText(QStringLiteral("deepspeed")));
        QVERIFY2(presets->toolTip().contains(QStringLiteral("DeepSpeed >= 0.17.1")), qPrintable(presets->toolTip()));
        presets->setCurrentIndex(presets->findText(QStringLiteral("deepspeed-legacy")));
        QVERIFY2(presets->toolTip().contains(QStringLiteral("DeepSpeed <= 0.17.0")), qPrintable(presets->toolTip()));
    }

    void a_malformed_preset_gives_a_message_and_the_app_stays_usable() {
        applyAndWait(smallConfig());
        const QString bad = dir.filePath(QStringLiteral("broken.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{ \"runs\": [\"fp32\", ");
        f.close();
        w->loadConfigFile(bad);
        QVERIFY(w->messages()->text().contains(QStringLiteral("broken.json")));
        QVERIFY(w->messages()->text().contains(QStringLiteral("not valid JSON")));
        QCOMPARE(w->messages()->kind(), mpx::ui::MessageBar::Kind::error);
        runTo(10);  // the previous session still trains
        QCOMPARE(w->store()->runCount(), 3);
    }

    void the_last_settings_are_remembered() {
        mpx::SessionConfig c = smallConfig(1234);
        c.scaler.growth_interval = 77;
        applyAndWait(c);
        w->charts()->setLossLogScale(false);
        w->close();  // saves window layout, chart options and the configuration
        const auto last = MainWindow::lastConfig();
        QVERIFY(last.has_value());
        QCOMPARE(last->steps, 1234);
        QCOMPARE(last->scaler.growth_interval, 77);
        MainWindow again;
        QVERIFY(!again.charts()->lossLogScale());
        const QString png = dir.filePath(QStringLiteral("charts.png"));
        QVERIFY(w->exportChartsPng(png));
        QVERIFY(QImage(png).width() > 500);
    }

    void an_engine_error_is_shown_not_thrown() {
        applyAndWait(smallConfig());
        mpx::SessionConfig c = smallConfig();
        c.model.sizes = {3, 8, 2};  // spirals have 2 features: the Session throws a ConfigError
        QSignalSpy failed(w->engine(), &EngineController::runFailed);
        w->engine()->configure(c);  // straight to the worker, past the window's own checks
        QVERIFY(failed.wait(10'000));
        QVERIFY(failed.front().at(0).toString().contains(QStringLiteral("model.sizes")));
        QTRY_VERIFY(w->messages()->text().contains(QStringLiteral("model.sizes")));
        runTo(5);  // the old session is still there
        QCOMPARE(w->store()->runCount(), 3);
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
