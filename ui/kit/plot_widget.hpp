// The one adapter between mpx and Qt Charts (deprecated from Qt 6.10): a plot of lines and markers
// over a step axis, or a chart of stacked horizontal bars. Nothing else in mpx includes Qt Charts,
// so replacing it means rewriting this class only.
// Rule: callers hand over data in real units; log axes are done here (points ≤ 0 are dropped),
// and each series is updated with one replace() per redraw.
#pragma once

#include <QColor>
#include <QList>
#include <QPair>
#include <QPointF>
#include <QStringList>
#include <QWidget>
#include <memory>

namespace mpx::ui {

class PlotWidget : public QWidget {
    Q_OBJECT
public:
    enum class YScale { linear, log10, log2 };
    enum class Marker { circle, diamond, triangle, square };
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

    void setTitle(const QString& title);
    void setXTitle(const QString& title);
    void setYTitle(const QString& title);
    void setYScale(YScale scale);
    YScale yScale() const { return m_yScale; }
    double yTickInterval() const;  // in axis units (a log axis: powers)
    void setYLabelFormat(const QString& format);  // printf-style, linear axis: "%.0f", "%g%%"
    void setXLabelFormat(const QString& format);  // printf-style: "2^%.0f" for an x that is log2 of the value
    void setXRange(double x0, double x1);
    void setYRange(double lo, double hi);  // real units
    double xMin() const;
    double xMax() const;
    int plotWidth() const;  // pixels of the plot area: the column count for decimation
    void setCursorStep(double x);  // a vertical line at x; NaN hides it
    // A shaded span of steps [x0, x1] with a label at its top (NaN hides it): a window of steps.
    void setXBand(double x0, double x1, const QString& label = {});
    QPair<double, double> xBand() const;  // NaN, NaN while hidden
    void setLegendVisible(bool visible);  // the series' names under the plot
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

    // Bar mode: stacked horizontal bars, one bar per category; a legend names the sets.
    void setBars(const QStringList& categories, const QList<BarSet>& sets, const QString& valueTitle);

signals:
    void hovered(double x, const QPoint& globalPos);  // data x under the mouse; NaN on leaving
    void xRangeRequested(double x0, double x1);        // the user zoomed (wheel) or panned (drag)
    void resetRequested();                             // double click
    void plotResized();

private:
    void placeBand();
    void placePlaceholder();
    void applyPoints(int id);  // the given points, through the y transform, into the series
    class View;
    class Private;
    std::unique_ptr<Private> d;
    bool m_highlighted = false;
    YScale m_yScale = YScale::linear;
    double m_fontScale = 1.0;
};

}  // namespace mpx::ui
