// The FP8 and FP4 tabs' per-pixel decimation of their step lines (DESIGN.md, "Threading and live plotting":
// min/max per pixel): a share's largest value per pixel column, a positive line's lowest and
// highest. Rule: a spike is never hidden, and points keep the order they happened in.
#pragma once

#include <QList>
#include <QPointF>

#include <algorithm>
#include <cmath>

namespace mpx::ui {

// Per pixel column the largest share (never hide a spike), at the step it happened.
struct Peak {
    double v = -1;
    long long at = -1;
    void add(long long step, double s) {
        if (s > v) v = s, at = step;
    }
    void flush(QList<QPointF>& out, double& ymax) {
        if (at < 0) return;
        out.append(QPointF(static_cast<double>(at), 100.0 * v));
        ymax = std::max(ymax, 100.0 * v);
        v = -1, at = -1;
    }
};

// Per pixel column the lowest and highest of a positive line, in the order they happened.
struct Envelope {
    double lo = 0, hi = 0;
    long long atLo = -1, atHi = -1;
    void add(long long step, double v) {
        if (!std::isfinite(v) || v <= 0) return;
        if (atLo < 0 || v < lo) lo = v, atLo = step;
        if (atHi < 0 || v > hi) hi = v, atHi = step;
    }
    void flush(QList<QPointF>& out, double& ymin, double& ymax) {
        if (atLo < 0) return;
        const QPointF a(static_cast<double>(atLo), lo), b(static_cast<double>(atHi), hi);
        if (atLo == atHi) out.append(a);
        else if (atLo < atHi) out << a << b;
        else out << b << a;
        ymin = std::min(ymin, lo);
        ymax = std::max(ymax, hi);
        atLo = atHi = -1;
    }
};

}  // namespace mpx::ui
