// The Updates view: how big each run's weight updates are against the spacing of the weights they
// change — a histogram of log2(|update| / ulp of the weight) per run (HistTensor::update_ulp, all
// layers, at the newest collected step) with the half-ulp line at −1 (left of it rounding throws
// the update away) — and beneath it the existing lost-updates chart over time.
// Rule: the histogram reads the snapshots, the chart is the Training tab's lost-updates row
// (ChartId::lostUpdates: its title, metric and reduction) drawn with the same PlotWidget.
#pragma once

#include <QWidget>

#include <array>

#include "app/gui/record_store.hpp"
#include "engine/histograms.hpp"

namespace mpx::ui {

template <class View>
class ViewCanvas;

class PlotWidget;

class UpdatesView : public QWidget {
    Q_OBJECT
public:
    explicit UpdatesView(gui::RecordStore* store, QWidget* parent = nullptr);

    // One run's update-to-ulp histogram: every layer's update_ulp bins added up, at the newest
    // collected step that has updates (a skipped step has none).
    struct Curve {
        int run = -1;
        long long step = -1;
        std::array<unsigned long long, hd::k_log2_bins> n{};
        unsigned long long nonzero = 0, zero = 0;  // finite non-zero updates; updates of exactly 0
    };
    Curve curve(int run) const;
    // The share of a run's non-zero updates left of the half-ulp line (log2 < −1: bins ≤ −2).
    double shareBelowHalfUlp(int run) const;
    PlotWidget* lostPlot() const { return m_plot; }
    QRect histogramRect() const;
    void refresh();
    QString message() const;
    void setPresentationScale(double s);

protected:
    void showEvent(QShowEvent* e) override;  // the chart is refreshed only while shown: catch up

private:
    class Canvas;
    friend class ViewCanvas<UpdatesView>;  // draws and explains through paintCanvas and tooltipAt
    void paintCanvas(QPainter& p, const QRect& area) const;
    QString tooltipAt(QPoint pos) const;
    std::pair<double, double> axisRange() const;

    gui::RecordStore* m_store;
    Canvas* m_canvas = nullptr;
    PlotWidget* m_plot = nullptr;
    std::vector<int> m_lines;  // per run: its line in m_plot
};

}  // namespace mpx::ui
