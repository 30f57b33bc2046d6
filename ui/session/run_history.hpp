// One run's history for display, in bounded memory: each metric is a row of buckets (min, max, sum
// and count of finite values) of a power-of-two width in steps; when the row is full, neighbouring
// buckets merge and the width doubles. Up to `capacity` steps every step is its own bucket.
// Rule: display only. The export reads the worker's spool of full StepRecords, never this.
#pragma once

#include <QList>
#include <QPointF>
#include <array>
#include <cstdint>
#include <vector>

#include "engine/run/record.hpp"

namespace mpx::gui {

// A value of a StepRecord, as RunHistory::value reads it; a chart shows one (ui/views/chart_table.cpp).
// k_metric_count follows the last.
// smallKept and compensation: what a stochastic or Kahan write-back kept (StepRecord's
// small_kept_frac, compensation_max).
enum class Metric : int {
    loss, lossScale, underflow, overflow, throughput, lostUpdates, evalLoss, evalAccuracy, smallKept, compensation };
inline constexpr int k_metric_count = static_cast<int>(Metric::compensation) + 1;

// How a pixel column of many steps becomes points.
enum class Reduce {
    envelope,  // the column's min and max (a line through them shows every spike)
    mean,      // the mean of the column's finite values
    max,       // the column's largest value (counts: never hide an overflow)
};

struct BucketStat {
    bool valid = false;  // at least one finite value
    double min = 0, max = 0, mean = 0;
    long long first = 0, last = 0;  // the steps the bucket covers
};

class RunHistory {
public:
    static constexpr int k_default_capacity = 1 << 17;  // 131,072 steps at full resolution
    explicit RunHistory(int capacity = k_default_capacity);

    // Steps must arrive in order; a gap is taken as steps without finite values.
    void append(const mpx::StepRecord& r);
    long long steps() const { return m_steps; }
    long long bucketWidth() const { return m_width; }
    // The bucket holding `step` (exact values while bucketWidth() is 1).
    BucketStat at(Metric m, long long step) const;
    // The last bucket at or before `step` with a finite value: for metrics recorded only on some
    // steps (evaluation), the value in force at `step`.
    BucketStat latest(Metric m, long long step) const;
    // Points over steps [x0, x1] for a plot `columns` pixels wide: at most two per column, one per
    // bucket where buckets are wider than columns. Appends to `out`.
    void decimate(Metric m, Reduce r, double x0, double x1, int columns, QList<QPointF>& out) const;
    // TensorBoard-style debiased exponential moving average of the per-step values, with weight
    // `smoothing` in [0, 1) per step, sampled once per column over [x0, x1].
    void smoothed(Metric m, double smoothing, double x0, double x1, int columns,
                  QList<QPointF>& out) const;
    // Min and max of the finite values over steps [x0, x1]; false if there are none.
    bool range(Metric m, double x0, double x1, double& lo, double& hi) const;
    std::size_t memoryBytes() const;

private:
    // Values are stored as float (the loss scale as its log2, so an FP64 scale beyond FP32's range
    // stays finite and powers of two stay exact); sums in double.
    struct Row {
        std::vector<float> min, max;
        std::vector<double> sum;
        std::vector<std::uint32_t> n;
    };
    void mergePairs();
    static double value(Metric m, const mpx::StepRecord& r);

    // The smoothed line of each metric, per complete bucket, extended as buckets complete and
    // rebuilt when the smoothing or the bucket width changes: a redraw samples it per pixel column
    // instead of walking the whole run.
    struct Ema {
        double s = -1;
        long long width = 0;
        std::size_t valid = 0;  // buckets [0, valid) are in `value`; all of them complete
        double ema = 0, norm = 0;
        std::uint32_t keep_n = 0;
        double keep = 1, inv_n = 1;
        std::vector<float> value;  // debiased EMA at the end of each bucket (NaN: none yet)
    };

    int m_capacity;
    long long m_width = 1;
    long long m_steps = 0;
    std::array<Row, k_metric_count> m_rows;
    mutable std::array<Ema, k_metric_count> m_ema;
};

}  // namespace mpx::gui
