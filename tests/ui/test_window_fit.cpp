// Issue 27 item 2: the window fits a 1280×800 laptop. On an offscreen screen of that size the
// window opens within the available area, what it needs (minimumSizeHint) fits it, the charts keep
// readable tiles (fewer columns, scrolling below), and the run legend never shows two runs alike.
#include <QApplication>
#include <QCheckBox>
#include <QFile>
#include <QScreen>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTabWidget>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/window/main_window.hpp"

using mpx::ui::MainWindow;

namespace {
// Whether the window's session is c's (a session the window started on its own may come first;
// the engine may spell a label in full, so the first run's base is compared).
bool sessionIs(const MainWindow& w, const mpx::SessionConfig& c) {
    const auto s = w.store()->session();
    return s && s->runs.size() == c.runs.size() && s->config.name == c.name;
}
}  // namespace

class TestWindowFit : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);  // no settings of the user's (nor a saved geometry)
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test-fit"));
        const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
        if (avail.size() != QSize(1280, 800)) QSKIP("the offscreen platform ignored the 1280×800 screen's configuration");
    }

    void a_lesson_fits_a_laptop_screen_data() {
        QTest::addColumn<QString>("preset");
        QTest::newRow("hysteresis") << "hysteresis";  // opened 1637 px wide
        QTest::newRow("fp8") << "fp8";                // opened 1652 px wide
        QTest::newRow("lost-updates") << "lost-updates";
    }
    void a_lesson_fits_a_laptop_screen() {
        QFETCH(QString, preset);
        const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
        MainWindow w;
        QVERIFY(w.width() <= avail.width());
        QVERIFY(w.height() <= avail.height());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        mpx::SessionConfig c = mpx::load_config(preset.toStdString());
        c.steps = 5;
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, preset);
        QVERIFY(started.wait(10'000));
        QTRY_VERIFY_WITH_TIMEOUT(sessionIs(w, c), 10'000);
        QCoreApplication::processEvents();
        // The lesson's dock is open and the window still fits; so does all it needs.
        QVERIFY(w.frameGeometry().width() <= avail.width());
        QVERIFY(w.frameGeometry().height() <= avail.height());
        QVERIFY2(w.minimumSizeHint().width() <= avail.width(), qPrintable(QString::number(w.minimumSizeHint().width())));
        QVERIFY2(w.minimumSizeHint().height() <= avail.height(), qPrintable(QString::number(w.minimumSizeHint().height())));
        w.resize(avail.size());
        QCoreApplication::processEvents();
        QTRY_VERIFY(w.width() <= avail.width());

        // Every tile keeps at least its minimum width: no tiles clipped into each other.
        const mpx::ui::ChartsPanel* charts = w.charts();
        QVERIFY(charts->chartColumns() >= 1);
        for (const auto* p : charts->chartArea()->findChildren<mpx::ui::PlotWidget*>())
            QVERIFY(p->width() >= p->minimumWidth());

        // The legend: one label per run, no two alike, each the run's label or a middle elision of it.
        const QStringList legend = charts->legendTexts();
        QCOMPARE(legend.size(), static_cast<qsizetype>(c.runs.size()));
        for (int a = 0; a < legend.size(); ++a) {
            const QString full = w.store()->session()->runs[static_cast<std::size_t>(a)].label;
            if (legend[a] != full) {
                QVERIFY2(legend[a].contains(QChar(0x2026)), qPrintable(legend[a]));
                QVERIFY(full.startsWith(legend[a].section(QChar(0x2026), 0, 0)));
                QVERIFY2(full.endsWith(legend[a].section(QChar(0x2026), 1)), qPrintable(legend[a] + " / " + full));
            }
            for (int b = a + 1; b < legend.size(); ++b) QVERIFY2(legend[a] != legend[b], qPrintable(legend.join(" | ")));
        }
    }

    // Narrower than any laptop: the legend takes fewer runs to a row and keeps each label whole
    // (only a label wider than the whole row is shortened, in the middle).
    void a_narrow_legend_keeps_the_runs_apart() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        mpx::ui::ChartsPanel narrow(w.store());  // a panel of its own, sized by the test alone
        narrow.resize(360, 500);                  // 3 runs: about 70 px of text each
        narrow.show();
        mpx::SessionConfig c = mpx::load_config("hysteresis");
        c.steps = 5;
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, QStringLiteral("hysteresis"));
        QVERIFY(started.wait(10'000));
        QTRY_VERIFY_WITH_TIMEOUT(sessionIs(w, c), 10'000);
        QCoreApplication::processEvents();
        QCOMPARE(narrow.chartColumns(), 1);
        // 360 px: fewer runs to a row, each label whole.
        const QStringList whole = narrow.legendTexts();
        QCOMPARE(whole, (QStringList{"amp-fp16+pytorch", "amp-fp16+deepspeed", "amp-fp16+megatron"}));
    }
};

// A 1280×800 screen for the offscreen platform (its "configfile" option), set before the application.
int main(int argc, char** argv) {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("screen.json"));
    QFile f(file);
    if (f.open(QIODevice::WriteOnly))
        f.write(R"({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1280, "height": 800,
                   "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    f.close();
    qputenv("QT_QPA_PLATFORM", QByteArray("offscreen:configfile=") + file.toLocal8Bit());
    QApplication app(argc, argv);
    TestWindowFit t;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&t, argc, argv);
}
#include "test_window_fit.moc"
