// PlotWidget's event lanes (plot_widget.hpp): rows of marks under the x axis, one per run, on the
// plot's step axis, and the markers they draw with.
// Rule: the lanes live in the chart's bottom margin, which setLanes and addLaneMarks size for them;
// they never squeeze the plot or its axis labels. Each name sits in a gutter left of the plot and the
// marks over the plot only, so no mark covers a name in any view (the left margin makes the gutter).
#include "ui/kit/plot_private.hpp"

#include <QPainter>

namespace mpx::ui {
namespace plot {

// A marker's outline centred on (0, 0), `size` pixels across.
QPainterPath markerPath(PlotWidget::Marker shape, qreal size) {
    const qreal r = size / 2;
    QPainterPath p;
    switch (shape) {
        case PlotWidget::Marker::circle: p.addEllipse(QPointF(0, 0), r, r); break;
        case PlotWidget::Marker::square: p.addRect(QRectF(-r, -r, size, size)); break;
        case PlotWidget::Marker::diamond: p.addPolygon(QPolygonF{{0, -r}, {r, 0}, {0, r}, {-r, 0}, {0, -r}}); break;
        case PlotWidget::Marker::triangle: p.addPolygon(QPolygonF{{0, -r}, {r, r * 0.75}, {-r, r * 0.75}, {0, -r}}); break;
    }
    return p;
}

// The character a key names a marker by: hollow where it is drawn without fill.
QString markerSymbol(PlotWidget::Marker shape, bool hollow) {
    switch (shape) {
        case PlotWidget::Marker::circle: return hollow ? QStringLiteral("○") : QStringLiteral("●");
        case PlotWidget::Marker::square: return hollow ? QStringLiteral("□") : QStringLiteral("■");
        case PlotWidget::Marker::diamond: return hollow ? QStringLiteral("◇") : QStringLiteral("◆");
        case PlotWidget::Marker::triangle: return hollow ? QStringLiteral("△") : QStringLiteral("▲");
    }
    return {};
}

}  // namespace plot
using namespace plot;
namespace {

// From the chart's coordinates to the widget's (the view shows the scene unscaled).
QRectF inWidget(const QRectF& r, const QChart* chart, const QChartView* view) {
    return chart->mapRectToScene(r).translated(QPointF(view->mapFromScene(QPointF(0, 0)) + view->pos()));
}

}  // namespace

// The widest name's box: its text and a little room either side, never more than 40 % of the chart
// (a longer name is shortened, laneShownName; its lane's run is also named by the legend and colour).
double PlotWidget::Private::laneNameWidth() const {
    const QFontMetricsF fm(laneFont());
    double w = 0;
    for (const Lane& lane : lanes) w = std::max(w, fm.horizontalAdvance(lane.name) + 6);
    return std::min(w, std::max(48.0, view->width() * 0.4));
}

QRectF PlotWidget::Private::laneNameRect(int lane) const {
    const QRectF r = laneRect(lane);
    const QFontMetricsF fm(laneFont());
    const double room = chart->plotArea().left() - markReach() - k_nameGap - k_laneLeft;
    const double w = std::max(0.0, std::min(fm.horizontalAdvance(lanes[lane].name) + 6, room));
    return QRectF(k_laneLeft, r.center().y() - fm.height() / 2, w, fm.height());
}

// Whole where it fits. Otherwise less the "+" parts every lane's name has, which tell no lane from
// another ("amp-fp16+attn-before+pytorch" beside "amp-fp16+attn-split+pytorch" is "…+attn-before+…":
// eliding the middle cut the very words that differ), then elided in the middle if still too wide.
QString PlotWidget::Private::laneShownName(int lane) const {
    const QFontMetricsF fm(laneFont());
    const double room = laneNameRect(lane).width() - 5;
    QString shown = lanes[lane].name;
    if (fm.horizontalAdvance(shown) > room && lanes.size() > 1) {
        const QStringList parts = shown.split(QLatin1Char('+'));
        auto everywhere = [&](const QString& part) {
            return std::all_of(lanes.begin(), lanes.end(), [&](const Lane& l) { return l.name.split(QLatin1Char('+')).contains(part); });
        };
        qsizetype first = -1, last = -1;
        QStringList kept;
        for (qsizetype k = 0; k < parts.size(); ++k)
            if (!everywhere(parts[k])) {
                kept << parts[k];
                if (first < 0) first = k;
                last = k;
            }
        if (!kept.isEmpty() && kept.size() < parts.size())
            shown = (first > 0 ? QStringLiteral("…+") : QString()) + kept.join(QLatin1Char('+')) +
                    (last < parts.size() - 1 ? QStringLiteral("+…") : QString());
    }
    return fm.elidedText(shown, Qt::ElideMiddle, room);
}

QList<QRectF> PlotWidget::Private::laneMarkRects(int lane) const {
    QList<QRectF> out;
    const QRectF area = chart->plotArea();
    const double x0 = x->min(), x1 = x->max(), cy = laneRect(lane).center().y();
    for (const LaneMarks& m : laneMarks)
        if (m.lane == lane)
            for (double step : m.steps)
                if (step >= x0 && step <= x1) {
                    const double px = area.left() + (step - x0) / (x1 - x0) * area.width();
                    out << QRectF(px - m.size / 2, cy - m.size / 2, m.size, m.size);
                }
    return out;
}

void PlotWidget::LaneItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
    if (d->lanes.isEmpty()) return;
    const QRectF area = d->chart->plotArea();
    const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
    p->setRenderHint(QPainter::Antialiasing, true);
    // The chart's fill inside hollow marks: a theme's chart brush may be a gradient, whose colour()
    // is black, so its first stop stands for it.
    const QBrush brush = d->chart->backgroundBrush();
    QColor fill = brush.color();
    if (brush.style() != Qt::SolidPattern)
        fill = brush.gradient() && !brush.gradient()->stops().isEmpty() ? brush.gradient()->stops().first().second
                                                                       : QColor(Qt::white);
    p->setFont(d->laneFont());
    for (int i = 0; i < d->lanes.size(); ++i) {
        const Lane& lane = d->lanes[i];
        const QRectF r = d->laneRect(i);
        const double cy = r.center().y();
        // Every other row shaded across its name too, so the eye follows a name to its marks.
        if (i % 2 == 1) p->fillRect(r, QColor(0, 0, 0, 12));
        QColor line = lane.colour;
        line.setAlpha(150);
        p->setPen(QPen(line, 1.2 * d->fontScale, lane.pen, Qt::FlatCap));
        p->drawLine(QPointF(area.left(), cy), QPointF(area.right(), cy));
        // The name in the gutter left of the plot, where no mark reaches (plot_private.hpp's rule).
        p->setPen(QColor(0x33, 0x33, 0x33));  // the line beside it says which run; a pale run's name would not read
        p->drawText(d->laneNameRect(i).adjusted(3, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, d->laneShownName(i));
        for (const Private::LaneMarks& m : d->laneMarks) {
            if (m.lane != i) continue;
            const QPainterPath shape = markerPath(m.shape, m.size);
            const bool hollow = m.fill.alpha() < 128;
            p->setPen(QPen(m.border, hollow ? 1.6 * d->fontScale : 1.0));
            p->setBrush(hollow ? QBrush(fill) : QBrush(m.fill));
            for (double step : m.steps) {
                if (step < x0 || step > x1) continue;
                const double px = area.left() + (step - x0) / (x1 - x0) * area.width();
                p->drawPath(shape.translated(px, cy));
            }
        }
    }
}

// The chart's left margin: as much as the gutter needs beyond what the y axis's labels and title
// already leave, none without lanes. The y axis's part is the plot's left edge less the margin it was
// laid out with (plotLaidOutLeft): the margin asked for last may not be laid out yet, and measuring
// against it grew the margin by the same deficit on every call before the chart's next layout.
void PlotWidget::fitLaneGutter() {
    const QRectF area = d->chart->plotArea();
    QMargins m = d->chart->margins();
    int left = 2;
    if (!d->lanes.isEmpty() && !d->bars && d->placeholderText.isEmpty()) {
        if (area.width() < 10) return;  // not laid out yet
        const double yPart = area.left() - d->plotLaidOutLeft;
        const double need = Private::k_laneLeft + d->laneNameWidth() + Private::k_nameGap + d->markReach();
        left = std::max(2, static_cast<int>(std::ceil(need - yPart)));
    }
    if (left == m.left()) return;
    m.setLeft(left);
    d->chart->setMargins(m);
}

void PlotWidget::setLanes(const QList<Lane>& lanes) {
    const bool sameRows = lanes.size() == d->lanes.size();
    d->lanes = lanes;
    d->laneMarks.clear();
    // Room under the x axis's title for the rows (the chart lays its axes out above the margin).
    if (!sameRows) roomForLanes();
    placeLanes();
    fitTitles();
}

void PlotWidget::roomForLanes() {
    d->makeRoomForLanes();
    if (d->tileMinimum.isValid()) setTileMinimumSize(d->tileMinimum);
}

void PlotWidget::setTileMinimumSize(QSize s) {
    d->tileMinimum = s;
    setMinimumSize(s.width(), s.height() + static_cast<int>(std::ceil(d->lanesHeight())));
}

int PlotWidget::laneRoom() const { return static_cast<int>(std::ceil(d->lanesHeight())); }

int PlotWidget::laneCount() const { return static_cast<int>(d->lanes.size()); }
QString PlotWidget::laneName(int lane) const { return lane >= 0 && lane < d->lanes.size() ? d->lanes[lane].name : QString(); }

int PlotWidget::addLaneMarks(int lane, const QString& name, const QColor& fill, const QColor& border, Marker shape, qreal size) {
    const double before = d->lanesHeight();
    d->laneMarks << Private::LaneMarks{lane, name, fill, border, shape, size, {}};
    if (d->lanesHeight() != before) roomForLanes();  // a larger mark makes each row taller
    fitLaneGutter();                                  // and reaches further left
    return static_cast<int>(d->laneMarks.size()) - 1;
}

void PlotWidget::setLaneSteps(int id, const QList<double>& steps) {
    if (id < 0 || id >= d->laneMarks.size()) return;
    // std::equal, not QList's ==: Qt 6.4's passes an empty list's null data to memcmp (UBSan).
    const QList<double>& old = d->laneMarks[id].steps;
    if (old.size() == steps.size() && std::equal(old.begin(), old.end(), steps.begin())) return;
    d->laneMarks[id].steps = steps;
    d->laneItem->update();
    if (keyNames() != d->keyNames) fitTitles();
}

QList<double> PlotWidget::laneSteps(int id) const {
    return id >= 0 && id < d->laneMarks.size() ? d->laneMarks[id].steps : QList<double>{};
}

QRectF PlotWidget::laneRect(int lane) const {
    if (lane < 0 || lane >= d->lanes.size()) return {};
    return inWidget(d->laneRect(lane), d->chart, d->view);
}

QRectF PlotWidget::laneNameRect(int lane) const {
    if (lane < 0 || lane >= d->lanes.size()) return {};
    return inWidget(d->laneNameRect(lane), d->chart, d->view);
}

QString PlotWidget::laneShownName(int lane) const { return lane >= 0 && lane < d->lanes.size() ? d->laneShownName(lane) : QString(); }

QList<QRectF> PlotWidget::laneMarkRects(int lane) const {
    QList<QRectF> out;
    if (lane < 0 || lane >= d->lanes.size()) return out;
    for (const QRectF& r : d->laneMarkRects(lane)) out << inWidget(r, d->chart, d->view);
    return out;
}

QRectF PlotWidget::plotRect() const { return inWidget(d->chart->plotArea(), d->chart, d->view); }

void PlotWidget::placeLanes() {
    fitLaneGutter();
    d->laneItem->setVisible(!d->lanes.isEmpty() && !d->bars && d->placeholderText.isEmpty());
    d->laneItem->changed();
}

}  // namespace mpx::ui
