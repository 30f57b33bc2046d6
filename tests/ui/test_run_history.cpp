// RunHistory and marker decimation: exact values at full resolution, spikes kept by min/max
// decimation, bounded memory for long runs, evaluations as sparse values, and the EMA the loss chart
// draws.
#include <QTest>
#include <cmath>

#include "ui/session/record_store.hpp"
#include "ui/session/run_history.hpp"

using mpx::gui::BucketStat;
using mpx::gui::Metric;
using mpx::gui::Reduce;
using mpx::gui::RunHistory;

namespace {

mpx::StepRecord rec(long long step, double loss, double scale = 65536) {
    mpx::StepRecord r;
    r.step = step;
    r.loss = loss;
    r.loss_scale = scale;
    r.new_scale = scale;
    r.step_time_us = 100;
    return r;
}

}  // namespace

class TestRunHistory : public QObject {
    Q_OBJECT
private slots:
    void full_resolution_points_are_the_recorded_values() {
        RunHistory h(1024);
        for (int i = 0; i < 100; ++i) h.append(rec(i, 1.0 / (i + 1)));
        QList<QPointF> pts;
        h.decimate(Metric::loss, Reduce::envelope, 0, 99, 500, pts);
        QCOMPARE(pts.size(), 100);
        for (int i = 0; i < 100; ++i) {
            QCOMPARE(pts[i].x(), double(i));
            QCOMPARE(pts[i].y(), double(float(1.0 / (i + 1))));
        }
        QCOMPARE(h.bucketWidth(), 1);
    }

    void decimation_keeps_a_single_spike_data() {
        QTest::addColumn<int>("columns");
        QTest::addColumn<int>("spikeAt");
        QTest::newRow("wide plot, early spike") << 800 << 17;
        QTest::newRow("narrow plot, late spike") << 50 << 9'871;
        QTest::newRow("one column") << 1 << 5'000;
    }
    void decimation_keeps_a_single_spike() {
        QFETCH(int, columns);
        QFETCH(int, spikeAt);
        RunHistory h;
        for (int i = 0; i < 10'000; ++i) h.append(rec(i, i == spikeAt ? 50.0 : 1.0));
        QList<QPointF> pts;
        h.decimate(Metric::loss, Reduce::envelope, 0, 9'999, columns, pts);
        QVERIFY(pts.size() <= 2 * (columns + 2));
        double top = 0;
        for (const QPointF& p : pts) top = std::max(top, p.y());
        QCOMPARE(top, 50.0);
    }

    void memory_stays_bounded_and_width_doubles() {
        RunHistory h(1000);
        for (int i = 0; i < 100'000; ++i) h.append(rec(i, 1.0, 1 << (i % 20)));
        QVERIFY(h.bucketWidth() >= 128);
        QVERIFY(h.memoryBytes() < std::size_t(1000) * mpx::gui::k_metric_count * 32);  // bounded per metric and bucket
        const BucketStat s = h.at(Metric::lossScale, 54'321);
        QVERIFY(s.valid);
        QVERIFY(s.first <= 54'321 && 54'321 <= s.last);
        QCOMPARE(s.min, 1.0);
        QCOMPARE(s.max, double(1 << 19));
    }

    void non_finite_values_leave_gaps_not_zeros() {
        RunHistory h;
        h.append(rec(0, 2.0));
        h.append(rec(1, std::nan("")));
        h.append(rec(2, INFINITY));
        h.append(rec(3, 3.0));
        QVERIFY(!h.at(Metric::loss, 1).valid);
        QVERIFY(!h.at(Metric::loss, 2).valid);
        QList<QPointF> pts;
        h.decimate(Metric::loss, Reduce::envelope, 0, 3, 100, pts);
        QCOMPARE(pts.size(), 2);
        double lo = 0, hi = 0;
        QVERIFY(h.range(Metric::loss, 0, 3, lo, hi));
        QCOMPARE(lo, 2.0);
        QCOMPARE(hi, 3.0);
    }

    // Evaluations come every few steps: between them, latest() is the one in force.
    void evaluations_are_gaps_between_and_latest_finds_the_last() {
        RunHistory h;
        for (int i = 0; i < 12; ++i) {
            mpx::StepRecord r = rec(i, 1.0);
            if (i % 5 == 0) r.eval_loss = 0.5 - 0.0125 * i;  // steps 0, 5, 10; no accuracy (regression)
            h.append(r);
        }
        QVERIFY(!h.at(Metric::evalLoss, 3).valid);
        QCOMPARE(h.latest(Metric::evalLoss, 3).last, 0LL);
        QCOMPARE(h.latest(Metric::evalLoss, 9).min, 0.4375);
        QCOMPARE(h.latest(Metric::evalLoss, 9).last, 5LL);
        QCOMPARE(h.latest(Metric::evalLoss, 11).last, 10LL);
        QVERIFY(!h.latest(Metric::evalAccuracy, 11).valid);
        QList<QPointF> pts;
        h.decimate(Metric::evalLoss, Reduce::envelope, 0, 11, 100, pts);
        QCOMPARE(pts.size(), 3);
    }

    // Issue 47 item 16: a zoom between evaluations (every 50 steps) still draws the segments that cross
    // its edges, from the last evaluation before the view to the first after it; before, the bucket
    // next to the view was empty and the line was one lone dot (steps 40-60 gave step 50 alone).
    void a_zoom_between_evaluations_keeps_the_segments_crossing_its_edges() {
        RunHistory h;
        for (int i = 0; i < 200; ++i) {
            mpx::StepRecord r = rec(i, 1.0);
            if (i % 50 == 0) r.eval_loss = 1.0 + i / 50;  // steps 0, 50, 100, 150
            h.append(r);
        }
        QList<QPointF> pts;
        h.decimate(Metric::evalLoss, Reduce::mean, 40, 60, 100, pts);
        QCOMPARE(pts, (QList<QPointF>{{0, 1}, {50, 2}, {100, 3}}));
        pts.clear();
        h.decimate(Metric::evalLoss, Reduce::mean, 60, 90, 100, pts);  // no evaluation in view
        QCOMPARE(pts, (QList<QPointF>{{50, 2}, {100, 3}}));
        pts.clear();
        h.decimate(Metric::evalLoss, Reduce::mean, 160, 199, 100, pts);  // nothing after the last
        QCOMPARE(pts, (QList<QPointF>{{150, 4}}));
        pts.clear();
        h.decimate(Metric::loss, Reduce::mean, 40, 60, 100, pts);  // a dense metric: one bucket either side, as before
        QCOMPARE(pts.size(), 23);
        QCOMPARE(pts.front().x(), 39.0);
        QCOMPARE(pts.back().x(), 61.0);
    }

    void smoothing_zero_is_the_raw_value_and_high_smoothing_lags() {
        RunHistory h;
        for (int i = 0; i < 200; ++i) h.append(rec(i, i < 100 ? 1.0 : 0.0));
        QList<QPointF> raw, smooth;
        h.smoothed(Metric::loss, 0.0, 0, 199, 1000, raw);
        h.smoothed(Metric::loss, 0.9, 0, 199, 1000, smooth);
        QCOMPARE(raw.size(), 200);
        QCOMPARE(raw[150].y(), 0.0);
        QCOMPARE(smooth[50].y(), 1.0);  // debiased: a constant stays constant
        QVERIFY(smooth[101].y() > 0.5 && smooth[101].y() < 1.0);
    }

    void markers_one_per_pixel_column() {
        std::vector<mpx::gui::MarkerPoint> m;
        for (int i = 0; i < 10'000; ++i) m.push_back({i, 1024});
        QList<QPointF> pts;
        mpx::gui::decimateMarkers(m, 0, 9'999, 100, pts);
        QVERIFY(pts.size() >= 99 && pts.size() <= 101);
        pts.clear();
        mpx::gui::decimateMarkers(m, 500, 520, 1000, pts);  // zoomed in: every marker
        QCOMPARE(pts.size(), 21);
        QCOMPARE(pts.front().x(), 500.0);
    }
};

QTEST_APPLESS_MAIN(TestRunHistory)
#include "test_run_history.moc"
