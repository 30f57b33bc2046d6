// PlotWidget's axes (plot_widget.hpp): the x and y ranges and their ticks, log scales, and the
// chart, x and y titles fitted to the room the axes leave (the rule is title_fit.hpp's).
// Rule: ranges end on ticks and an unchanged range, interval or title is not set again: each change
// lays the chart out anew.
#include "ui/kit/plot_private.hpp"
#include "ui/kit/title_fit.hpp"

#include <QScatterSeries>

namespace mpx::ui {
namespace plot {

constexpr double k_yLabelRoom = 2.0;  // lines of label font between two y ticks
constexpr double k_xTitleLines = 11;  // a tile shorter than this many lines has no bare x title

// 1, 2 or 5 × 10^k, the smallest such step that gives at most `ticks` intervals over `span`.
double niceStep(double span, int ticks) {
    if (!(span > 0) || !std::isfinite(span)) return 1.0;
    const double raw = span / ticks;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= raw) return m * mag;
    return 10.0 * mag;
}

// Range and tick interval together, in the order that never asks the axis for more ticks than the
// old or the new setting has: a dynamic-tick axis lays out every tick on each change.
void applyAxis(QValueAxis* a, double lo, double hi, double interval) {
    if (interval >= a->tickInterval()) {
        a->setTickInterval(interval);
        a->setRange(lo, hi);
    } else {
        a->setRange(lo, hi);
        a->setTickInterval(interval);
    }
}

}  // namespace plot
using namespace plot;
using fit::fitted;
using fit::htmlWidth;
using fit::titleForms;

void PlotWidget::setTitle(const QString& title) {
    d->title = title;
    fitTitles();
}
void PlotWidget::setXTitle(const QString& title) {
    d->xTitle = title;
    fitTitles();
}
void PlotWidget::setYTitle(const QString& title) {
    d->yTitle = title;
    fitTitles();
}
QString PlotWidget::title() const { return d->title; }
QString PlotWidget::shownTitle() const { return d->shownTitle; }
QString PlotWidget::shownXTitle() const { return d->shownXTitle; }

// The kinds of mark in view, each once, in the order the kinds were first added.
QStringList PlotWidget::keyNames() const {
    QStringList kinds, named;
    for (const Private::LaneMarks& k : d->laneMarks)
        if (!kinds.contains(k.name)) kinds << k.name;
    for (const QString& kind : kinds)
        for (const Private::LaneMarks& k : d->laneMarks)
            if (k.name == kind && !named.contains(kind) &&
                std::any_of(k.steps.begin(), k.steps.end(), [this](double s) { return s >= xMin() && s <= xMax(); }))
                named << kind;
    return named;
}

// Each title in the longest form that fits whole: the chart's title across the chart, the x title
// along the plot (with the lanes' key: "step · ◆ halved ◇ kept", then the key alone, then fewer of
// its entries), the y title along the plot's height or not at all. A changed text lays the chart out
// again, so only a change is set.
void PlotWidget::fitTitles() {
    const QMargins m = d->chart->margins();
    const QRectF area = d->chart->plotArea();
    const double width = d->view->width() - m.left() - m.right() - 12;
    const QString title = fitted(titleForms(d->title, {QStringLiteral(" · "), QStringLiteral(" ("), QStringLiteral("&nbsp;")}),
                                 d->chart->titleFont(), width);
    if (title != d->shownTitle || d->chart->title() != title) d->chart->setTitle(d->shownTitle = title);

    QStringList entries;  // the key: each kind of mark in view once, by its name
    d->keyNames = keyNames();
    for (const QString& name : d->keyNames) {
        const Private::LaneMarks& k = *std::find_if(d->laneMarks.begin(), d->laneMarks.end(),
                                                   [&](const Private::LaneMarks& m) { return m.name == name; });
        const bool hollow = k.fill.alpha() < 128;
        entries << QStringLiteral("<span style='color:%1'>%2</span>&nbsp;%3")
                       .arg((hollow ? k.border : k.fill).name(), markerSymbol(k.shape, hollow), k.name.toHtmlEscaped());
    }
    QStringList xForms;
    // The x title loses its trailing " (…)" before it would be cut, as a chart title does.
    const QString key = entries.isEmpty() ? QString() : QStringLiteral(" · ") + entries.join(QStringLiteral("&nbsp; "));
    if (!d->xTitle.isEmpty())
        for (const QString& f : titleForms(d->xTitle, {QStringLiteral(" (")})) xForms << f.trimmed() + key;
    for (qsizetype n = entries.size(); n > 0; --n) xForms << entries.mid(0, n).join(QStringLiteral("&nbsp; "));
    // A bare axis name ("step", no key) is left out of a short tile, where Qt Charts would cut it and
    // the tick labels above it to "…": the charts share the step axis, and the hover names it.
    const double tile = d->view->height() - d->lanesHeight();
    if (entries.isEmpty() && tile < k_xTitleLines * QFontMetricsF(d->x->titleFont()).lineSpacing()) xForms.clear();
    if (xForms.isEmpty()) xForms << QString();
    const double plotWidth = area.width() > 10 ? area.width() : width - 60;
    const QString x = fitted(xForms, d->x->titleFont(), plotWidth);
    if (x != d->shownXTitle || d->x->titleText() != x) d->x->setTitleText(d->shownXTitle = x);

    // A y title that fits in no form is left out: its chart's title names the quantity, and a cut
    // one ("on unse…", "% of gr…") said less than none.
    const double plotHeight = area.height() > 10 ? area.height() : d->view->height() / 2.0;
    QString y;
    for (const QString& f : titleForms(d->yTitle, {QStringLiteral(", "), QStringLiteral(" (")}))
        if (htmlWidth(f, d->y->titleFont()) <= plotHeight) {
            y = f;
            break;
        }
    if (y != d->shownYTitle || d->y->titleText() != y) d->y->setTitleText(d->shownYTitle = y);
}

void PlotWidget::setXLabelFormat(const QString& format) { d->x->setLabelFormat(format); }

void PlotWidget::setYLabelFormat(const QString& format) {
    d->yFormat = format;
    setYScale(m_yScale);
}

void PlotWidget::setYScale(YScale scale) {
    const bool changed = scale != m_yScale;
    m_yScale = scale;
    switch (scale) {
        case YScale::linear: d->y->setLabelFormat(d->yFormat); break;
        case YScale::log10: d->y->setLabelFormat(QStringLiteral("1e%.0f")); break;
        case YScale::log2: d->y->setLabelFormat(QStringLiteral("2^%.0f")); break;
    }
    // A log axis ticks whole powers only, before any data too: the axis's initial 0…1 with its
    // fractional ticks printed "1e1 1e1 1e1 1e0 1e0" on every empty chart a class first sees.
    if (scale != YScale::linear && d->yStep < 1.0) {
        const double lo = std::floor(d->yLo);
        d->yHi = std::max(std::ceil(d->yHi), lo + 1.0), d->yLo = lo, d->yStep = 1.0;
        applyYRange();
    }
    if (changed)
        for (int i = 0; i < d->series.size(); ++i) applyPoints(i);
}

double PlotWidget::yTickInterval() const { return d->y->tickInterval(); }

double PlotWidget::xTickFor(double span, int plotWidth) {
    // Whole units at least: the x axis counts steps (or powers), printed "%.0f", so a finer interval
    // on a wide plot printed one number twice ("0 0 1 2 2").
    return std::max(1.0, niceStep(span, std::max(2, plotWidth / 90)));
}

double PlotWidget::xTickInterval() const { return d->x->tickInterval(); }

void PlotWidget::setXRange(double x0, double x1, double tick) {
    if (!(x1 > x0)) x1 = x0 + 1;
    const double interval = tick > 0 ? tick : xTickFor(x1 - x0, plotWidth());
    if (d->x->min() == x0 && d->x->max() == x1 && d->x->tickInterval() == interval) return;
    applyAxis(d->x, x0, x1, interval);
    setCursorStep(d->cursorX);
    placeBand();
    placeLanes();
    if (keyNames() != d->keyNames) fitTitles();  // the key names the marks in view
}

// As many intervals as the plot's height gives labels room for, at most five: a short tile's six
// percent labels were each cut to "..." by Qt Charts, which needs a label's line between ticks.
int PlotWidget::yTicksFitting() const {
    const double line = QFontMetricsF(d->y->labelsFont()).height();
    return std::clamp(static_cast<int>(d->chart->plotArea().height() / (k_yLabelRoom * line)), 2, 5);
}

void PlotWidget::setYRange(double lo, double hi) {
    d->yAskLo = lo, d->yAskHi = hi;
    if (m_yScale != YScale::linear) {
        auto f = [this](double v) { return m_yScale == YScale::log2 ? std::log2(v) : std::log10(v); };
        lo = lo > 0 ? std::floor(f(lo)) : 0;
        hi = hi > 0 ? std::ceil(f(hi)) : lo + 1;
        if (hi <= lo) hi = lo + 1;
        // Whole powers only: a range of one decade (a single held-out point) that already matched
        // the axis's initial 0…1 must still get its interval, or fractional ticks print 1e0 1e0 1e1.
        // A log₂ axis steps by a power of two and ends on its ticks (2^0, 2^-32, 2^-64, …; it read
        // 2^0, 2^-34, 2^-68 over the attention-overflow scale's fall), as many as the height has room for.
        d->yTicks = yTicksFitting();
        double step = std::max(1.0, std::ceil((hi - lo) / d->yTicks));
        if (m_yScale == YScale::log2) {
            step = std::exp2(std::ceil(std::log2(step)));
            lo = std::floor(lo / step) * step;
            hi = std::ceil(hi / step) * step;
        }
        d->yLo = lo, d->yHi = hi, d->yStep = step;
        applyYRange();
        return;
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
    if (hi <= lo) {
        const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
        lo -= pad, hi += pad;
    }
    // Ends on ticks: the axis reads better, and stays put while new data fits, so its labels are
    // not laid out again on every redraw.
    d->yTicks = yTicksFitting();
    const double step = niceStep(hi - lo, d->yTicks);
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
    d->yLo = lo, d->yHi = hi, d->yStep = step;
    applyYRange();
}

// The asked range, widened where a dot lies on its end (issue 47 item 16): the plot clips its series
// at its edge, and a held-out chart's 100 % dots showed their lower half only. The widening is half
// the dot and a pixel, in the axis's units at this height; the ticks stay those of the asked range.
void PlotWidget::applyYRange() {
    if (!std::isfinite(d->yLo)) return;
    const double lo = d->yLo, hi = d->yHi;
    double reach = 0;  // pixels
    bool atTop = false, atBottom = false;
    const double height = d->chart->plotArea().height();
    for (int i = 0; i < d->series.size(); ++i) {
        const auto* dots = qobject_cast<const QScatterSeries*>(d->series[i]);
        if (!dots || !dots->isVisible() || dots->count() == 0) continue;
        const double r = dots->markerSize() / 2 + 1;
        const double near = height > 4 * r ? r * (hi - lo) / (height - 2 * r) : 0;
        bool top = false, bottom = false;
        for (const QPointF& q : dots->points()) top = top || q.y() > hi - near, bottom = bottom || q.y() < lo + near;
        if (top || bottom) reach = std::max(reach, r);
        atTop = atTop || top, atBottom = atBottom || bottom;
    }
    const double pad = height > 4 * reach ? reach * (hi - lo) / (height - 2 * reach) : 0;
    const double a = atBottom ? lo - pad : lo, b = atTop ? hi + pad : hi;
    if (d->y->min() == a && d->y->max() == b && d->y->tickInterval() == d->yStep) return;
    applyAxis(d->y, a, b, d->yStep);
    for (int i = 0; i < d->series.size(); ++i)
        if (d->offsets[i] != 0) applyPoints(i);
}

void PlotWidget::setXLimits(double lo, double hi) {
    d->xLimitLo = lo;
    d->xLimitHi = hi;
}

double PlotWidget::xMin() const { return d->x->min(); }
double PlotWidget::xMax() const { return d->x->max(); }

int PlotWidget::plotWidth() const {
    const int w = static_cast<int>(d->chart->plotArea().width());
    return w > 10 ? w : std::max(10, width() - 70);
}

}  // namespace mpx::ui
