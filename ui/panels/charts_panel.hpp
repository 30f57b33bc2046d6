// The charts of every run at once, one per row of the chart table (ui/views/chart_table.hpp). One shared
// step axis: zoom or pan one chart and all follow; hovering shows every run's value at that step. A
// chart with scale events draws them in a lane per run under its axis (halved, kept by hysteresis,
// skipped, grew), so runs whose lines coincide still show their own events; the charts a lesson
// names come first. Rule: refresh() reads the RecordStore and sets each series once, decimated to
// the plot's pixels; it is called once per drain (~30 Hz), never per step.
#pragma once

#include <QWidget>
#include <array>
#include <limits>
#include <vector>

#include "ui/kit/plot_widget.hpp"
#include "ui/session/record_store.hpp"
#include "ui/views/chart_table.hpp"

class QCheckBox;
class QSlider;
class QGridLayout;
class QLabel;
class QScrollArea;

namespace mpx::ui {

class ChartsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ChartsPanel(gui::RecordStore* store, QWidget* parent = nullptr);

    void refresh();
    void focusStep(qint64 step);  // centre every chart on this step and mark it
    void resetZoom();             // back to following the whole run
    void zoomTo(double x0, double x1);  // show steps [x0, x1] on every chart
    // A lesson's link (charts_panel_focus.cpp): scrolls the chart list until the chart is whole in
    // view (its top, where it is taller than the view); whether it now is.
    bool showChart(ChartId c);
    bool chartInView(ChartId c) const;  // the chart lies whole inside the scroll area's viewport
    void setLossLogScale(bool on);
    bool lossLogScale() const;
    void setSmoothing(double s);  // [0, 0.99]
    double smoothing() const;
    // The run legend's check boxes as they read now: elided in the middle to fit, never two alike.
    QStringList legendTexts() const;
    int chartColumns() const { return m_columns; }
    QWidget* chartArea() const { return m_area; }
    // Fonts, line widths and markers × s (the classroom view); 1 = normal.
    void setPresentationScale(double s);
    double presentationScale() const { return m_scale; }
    // The charts a lesson names: a ★ before the title and a glow around the chart.
    void setHighlighted(const QList<ChartId>& charts);
    bool highlighted(ChartId c) const { return m_highlighted[static_cast<int>(c)]; }

    // For tests: the plot of a chart and a run's series in it.
    PlotWidget* plot(ChartId c) const { return m_plots[static_cast<int>(c)]; }
    int lineSeries(ChartId c, int run) const;  // the run's line in that chart
    int rawLossSeries(int run) const;
    int scaleSeries(int run) const;
    // The scale chart's event lanes: which run each lane is (top to bottom) and a lane's marks of
    // one kind (its id in the plot, -1 where the run has no lane).
    enum class ScaleMark { halved, kept, skipped, grew };
    QList<int> laneRuns(ChartId c) const;
    int laneMarks(ChartId c, int run, ScaleMark kind) const;
    // The charts in the order they are laid out: those a lesson names first.
    QList<ChartId> chartOrder() const { return m_order; }
    double viewX0() const { return m_x0; }
    double viewX1() const { return m_x1; }
    bool following() const { return m_follow; }

signals:
    void viewChanged();

private:
    // A run's series in one chart; -1 where the chart's row draws no such series.
    struct Series {
        int raw = -1;    // rawAndSmoothed: the faint envelope
        int line = -1;   // the run's line (the smoothed one for rawAndSmoothed)
        int dots = -1;   // dots: a marker at each recorded value
    };
    using RunSeries = std::array<Series, k_chart_count>;
    static constexpr int k_mark_kinds = 4;  // ScaleMark's values
    // A run's scale events so far, by kind (ScaleMark), from the store's log.
    using RunEvents = std::array<std::vector<gui::MarkerPoint>, k_mark_kinds>;
    // A chart's lanes as the plot has them: the runs, and per lane its marks' ids by kind.
    struct Lanes {
        QList<int> runs;
        std::vector<std::array<int, k_mark_kinds>> marks;
    };
    void resizeEvent(QResizeEvent* e) override;
    bool eventFilter(QObject* o, QEvent* e) override;
    void rebuildSeries();
    void layoutCharts();     // as many columns (3, 2 or 1) as keep every tile readable; scrolls below
    int namedTileHeight(const QList<ChartId>& order, int columns, int tileHeight) const;
    void fitRunLabels();     // each legend label elided to its cell, kept apart from the others
    void updateRunLabels();  // a ✎ after the label of each run edited live
    void setView(double x0, double x1, bool follow);
    void updateFollowRange();
    void drawTimeCharts();
    void drawMemory();
    void showHover(ChartId c, double x, const QPoint& globalPos);
    void drawLines(const ChartSpec& c, double x0, double x1);
    void readEvents();  // the log's rows since the last call, into m_events
    void drawLanes(const ChartSpec& c, double x0, double x1);
    QString shortName(int run) const;  // the run's label less what every run's label starts with
    void updateTitles();  // sets a title only when it changed (a new title lays the chart out again)
    QString hoverText(ChartId c, long long step) const;
    static QString memoryPlaceholder();  // the Memory chart before any step: no axes, this line
    bool runVisible(int run) const;

    gui::RecordStore* m_store;
    QWidget* m_area = nullptr;
    QScrollArea* m_scroll = nullptr;
    QGridLayout* m_grid = nullptr;
    int m_columns = 0;
    QGridLayout* m_legendLayout = nullptr;
    int m_legendColumns = 0;  // runs to a legend row, as many as fit whole (fitRunLabels)
    QList<QCheckBox*> m_runBoxes;
    QStringList m_runTexts;  // each legend label in full ("amp-fp16+deepspeed ✎")
    QCheckBox* m_logLoss = nullptr;
    QSlider* m_smoothing = nullptr;
    QLabel* m_zoomHint = nullptr;
    PlotWidget* m_plots[k_chart_count] = {};
    bool m_highlighted[k_chart_count] = {};
    bool m_absent[k_chart_count] = {};  // a trace shown holds nothing for this chart: not laid out
    double m_scale = 1.0;
    QString m_titles[k_chart_count];
    QList<ChartId> m_order;  // layout order: the lesson's charts first
    QList<ChartId> m_named;  // the lesson's charts, in the order it names them
    std::vector<RunSeries> m_series;
    std::vector<RunEvents> m_events;
    std::size_t m_logSeen = 0;  // rows of the store's log read into m_events
    std::array<Lanes, k_chart_count> m_lanes;
    double m_x0 = 0, m_x1 = 100;
    bool m_follow = true;
    double m_cursor = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace mpx::ui
