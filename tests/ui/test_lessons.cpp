// Guided lessons: every teaching preset carries a lesson of 3 to 6 sentences, every chart a lesson
// names exists in the chart table, and loading a lesson shows the side panel, highlights those charts
// (and opens the format explorer where the lesson asks for it).
#include <QDockWidget>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx::ui;

namespace {

const char* const k_teaching[] = {"formats", "underflow", "lost-updates", "bf16-no-scaler", "overflow-storm", "hysteresis",
                                   "accumulation", "fp4"};

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
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
