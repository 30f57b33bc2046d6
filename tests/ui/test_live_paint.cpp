// What a class sees on screen equals what a fresh paint draws: a lesson's starred charts, updated
// live through a whole run, leave no stale axis labels or ticks behind (issue 27, item 1). The
// screen is the window's backing store as the platform holds it (QScreen::grabWindow), which is
// what was last painted; a grab() of the widget repaints it from scratch and never showed them.
#include <QApplication>
#include <QFile>
#include <QScreen>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>

#include "ui/kit/plot_widget.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx::ui;
using mpx::gui::EngineState;

namespace {

// Pixels that differ between what is on screen and a fresh paint of the same widget.
int stale_pixels(MainWindow& w, PlotWidget* p) {
    const QPoint at = p->mapTo(&w, QPoint(0, 0));
    const QImage live = w.screen()->grabWindow(w.winId(), at.x(), at.y(), p->width(), p->height())
                            .toImage().convertToFormat(QImage::Format_RGB32);
    const QImage fresh = p->grab().toImage().convertToFormat(QImage::Format_RGB32);
    if (live.size() != fresh.size()) {
        qWarning("on screen %dx%d, fresh %dx%d", live.width(), live.height(), fresh.width(), fresh.height());
        return -1;
    }
    int differ = 0;
    for (int y = 0; y < live.height(); ++y)
        for (int x = 0; x < live.width(); ++x) differ += live.pixel(x, y) != fresh.pixel(x, y);
    return differ;
}

}  // namespace

class TestLivePaint : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // Before Run, the first thing a class sees: log axes tick whole powers, never "1e1 1e1 1e1 1e0".
    void empty_log_charts_tick_whole_powers() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        int log_charts = 0;
        for (int c = 0; c < k_chart_count; ++c) {
            PlotWidget* p = w.charts()->plot(static_cast<ChartId>(c));
            if (p->yScale() == PlotWidget::YScale::linear) continue;
            ++log_charts;
            QVERIFY2(p->yTickInterval() >= 1.0, qPrintable(QString("chart %1: %2").arg(c).arg(p->yTickInterval())));
        }
        QVERIFY(log_charts >= 3);  // training loss, held-out loss, loss scale
    }

    void starred_charts_on_screen_equal_a_fresh_paint_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("chart");
        QTest::newRow("overflow-storm: loss scale") << "overflow-storm" << int(ChartId::scale);
        QTest::newRow("underflow: gradient underflow") << "underflow" << int(ChartId::underflow);
    }
    void starred_charts_on_screen_equal_a_fresh_paint() {
        QFETCH(QString, preset);
        QFETCH(int, chart);
        MainWindow w;
        w.resize(1600, 1000);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.loadConfigFile(preset);
        PlotWidget* p = w.charts()->plot(static_cast<ChartId>(chart));
        QVERIFY(p->isHighlighted());  // the chart the lesson names
        // Stopped midway, after live updates, then at the end: the screen shows the current frame only.
        w.run(60);
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::paused, 60'000);
        QTest::qWait(300);
        QCoreApplication::processEvents();
        QCOMPARE(stale_pixels(w, p), 0);
        w.run();
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::finished, 120'000);
        QTest::qWait(300);
        QCoreApplication::processEvents();
        QCOMPARE(stale_pixels(w, p), 0);
    }
};

// A 1920×1080 screen for the offscreen platform (its "configfile" option): the window at 1600×1000
// shows every chart without scrolling, so each lies whole in the backing store.
int main(int argc, char** argv) {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("screen.json"));
    QFile f(file);
    if (f.open(QIODevice::WriteOnly))
        f.write(R"({"screens": [{"name": "desk", "x": 0, "y": 0, "width": 1920, "height": 1080,
                   "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    f.close();
    qputenv("QT_QPA_PLATFORM", QByteArray("offscreen:configfile=") + file.toLocal8Bit());
    QApplication app(argc, argv);
    TestLivePaint t;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&t, argc, argv);
}
#include "test_live_paint.moc"
