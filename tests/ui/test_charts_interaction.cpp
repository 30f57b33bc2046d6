// Chart interaction on the offscreen platform: the step axis is shared (zoom one chart, all follow),
// hovering shows every run's value at that step, the held-out charts show each evaluation, the event
// log holds every scale event with its old and new scale, and clicking an event moves the charts to
// its step.
#include <QChartView>
#include <QScrollArea>
#include <QScrollBar>
#include <QValueAxis>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTest>
#include <QToolTip>
#include <QWheelEvent>
#include <QWindow>

#include "engine/scaler/scaler.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/event_log_panel.hpp"
#include "ui/views/chart_table.hpp"
#include "ui/window/main_window.hpp"

// Qt's own door for a platform's input (qpa/qwindowsysteminterface.h, which Debian's qt6-base-dev
// does not install): a wheel handed in here reaches the widget under it as a person's, spontaneous,
// so that one a chart ignores goes on to its scroll area. QTest has no wheel before Qt 6.8.
class QWindowSystemInterface {
public:
    static bool handleWheelEvent(QWindow* window, const QPointF& local, const QPointF& global, QPoint pixelDelta,
                                 QPoint angleDelta, Qt::KeyboardModifiers mods, Qt::ScrollPhase phase,
                                 Qt::MouseEventSource source);
};

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::ChartId;
using mpx::ui::MainWindow;

class TestChartsInteraction : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        // Three FP16 scalers whose scale climbs into overflow quickly (growth every 20 steps):
        // growths, backoffs, hysteresis and skips.
        const mpx::SessionConfig c = mpx::load_config("hysteresis");
        QCOMPARE(c.steps, 600);
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->run();
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 600, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::finished, 10'000);
        w->charts()->refresh();
    }
    void cleanupTestCase() { w.reset(); }

    // A log axis labels whole powers only. One held-out point (loss 2.3) spans the decade 10^0…10^1,
    // which is the axis's initial 0…1 range: its interval must still become 1, or the labels read
    // 1e0 1e0 1e0 1e1 1e1 1e1. The same for log2, and after a wider range came first.
    void a_log_axis_ticks_whole_powers_from_the_first_point() {
        for (auto scale : {mpx::ui::PlotWidget::YScale::log10, mpx::ui::PlotWidget::YScale::log2}) {
            mpx::ui::PlotWidget p(QStringLiteral("test"));
            p.setYScale(scale);
            auto* y = qobject_cast<QValueAxis*>(p.findChild<QChartView*>()->chart()->axes(Qt::Vertical).value(0));
            QVERIFY(y);
            p.setYRange(1.5, 1.9);  // within one power: 0…1
            QCOMPARE(y->min(), 0.0);
            QCOMPARE(y->max(), 1.0);
            QCOMPARE(y->tickInterval(), 1.0);
            p.setYRange(1e-30, 1e30);  // log10: −30…30, interval 12; log2: −100…100, interval 40
            const double wide = y->tickInterval();
            QVERIFY(wide > 1.0 && wide == std::round(wide));
            p.setYRange(1.5, 1.9);
            QCOMPARE(y->tickInterval(), 1.0);
        }
    }

    void zooming_one_chart_moves_every_chart() {
        auto* loss = w->charts()->plot(ChartId::loss);
        emit loss->xRangeRequested(100, 200);  // what a wheel zoom or a drag asks for
        QVERIFY(!w->charts()->following());
        for (const mpx::ui::ChartSpec& c : mpx::ui::chartTable()) {
            if (c.draw == mpx::ui::Draw::stacked) continue;
            QCOMPARE(w->charts()->plot(c.id)->xMin(), 100.0);
            QCOMPARE(w->charts()->plot(c.id)->xMax(), 200.0);
        }
        // Zoomed in, each visible step is its own point.
        const QList<QPointF> pts = loss->points(w->charts()->rawLossSeries(0));
        QVERIFY(pts.size() >= 101);
        emit loss->resetRequested();  // double click
        QVERIFY(w->charts()->following());
        QCOMPARE(w->charts()->plot(ChartId::scale)->xMin(), 0.0);
    }

    // Issue 47 item 9: over the chart list the wheel scrolls the list and leaves the step axis as it
    // was; Ctrl+wheel zooms around the pointer; zooming out stops at the run's steps, [0, 600].
    void the_wheel_scrolls_the_chart_list_and_ctrl_wheel_zooms_within_the_run() {
        w->resize(1280, 800);  // the hysteresis charts do not fit: the list scrolls
        auto* area = w->charts()->findChild<QScrollArea*>();
        QVERIFY(area);
        QTRY_VERIFY(area->verticalScrollBar()->maximum() > 0);
        area->verticalScrollBar()->setValue(0);
        mpx::ui::PlotWidget* p = w->charts()->plot(w->charts()->chartOrder().first());
        auto* view = p->findChild<QChartView*>()->viewport();
        const QPoint at = view->rect().center();
        // A wheel turned by a person, through the platform's queue as a mouse's would come.
        const auto turn = [&](int delta, Qt::KeyboardModifiers mods, QPoint pos) {
            const QPointF local = view->mapTo(w.get(), pos);
            QWindowSystemInterface::handleWheelEvent(w->windowHandle(), local, w->windowHandle()->mapToGlobal(local),
                                                     QPoint(), QPoint(0, delta), mods, Qt::NoScrollPhase,
                                                     Qt::MouseEventNotSynthesized);
            QCoreApplication::processEvents();
        };
        const double x0 = p->xMin(), x1 = p->xMax();
        QCOMPARE(x1, 600.0);
        turn(-120, Qt::NoModifier, at);
        QVERIFY2(area->verticalScrollBar()->value() > 0, "the wheel did not scroll the chart list");
        QCOMPARE(p->xMin(), x0);
        QCOMPARE(p->xMax(), x1);
        QVERIFY(w->charts()->following());
        area->verticalScrollBar()->setValue(0);
        turn(120, Qt::ControlModifier, at);  // in: 0.8 of the span, around the pointer
        QCOMPARE(area->verticalScrollBar()->value(), 0);
        QVERIFY(!w->charts()->following());
        QVERIFY2(std::abs((p->xMax() - p->xMin()) - 0.8 * (x1 - x0)) < 1e-6, qPrintable(QString::number(p->xMax() - p->xMin())));
        // Out, many times, with the pointer near either end: never past step 0 or the run's end.
        for (int k = 0; k < 12; ++k) {
            turn(-120, Qt::ControlModifier, QPoint(k % 2 ? view->width() - 5 : 5, at.y()));
            QVERIFY2(p->xMin() >= 0 && p->xMax() <= 600, qPrintable(QStringLiteral("%1–%2").arg(p->xMin()).arg(p->xMax())));
        }
        QCOMPARE(p->xMin(), 0.0);
        QCOMPARE(p->xMax(), 600.0);
        // A drag past the start slides back to step 0.
        turn(120, Qt::ControlModifier, at);
        const double span = p->xMax() - p->xMin();
        emit p->xRangeRequested(-300, -300 + span);
        QCOMPARE(p->xMin(), 0.0);
        QCOMPARE(p->xMax(), span);
        emit p->resetRequested();
        w->resize(1500, 950);
    }

    void hovering_shows_every_runs_value_at_that_step() {
        auto* loss = w->charts()->plot(ChartId::loss);
        emit loss->hovered(123.2, loss->mapToGlobal(QPoint(200, 100)));
        const QString tip = QToolTip::text();
        QVERIFY2(tip.contains(QStringLiteral("step 123")), qPrintable(tip));
        for (int r = 0; r < 3; ++r) {
            const auto& run = w->store()->session()->runs[static_cast<std::size_t>(r)];
            QVERIFY2(tip.contains(run.label), qPrintable(tip));
            const double v = w->store()->history(r).at(mpx::gui::Metric::loss, 123).min;
            QVERIFY2(tip.contains(QString::number(v, 'g', 6)), qPrintable(tip));
        }
        emit loss->hovered(std::nan(""), {});
        // On the loss scale's log₂ axis a power of two reads as the axis labels it (2¹⁶, not 65536).
        auto* scale = w->charts()->plot(ChartId::scale);
        emit scale->hovered(123.2, scale->mapToGlobal(QPoint(200, 100)));
        const QString scaleTip = QToolTip::text();
        bool powers = false;
        for (int r = 0; r < 3; ++r) {
            const double v = w->store()->history(r).at(mpx::gui::Metric::lossScale, 123).min;
            const double e = std::log2(v);
            if (v > 1 && e == std::round(e)) {
                powers = true;
                QVERIFY2(scaleTip.contains(mpx::ui::pow2Text(e)) && !scaleTip.contains(QString::number(v, 'g', 6)), qPrintable(scaleTip));
            }
        }
        QVERIFY2(powers, qPrintable(scaleTip));  // the preset has a run whose scale is a power of two above 1
        emit scale->hovered(std::nan(""), {});
    }

    // eval_every 50 over 600 steps: steps 0, 50, …, 550 and the last, 599.
    void held_out_charts_show_each_evaluation() {
        using mpx::gui::Metric;
        const QList<QPointF> pts = w->charts()->plot(ChartId::evalLoss)->points(w->charts()->lineSeries(ChartId::evalLoss, 0));
        QCOMPARE(pts.size(), 13);
        const auto& h = w->store()->history(0);
        for (int k = 0; k < 13; ++k) {
            const long long step = k < 12 ? 50LL * k : 599;
            QVERIFY(h.at(Metric::evalLoss, step).valid);
            // The dots draw each bucket's mean (a sum in double), here of one evaluation: the value
            // itself, where min and max hold it rounded to float.
            QCOMPARE(pts[k].y(), h.at(Metric::evalLoss, step).mean);
            QVERIFY(std::abs(pts[k].x() - static_cast<double>(step)) <= 4);  // its pixel column's middle
        }
        QVERIFY(!h.at(Metric::evalLoss, 51).valid);
        // Accuracy in percent.
        const QList<QPointF> acc = w->charts()->plot(ChartId::evalAccuracy)->points(w->charts()->lineSeries(ChartId::evalAccuracy, 0));
        QCOMPARE(acc.size(), 13);
        QCOMPARE(acc.last().y(), 100 * h.at(Metric::evalAccuracy, 599).mean);
        // Hovering between evaluations shows the latest one and says where it was taken.
        auto* plot = w->charts()->plot(ChartId::evalLoss);
        emit plot->hovered(123.0, plot->mapToGlobal(QPoint(200, 100)));
        const QString tip = QToolTip::text();
        QVERIFY2(tip.contains(QString::number(h.at(Metric::evalLoss, 100).min, 'g', 6) + QStringLiteral(" (step 100)")),
                 qPrintable(tip));
        emit plot->hovered(std::nan(""), {});
    }

    // Issue 47 item 16: zoomed between evaluations, the held-out line runs to the plot's edges, from
    // the evaluation before the view to the one after; it was a lone dot at step 150.
    void a_zoomed_held_out_chart_draws_the_segments_crossing_its_edges() {
        auto* plot = w->charts()->plot(ChartId::evalLoss);
        emit plot->xRangeRequested(120, 180);
        QCOMPARE(plot->xMin(), 120.0);
        QList<double> steps;
        for (const QPointF& q : plot->points(w->charts()->lineSeries(ChartId::evalLoss, 0))) steps << q.x();
        QCOMPARE(steps, (QList<double>{100, 150, 200}));
        emit plot->resetRequested();
        QVERIFY(w->charts()->following());
    }

    void lost_updates_are_a_percent_per_run() {
        using mpx::gui::Metric;
        for (int r = 0; r < 3; ++r) {
            const QList<QPointF> pts = w->charts()->plot(ChartId::lostUpdates)->points(w->charts()->lineSeries(ChartId::lostUpdates, r));
            QVERIFY(!pts.isEmpty());
            double lo = 0, hi = 0;
            QVERIFY(w->store()->history(r).range(Metric::lostUpdates, 0, 599, lo, hi));
            QVERIFY(hi > 0.01);
            double top = 0;
            for (const QPointF& p : pts) {  // column means, in percent
                QVERIFY(p.y() >= 100 * lo - 1e-9 && p.y() <= 100 * hi + 1e-9);
                top = std::max(top, p.y());
            }
            QVERIFY(top > 50 * hi);
        }
    }

    void the_event_log_lists_every_scale_event_with_old_and_new_scale() {
        const auto& log = w->store()->log();
        QVERIFY(!log.empty());
        long long skipped = 0;
        for (int r = 0; r < 3; ++r) skipped += w->store()->skippedSteps(r);
        QVERIFY(skipped > 0);
        bool sawHysteresis = false;
        for (const auto& row : log) sawHysteresis |= row.kind == mpx::gui::LogKind::hysteresis;
        QVERIFY(sawHysteresis);  // DeepSpeed and Megatron absorb isolated overflows
        for (const auto& row : log) {
            if (row.kind == mpx::gui::LogKind::grow) QVERIFY(row.newScale > row.oldScale);
            if (row.kind == mpx::gui::LogKind::backoff) QVERIFY(row.newScale <= row.oldScale && row.skipped);
            if (row.kind == mpx::gui::LogKind::hysteresis) QVERIFY(row.newScale == row.oldScale && row.skipped);
        }
        QCOMPARE(w->eventLog()->model()->rowCount(), static_cast<int>(log.size()));
    }

    void clicking_an_event_moves_the_charts_to_its_step() {
        auto* view = w->eventLog()->view();
        const int row = w->eventLog()->model()->rowCount() / 2;
        const qint64 step = w->eventLog()->model()->stepAt(row);
        view->scrollTo(w->eventLog()->model()->index(row, 0));
        const QRect cell = view->visualRect(w->eventLog()->model()->index(row, 0));
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, cell.center());
        QVERIFY(!w->charts()->following());
        QVERIFY(w->charts()->viewX0() <= step && step <= w->charts()->viewX1());
        QVERIFY(w->charts()->viewX1() - w->charts()->viewX0() < 600);
    }
};

QTEST_MAIN(TestChartsInteraction)
#include "test_charts_interaction.moc"
