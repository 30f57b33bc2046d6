// Issue 47, items 2–4: the Updates view, the FP8 scaling tab and the FP4 tab whole on a laptop and a
// large screen (a 1280×800 and a 1920×1080 window), normal and classroom, each on its lesson after
// some steps. Read from what Qt lays out: every text the Updates canvas paints shows whole in its
// rect (no "…", no line cut), none overlaps another or the histogram, the upright y title stands
// left of the tick labels, both cure lines are there; every text Qt Charts shows in the views'
// charts is whole (no tick label, title or legend entry "…"), each chart's title keeps its name
// and its step axis is titled; the FP4 bars' values fit their bars' slots and the orange 4 is said.
#include <QApplication>
#include <QChartView>
#include <QFile>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocument>

#include "engine/config/session_config.hpp"
#include "ui/kit/column_chart.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/panels/classroom.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/views/fp4_view.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::ui::MainWindow;
using mpx::ui::PlotWidget;
using mpx::ui::UpdatesView;

namespace {

QString plain(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText().simplified();
}

// Every visible text of the chart as Qt Charts shows it: titles, tick labels, legend entries.
QStringList textsOnScreen(PlotWidget* p) {
    QStringList out;
    for (QGraphicsItem* item : p->findChild<QChartView*>()->scene()->items())
        if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible()) out << t->toPlainText().simplified();
    return out;
}

bool cut(const QString& t) { return t.contains(QChar(0x2026)) || t.contains(QStringLiteral("...")); }

// A chart whole: no text shortened, the title its name first, the step axis titled.
void checkChart(PlotWidget* p, const QString& name, const QString& what) {
    const QStringList texts = textsOnScreen(p);
    for (const QString& t : texts) QVERIFY2(!cut(t), qPrintable(what + ": \"" + t + "\" in " + texts.join(" | ")));
    QVERIFY2(plain(p->shownTitle()).startsWith(name), qPrintable(what + ": " + plain(p->shownTitle())));
    QVERIFY2(texts.contains(QStringLiteral("step")), qPrintable(what + ": " + texts.join(" | ")));
    QVERIFY2(texts.size() >= 6, qPrintable(what + ": " + texts.join(" | ")));  // title, step, ticks, legend
}

bool overlap(const QRect& a, const QRect& b) { return a.intersects(b); }

}  // namespace

class TestViewsFit : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test-views-fit"));
    }

    void views_are_whole_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QSize>("window");
        QTest::addColumn<bool>("classroom");
        for (const char* preset : {"lost-updates", "fp8", "fp4"})
            for (QSize size : {QSize(1280, 770), QSize(1920, 1050)})
                for (bool classroom : {false, true})
                    QTest::addRow("%s %dx%d %s", preset, size.width(), size.height(), classroom ? "classroom" : "normal")
                        << QString::fromLatin1(preset) << size << classroom;
    }
    void views_are_whole() {
        QFETCH(QString, preset);
        QFETCH(QSize, window);
        QFETCH(bool, classroom);
        MainWindow w;
        w.resize(window);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        mpx::SessionConfig c = mpx::load_config(preset.toStdString());
        c.steps = preset == QLatin1String("lost-updates") ? 120 : preset == QLatin1String("fp8") ? 100 : 24;  // fp8: five share ticks
        QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
        w.applyConfig(c, preset);
        QVERIFY(started.wait(10'000));
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->session() && w.store()->session()->config.name == c.name, 10'000);
        w.setClassroom(classroom);
        w.resize(window);
        w.run();
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::finished, 120'000);
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), c.steps, 10'000);
        const QString what = QStringLiteral("%1 %2×%3%4").arg(preset).arg(window.width()).arg(window.height())
                                 .arg(classroom ? QStringLiteral(" classroom") : QString());
        if (preset == QLatin1String("lost-updates")) {
            w.setView(MainWindow::View::updates);
            w.grab();
            QCoreApplication::processEvents();
            checkUpdates(w.updatesView(), what);
            checkChart(w.updatesView()->lostPlot(), QStringLiteral("Lost updates"), what);
        } else if (preset == QLatin1String("fp8")) {
            w.setView(MainWindow::View::fp8);
            w.grab();
            QCoreApplication::processEvents();
            checkChart(w.fp8View()->scalePlot(), QStringLiteral("Largest |value|"), what + " amax");
            checkChart(w.fp8View()->sharePlot(), QStringLiteral("Share saturated"), what + " shares");
        } else {
            w.setView(MainWindow::View::fp4);
            w.grab();
            QCoreApplication::processEvents();
            mpx::ui::Fp4View* v = w.fp4View();
            checkChart(v->sharePlot(), QStringLiteral("Clamped at ±6"), what + " shares");
            checkChart(v->scalePlot(), QStringLiteral("NVFP4's tensor scale"), what + " S_enc");
            for (mpx::ui::ColumnChart* bars : {v->codeChart(), v->blockChart()}) {
                // ColumnChart's slots: its width less 8 px each side, shared by the bars.
                const auto& cols = bars->columns();
                QVERIFY(!cols.isEmpty());
                QFont f = bars->font();
                f.setPointSizeF(QApplication::font().pointSizeF() * (classroom ? mpx::ui::Classroom::k_chartScale : 1.0));
                const QFontMetrics fm(f);
                const int slot = (bars->width() - 16) / static_cast<int>(cols.size());
                for (const auto& col : cols)
                    for (const QString& name : col.label.split(QLatin1Char('\n')))  // the names under the bars whole
                        QVERIFY2(fm.horizontalAdvance(name) <= slot,
                                 qPrintable(QStringLiteral("%1: \"%2\" in a %3 px slot").arg(what, name).arg(slot)));
                for (const auto& col : cols)
                    QVERIFY2(fm.horizontalAdvance(col.value) <= slot,
                             qPrintable(QStringLiteral("%1: \"%2\" %3 px in a %4 px slot").arg(what, col.value)
                                            .arg(fm.horizontalAdvance(col.value)).arg(slot)));
            }
            // The orange bar (4) is said in the bars' caption.
            bool said = false;
            for (const QLabel* label : v->findChildren<QLabel*>())
                said = said || (label->text().startsWith(QStringLiteral("Share of the ")) && label->text().contains(QStringLiteral("orange: 4")));
            QVERIFY2(said, qPrintable(what));
        }
        w.engine()->pause();
    }

private:
    void checkUpdates(UpdatesView* u, const QString& what) {
        const UpdatesView::Layout l = u->layout();
        const QRect area = u->canvas()->rect();
        QFont bold = u->canvas()->font();
        bold.setBold(true);
        const QFontMetrics fm(u->canvas()->font()), fmb(bold);
        std::vector<UpdatesView::Text> texts{l.title, l.lost, l.kept, l.xTitle};
        texts.insert(texts.end(), l.legend.begin(), l.legend.end());
        for (std::size_t i = 0; i < texts.size(); ++i) {
            const UpdatesView::Text& t = texts[i];
            const QString says = QStringLiteral("%1: \"%2\" in %3,%4 %5×%6").arg(what, t.text).arg(t.rect.x()).arg(t.rect.y())
                                     .arg(t.rect.width()).arg(t.rect.height());
            QVERIFY2(!t.text.isEmpty() && !cut(t.text), qPrintable(says));
            QVERIFY2(mpx::ui::fit::showsWhole(t.text, t.bold ? fmb : fm, t.rect), qPrintable(says));
            QVERIFY2(area.contains(t.rect), qPrintable(says));
            QVERIFY2(!overlap(t.rect, l.plot), qPrintable(says + " over the histogram"));
            for (std::size_t j = i + 1; j < texts.size(); ++j)
                QVERIFY2(!overlap(t.rect, texts[j].rect), qPrintable(says + " over \"" + texts[j].text + "\""));
        }
        // The histogram keeps five lines of height; the upright title fits beside it, left of the
        // tick labels ("12.5 %": as wide as "00.0 %").
        QVERIFY2(l.plot.height() >= 5 * fm.lineSpacing(), qPrintable(what + QStringLiteral(": %1 px").arg(l.plot.height())));
        QVERIFY(area.contains(l.plot));
        QVERIFY2(fm.horizontalAdvance(l.yTitle.text) <= l.plot.height(), qPrintable(what + ": " + l.yTitle.text));
        QVERIFY2(l.yTitle.rect.right() + fm.horizontalAdvance(QStringLiteral("00.0 %")) + 6 < l.plot.left(), qPrintable(what));
        // Both cures' lines, which the lesson sends the class to, and one line per run.
        QStringList lines;
        for (const auto& t : l.legend) lines << t.text;
        QVERIFY2(lines.filter(QRegularExpression(QStringLiteral("^Kahan kept \\d"))).size() == 1, qPrintable(lines.join(" | ")));
        QVERIFY2(lines.filter(QRegularExpression(QStringLiteral("^SR: \\d"))).size() == 1, qPrintable(lines.join(" | ")));
        QCOMPARE(lines.size(), u->layout().legendRun.size());
        QCOMPARE(static_cast<int>(std::count_if(l.legendRun.begin(), l.legendRun.end(), [](int r) { return r >= 0; })), 5);
    }
};

// A 1920×1080 screen for the offscreen platform (its "configfile" option), set before the
// application; the window is sized to each row's screen.
int main(int argc, char** argv) {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("screen.json"));
    QFile f(file);
    if (f.open(QIODevice::WriteOnly))
        f.write(R"({"screens": [{"name": "large", "x": 0, "y": 0, "width": 1920, "height": 1080,
                   "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    f.close();
    qputenv("QT_QPA_PLATFORM", QByteArray("offscreen:configfile=") + file.toLocal8Bit());
    QApplication app(argc, argv);
    TestViewsFit t;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&t, argc, argv);
}
#include "test_views_fit.moc"
