// RunHistory: bucket rows, pairwise merging and min/max-per-pixel decimation.
#include "ui/session/run_history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mpx::gui {
namespace {

constexpr float k_inf = std::numeric_limits<float>::infinity();

// Stored form → the value shown. The loss scale is kept as log2 (see the header).
double decode(Metric m, double v) { return m == Metric::lossScale ? std::exp2(v) : v; }

}  // namespace

RunHistory::RunHistory(int capacity) : m_capacity(std::max(2, capacity)) {}

double RunHistory::value(Metric m, const mpx::StepRecord& r) {
    switch (m) {
        case Metric::loss: return r.loss;
        case Metric::lossScale: return r.loss_scale > 0 ? std::log2(r.loss_scale) : std::nan("");
        case Metric::underflow: return r.underflow_frac;
        case Metric::overflow: return r.overflow_count < 0 ? std::nan("") : static_cast<double>(r.overflow_count);
        case Metric::throughput: return r.step_time_us > 0 ? 1e6 / r.step_time_us : std::nan("");
        case Metric::lostUpdates: return r.skipped ? std::nan("") : r.lost_update_frac;  // no update, none lost
        case Metric::evalLoss: return r.eval_loss.value_or(std::nan(""));
        case Metric::evalAccuracy: return r.eval_accuracy.value_or(std::nan(""));
        case Metric::smallKept: return r.skipped ? std::nan("") : r.small_kept_frac;
        case Metric::compensation: return r.compensation_max.value_or(std::nan(""));
    }
    return std::nan("");
}

void RunHistory::mergePairs() {
    for (Row& row : m_rows) {
        const std::size_t n = row.min.size();
        const std::size_t half = (n + 1) / 2;
        for (std::size_t i = 0; i < half; ++i) {
            const std::size_t a = 2 * i, b = 2 * i + 1;
            float lo = row.min[a], hi = row.max[a];
            double sum = row.sum[a];
            std::uint32_t cnt = row.n[a];
            if (b < n) {
                lo = std::min(lo, row.min[b]);
                hi = std::max(hi, row.max[b]);
                sum += row.sum[b];
                cnt += row.n[b];
            }
            row.min[i] = lo;
            row.max[i] = hi;
            row.sum[i] = sum;
            row.n[i] = cnt;
        }
        row.min.resize(half);
        row.max.resize(half);
        row.sum.resize(half);
        row.n.resize(half);
    }
    m_width *= 2;
}

void RunHistory::append(const mpx::StepRecord& r) {
    if (r.step < 0) return;
    auto idx = static_cast<std::size_t>(r.step / m_width);
    while (idx >= static_cast<std::size_t>(m_capacity)) {
        mergePairs();
        idx = static_cast<std::size_t>(r.step / m_width);
    }
    for (int k = 0; k < k_metric_count; ++k) {
        Row& row = m_rows[static_cast<std::size_t>(k)];
        if (row.min.size() <= idx) {
            row.min.resize(idx + 1, k_inf);
            row.max.resize(idx + 1, -k_inf);
            row.sum.resize(idx + 1, 0.0);
            row.n.resize(idx + 1, 0);
        }
        const double v = value(static_cast<Metric>(k), r);
        if (!std::isfinite(v)) continue;
        const auto f = static_cast<float>(v);
        row.min[idx] = std::min(row.min[idx], f);
        row.max[idx] = std::max(row.max[idx], f);
        row.sum[idx] += v;
        ++row.n[idx];
    }
    m_steps = std::max(m_steps, r.step + 1);
}

BucketStat RunHistory::at(Metric m, long long step) const {
    BucketStat s;
    const Row& row = m_rows[static_cast<std::size_t>(m)];
    if (step < 0 || step >= m_steps) return s;
    const auto i = static_cast<std::size_t>(step / m_width);
    if (i >= row.n.size()) return s;
    s.first = static_cast<long long>(i) * m_width;
    s.last = std::min(m_steps, s.first + m_width) - 1;
    if (row.n[i] == 0) return s;
    s.valid = true;
    s.min = decode(m, row.min[i]);
    s.max = decode(m, row.max[i]);
    s.mean = decode(m, row.sum[i] / row.n[i]);
    return s;
}

BucketStat RunHistory::latest(Metric m, long long step) const {
    const Row& row = m_rows[static_cast<std::size_t>(m)];
    if (step < 0 || row.n.empty()) return {};
    auto i = static_cast<long long>(std::min<std::size_t>(static_cast<std::size_t>(step / m_width), row.n.size() - 1));
    while (i > 0 && row.n[static_cast<std::size_t>(i)] == 0) --i;
    return at(m, i * m_width);
}

void RunHistory::decimate(Metric m, Reduce red, double x0, double x1, int columns,
                          QList<QPointF>& out) const {
    const Row& row = m_rows[static_cast<std::size_t>(m)];
    const auto nb = static_cast<long long>(row.n.size());
    if (nb == 0 || columns < 1 || !(x1 >= x0)) return;
    // The view's buckets, and either side the nearest bucket that holds a value, each a point of its
    // own, so lines run to the plot's edges: for a metric measured now and then (evaluations every
    // 50 steps) the bucket next to the view is empty, and a zoom between two evaluations showed a
    // lone dot instead of the segments crossing its edges (issue 47 item 16).
    const long long v0 = std::clamp(static_cast<long long>(std::floor(x0 / m_width)), 0LL, nb - 1);
    const long long v1 = std::clamp(static_cast<long long>(std::floor(x1 / m_width)), 0LL, nb - 1);
    long long before = v0 - 1, after = v1 + 1;
    while (before >= 0 && row.n[static_cast<std::size_t>(before)] == 0) --before;
    while (after < nb && row.n[static_cast<std::size_t>(after)] == 0) ++after;
    const long long count = v1 - v0 + 1;
    const long long groups = std::min<long long>(count, columns);
    out.reserve(out.size() + static_cast<qsizetype>(2 * groups + 4));
    for (long long g = -1; g <= groups; ++g) {
        const long long ba = g < 0 ? before : g == groups ? after : v0 + g * count / groups;
        const long long bb = g < 0 || g == groups ? ba + 1 : v0 + (g + 1) * count / groups;  // exclusive
        if (ba < 0 || ba >= nb) continue;  // no value before (after) the view
        float lo = k_inf, hi = -k_inf;
        long long at_lo = 0, at_hi = 0;
        double sum = 0;
        std::uint32_t n = 0;
        for (long long b = ba; b < bb; ++b) {
            const auto i = static_cast<std::size_t>(b);
            if (row.n[i] == 0) continue;
            if (row.min[i] < lo) lo = row.min[i], at_lo = b;
            if (row.max[i] > hi) hi = row.max[i], at_hi = b;
            sum += row.sum[i];
            n += row.n[i];
        }
        if (n == 0) continue;
        const double first = static_cast<double>(ba * m_width);
        const double last = std::min<double>(static_cast<double>(bb * m_width), static_cast<double>(m_steps)) - 1;
        const double x = 0.5 * (first + last);
        switch (red) {
            case Reduce::envelope:
                if (lo == hi) {
                    out.append(QPointF(x, decode(m, lo)));
                } else if (at_lo <= at_hi) {  // keep the order they happened in
                    out.append(QPointF(x, decode(m, lo)));
                    out.append(QPointF(x, decode(m, hi)));
                } else {
                    out.append(QPointF(x, decode(m, hi)));
                    out.append(QPointF(x, decode(m, lo)));
                }
                break;
            case Reduce::mean: out.append(QPointF(x, decode(m, sum / n))); break;
            case Reduce::max: out.append(QPointF(x, decode(m, hi))); break;
        }
    }
}

void RunHistory::smoothed(Metric m, double smoothing, double x0, double x1, int columns,
                          QList<QPointF>& out) const {
    const Row& row = m_rows[static_cast<std::size_t>(m)];
    const auto nb = static_cast<long long>(row.n.size());
    if (nb == 0 || columns < 1 || !(x1 >= x0)) return;
    const double s = std::clamp(smoothing, 0.0, 0.9999);
    Ema& c = m_ema[static_cast<std::size_t>(m)];
    if (c.s != s || c.width != m_width) {
        c = Ema{};
        c.s = s;
        c.width = m_width;
        c.value.reserve(row.n.size());
    }
    // One bucket of n steps of (about) the bucket's mean: the EMA decays by s per step.
    auto advance = [&row, &c, s](std::size_t i, double& ema, double& norm) {
        const std::uint32_t n = row.n[i];
        if (n == 0) return;
        if (n != c.keep_n) {  // buckets mostly hold the same count: s^n and 1/n once
            c.keep_n = n;
            c.keep = std::pow(s, static_cast<double>(n));
            c.inv_n = 1.0 / n;
        }
        ema = ema * c.keep + (1.0 - c.keep) * (row.sum[i] * c.inv_n);
        norm = norm * c.keep + (1.0 - c.keep);
    };
    const auto complete = static_cast<std::size_t>(nb - 1);  // the last bucket may still grow
    while (c.valid < complete) {
        advance(c.valid, c.ema, c.norm);
        c.value.push_back(c.norm > 0 ? static_cast<float>(c.ema / c.norm) : std::nanf(""));
        ++c.valid;
    }
    const long long b0 = std::clamp(static_cast<long long>(std::floor(x0 / m_width)) - 1, 0LL, nb - 1);
    const long long b1 = std::clamp(static_cast<long long>(std::floor(x1 / m_width)) + 1, 0LL, nb - 1);
    const long long count = b1 - b0 + 1;
    const long long groups = std::min<long long>(count, columns);
    out.reserve(out.size() + static_cast<qsizetype>(groups));
    for (long long g = 0; g < groups; ++g) {
        const long long b = b0 + (g + 1) * count / groups - 1;  // sampled at each group's last bucket
        double v = std::nan("");
        if (static_cast<std::size_t>(b) < c.valid) {
            v = c.value[static_cast<std::size_t>(b)];
        } else {
            double ema = c.ema, norm = c.norm;
            advance(static_cast<std::size_t>(b), ema, norm);
            if (norm > 0) v = ema / norm;
        }
        if (std::isnan(v)) continue;
        const double x = std::min<double>(static_cast<double>((b + 1) * m_width), static_cast<double>(m_steps)) - 1;
        out.append(QPointF(x, decode(m, v)));
    }
}

bool RunHistory::range(Metric m, double x0, double x1, double& lo, double& hi) const {
    const Row& row = m_rows[static_cast<std::size_t>(m)];
    const auto nb = static_cast<long long>(row.n.size());
    if (nb == 0 || !(x1 >= x0)) return false;
    const long long b0 = std::clamp(static_cast<long long>(std::floor(x0 / m_width)), 0LL, nb - 1);
    const long long b1 = std::clamp(static_cast<long long>(std::floor(x1 / m_width)), 0LL, nb - 1);
    float l = k_inf, h = -k_inf;
    for (long long b = b0; b <= b1; ++b) {
        const auto i = static_cast<std::size_t>(b);
        if (row.n[i] == 0) continue;
        l = std::min(l, row.min[i]);
        h = std::max(h, row.max[i]);
    }
    if (l > h) return false;
    lo = decode(m, l);
    hi = decode(m, h);
    return true;
}

std::size_t RunHistory::memoryBytes() const {
    std::size_t bytes = 0;
    for (const Row& row : m_rows)
        bytes += row.min.capacity() * sizeof(float) * 2 + row.sum.capacity() * sizeof(double) +
                 row.n.capacity() * sizeof(std::uint32_t);
    for (const Ema& e : m_ema) bytes += e.value.capacity() * sizeof(float);
    return bytes;
}

}  // namespace mpx::gui
