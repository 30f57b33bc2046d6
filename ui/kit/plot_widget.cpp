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
#include <QPainter>
#include <QPainterPath>
#include <QScatterSeries>
#include <QTextDocument>
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

QFont scaled(QFont f, double s) {
    f.setPointSizeF(f.pointSizeF() * s);
    return f;
}

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

QString plainText(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText();
}

// The width a title's rich text takes in `font`, with the margin Qt Charts gives its text items.
double htmlWidth(const QString& html, const QFont& font) {
    QTextDocument doc;
    doc.setDocumentMargin(4);
    doc.setDefaultFont(font);
    doc.setHtml(html);
    return doc.idealWidth();
}

// A title and its shorter forms, each less its last qualifier: "Held-out loss · every 50 steps",
// "Held-out loss"; "Training loss (each step's batch)", "Training loss". A form is never cut inside
// its name, so the last one still says which chart it is.
QStringList titleForms(const QString& html, const QStringList& separators) {
    QStringList out{html};
    QString t = html;
    for (;;) {
        qsizetype at = -1;
        for (const QString& sep : separators) at = std::max(at, t.lastIndexOf(sep));
        if (at <= 0) break;
        QString cut = t.left(at);
        for (bool trimmed = false; !trimmed;) {
            trimmed = true;
            for (const QString& end : {QStringLiteral(" "), QStringLiteral("&nbsp;"), QStringLiteral(" ·")})
                if (cut.endsWith(end)) cut.chop(end.size()), trimmed = false;
        }
        const QString plain = plainText(cut).trimmed();
        if (plain.isEmpty() || plain == QStringLiteral("★")) break;
        out << cut;
        t = cut;
    }
    return out;
}

// From the chart's coordinates to the widget's (the view shows the scene unscaled).
QRectF inWidget(const QRectF& r, const QChart* chart, const QChartView* view) {
    return chart->mapRectToScene(r).translated(QPointF(view->mapFromScene(QPointF(0, 0)) + view->pos()));
}

// The first form that fits `room` pixels; the shortest where none does (Qt elides that one).
QString fitted(const QStringList& forms, const QFont& font, double room) {
    for (const QString& f : forms)
        if (htmlWidth(f, font) <= room) return f;
    return forms.back();
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
    void resizeEvent(QResizeEvent* e) override;  // below, after Private

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
    double barTotal = 0;  // the longest bar
    bool placing = false;  // within plotAreaChanged's handler
    QList<QBarSet*> barSets;
    QStringList barCategoryNames;
    QList<BarSet> barSetsGiven;
    QPen basePen;      // the chart's own background frame and fill, restored when unhighlighted
    QBrush baseBrush;
    QList<qreal> offsets;  // per series: pixels drawn above its values
    QString title, xTitle, yTitle;                // as given
    QString shownTitle, shownXTitle, shownYTitle;  // as fitted
    QStringList keyNames;  // the lanes' key as last fitted
    // event lanes
    struct LaneMarks {
        int lane;
        QString name;
        QColor fill, border;
        Marker shape;
        qreal size;
        QList<double> steps;
    };
    QList<Lane> lanes;
    QList<LaneMarks> laneMarks;
    LaneItem* laneItem = nullptr;
    double fontScale = 1.0;  // setFontScale's
    QSize tileMinimum;       // setTileMinimumSize's (invalid: none set)
    QFont laneFont() const { return scaled(axisFont(), fontScale); }
    double laneHeight() const {
        qreal mark = 0;
        for (const LaneMarks& m : laneMarks) mark = std::max(mark, m.size);
        return std::max<double>(QFontMetricsF(laneFont()).height(), mark + 2) + 2;
    }
    // The chart's bottom margin: the lanes, a gap above them and room below for the highlight's frame.
    static constexpr double k_laneGap = 4, k_laneFoot = 8;
    double lanesHeight() const { return lanes.isEmpty() ? 0 : k_laneGap + lanes.size() * laneHeight() + k_laneFoot; }
    void makeRoomForLanes() {
        QMargins m = chart->margins();
        m.setBottom(2 + static_cast<int>(std::ceil(lanesHeight())));
        chart->setMargins(m);
    }
    QRectF laneRect(int lane) const {  // chart coordinates: from the chart's left edge to the plot's right
        const QRectF area = chart->plotArea();
        const double h = laneHeight();
        const double top = chart->size().height() - 2 - lanesHeight() + k_laneGap + lane * h;
        return QRectF(6, top, area.right() - 6, h);
    }
};

// The event lanes, drawn in one item under the x axis (in the chart's bottom margin, which
// setLanes makes room for): a faint line in the run's colour and pen, its marks, its name.
class PlotWidget::LaneItem : public QGraphicsItem {
public:
    LaneItem(PlotWidget::Private* d, PlotWidget* owner) : QGraphicsItem(d->chart), d(d), m_owner(owner) { setZValue(80); }
    QRectF boundingRect() const override {
        if (d->lanes.isEmpty()) return {};
        return d->laneRect(0).united(d->laneRect(static_cast<int>(d->lanes.size()) - 1)).adjusted(-2, -2, 12, 2);
    }
    void changed() {
        prepareGeometryChange();
        update();
    }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
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

private:
    PlotWidget::Private* d;
    PlotWidget* m_owner;
};

void PlotWidget::View::resizeEvent(QResizeEvent* e) {
    QChartView::resizeEvent(e);
    m_owner->fitTitles();
    emit m_owner->plotResized();
}

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
        fitBarTicks();
        fitTitles();
        setCursorStep(d->cursorX);
        placeBand();
        placePlaceholder();
        placeLanes();
        // Dodged series are offset in pixels: a new height moves them in axis units.
        for (int i = 0; i < d->series.size(); ++i)
            if (d->offsets[i] != 0) applyPoints(i);
        d->placing = false;
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
    if (id >= 0 && id < d->series.size()) d->series[id]->setVisible(visible);
}

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
    if (!d->xTitle.isEmpty()) xForms << d->xTitle + (entries.isEmpty() ? QString() : QStringLiteral(" · ") + entries.join(QStringLiteral("&nbsp; ")));
    for (qsizetype n = entries.size(); n > 0; --n) xForms << entries.mid(0, n).join(QStringLiteral("&nbsp; "));
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

void PlotWidget::setHighlighted(bool on) {
    if (on == m_highlighted) return;
    m_highlighted = on;
    d->chart->setBackgroundPen(on ? QPen(QColor(230, 126, 34), 3.0) : d->basePen);
    d->chart->setBackgroundBrush(on ? QBrush(QColor(255, 248, 240)) : d->baseBrush);
    d->laneItem->update();  // its names' backing and hollow marks take the chart's fill
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
        for (int i = 0; i < d->series.size(); ++i)
            if (d->offsets[i] != 0) applyPoints(i);
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
    for (int i = 0; i < d->series.size(); ++i)
        if (d->offsets[i] != 0) applyPoints(i);
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
    lf.setPointSizeF(8.5 * d->fontScale);
    l->setFont(lf);
    l->setVisible(visible);
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
        d->barCategories->setLabelsFont(scaled(axisFont(), d->fontScale));
        d->barValues->setLabelsFont(scaled(axisFont(), d->fontScale));
        d->barValues->setTitleFont(scaled(axisFont(), d->fontScale));
        d->barValues->setLabelFormat(QStringLiteral("%.3g"));
        d->barValues->setTickType(QValueAxis::TicksDynamic);
        d->barValues->setTickAnchor(0);
        d->barValues->setGridLineColor(QColor(0, 0, 0, 28));
        d->chart->addAxis(d->barCategories, Qt::AlignLeft);
        d->chart->addAxis(d->barValues, Qt::AlignBottom);
        d->bars->attachAxis(d->barCategories);
        d->bars->attachAxis(d->barValues);
        d->chart->legend()->show();
        // At the side, one category per line: a row under a narrow chart cuts the names short.
        d->chart->legend()->setAlignment(Qt::AlignRight);
        QFont lf = axisFont();
        lf.setPointSizeF(8 * d->fontScale);
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
    d->barTotal = total;
    fitBarTicks();
}

// The value axis of the bars: from 0 to a round number over the longest bar, as many labels as fit
// the plot's width in its font (applyNiceNumbers chose five whatever the font, and classroom's text
// ran them together: "0100200300400").
void PlotWidget::fitBarTicks() {
    if (!d->bars) return;
    const double top = d->barTotal > 0 ? d->barTotal * 1.05 : 1;
    const QFontMetricsF fm(d->barValues->labelsFont());
    const double label = fm.horizontalAdvance(QString::number(top, 'g', 3)) + 2 * fm.averageCharWidth();
    const int ticks = std::clamp(static_cast<int>(d->chart->plotArea().width() / label), 2, 5);
    const double step = niceStep(top, ticks);
    const double end = std::ceil(top / step - 1e-9) * step;
    if (d->barValues->min() == 0 && d->barValues->max() == end && d->barValues->tickInterval() == step) return;
    applyAxis(d->barValues, 0, end, step);
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
    if (!d->lanes.isEmpty()) roomForLanes();
    placeBand();
    placePlaceholder();
    placeLanes();
    fitBarTicks();
    fitTitles();
}

}  // namespace mpx::ui
