// PlotWidget's event lanes (plot_widget.hpp): rows of marks under the x axis, one per run, on the
// plot's step axis, and the markers they draw with.
// Rule: the lanes live in the chart's bottom margin, which setLanes and addLaneMarks size for them;
// they never squeeze the plot or its axis labels.
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

void PlotWidget::LaneItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) {
    if (d->lanes.isEmpty()) return;
    const QRectF area = d->chart->plotArea();
    const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
    const QFont font = d->laneFont();
    const QFontMetricsF fm(font);
    p->setRenderHint(QPainter::Antialiasing, true);
    // The chart's fill under the names and inside hollow marks: a theme's chart brush may be a
    // gradient, whose colour() is black, so its first stop stands for it.
    const QBrush brush = d->chart->backgroundBrush();
    QColor fill = brush.color();
    if (brush.style() != Qt::SolidPattern)
        fill = brush.gradient() && !brush.gradient()->stops().isEmpty() ? brush.gradient()->stops().first().second
                                                                       : QColor(Qt::white);
    p->setFont(font);
    for (int i = 0; i < d->lanes.size(); ++i) {
        const Lane& lane = d->lanes[i];
        const QRectF r = d->laneRect(i);
        const double cy = r.center().y();
        if (i % 2 == 1) p->fillRect(QRectF(area.left(), r.top(), area.width(), r.height()), QColor(0, 0, 0, 12));
        QColor line = lane.colour;
        line.setAlpha(150);
        p->setPen(QPen(line, 1.2 * d->fontScale, lane.pen, Qt::FlatCap));
        p->drawLine(QPointF(area.left(), cy), QPointF(area.right(), cy));
        // Where each mark of the lane sits, and how far it reaches either side.
        QList<QPair<double, double>> at;
        for (const Private::LaneMarks& m : d->laneMarks)
            if (m.lane == i)
                for (double step : m.steps)
                    if (step >= x0 && step <= x1) at.append({area.left() + (step - x0) / (x1 - x0) * area.width(), m.size / 2});
        // The name at the row's left, under the y labels and into the plot where it is longer, or
        // at its right end where marks lie under the left; where both have marks, under them.
        const QString name = fm.elidedText(lane.name, Qt::ElideMiddle, std::max(20.0, area.left() - 6 + area.width() * 0.3));
        const double w = fm.horizontalAdvance(name) + 6;
        auto clear = [&](double a, double b) {
            return std::none_of(at.begin(), at.end(), [&](const auto& m) { return m.first + m.second > a && m.first - m.second < b; });
        };
        const bool left = clear(r.left(), r.left() + w), right = !left && clear(area.right() - w, area.right());
        const QRectF box(right ? area.right() - w : r.left(), cy - fm.height() / 2, w, fm.height());
        auto drawName = [&] {
            QColor back = fill;
            back.setAlpha(215);
            p->setPen(Qt::NoPen);
            p->setBrush(back);
            p->drawRoundedRect(box, 2, 2);
            p->setPen(QColor(0x33, 0x33, 0x33));  // the line beside it says which run; a pale run's name would not read
            p->drawText(box.adjusted(3, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, name);
        };
        if (!left && !right) drawName();
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
        if (left || right) drawName();
    }
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

int PlotWidget::laneCount() const { return static_cast<int>(d->lanes.size()); }
QString PlotWidget::laneName(int lane) const { return lane >= 0 && lane < d->lanes.size() ? d->lanes[lane].name : QString(); }

int PlotWidget::addLaneMarks(int lane, const QString& name, const QColor& fill, const QColor& border, Marker shape, qreal size) {
    const double before = d->lanesHeight();
    d->laneMarks << Private::LaneMarks{lane, name, fill, border, shape, size, {}};
    if (d->lanesHeight() != before) roomForLanes();  // a larger mark makes each row taller
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

QRectF PlotWidget::plotRect() const { return inWidget(d->chart->plotArea(), d->chart, d->view); }

void PlotWidget::placeLanes() {
    d->laneItem->setVisible(!d->lanes.isEmpty() && !d->bars && d->placeholderText.isEmpty());
    d->laneItem->changed();
}

}  // namespace mpx::ui
