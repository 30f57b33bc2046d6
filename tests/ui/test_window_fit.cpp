// Issue 27 item 2: the window fits a 1280×800 laptop. On an offscreen screen of that size the
// window opens within the available area, what it needs (minimumSizeHint) fits it, the charts keep
// readable tiles (fewer columns, scrolling below), and the run legend never shows two runs alike.
// Item 7 on the same screen, normal and classroom: no chart title is cut mid-word (each shows whole
// or less its trailing qualifiers, its name whole), the charts' step axes tick alike, the lesson's
// charts are in view without scrolling, and classroom enlarges the Memory chart's text too.
#include <QApplication>
#include <QBarCategoryAxis>
#include <QChartView>
#include <QCheckBox>
#include <QFile>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QLegend>
#include <QScreen>
#include <QScrollArea>
#include <QTextDocument>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTabWidget>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/panels/event_log_panel.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/classroom.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::ui::ChartId;
using mpx::ui::MainWindow;
using mpx::ui::PlotWidget;

namespace {
// Whether the window's session is c's (a session the window started on its own may come first;
// the engine may spell a label in full, so the first run's base is compared).
bool sessionIs(const MainWindow& w, const mpx::SessionConfig& c) {
    const auto s = w.store()->session();
    return s && s->runs.size() == c.runs.size() && s->config.name == c.name;
}

QString plain(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText().simplified();
}

// The chart's title as Qt Charts laid it out and shows it (its text item in the chart's font).
QString titleOnScreen(PlotWidget* p) {
    auto* view = p->findChild<QChartView*>();
    for (QGraphicsItem* item : view->scene()->items())
        if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible() && t->font() == view->chart()->titleFont())
            return t->toPlainText().simplified();
    return {};
}

// Every visible text of the chart, as shown.
QStringList textsOnScreen(PlotWidget* p) {
    QStringList out;
    for (QGraphicsItem* item : p->findChild<QChartView*>()->scene()->items())
        if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible()) out << t->toPlainText().simplified();
    return out;
}

// A chart's name: its plain title before any qualifier ("Training loss", "Loss scale").
QString chartName(ChartId id) {
    return mpx::ui::chartPlainTitle(id).section(QStringLiteral(" ("), 0, 0).section(QStringLiteral(" · "), 0, 0);
}

// The hysteresis lesson trained past its first overflows (step 253), in a window filling the screen.
void trainHysteresis(MainWindow& w, bool classroom) {
    const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
    w.resize(avail.size());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    mpx::SessionConfig c = mpx::load_config("hysteresis");
    c.steps = 300;
    QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
    w.applyConfig(c, QStringLiteral("hysteresis"));
    QVERIFY(started.wait(10'000));
    QTRY_VERIFY_WITH_TIMEOUT(sessionIs(w, c), 10'000);
    w.setClassroom(classroom);
    w.run();
    QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::finished, 120'000);
    QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 300, 10'000);
    w.charts()->refresh();
    w.grab();  // lays out and renders every chart
    QCoreApplication::processEvents();
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
        QTest::newRow("gradient-penalty") << "gradient-penalty";  // four runs, the longest labels
        QTest::newRow("attention-overflow") << "attention-overflow";  // five runs, GPT switches in their labels
        QTest::newRow("keep-ends-in-bf16") << "keep-ends-in-bf16";    // MXFP4 with its first/last switches in two labels
        QTest::newRow("softmax-and-norms") << "softmax-and-norms";    // four runs, three GPT switches in their labels
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

    void no_chart_title_is_cut_data() {
        QTest::addColumn<bool>("classroom");
        QTest::newRow("normal") << false;        // "Training loss (each step's ba…" at 1500 px
        QTest::newRow("classroom") << true;      // "Loss scale (log₂) ◆ skipped st…": "▲ grew" never showed
    }
    void no_chart_title_is_cut() {
        QFETCH(bool, classroom);
        MainWindow w;
        trainHysteresis(w, classroom);
        for (int i = 0; i < mpx::ui::k_chart_count; ++i) {
            const auto id = static_cast<ChartId>(i);
            PlotWidget* p = w.charts()->plot(id);
            const QString shown = titleOnScreen(p);
            const QString what = QStringLiteral("%1: \"%2\"").arg(chartName(id), shown);
            // What Qt shows is the fitted title, not one it elided further.
            QVERIFY2(!shown.contains(QStringLiteral("...")) && !shown.contains(QChar(0x2026)), qPrintable(what));
            QCOMPARE(shown, plain(p->shownTitle()));
            // The title given, or a start of it ending before a qualifier, with the chart's name whole.
            QVERIFY2(plain(p->title()).startsWith(shown), qPrintable(what + " of " + plain(p->title())));
            QVERIFY2(QString(shown).remove(QStringLiteral("★ ")).startsWith(chartName(id)), qPrintable(what));
            // Likewise the axis titles, whose texts must be among the chart's texts whole.
            const QStringList texts = textsOnScreen(p);
            if (!p->shownXTitle().isEmpty()) QVERIFY2(texts.contains(plain(p->shownXTitle())), qPrintable(texts.join(" | ")));
            for (const QString& t : texts) QVERIFY2(!t.contains(QStringLiteral("...")), qPrintable(chartName(id) + ": " + t));
        }
        // The scale chart's key: the marks its lanes show, each named.
        const QString key = plain(w.charts()->plot(ChartId::scale)->shownXTitle());
        QVERIFY2(key.contains(QStringLiteral("◆ halved")) && key.contains(QStringLiteral("◇ kept")), qPrintable(key));
        w.engine()->pause();
    }

    // The charts share one step axis, and read as one: the same ticks on each (they were "0 500"
    // beside "0 200 400 600", each chart picking for its own width).
    void linked_step_axes_share_their_ticks_data() { no_chart_title_is_cut_data(); }
    void linked_step_axes_share_their_ticks() {
        QFETCH(bool, classroom);
        MainWindow w;
        trainHysteresis(w, classroom);
        const double tick = w.charts()->plot(ChartId::loss)->xTickInterval();
        QVERIFY(tick >= 50 && tick <= 300);  // 0…300 in 2 to 6 intervals
        for (int i = 0; i < mpx::ui::k_chart_count; ++i)
            if (static_cast<ChartId>(i) != ChartId::memory)
                QCOMPARE(w.charts()->plot(static_cast<ChartId>(i))->xTickInterval(), tick);
        w.engine()->pause();
    }

    // The chart the lesson names first is the first tile, in view on a laptop without scrolling.
    void the_lessons_charts_come_first_data() { no_chart_title_is_cut_data(); }
    void the_lessons_charts_come_first() {
        QFETCH(bool, classroom);
        MainWindow w;
        trainHysteresis(w, classroom);
        const QList<ChartId> order = w.charts()->chartOrder();
        QCOMPARE(order.mid(0, 2), (QList<ChartId>{ChartId::scale, ChartId::loss}));
        QCOMPARE(order.size(), mpx::ui::k_chart_count);
        auto* scroll = w.charts()->findChild<QScrollArea*>();
        PlotWidget* scale = w.charts()->plot(ChartId::scale);
        const QRect tile(scale->mapTo(scroll->viewport(), QPoint(0, 0)), scale->size());
        QVERIFY2(scroll->viewport()->rect().contains(tile),
                 qPrintable(QStringLiteral("tile %1,%2 %3×%4 in %5×%6").arg(tile.x()).arg(tile.y()).arg(tile.width())
                                .arg(tile.height()).arg(scroll->viewport()->width()).arg(scroll->viewport()->height())));
        w.engine()->pause();
    }

    // Issue 47 item 17: where no run has a scaler, the Loss scale chart (one flat line at 2^0) is the
    // last tile, not a top one; with a scaler it keeps its place.
    void a_session_without_scalers_puts_the_scale_chart_last() {
        MainWindow w;
        w.resize(QGuiApplication::primaryScreen()->availableGeometry().size());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        for (const bool scaler : {false, true}) {
            mpx::SessionConfig c = mpx::load_config("default");
            c.lesson.clear();
            c.runs = {"fp32", scaler ? "amp-fp16" : "amp-bf16"};
            c.steps = 5;
            QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
            w.applyConfig(c, QStringLiteral("custom"));
            QVERIFY(started.wait(20'000));
            QTRY_VERIFY_WITH_TIMEOUT(sessionIs(w, c), 20'000);
            const QList<ChartId> order = w.charts()->chartOrder();
            QCOMPARE(order.size(), mpx::ui::k_chart_count);
            if (scaler) QVERIFY(order.indexOf(ChartId::scale) < 4);
            else QCOMPARE(order.last(), ChartId::scale);
        }
    }

    // Issue 47 item 8: every chart a lesson names is in view together in the normal layout at
    // 1280×800, none squeezed to "…" (three named charts, one of them the Memory bars with seven
    // categories, left the third below the fold and the second cut at its foot).
    void every_lessons_named_charts_are_in_view_data() {
        QTest::addColumn<QString>("preset");
        for (const char* p : {"lost-updates", "fp4", "fp8", "hysteresis", "overflow-storm", "underflow", "bf16-no-scaler",
                              "keep-ends-in-bf16", "softmax-and-norms", "attention-overflow"})
            QTest::newRow(p) << QString::fromLatin1(p);
    }
    void every_lessons_named_charts_are_in_view() {
        QFETCH(QString, preset);
        MainWindow w;
        w.resize(QGuiApplication::primaryScreen()->availableGeometry().size());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        mpx::SessionConfig c = mpx::load_config(preset.toStdString());
        const QList<ChartId> named = mpx::ui::parseLesson(QString::fromStdString(c.lesson)).charts;
        QVERIFY2(named.size() >= 2, qPrintable(QString::number(named.size())));  // a lesson that names charts
        c.steps = std::min(c.steps, 40LL);
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, preset);
        QVERIFY(started.wait(20'000));
        QTRY_VERIFY_WITH_TIMEOUT(sessionIs(w, c), 20'000);
        w.run();
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::finished, 120'000);
        w.store()->drainNow();
        w.charts()->refresh();
        w.grab();
        QCoreApplication::processEvents();
        for (ChartId id : named) {
            PlotWidget* p = w.charts()->plot(id);
            QVERIFY2(w.charts()->chartInView(id), qPrintable(chartName(id) + QStringLiteral(": below the fold")));
            const QStringList texts = textsOnScreen(p);
            for (const QString& t : texts) QVERIFY2(!t.contains(QStringLiteral("...")), qPrintable(chartName(id) + ": " + t));
            if (id == ChartId::memory)  // the Kahan buffer the lesson sends the class to, in the legend
                QVERIFY2(texts.contains(QStringLiteral("compensation")), qPrintable(texts.join(" | ")));
        }
        // The event log's summary shows whole under them (it ran past the panel's edge with four
        // runs), naming every run that skipped a step.
        QLabel* summary = w.eventLog()->summary();
        QVERIFY2(mpx::ui::fit::showsWhole(summary->text(), summary->fontMetrics(), summary->contentsRect()),
                 qPrintable(QStringLiteral("%1 in %2×%3").arg(summary->text()).arg(summary->width()).arg(summary->height())));
        QVERIFY(summary->text().startsWith(QStringLiteral("Events: %1").arg(w.store()->log().size())));
        for (int r = 0; r < w.store()->runCount(); ++r)
            if (w.store()->skippedSteps(r) > 0)
                QVERIFY2(summary->text().contains(w.store()->session()->runs[static_cast<std::size_t>(r)].label), qPrintable(summary->text()));
    }

    // Classroom enlarged every chart's text but the Memory chart's (its bars' axes and legend).
    void classroom_enlarges_the_memory_charts_text() {
        MainWindow w;
        trainHysteresis(w, false);
        auto* memory = w.charts()->plot(ChartId::memory)->findChild<QChartView*>()->chart();
        auto categoryFont = [memory] {
            for (QAbstractAxis* a : memory->axes())
                if (auto* c = qobject_cast<QBarCategoryAxis*>(a)) return c->labelsFont().pointSizeF();
            return 0.0;
        };
        const double labels = categoryFont(), legend = memory->legend()->font().pointSizeF();
        QVERIFY(labels > 0);
        w.setClassroom(true);
        QCOMPARE(categoryFont(), labels * mpx::ui::Classroom::k_chartScale);
        QCOMPARE(memory->legend()->font().pointSizeF(), legend * mpx::ui::Classroom::k_chartScale);
        // Its bars are named by what tells the runs apart, not by three elisions of "amp-fp16+…".
        for (QAbstractAxis* a : memory->axes())
            if (auto* c = qobject_cast<QBarCategoryAxis*>(a))
                QCOMPARE(c->categories(), (QStringList{"pytorch", "deepspeed", "megatron"}));
        w.engine()->pause();
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
