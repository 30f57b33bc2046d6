// PlotWidget: QChart + QChartView, value axes with log transforms, wheel zoom and drag pan.
// This file builds the chart and holds its series and look (highlight, legend, font scale); the
// other parts are named in plot_private.hpp.
// Rule: setPoints keeps the points as given and replaces a series only when they changed; the log
// transform and a series' pixel offset are applied on the way in (applyPoints), never stored.
#include "ui/kit/plot_private.hpp"

#include "ui/kit/chart_image.hpp"

#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QToolTip>
#include <QVBoxLayout>

namespace mpx::ui {
using namespace plot;

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
    d->title = title;
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
    d->laneItem = new LaneItem(d.get(), this);
    connect(d->chart, &QChart::plotAreaChanged, this, [this] {
        // Fitting ticks and titles may lay the chart out again at once (a new axis range does): the
        // plot area that change brings is not fitted again, or ticks chosen for one width pick others
        // for the next, and so on down the stack (the stress test's crash). What is placed on the
        // plot is placed after, on the area as it ends.
        if (d->placing) return;
        d->placing = true;
        d->plotLaidOutLeft = d->chart->margins().left();
        fitBarTicks();
        fitTitles();
        setCursorStep(d->cursorX);
        placeBand();
        placePlaceholder();
        placeLanes();
        // Dodged series are offset in pixels: a new height moves them in axis units.
        for (int i = 0; i < d->series.size(); ++i)
            if (d->offsets[i] != 0) applyPoints(i);
        if (yTicksFitting() != d->yTicks) setYRange(d->yAskLo, d->yAskHi);  // ticks for this height
        else applyYRange();  // half a dot's room at an end is so many axis units at this height
        d->placing = false;
    });
    setXRange(0, 100);
    setYRange(0, 1);
    installChartImageMenu(this);  // Copy image, Save image… on a right click
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
    d->offsets << 0;
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
    d->offsets << 0;
    return static_cast<int>(d->series.size()) - 1;
}

void PlotWidget::removeAllSeries() {
    for (QXYSeries* s : d->series) {
        d->chart->removeSeries(s);
        delete s;
    }
    d->series.clear();
    d->given.clear();
    d->offsets.clear();
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
    const double height = d->chart->plotArea().height();
    const double lift = d->offsets[id] != 0 && height > 1 ? d->offsets[id] * (d->y->max() - d->y->min()) / height : 0.0;
    if (m_yScale == YScale::linear && lift == 0) {
        d->series[id]->replace(points);
        return;
    }
    QList<QPointF> t;
    t.reserve(points.size());
    for (const QPointF& p : points) {
        if (m_yScale == YScale::linear) t.append(QPointF(p.x(), p.y() + lift));
        else if (p.y() > 0 && std::isfinite(p.y()))
            t.append(QPointF(p.x(), (m_yScale == YScale::log2 ? std::log2(p.y()) : std::log10(p.y())) + lift));
    }
    d->series[id]->replace(t);
}

void PlotWidget::setSeriesOffset(int id, qreal px) {
    if (id < 0 || id >= d->series.size() || d->offsets[id] == px) return;
    d->offsets[id] = px;
    applyPoints(id);
}

QList<QPointF> PlotWidget::points(int id) const {
    return id >= 0 && id < d->given.size() ? d->given[id] : QList<QPointF>{};
}

void PlotWidget::setSeriesVisible(int id, bool visible) {
    if (id < 0 || id >= d->series.size() || d->series[id]->isVisible() == visible) return;
    d->series[id]->setVisible(visible);
    applyYRange();
}

void PlotWidget::setHighlighted(bool on) {
    if (on == m_highlighted) return;
    m_highlighted = on;
    d->chart->setBackgroundPen(on ? QPen(QColor(230, 126, 34), 3.0) : d->basePen);
    d->chart->setBackgroundBrush(on ? QBrush(QColor(255, 248, 240)) : d->baseBrush);
    d->laneItem->update();  // its names' backing and hollow marks take the chart's fill
}

void PlotWidget::setLegendVisible(bool visible) {
    QLegend* l = d->chart->legend();
    l->setAlignment(Qt::AlignBottom);
    QFont lf = axisFont();
    lf.setPointSizeF(8.5 * d->fontScale);
    l->setFont(lf);
    l->setVisible(visible);
}

bool PlotWidget::legendVisible() const { return d->chart->legend()->isVisible(); }

QList<LineKey::Entry> PlotWidget::visibleLines() const {
    QList<LineKey::Entry> key;
    for (const QXYSeries* s : d->series) {
        if (!qobject_cast<const QLineSeries*>(s) || !s->isVisible() || s->name().isEmpty()) continue;
        const auto same = std::find_if(key.begin(), key.end(), [s](const LineKey::Entry& e) { return e.text == s->name(); });
        if (same == key.end()) key.append({s->pen(), s->name()});
        else if (s->pen().color().alpha() > same->pen.color().alpha()) same->pen = s->pen();
    }
    return key;
}

void PlotWidget::setFontScale(double s) {
    const double k = s / d->fontScale;
    d->fontScale = s;
    auto grow = [k](QFont f) {
        f.setPointSizeF(f.pointSizeF() * k);
        return f;
    };
    d->chart->setTitleFont(grow(d->chart->titleFont()));
    // The bar mode's axes too (the Memory chart): classroom enlarged every chart's text but its.
    for (QValueAxis* a : {d->x, d->y, d->barValues}) {
        if (!a) continue;
        a->setLabelsFont(grow(a->labelsFont()));
        a->setTitleFont(grow(a->titleFont()));
    }
    if (d->barCategories) d->barCategories->setLabelsFont(grow(d->barCategories->labelsFont()));
    d->chart->legend()->setFont(grow(d->chart->legend()->font()));
    d->bandLabel->setFont(grow(d->bandLabel->font()));
    d->placeholder->setFont(grow(d->placeholder->font()));
    // The hover readout too (issue 47 item 16: classroom's tooltip kept desktop text). Every view shows
    // it with QToolTip::showText(…, this plot), and a tooltip takes the style sheet of the widget it
    // is shown for; without classroom, no style sheet, so the desktop's tooltip is Qt's own.
    setStyleSheet(s == 1.0 ? QString()
                           : QStringLiteral("QToolTip { font-size: %1pt; }").arg(QToolTip::font().pointSizeF() * s, 0, 'f', 1));
    if (!d->lanes.isEmpty()) roomForLanes();
    placeBand();
    placePlaceholder();
    placeLanes();
    fitBarTicks();
    fitTitles();
}

}  // namespace mpx::ui
