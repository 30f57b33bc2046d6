// PlotWidget: QChart + QChartView, value axes with log transforms, wheel zoom and drag pan.
#include "ui/kit/plot_widget.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFontMetricsF>
#include <QGraphicsLineItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QHorizontalStackedBarSeries>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMouseEvent>
#include <QScatterSeries>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace mpx::ui {
namespace {

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

QFont axisFont() {
    QFont f;
    f.setPointSizeF(8.5);
    return f;
}

}  // namespace

class PlotWidget::View : public QChartView {
public:
    View(QChart* chart, PlotWidget* owner) : QChartView(chart), m_owner(owner) {
        setRenderHint(QPainter::Antialiasing, true);
        setMouseTracking(true);
        setFrameShape(QFrame::NoFrame);
    }

    double xAt(double px) const {
        const QRectF area = chart()->plotArea();
        const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
        return x0 + (px - area.left()) / std::max(1.0, area.width()) * (x1 - x0);
    }

protected:
    void mouseMoveEvent(QMouseEvent* e) override {
        const QPointF pos = e->position();
        if (m_dragging) {
            const double dx = xAt(pos.x()) - xAt(m_dragStart);
            emit m_owner->xRangeRequested(m_startX0 - dx, m_startX1 - dx);
        } else if (chart()->plotArea().contains(pos)) {
            emit m_owner->hovered(xAt(pos.x()), e->globalPosition().toPoint());
        } else {
            emit m_owner->hovered(std::nan(""), {});
        }
    }
    void mousePressEvent(QMouseEvent* e) override {
        if (e->button() == Qt::LeftButton && chart()->plotArea().contains(e->position())) {
            m_dragging = true;
            m_dragStart = e->position().x();
            m_startX0 = m_owner->xMin();
            m_startX1 = m_owner->xMax();
            setCursor(Qt::ClosedHandCursor);
        }
    }
    void mouseReleaseEvent(QMouseEvent*) override {
        m_dragging = false;
        unsetCursor();
    }
    void mouseDoubleClickEvent(QMouseEvent*) override { emit m_owner->resetRequested(); }
    void leaveEvent(QEvent*) override { emit m_owner->hovered(std::nan(""), {}); }
    bool viewportEvent(QEvent* e) override;  // below, after Private
    void wheelEvent(QWheelEvent* e) override {
        const double steps = e->angleDelta().y() / 120.0;
        if (steps == 0) return;
        const double factor = std::pow(0.8, steps);  // wheel up zooms in around the mouse
        const double at = xAt(e->position().x());
        const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
        emit m_owner->xRangeRequested(at - (at - x0) * factor, at + (x1 - at) * factor);
        e->accept();
    }
    void resizeEvent(QResizeEvent* e) override {
        QChartView::resizeEvent(e);
        emit m_owner->plotResized();
    }

private:
    PlotWidget* m_owner;
    bool m_dragging = false;
    double m_dragStart = 0, m_startX0 = 0, m_startX1 = 0;
};

class PlotWidget::Private {
public:
    QChart* chart = nullptr;
    View* view = nullptr;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    QString yFormat = QStringLiteral("%.3g");
    QList<QXYSeries*> series;
    QList<QList<QPointF>> given;  // per series, in real units
    QGraphicsLineItem* cursor = nullptr;
    double cursorX = std::nan("");
    QGraphicsRectItem* band = nullptr;
    QGraphicsSimpleTextItem* bandLabel = nullptr;
    QGraphicsSimpleTextItem* placeholder = nullptr;  // the empty state's one line, centred
    QString placeholderText;                          // in full (the item may show it elided)
    double bandX0 = std::nan(""), bandX1 = std::nan("");
    // bar mode
    QHorizontalStackedBarSeries* bars = nullptr;
    QBarCategoryAxis* barCategories = nullptr;
    QValueAxis* barValues = nullptr;
    QList<QBarSet*> barSets;
    QStringList barCategoryNames;
    QList<BarSet> barSetsGiven;
    QPen basePen;      // the chart's own background frame and fill, restored when unhighlighted
    QBrush baseBrush;
};

// The mouse at rest (~0.7 s) asks for a tooltip. QGraphicsScene answers with the tooltip of the item
// under it, and with an empty one (which hides any tooltip) where no item has one: that hid the hover
// readout within a second of the mouse stopping (issue 27). At rest over the plot the readout is asked
// for again instead; elsewhere the widget's own tooltip (the Memory chart's explanation).
bool PlotWidget::View::viewportEvent(QEvent* e) {
    if (e->type() != QEvent::ToolTip) return QChartView::viewportEvent(e);
    const auto* help = static_cast<QHelpEvent*>(e);
    const Private& d = *m_owner->d;
    if (!m_dragging && !d.bars && d.placeholderText.isEmpty() && chart()->plotArea().contains(help->pos()))
        emit m_owner->hovered(xAt(help->pos().x()), help->globalPos());
    else if (!m_owner->toolTip().isEmpty())
        QToolTip::showText(help->globalPos(), m_owner->toolTip(), this);
    else
        return QChartView::viewportEvent(e);
    e->accept();
    return true;
}

PlotWidget::PlotWidget(const QString& title, QWidget* parent) : QWidget(parent), d(std::make_unique<Private>()) {
    d->chart = new QChart;
    d->chart->setAnimationOptions(QChart::NoAnimation);
    d->chart->legend()->hide();
    d->chart->setMargins(QMargins(2, 2, 6, 2));
    d->chart->setBackgroundRoundness(0);
    d->basePen = d->chart->backgroundPen();
    d->baseBrush = d->chart->backgroundBrush();
    QFont tf;
    tf.setPointSizeF(10);
    tf.setBold(true);
    d->chart->setTitleFont(tf);
    d->chart->setTitle(title);
    d->x = new QValueAxis;
    d->y = new QValueAxis;
    for (QValueAxis* a : {d->x, d->y}) {
        a->setLabelsFont(axisFont());
        a->setTickType(QValueAxis::TicksDynamic);
        a->setTickAnchor(0);
        a->setMinorTickCount(0);
        a->setGridLineColor(QColor(0, 0, 0, 28));
        a->setLinePenColor(QColor(0, 0, 0, 90));
        QFont t = axisFont();
        t.setPointSizeF(8.5);
        a->setTitleFont(t);
    }
    d->x->setLabelFormat(QStringLiteral("%.0f"));
    d->chart->addAxis(d->x, Qt::AlignBottom);
    d->chart->addAxis(d->y, Qt::AlignLeft);
    d->view = new View(d->chart, this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(d->view);
    d->cursor = new QGraphicsLineItem(d->chart);
    d->cursor->setPen(QPen(QColor(60, 60, 60, 150), 1, Qt::DashLine));
    d->cursor->setZValue(100);
    d->cursor->hide();
    d->band = new QGraphicsRectItem(d->chart);
    d->band->setPen(QPen(QColor(0xb0, 0x80, 0x00, 160), 1, Qt::DashLine));
    d->band->setBrush(QColor(0xf0, 0xc0, 0x30, 55));
    d->band->setZValue(90);
    d->band->hide();
    d->bandLabel = new QGraphicsSimpleTextItem(d->chart);
    d->bandLabel->setFont(axisFont());
    d->bandLabel->setBrush(QColor(0x7a, 0x55, 0x00));
    d->bandLabel->setZValue(91);
    d->bandLabel->hide();
    d->placeholder = new QGraphicsSimpleTextItem(d->chart);
    QFont pf;
    pf.setPointSizeF(10);
    d->placeholder->setFont(pf);
    d->placeholder->setBrush(QColor(0x77, 0x77, 0x77));
    d->placeholder->setZValue(92);
    d->placeholder->hide();
    connect(d->chart, &QChart::plotAreaChanged, this, [this] {
        setCursorStep(d->cursorX);
        placeBand();
        placePlaceholder();
    });
    setXRange(0, 100);
    setYRange(0, 1);
}

PlotWidget::~PlotWidget() = default;

int PlotWidget::addLine(const QString& name, const QColor& colour, qreal width, Qt::PenStyle style) {
    auto* s = new QLineSeries;
    s->setName(name);
    QPen pen(colour, width, style);
    // Round joins cost a curve per vertex when stroking thousands of points; bevel looks the same
    // at these widths.
    pen.setCapStyle(Qt::FlatCap);
    pen.setJoinStyle(Qt::BevelJoin);
    s->setPen(pen);
    d->chart->addSeries(s);
    s->attachAxis(d->x);
    s->attachAxis(d->y);
    d->series << s;
    d->given << QList<QPointF>{};
    return static_cast<int>(d->series.size()) - 1;
}

int PlotWidget::addMarkers(const QString& name, const QColor& fill, const QColor& border, Marker shape,
                           qreal size) {
    auto* s = new QScatterSeries;
    s->setName(name);
    switch (shape) {
        case Marker::circle: s->setMarkerShape(QScatterSeries::MarkerShapeCircle); break;
        case Marker::diamond: s->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle); break;
        case Marker::triangle: s->setMarkerShape(QScatterSeries::MarkerShapeTriangle); break;
        case Marker::square: s->setMarkerShape(QScatterSeries::MarkerShapeRectangle); break;
    }
    s->setMarkerSize(size);
    s->setColor(fill);
    s->setBorderColor(border);
    s->setPen(QPen(border, 1.2));
    d->chart->addSeries(s);
    s->attachAxis(d->x);
    s->attachAxis(d->y);
    d->series << s;
    d->given << QList<QPointF>{};
    return static_cast<int>(d->series.size()) - 1;
}

void PlotWidget::removeAllSeries() {
    for (QXYSeries* s : d->series) {
        d->chart->removeSeries(s);
        delete s;
    }
    d->series.clear();
    d->given.clear();
}

int PlotWidget::seriesCount() const { return static_cast<int>(d->series.size()); }

void PlotWidget::setPoints(int id, const QList<QPointF>& points) {
    if (id < 0 || id >= d->series.size()) return;
    // Unchanged points (a redraw of the same view, an empty series staying empty) cost no replace():
    // Qt Charts lays a replaced series out again even when it is the same.
    if (points == d->given[id]) return;
    d->given[id] = points;
    applyPoints(id);
}

void PlotWidget::applyPoints(int id) {
    const QList<QPointF>& points = d->given[id];
    if (m_yScale == YScale::linear) {
        d->series[id]->replace(points);
        return;
    }
    QList<QPointF> t;
    t.reserve(points.size());
    for (const QPointF& p : points)
        if (p.y() > 0 && std::isfinite(p.y()))
            t.append(QPointF(p.x(), m_yScale == YScale::log2 ? std::log2(p.y()) : std::log10(p.y())));
    d->series[id]->replace(t);
}

QList<QPointF> PlotWidget::points(int id) const {
    return id >= 0 && id < d->given.size() ? d->given[id] : QList<QPointF>{};
}

void PlotWidget::setSeriesVisible(int id, bool visible) {
    if (id >= 0 && id < d->series.size()) d->series[id]->setVisible(visible);
}

void PlotWidget::setTitle(const QString& title) {
    if (d->chart->title() != title) d->chart->setTitle(title);  // a new title lays the chart out again
}
void PlotWidget::setXTitle(const QString& title) { d->x->setTitleText(title); }
void PlotWidget::setYTitle(const QString& title) { d->y->setTitleText(title); }

void PlotWidget::setXLabelFormat(const QString& format) { d->x->setLabelFormat(format); }

void PlotWidget::setHighlighted(bool on) {
    if (on == m_highlighted) return;
    m_highlighted = on;
    d->chart->setBackgroundPen(on ? QPen(QColor(230, 126, 34), 3.0) : d->basePen);
    d->chart->setBackgroundBrush(on ? QBrush(QColor(255, 248, 240)) : d->baseBrush);
}

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
    if (scale != YScale::linear && d->y->tickInterval() < 1.0) {
        const double lo = std::floor(d->y->min());
        applyAxis(d->y, lo, std::max(std::ceil(d->y->max()), lo + 1.0), 1.0);
    }
    if (changed)
        for (int i = 0; i < d->series.size(); ++i) applyPoints(i);
}

double PlotWidget::yTickInterval() const { return d->y->tickInterval(); }

void PlotWidget::setXRange(double x0, double x1) {
    if (!(x1 > x0)) x1 = x0 + 1;
    if (d->x->min() == x0 && d->x->max() == x1) return;
    // Whole units at least: the x axis counts steps (or powers), printed "%.0f", so a finer interval
    // on a wide plot printed one number twice ("0 0 1 2 2").
    applyAxis(d->x, x0, x1, std::max(1.0, niceStep(x1 - x0, std::max(2, plotWidth() / 90))));
    setCursorStep(d->cursorX);
    placeBand();
}

void PlotWidget::setYRange(double lo, double hi) {
    if (m_yScale != YScale::linear) {
        auto f = [this](double v) { return m_yScale == YScale::log2 ? std::log2(v) : std::log10(v); };
        lo = lo > 0 ? std::floor(f(lo)) : 0;
        hi = hi > 0 ? std::ceil(f(hi)) : lo + 1;
        if (hi <= lo) hi = lo + 1;
        // Whole powers only: a range of one decade (a single held-out point) that already matched
        // the axis's initial 0…1 must still get its interval, or fractional ticks print 1e0 1e0 1e1.
        const double step = std::max(1.0, std::ceil((hi - lo) / 5));
        if (d->y->min() == lo && d->y->max() == hi && d->y->tickInterval() == step) return;
        applyAxis(d->y, lo, hi, step);
        return;
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
    if (hi <= lo) {
        const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
        lo -= pad, hi += pad;
    }
    // Ends on ticks: the axis reads better, and stays put while new data fits, so its labels are
    // not laid out again on every redraw.
    const double step = niceStep(hi - lo, 5);
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
    if (d->y->min() == lo && d->y->max() == hi && d->y->tickInterval() == step) return;
    applyAxis(d->y, lo, hi, step);
}

double PlotWidget::xMin() const { return d->x->min(); }
double PlotWidget::xMax() const { return d->x->max(); }

int PlotWidget::plotWidth() const {
    const int w = static_cast<int>(d->chart->plotArea().width());
    return w > 10 ? w : std::max(10, width() - 70);
}

void PlotWidget::setCursorStep(double x) {
    d->cursorX = x;
    const QRectF area = d->chart->plotArea();
    const double x0 = xMin(), x1 = xMax();
    if (!std::isfinite(x) || x < x0 || x > x1 || d->bars) {
        d->cursor->hide();
        return;
    }
    const double px = area.left() + (x - x0) / (x1 - x0) * area.width();
    d->cursor->setLine(px, area.top(), px, area.bottom());
    d->cursor->show();
}

void PlotWidget::setXBand(double x0, double x1, const QString& label) {
    d->bandX0 = x0;
    d->bandX1 = x1;
    d->bandLabel->setText(label);
    placeBand();
}

QPair<double, double> PlotWidget::xBand() const { return {d->bandX0, d->bandX1}; }

void PlotWidget::placeBand() {
    const QRectF area = d->chart->plotArea();
    const double x0 = xMin(), x1 = xMax();
    if (!std::isfinite(d->bandX0) || !std::isfinite(d->bandX1) || d->bandX1 < x0 || d->bandX0 > x1 || d->bars) {
        d->band->hide();
        d->bandLabel->hide();
        return;
    }
    auto px = [&](double x) { return area.left() + (std::clamp(x, x0, x1) - x0) / (x1 - x0) * area.width(); };
    const double a = px(d->bandX0), b = std::max(px(d->bandX1), a + 2);  // a one-step window stays visible
    d->band->setRect(a, area.top(), b - a, area.height());
    d->band->show();
    if (d->bandLabel->text().isEmpty()) {
        d->bandLabel->hide();
        return;
    }
    // At the band's top, inside the plot: right of the band, or left of it where the right has no room.
    const double w = d->bandLabel->boundingRect().width();
    const double lx = b + 4 + w <= area.right() ? b + 4 : std::max(area.left() + 2, a - 4 - w);
    d->bandLabel->setPos(lx, area.top() + 3);
    d->bandLabel->show();
}

void PlotWidget::setPlaceholder(const QString& text) {
    d->placeholderText = text;
    const bool on = !text.isEmpty();
    // Axes without data would be invented ones (the Memory chart's 0–100 × 0–1 before any step):
    // the empty state shows the line alone.
    for (QAbstractAxis* a : d->chart->axes()) a->setVisible(!on);
    if (d->bars) {
        d->bars->setVisible(!on);
        d->chart->legend()->setVisible(!on);
    }
    if (on) {
        d->cursor->hide();
        d->band->hide();
        d->bandLabel->hide();
    } else {
        setCursorStep(d->cursorX);
        placeBand();
    }
    placePlaceholder();
}

QString PlotWidget::placeholder() const { return d->placeholderText; }

void PlotWidget::placePlaceholder() {
    if (d->placeholderText.isEmpty()) {
        d->placeholder->hide();
        return;
    }
    // Centred in the plot area (with the axes hidden, all of the chart under its title), broken into
    // lines at spaces where the tile is narrow (classroom fonts on a laptop), never past its edge.
    const QRectF r = d->chart->plotArea();
    const QFontMetricsF metrics(d->placeholder->font());
    const double room = r.width() - 8;
    QStringList lines;
    for (const QString& word : d->placeholderText.split(QLatin1Char(' '))) {
        if (!lines.isEmpty() && metrics.horizontalAdvance(lines.back() + QLatin1Char(' ') + word) <= room)
            lines.back() += QLatin1Char(' ') + word;
        else
            lines << word;
    }
    for (QString& line : lines) line = metrics.elidedText(line, Qt::ElideRight, room);
    d->placeholder->setText(lines.join(QLatin1Char('\n')));
    const QRectF t = d->placeholder->boundingRect();
    d->placeholder->setPos(std::max(r.left(), r.center().x() - t.width() / 2), r.center().y() - t.height() / 2);
    d->placeholder->show();
}

void PlotWidget::setLegendVisible(bool visible) {
    QLegend* l = d->chart->legend();
    l->setAlignment(Qt::AlignBottom);
    QFont lf = axisFont();
    lf.setPointSizeF(8.5 * m_fontScale);
    l->setFont(lf);
    l->setVisible(visible);
}

void PlotWidget::setBars(const QStringList& categories, const QList<BarSet>& sets, const QString& valueTitle) {
    if (!d->bars) {
        removeAllSeries();
        d->chart->removeAxis(d->x);
        d->chart->removeAxis(d->y);
        // removeAxis gives up the chart's ownership; the widget owns them now (other calls may
        // still read them), so they are deleted with it instead of leaking.
        d->x->setParent(this);
        d->y->setParent(this);
        d->bars = new QHorizontalStackedBarSeries;
        d->bars->setBarWidth(0.6);
        d->chart->addSeries(d->bars);
        d->barCategories = new QBarCategoryAxis;
        d->barValues = new QValueAxis;
        d->barCategories->setLabelsFont(axisFont());
        d->barValues->setLabelsFont(axisFont());
        d->barValues->setLabelFormat(QStringLiteral("%.3g"));
        d->barValues->setGridLineColor(QColor(0, 0, 0, 28));
        d->chart->addAxis(d->barCategories, Qt::AlignLeft);
        d->chart->addAxis(d->barValues, Qt::AlignBottom);
        d->bars->attachAxis(d->barCategories);
        d->bars->attachAxis(d->barValues);
        d->chart->legend()->show();
        // At the side, one category per line: a row under a narrow chart cuts the names short.
        d->chart->legend()->setAlignment(Qt::AlignRight);
        QFont lf = axisFont();
        lf.setPointSizeF(8);
        d->chart->legend()->setFont(lf);
        if (!d->placeholderText.isEmpty()) setPlaceholder(d->placeholderText);  // stays empty
    }
    d->barValues->setTitleText(valueTitle);
    bool sameSets = d->barSets.size() == sets.size();
    for (int i = 0; sameSets && i < sets.size(); ++i) sameSets = d->barSets[i]->label() == sets[i].name;
    if (!sameSets || categories != d->barCategoryNames) {
        d->bars->clear();
        d->barSets.clear();
        for (const BarSet& s : sets) {
            auto* set = new QBarSet(s.name);
            set->setColor(s.colour);
            set->setBorderColor(s.colour.darker(115));
            d->bars->append(set);
            d->barSets << set;
        }
        d->barCategories->clear();
        d->barCategories->append(categories);
        d->barCategoryNames = categories;
        d->barSetsGiven.clear();
    }
    bool same = d->barSetsGiven.size() == sets.size();
    for (int i = 0; same && i < sets.size(); ++i) same = d->barSetsGiven[i].values == sets[i].values;
    if (same) return;
    d->barSetsGiven = sets;
    double total = 0;
    QList<double> sums(categories.size(), 0.0);
    for (int i = 0; i < sets.size(); ++i) {
        for (int c = 0; c < categories.size(); ++c) {
            const qreal v = c < sets[i].values.size() ? sets[i].values[c] : 0;
            if (d->barSets[i]->count() <= c) d->barSets[i]->append(v);
            else if (d->barSets[i]->at(c) != v) d->barSets[i]->replace(c, v);
            sums[c] += v;
        }
    }
    for (double s : sums) total = std::max(total, s);
    d->barValues->setRange(0, total > 0 ? total * 1.05 : 1);
    d->barValues->applyNiceNumbers();
}

void PlotWidget::setFontScale(double s) {
    const double k = s / m_fontScale;
    m_fontScale = s;
    auto grow = [k](QFont f) {
        f.setPointSizeF(f.pointSizeF() * k);
        return f;
    };
    d->chart->setTitleFont(grow(d->chart->titleFont()));
    for (QValueAxis* a : {d->x, d->y}) {
        a->setLabelsFont(grow(a->labelsFont()));
        a->setTitleFont(grow(a->titleFont()));
    }
    d->chart->legend()->setFont(grow(d->chart->legend()->font()));
    d->bandLabel->setFont(grow(d->bandLabel->font()));
    d->placeholder->setFont(grow(d->placeholder->font()));
    placeBand();
    placePlaceholder();
}

}  // namespace mpx::ui
