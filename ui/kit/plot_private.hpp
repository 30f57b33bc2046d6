// The plot widget's insides, shared by its parts and included by nothing else: plot_widget.cpp
// (construction, series, look), plot_axes.cpp (ranges, ticks, titles), plot_overlays.cpp (cursor,
// band, placeholder), plot_lanes.cpp (event lanes), plot_bars.cpp (bar mode), plot_view.cpp (mouse).
// Rule: only PlotWidget's own files include this; Qt Charts stays behind plot_widget.hpp.
#pragma once

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
#include <QPainterPath>
#include <QValueAxis>
#include <QXYSeries>
#include <algorithm>
#include <cmath>

namespace mpx::ui {
namespace plot {

// 1, 2 or 5 × 10^k, the smallest such step that gives at most `ticks` intervals over `span`.
double niceStep(double span, int ticks);
// Range and tick interval together, in the order that never asks the axis for more ticks than the
// old or the new setting has (plot_axes.cpp).
void applyAxis(QValueAxis* a, double lo, double hi, double interval);
// A marker's outline centred on (0, 0), `size` pixels across (plot_lanes.cpp).
QPainterPath markerPath(PlotWidget::Marker shape, qreal size);
// The character a key names a marker by: hollow where it is drawn without fill.
QString markerSymbol(PlotWidget::Marker shape, bool hollow);

inline QFont axisFont() {
    QFont f;
    f.setPointSizeF(8.5);
    return f;
}

inline QFont scaled(QFont f, double s) {
    f.setPointSizeF(f.pointSizeF() * s);
    return f;
}

}  // namespace plot

class PlotWidget::View : public QChartView {
public:
    View(QChart* chart, PlotWidget* owner) : QChartView(chart), m_owner(owner) {
        setRenderHint(QPainter::Antialiasing, true);
        setMouseTracking(true);
        setFrameShape(QFrame::NoFrame);
    }

    double xAt(double px) const;  // the data x at widget pixel px
    void zoomAround(double px, double factor);  // asks for the x range × factor, pixel px staying put
    void request(double x0, double x1);         // emits xRangeRequested, clamped into setXLimits'

protected:
    void mouseMoveEvent(QMouseEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent*) override;
    void mouseDoubleClickEvent(QMouseEvent*) override;
    void leaveEvent(QEvent*) override;
    bool viewportEvent(QEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;

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
    double xLimitLo = std::nan(""), xLimitHi = std::nan("");  // setXLimits'
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
    double yLo = 0, yHi = 1, yStep = 0.2;  // setYRange's, in axis units, before applyYRange widens it
    double yAskLo = 0, yAskHi = 1;         // setYRange's arguments, for a new height's ticks
    int yTicks = 5;                        // the linear axis's most intervals at this height
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
    int plotLaidOutLeft = 2;  // the chart's left margin when it last laid out its plot area (fitLaneGutter)
    QFont laneFont() const { return plot::scaled(plot::axisFont(), fontScale); }
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
        return QRectF(k_laneLeft, top, area.right() - k_laneLeft, h);
    }
    // The lanes' one placement rule (issue 47 item 12): each name sits in a gutter at the lane's left,
    // between the chart's edge and the plot, and the marks only over the plot, so no mark ever covers
    // a name, whatever the view, zoom or step. The chart's left margin grows where the y labels leave
    // the gutter too narrow for the longest name (fitLaneGutter, plot_lanes.cpp).
    static constexpr double k_laneLeft = 10, k_nameGap = 3;  // k_laneLeft: clear of the highlight's 3 px frame
    double markReach() const {  // how far a mark reaches left of its step: half the largest mark
        qreal mark = 0;
        for (const LaneMarks& m : laneMarks) mark = std::max(mark, m.size);
        return mark / 2 + 1;
    }
    QRectF laneNameRect(int lane) const;         // the name's box, chart coordinates (plot_lanes.cpp)
    QString laneShownName(int lane) const;       // the name as it fits that box
    QList<QRectF> laneMarkRects(int lane) const;  // each mark in view, chart coordinates
    double laneNameWidth() const;                // the widest name's box, capped (plot_lanes.cpp)
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
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override;  // plot_lanes.cpp

private:
    PlotWidget::Private* d;
    PlotWidget* m_owner;
};

}  // namespace mpx::ui
