// The one adapter between mpx and Qt Charts (deprecated from Qt 6.10): a plot of lines and markers
// over a step axis, or a chart of stacked horizontal bars. Nothing else in mpx includes Qt Charts,
// so replacing it means rewriting this class only.
// Rule: callers hand over data in real units; log axes are done here (points ≤ 0 are dropped),
// and each series is updated with one replace() per redraw. Titles are fitted here, by the rule of
// title_fit.hpp: a title too wide for the chart loses its trailing qualifiers (" (…)", " · …", a
// legend after "&nbsp;") before Qt would cut it mid-word, so its name always shows whole.
// The class is written in parts, each named in plot_private.hpp.
#pragma once

#include <QColor>
#include <QList>
#include <QPair>
#include <QPointF>
#include <QStringList>
#include <QWidget>
#include <memory>

#include "ui/kit/line_key.hpp"

namespace mpx::ui {

class PlotWidget : public QWidget {
    Q_OBJECT
public:
    enum class YScale { linear, log10, log2 };
    enum class Marker { circle, diamond, triangle, square };
    // A row of event marks under the plot (setLanes): a run's name and its colour and pen.
    struct Lane {
        QString name;
        QColor colour;
        Qt::PenStyle pen = Qt::SolidLine;
    };
    struct BarSet {
        QString name;
        QColor colour;
        QList<qreal> values;  // one per category
    };

    explicit PlotWidget(const QString& title, QWidget* parent = nullptr);
    ~PlotWidget() override;

    // Series; ids count from 0 in order of creation.
    int addLine(const QString& name, const QColor& colour, qreal width = 1.6,
                Qt::PenStyle style = Qt::SolidLine);
    int addMarkers(const QString& name, const QColor& fill, const QColor& border, Marker shape,
                   qreal size = 9);
    void removeAllSeries();
    int seriesCount() const;
    void setPoints(int id, const QList<QPointF>& points);
    QList<QPointF> points(int id) const;  // as given (real units, before the log transform)
    void setSeriesVisible(int id, bool visible);
    // Drawn `px` pixels higher than its values (a dodge: two runs with equal values stay two lines);
    // points() and the hover still give the values.
    void setSeriesOffset(int id, qreal px);

    void setTitle(const QString& title);
    void setXTitle(const QString& title);
    void setYTitle(const QString& title);
    QString title() const;        // as given
    QString shownTitle() const;   // as fitted to the chart's width: whole or less its trailing qualifiers
    QString shownXTitle() const;  // likewise, with the lanes' key where there are lanes
    void setYScale(YScale scale);
    YScale yScale() const { return m_yScale; }
    double yTickInterval() const;  // in axis units (a log axis: powers)
    void setYLabelFormat(const QString& format);  // printf-style, linear axis: "%.0f", "%g%%"
    void setXLabelFormat(const QString& format);  // printf-style: "2^%.0f" for an x that is log2 of the value
    // tick: steps between x labels, so that charts sharing a step axis share its ticks; 0 picks one
    // for this plot's own width (xTickFor).
    void setXRange(double x0, double x1, double tick = 0);
    double xTickInterval() const;
    static double xTickFor(double span, int plotWidth);  // 1, 2 or 5 × 10^k, a label every ~90 px
    void setYRange(double lo, double hi);  // real units
    // The x range a zoom or a drag may ask for (the run's steps, [0, last step]): a request wider than
    // [lo, hi] asks for [lo, hi], one past an end slides back inside. NaN: no limit.
    void setXLimits(double lo, double hi);
    double xMin() const;
    double xMax() const;
    int plotWidth() const;  // pixels of the plot area: the column count for decimation
    void setCursorStep(double x);  // a vertical line at x; NaN hides it
    // A shaded span of steps [x0, x1] with a label at its top (NaN hides it): a window of steps.
    void setXBand(double x0, double x1, const QString& label = {});
    QPair<double, double> xBand() const;  // NaN, NaN while hidden
    void setLegendVisible(bool visible);  // the series' names under the plot
    bool legendVisible() const;
    // The shown lines (not markers) as a key: each name once, with its most opaque pen (a run's line
    // over its faint raw envelope). A figure of the chart draws it where the legend is hidden.
    QList<LineKey::Entry> visibleLines() const;
    // The empty state: one centred line ("press Run") and no axes, which without data would be
    // invented ones; an empty text shows the chart again. Bars set later stay hidden until then.
    void setPlaceholder(const QString& text);
    QString placeholder() const;
    // Title, axis and legend fonts × s against their normal size (the classroom view: a projector).
    void setFontScale(double s);
    // The lesson's highlight: an orange frame and a faint warm fill drawn by the chart itself. (A
    // QGraphicsEffect on the chart view cached its source and left stale axis labels on screen
    // during live updates, which a repaint for a grab never showed.)
    void setHighlighted(bool on);
    bool isHighlighted() const { return m_highlighted; }

    // Event lanes: one row per lane under the x axis's labels, on the plot's step axis, with marks at
    // steps (a scale event of each run). A lane's name sits at its left, left of the plot (the chart's
    // left margin grows for it where the y labels leave too little room); the x title carries
    // the key of the marks in view ("◆ halved ◇ kept"). An empty list removes the lanes and marks.
    void setLanes(const QList<Lane>& lanes);
    // The least size of the chart without its lanes: the lanes' rows are added to it, so they never
    // squeeze the plot and its axis labels (a tile with three lanes elided its step ticks to "…").
    void setTileMinimumSize(QSize s);
    int laneRoom() const;  // the height the event lanes add below the plot (0 without lanes)
    int laneCount() const;
    QString laneName(int lane) const;
    // A kind of mark in one lane; ids count from 0 in order of creation, reset by setLanes.
    int addLaneMarks(int lane, const QString& name, const QColor& fill, const QColor& border, Marker shape,
                     qreal size = 9);
    void setLaneSteps(int id, const QList<double>& steps);
    QList<double> laneSteps(int id) const;
    QRectF laneRect(int lane) const;  // where the lane is drawn, in the widget's pixels
    // The lane's name: its box (left of the plot, where no mark reaches), the text shown in it
    // (shortened only where a name is wider than 40 % of the chart: less the "+" parts every lane
    // shares, then elided in the middle), and the box of each
    // mark in view; all in the widget's pixels, as painted.
    QRectF laneNameRect(int lane) const;
    QString laneShownName(int lane) const;
    QList<QRectF> laneMarkRects(int lane) const;
    QRectF plotRect() const;          // the plot area, in the widget's pixels

    // Bar mode: stacked horizontal bars, one bar per category; a legend names the sets.
    void setBars(const QStringList& categories, const QList<BarSet>& sets, const QString& valueTitle);
    // The least height at which every bar's category label and every legend entry show whole (Qt
    // Charts cuts a category label to "..." where its share of the axis is less than its line, and
    // drops legend entries that do not fit); 0 without bars.
    int barsLeastHeight() const;

signals:
    void hovered(double x, const QPoint& globalPos);  // data x under the mouse; NaN on leaving
    void xRangeRequested(double x0, double x1);        // the user zoomed (Ctrl+wheel, pinch) or panned (drag)
    void resetRequested();                             // double click
    void plotResized();

private:
    void roomForLanes();  // the bottom margin and the least height for the lanes
    void placeBand();
    void placePlaceholder();
    void placeLanes();
    void fitLaneGutter();  // the chart's left margin: room for the lanes' names left of the plot
    void fitBarTicks();
    void fitTitles();          // the chart, x and y titles, fitted to the room they have now
    QStringList keyNames() const;
    void applyPoints(int id);  // the given points, through the y transform, into the series
    int yTicksFitting() const;  // the linear y axis's most intervals whose labels fit the plot's height
    void applyYRange();        // setYRange's range, widened by half a dot where a dot lies on an end
    class View;
    class Private;
    class LaneItem;
    std::unique_ptr<Private> d;
    bool m_highlighted = false;
    YScale m_yScale = YScale::linear;
};

}  // namespace mpx::ui
