// Guided lessons: every teaching preset carries a lesson of 3 to 6 sentences, every chart a lesson
// names exists in the chart table, and loading a lesson shows the side panel, highlights those charts
// (and opens the format explorer where the lesson asks for it). The hysteresis lesson's point is in
// the chart it names (issue 27 item 3): each run's scale events in a lane of their own.
#include <QChartView>
#include <QTextBrowser>
#include <QUrl>
#include <QDockWidget>
#include <QLineSeries>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx::ui;
using mpx::gui::LogKind;

namespace {

const char* const k_teaching[] = {"formats", "underflow", "lost-updates", "bf16-no-scaler", "overflow-storm", "hysteresis",
                                   "accumulation", "fp4", "gradient-penalty", "attention-overflow", "keep-ends-in-bf16",
                                   "softmax-and-norms", "fp16-for-rl"};

int sentences(const QString& text) {
    return int(text.count(QRegularExpression(QStringLiteral("[.?!](\\s|$)"))));
}

}  // namespace

class TestLessons : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void every_teaching_preset_has_a_lesson_data() {
        QTest::addColumn<QString>("preset");
        for (const char* p : k_teaching) QTest::newRow(p) << QString::fromLatin1(p);
    }
    void every_teaching_preset_has_a_lesson() {
        QFETCH(QString, preset);
        const mpx::SessionConfig c = mpx::load_config(preset.toStdString());
        const QString text = QString::fromStdString(c.lesson);
        const Lesson l = parseLesson(text);
        QVERIFY2(l.unknownCharts.isEmpty(), qPrintable(l.unknownCharts.join(", ")));
        QVERIFY2(!l.charts.isEmpty(), "a lesson names the chart to look at");
        const QString plain = QString(text).remove(QRegularExpression(QStringLiteral("\\{[^}]*\\}")));
        const int n = sentences(plain);
        QVERIFY2(n >= 3 && n <= 6, qPrintable(QStringLiteral("%1 sentences").arg(n)));
        QVERIFY(text.contains(QStringLiteral("redict")));  // what to predict before pressing Run
    }

    // Any preset, teaching or not: a chart a lesson names is a chart the window has.
    void every_named_chart_exists() {
        for (const std::string& name : mpx::preset_names()) {
            const Lesson l = parseLesson(QString::fromStdString(mpx::load_config(name).lesson));
            QVERIFY2(l.unknownCharts.isEmpty(), name.c_str());
            for (ChartId id : l.charts) QVERIFY(!chartPlainTitle(id).isEmpty());
        }
    }

    void markup_names_charts_by_title_and_reports_unknown_ones() {
        const Lesson l = parseLesson(QStringLiteral("Watch {chart:underflow} and {chart:nope}, then {explorer:0x1p-24}."));
        QCOMPARE(l.charts, QList<ChartId>{ChartId::underflow});
        QCOMPARE(l.unknownCharts, QStringList{QStringLiteral("nope")});
        QCOMPARE(l.explorerValue, QStringLiteral("0x1p-24"));
        QVERIFY(l.html.contains(chartPlainTitle(ChartId::underflow)));
        QVERIFY(!l.html.contains(QStringLiteral("{chart")));
        QCOMPARE(chartPlainTitle(ChartId::scale), QStringLiteral("Loss scale (log₂)"));
    }

    // Any preset: a view or step range a lesson names is one the window has (issue 47 item 8).
    void every_named_view_and_step_range_exists() {
        MainWindow w;
        const QList<LessonView> views = w.lessonViews();
        QCOMPARE(views.size(), 10);
        QCOMPARE(views[4].name, QStringLiteral("updates"));
        QCOMPARE(views[4].title, QStringLiteral("Updates"));
        for (const std::string& name : mpx::preset_names()) {
            const Lesson l = parseLesson(QString::fromStdString(mpx::load_config(name).lesson), views);
            QVERIFY2(l.unknownViews.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + l.unknownViews.join(", ")));
            QVERIFY2(l.badSteps.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + l.badSteps.join(", ")));
        }
        // The lessons that send the class to a view or a stretch of steps say it with a link.
        QCOMPARE(parseLesson(QString::fromStdString(mpx::load_config("lost-updates").lesson), views).views,
                 QStringList{QStringLiteral("updates")});
        QCOMPARE(parseLesson(QString::fromStdString(mpx::load_config("overflow-storm").lesson), views).stepRanges,
                 (QList<StepRange>{{0, 60}}));
    }

    void markup_makes_links_and_reports_unknown_views_and_steps() {
        const QList<LessonView> views{{QStringLiteral("updates"), QStringLiteral("Updates")}};
        const Lesson l = parseLesson(QStringLiteral("See {chart:loss}, the {view:updates} tab, {view:nope}, "
                                                    "{steps:40-60}, {steps: 5 – 9 } and {steps:60-40}."),
                                     views);
        QCOMPARE(l.charts, QList<ChartId>{ChartId::loss});
        QCOMPARE(l.views, QStringList{QStringLiteral("updates")});
        QCOMPARE(l.unknownViews, QStringList{QStringLiteral("nope")});
        QCOMPARE(l.stepRanges, (QList<StepRange>{{40, 60}, {5, 9}}));
        QCOMPARE(l.badSteps, QStringList{QStringLiteral("60-40")});
        QVERIFY(l.html.contains(QStringLiteral("href='chart:loss'")));
        QVERIFY(l.html.contains(QStringLiteral("href='view:updates'")));
        QVERIFY(l.html.contains(QStringLiteral("<b>Updates</b></a> tab")));
        QVERIFY(l.html.contains(QStringLiteral("<a href='steps:40-60'>steps 40–60</a>")));
        QVERIFY(!l.html.contains(QStringLiteral("{")));
    }

    // Clicking a link (the browser's anchorClicked, as a click emits it): a chart below the fold
    // scrolls into the viewport, from another view too; a view opens; a step range zooms the axes.
    void each_link_brings_its_target_into_view() {
        MainWindow w;
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        mpx::SessionConfig c = mpx::load_config("lost-updates");
        c.steps = 100;
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, QStringLiteral("lost-updates"));
        QVERIFY(started.wait(10'000));
        w.run();
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 100, 60'000);
        QTextBrowser* text = w.lessonPanel()->textBrowser();
        const auto click = [&](const char* link) { emit text->anchorClicked(QUrl(QString::fromLatin1(link))); };

        w.setView(MainWindow::View::updates);
        QTRY_VERIFY(!w.charts()->chartInView(ChartId::throughput));  // named by no lesson: below the fold
        click("chart:throughput");
        QCOMPARE(w.view(), MainWindow::View::charts);
        QTRY_VERIFY(w.charts()->chartInView(ChartId::throughput));
        click("chart:lost-updates");
        QTRY_VERIFY(w.charts()->chartInView(ChartId::lostUpdates));

        click("view:updates");
        QCOMPARE(w.view(), MainWindow::View::updates);
        click("view:where");
        QCOMPARE(w.view(), MainWindow::View::where);

        click("steps:40-60");
        QCOMPARE(w.view(), MainWindow::View::charts);
        QVERIFY(!w.charts()->following());
        QCOMPARE(w.charts()->viewX0(), 40.0);
        QCOMPARE(w.charts()->viewX1(), 60.0);
        QVERIFY(!w.lessonPanel()->activate(QUrl(QStringLiteral("chart:nope"))));
        QVERIFY(!w.lessonPanel()->activate(QUrl(QStringLiteral("ftp:x"))));
    }

    void loading_a_lesson_shows_it_and_highlights_its_charts() {
        MainWindow w;
        w.show();
        w.loadConfigFile(QStringLiteral("underflow"));
        QVERIFY(w.lessonDock()->isVisible());
        QVERIFY(w.lessonPanel()->plainText().contains(chartPlainTitle(ChartId::underflow)));
        QVERIFY(w.charts()->highlighted(ChartId::underflow));
        QVERIFY(w.charts()->highlighted(ChartId::loss));
        QVERIFY(!w.charts()->highlighted(ChartId::memory));
        w.loadConfigFile(QStringLiteral("default"));  // no lesson: the panel goes, the highlights too
        QVERIFY(!w.lessonDock()->isVisible());
        QVERIFY(!w.charts()->highlighted(ChartId::underflow));
        w.loadConfigFile(QStringLiteral("formats"));
        auto* ex = w.findChild<FormatExplorer*>();
        QVERIFY(ex && ex->isVisible());
        QCOMPARE(ex->text(), QStringLiteral("65520"));
        w.engine()->pause();
    }

    // Three runs' lines coincide between 2^21 and 2^25; what tells the scalers apart is what each
    // does at an overflow. Their lanes under the Loss scale chart show it: PyTorch's holds red
    // diamonds (halved) only, DeepSpeed's and Megatron's first a hollow one (kept by hysteresis),
    // then a red one when another overflow follows. Each lane's marks are its run's log rows.
    void hysteresis_shows_each_runs_overflows_in_its_lane() {
        MainWindow w;
        w.resize(1280, 800);
        w.show();
        mpx::SessionConfig c = mpx::load_config("hysteresis");
        c.steps = 300;
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, QStringLiteral("hysteresis"));
        QVERIFY(started.wait(10'000));
        w.run();
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), mpx::gui::EngineState::finished, 120'000);
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 300, 10'000);
        ChartsPanel* charts = w.charts();
        charts->refresh();
        QCoreApplication::processEvents();

        PlotWidget* p = charts->plot(ChartId::scale);
        QCOMPARE(charts->laneRuns(ChartId::scale), (QList<int>{0, 1, 2}));
        QCOMPARE(p->laneCount(), 3);
        QCOMPARE((QStringList{p->laneName(0), p->laneName(1), p->laneName(2)}),
                 (QStringList{"pytorch", "deepspeed", "megatron"}));
        auto steps = [&](int run, ChartsPanel::ScaleMark kind) { return p->laneSteps(charts->laneMarks(ChartId::scale, run, kind)); };
        auto first = [&](int run, LogKind kind) {
            for (const mpx::gui::LogRow& r : w.store()->log())
                if (r.run == run && r.kind == kind) return double(r.step);
            return -1.0;
        };
        // PyTorch: no overflow kept, the first one halves (after the climb: the lesson says step 250).
        QVERIFY(steps(0, ChartsPanel::ScaleMark::kept).isEmpty());
        const double halved = first(0, LogKind::backoff);
        QVERIFY(halved >= 250);
        QVERIFY(steps(0, ChartsPanel::ScaleMark::halved).contains(halved));
        // DeepSpeed and Megatron keep that same first overflow and halve at a later one.
        for (int run : {1, 2}) {
            const double kept = first(run, LogKind::hysteresis);
            QCOMPARE(kept, halved);
            QVERIFY(steps(run, ChartsPanel::ScaleMark::kept).contains(kept));
            QVERIFY(!steps(run, ChartsPanel::ScaleMark::halved).contains(kept));
            const double later = first(run, LogKind::backoff);
            QVERIFY(later > kept);
            QVERIFY(steps(run, ChartsPanel::ScaleMark::halved).contains(later));
            QVERIFY(!steps(run, ChartsPanel::ScaleMark::grew).isEmpty());
        }
        // The lanes lie under the plot, one below the other, inside the chart's frame.
        for (int lane = 0; lane < 3; ++lane) {
            const QRectF r = p->laneRect(lane);
            QVERIFY(r.top() >= p->plotRect().bottom());
            QVERIFY(r.bottom() <= p->height() - 2);
            if (lane > 0) QVERIFY(r.top() >= p->laneRect(lane - 1).bottom());
            // Its name whole, left of the plot, under none of its marks (issue 47 item 12: names sat
            // left, right or mid-lane by where the marks left room, and under them where none did).
            const QRectF name = p->laneNameRect(lane);
            QCOMPARE(p->laneShownName(lane), p->laneName(lane));
            QVERIFY(name.right() <= p->plotRect().left());
            QCOMPARE(name.left(), p->laneNameRect(0).left());
            QVERIFY(!p->laneMarkRects(lane).isEmpty());
            for (const QRectF& m : p->laneMarkRects(lane)) QVERIFY(!m.intersects(name));
        }
        // DeepSpeed's line is no longer hidden under Megatron's: equal scales at step 0, drawn apart.
        QList<double> atStart;
        for (int run : {1, 2})
            for (QAbstractSeries* s : p->findChild<QChartView*>()->chart()->series())
                if (auto* line = qobject_cast<QLineSeries*>(s); line && line->name() == w.store()->session()->runs[run].label)
                    atStart << line->at(0).y();
        QCOMPARE(atStart.size(), 2);
        QCOMPARE(p->points(charts->scaleSeries(1)).front().y(), p->points(charts->scaleSeries(2)).front().y());
        QVERIFY(atStart[0] > atStart[1]);
        w.engine()->pause();
    }
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
