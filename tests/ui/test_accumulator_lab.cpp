// The accumulator lab shows what the engine's experiment computes: every number in its table equals
// gemm_error_at for the same settings, the picture says what REFERENCE.md's models predict (fast
// accumulation's error grows with K, promotion keeps it low), a run can be cancelled or its window
// destroyed mid-way, and a lesson's {lab:FORMAT} opens it with that format ticked.
// MPX_LAB_PNG=path saves the finished window there (for looking at it, not for the test).
#include <QAction>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <QTextBrowser>
#include <QUrl>

#include <cmath>
#include <map>
#include <memory>

#include "engine/precision/accumulation.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/views/accumulator_lab.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx;
using mpx::ui::AccumulatorLab;

namespace {

constexpr int k_size = 32;  // m = n: the whole run below takes well under a second

// Runs the lab with E4M3 operands under fp8-fast and promote to completion.
bool runToEnd(AccumulatorLab& lab) {
    lab.setOperandFormats({Format::e4m3});
    lab.setModels({AccumulateModel::fp8_fast, AccumulateModel::promote});
    lab.setMatrixSize(k_size);
    lab.setSeed(3);
    QSignalSpy done(&lab, &AccumulatorLab::runFinished);
    if (!lab.run()) return false;
    return done.wait(60000) && done.size() == 1 && !done[0][0].toBool();
}

}  // namespace

class TestAccumulatorLab : public QObject {
    Q_OBJECT
private slots:
    void defaults_are_e4m3_under_fp8_fast_and_promote() {
        AccumulatorLab lab;
        const AccumulatorLab::Settings s = lab.settings();
        QCOMPARE(s.formats, QList<Format>{Format::e4m3});
        QCOMPARE(s.models, (QList<AccumulateModel>{AccumulateModel::fp8_fast, AccumulateModel::promote}));
        QCOMPARE(s.bits, 14);
        QCOMPARE(s.promoteEvery, 128);
        QCOMPARE(s.ks, (QList<int>{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}));
        QCOMPARE(AccumulatorLab::seriesName(Format::e4m3, AccumulatorLab::paramsFor(AccumulateModel::fp8_fast, 14, 128)),
                 QStringLiteral("E4M3 · fp8-fast (14 bits)"));
    }

    void table_equals_the_engine_and_shows_the_models_story() {
        AccumulatorLab lab;
        lab.resize(1240, 760);
        lab.show();
        QVERIFY(runToEnd(lab));
        const AccumulatorLab::Settings s = lab.settings();
        QTableWidget* t = lab.table();
        QCOMPARE(t->rowCount(), 2 * s.ks.size());
        QCOMPARE(lab.progress()->value(), lab.progress()->maximum());
        QVERIFY(lab.runButton()->isEnabled());
        QVERIFY(!lab.cancelButton()->isEnabled());
        std::map<std::pair<AccumulateModel, int>, double> max_error;
        for (int row = 0; row < t->rowCount(); ++row) {
            const auto f = static_cast<Format>(t->item(row, AccumulatorLab::formatColumn)->data(Qt::UserRole).toInt());
            const auto m = static_cast<AccumulateModel>(t->item(row, AccumulatorLab::modelColumn)->data(Qt::UserRole).toInt());
            const int k = t->item(row, AccumulatorLab::kColumn)->data(Qt::UserRole).toInt();
            const double shownMax = t->item(row, AccumulatorLab::maxColumn)->data(Qt::UserRole).toDouble();
            const double shownMean = t->item(row, AccumulatorLab::meanColumn)->data(Qt::UserRole).toDouble();
            QCOMPARE(f, Format::e4m3);
            const RelativeError e =
                gemm_error_at(3, k_size, k_size, k, f, AccumulatorLab::paramsFor(m, s.bits, s.promoteEvery));
            QVERIFY2(shownMax == e.max && shownMean == e.mean, qPrintable(QStringLiteral("row %1").arg(row)));
            QCOMPARE(t->item(row, AccumulatorLab::maxColumn)->text(), QString::number(e.max, 'e', 2));
            QVERIFY(e.max > 0);  // so every point is on the chart
            max_error[{m, k}] = e.max;
        }
        const double fast64 = max_error.at({AccumulateModel::fp8_fast, 64});
        const double fast4096 = max_error.at({AccumulateModel::fp8_fast, 4096});
        const double promote4096 = max_error.at({AccumulateModel::promote, 4096});
        QVERIFY2(fast4096 > fast64, qPrintable(QStringLiteral("%1 vs %2").arg(fast4096).arg(fast64)));
        QVERIFY2(promote4096 * 10 <= fast4096, qPrintable(QStringLiteral("%1 vs %2").arg(promote4096).arg(fast4096)));
        // The chart: one line per (format, model), named as the legend shows it, one point per K at
        // x = log2 K.
        ui::PlotWidget* plot = lab.plot();
        QCOMPARE(plot->seriesCount(), 2);
        const QList<QPointF> fast = plot->points(0);
        QCOMPARE(fast.size(), s.ks.size());
        QCOMPARE(fast.front(), QPointF(6, fast64));
        QCOMPARE(fast[6], QPointF(12, fast4096));
        QVERIFY(lab.note().contains(QStringLiteral("At K = 16384")));
        if (const QByteArray png = qgetenv("MPX_LAB_PNG"); !png.isEmpty()) QVERIFY(lab.grab().save(QString::fromLocal8Bit(png)));
    }

    void zero_errors_are_counted_not_silently_dropped() {
        // FP32 accumulation of E4M3 products at K = 1 is exact: every error is 0.
        AccumulatorLab lab;
        lab.setKRange(1, 2);
        lab.setOperandFormats({Format::e4m3});
        lab.setModels({AccumulateModel::exact});
        QSignalSpy done(&lab, &AccumulatorLab::runFinished);
        QVERIFY(lab.run());
        QVERIFY(done.wait(20000));
        QCOMPARE(lab.table()->item(0, AccumulatorLab::maxColumn)->data(Qt::UserRole).toDouble(), 0.0);
        QVERIFY2(lab.note().contains(QStringLiteral("zero error")), qPrintable(lab.note()));
    }

    void cancel_stops_early_and_says_so() {
        AccumulatorLab lab;
        lab.setOperandFormats({Format::e4m3, Format::e5m2, Format::bf16});
        lab.setModels({AccumulateModel::exact, AccumulateModel::fp8_fast, AccumulateModel::promote, AccumulateModel::bits});
        lab.setMatrixSize(128);
        QSignalSpy done(&lab, &AccumulatorLab::runFinished);
        QVERIFY(lab.run());
        QVERIFY(!lab.runButton()->isEnabled());
        QVERIFY(!lab.run());  // one run at a time
        lab.cancel();
        QVERIFY(done.wait(20000));
        QVERIFY(done[0][0].toBool());
        QVERIFY(lab.points().size() < 12 * 9);
        QVERIFY(lab.note().contains(QStringLiteral("Cancelled")));
        QVERIFY(lab.runButton()->isEnabled());
    }

    void destroying_the_window_mid_run_joins_its_thread() {
        auto lab = std::make_unique<AccumulatorLab>();
        lab->setMatrixSize(128);
        lab->show();
        QVERIFY(lab->run());
        QTest::qWait(30);
        lab->close();  // cancels
        lab.reset();   // joins; a crash or a hang here fails the test
    }

    void lesson_marker_links_to_the_lab() {
        const ui::Lesson l = ui::parseLesson(QStringLiteral("Then open {lab:e4m3} and {lab:fp7}."));
        QCOMPARE(l.labFormat, QStringLiteral("e4m3"));
        QCOMPARE(l.unknownFormats, QStringList{QStringLiteral("fp7")});
        QVERIFY(l.html.contains(QStringLiteral("<a href='lab:e4m3'>the accumulator lab</a>")));
        QVERIFY(!l.html.contains(QStringLiteral("{lab")));
        ui::LessonPanel panel;
        panel.setLesson(QStringLiteral("t"), l);
        QVERIFY(panel.plainText().contains(QStringLiteral("the accumulator lab")));
        QSignalSpy asked(&panel, &ui::LessonPanel::labRequested);
        auto* browser = panel.findChild<QTextBrowser*>();
        QVERIFY(browser);
        emit browser->anchorClicked(QUrl(QStringLiteral("lab:e4m3")));
        QCOMPARE(asked.size(), 1);
        QCOMPARE(asked[0][0].toString(), QStringLiteral("e4m3"));
        // {lab:FORMAT@K}: the K the lab's note quotes (issue 47 item 14: the note quoted K = 16384
        // where the accumulation lesson's figures are at K = 4096).
        const ui::Lesson k = ui::parseLesson(QStringLiteral("Open {lab:e4m3@4096} or {lab:e4m3@many}."));
        QCOMPARE(k.labFormat, QStringLiteral("e4m3"));
        QCOMPARE(k.labK, 4096);
        QCOMPARE(k.unknownFormats, QStringList{QStringLiteral("e4m3@many")});
        QVERIFY(k.html.contains(QStringLiteral("<a href='lab:e4m3@4096'>the accumulator lab</a>")));
    }

    void the_lessons_k_is_quoted_in_the_labs_note() {
        ui::MainWindow w;
        emit w.lessonPanel()->labRequested(QStringLiteral("e4m3@256"));
        auto* lab = w.findChild<AccumulatorLab*>();
        QVERIFY(lab);
        QCOMPARE(lab->settings().formats, QList<Format>{Format::e4m3});
        QSignalSpy done(lab, &AccumulatorLab::runFinished);
        if (lab->isRunning()) QVERIFY(done.wait(60000));
        lab->setKRange(64, 1024);  // a second, not ten
        QVERIFY(lab->run());
        QVERIFY(done.wait(60000));
        QVERIFY2(lab->note().contains(QStringLiteral("At K = 256 the largest error is: E4M3 ")), qPrintable(lab->note()));
        QVERIFY2(lab->note().contains(QStringLiteral("; at K = 1024: E4M3 ")), qPrintable(lab->note()));
        lab->setQuotedK(0);  // none named: the largest K only
        QVERIFY2(lab->note().contains(QStringLiteral("At K = 1024 the largest error is: E4M3 ")) && !lab->note().contains(QStringLiteral("K = 256")),
                 qPrintable(lab->note()));
        lab->close();
    }

    void main_window_opens_the_lab_from_a_lesson_and_the_view_menu() {
        ui::MainWindow w;
        emit w.lessonPanel()->labRequested(QStringLiteral("e5m2"));
        auto* lab = w.findChild<AccumulatorLab*>();
        QVERIFY(lab && lab->isVisible() && lab->isWindow());
        QCOMPARE(lab->settings().formats, QList<Format>{Format::e5m2});
        QVERIFY(lab->isRunning() || !lab->points().empty());  // the first showing computes
        QSignalSpy done(lab, &AccumulatorLab::runFinished);
        if (lab->isRunning()) QVERIFY(done.wait(60000));
        lab->close();
        QAction* open = nullptr;
        for (QAction* a : w.menuBar()->findChildren<QAction*>())
            if (a->text() == QStringLiteral("Accumulator lab…")) open = a;
        QVERIFY(open);
        open->trigger();
        QVERIFY(lab->isVisible());
        QCOMPARE(w.findChildren<AccumulatorLab*>().size(), 1);  // the same window again
        // Esc and Ctrl+W close it, as they close a dialog.
        QVERIFY(QTest::qWaitForWindowActive(lab));
        QTest::keyClick(lab, Qt::Key_Escape);
        QVERIFY(!lab->isVisible());
        open->trigger();
        QVERIFY(QTest::qWaitForWindowActive(lab));
        QTest::keyClick(lab, Qt::Key_W, Qt::ControlModifier);
        QVERIFY(!lab->isVisible());
        w.engine()->pause();
    }
};

QTEST_MAIN(TestAccumulatorLab)
#include "test_accumulator_lab.moc"
