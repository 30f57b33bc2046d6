// The Updates view: how big each run's weight updates are against the spacing of the weights they
// change — a histogram of log2(|update| / ulp of the weight) per run (HistTensor::update_ulp, of one
// layer or all, at a collected step chosen with a step slider that follows the newest) with the
// half-ulp line at −1 (left of it rounding throws the update away) — and beneath it the existing
// lost-updates chart over time, with the shown step marked.
// Rule: the histogram reads the snapshots, the chart is the Training tab's lost-updates row
// (ChartId::lostUpdates: its title, metric and reduction) drawn with the same PlotWidget.
#pragma once

#include <QWidget>

class QComboBox;

#include <array>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "ui/session/record_store.hpp"

namespace mpx::ui {

template <class View>
class ViewCanvas;

class PlotWidget;
class StepScrubber;

class UpdatesView : public QWidget {
    Q_OBJECT
public:
    explicit UpdatesView(gui::RecordStore* store, QWidget* parent = nullptr);

    // One run's update-to-ulp histogram at the shown step (the run's collected step nearest it):
    // the chosen layer's update_ulp bins, or every layer's added up. A step the run skipped has no
    // updates: run and step are set, the counts are 0.
    struct Curve {
        int run = -1;
        long long step = -1;
        std::array<unsigned long long, core::k_log2_bins> n{};
        unsigned long long nonzero = 0, zero = 0;  // finite non-zero updates; updates of exactly 0
    };
    Curve curve(int run) const;
    // The share of a run's non-zero updates left of the half-ulp line (log2 < −1: bins ≤ −2).
    double shareBelowHalfUlp(int run) const;
    PlotWidget* lostPlot() const { return m_plot; }
    void setLayer(int layer);  // -1: all layers
    int layer() const;
    // Shows the collected step nearest `step` and stops following the newest.
    void setStep(long long step);
    long long step() const;  // the collected step shown (the first run's), -1 when none
    bool following() const;
    QRect histogramRect() const;
    // Where the canvas puts each text, in the canvas's coordinates, as paintCanvas draws it. Texts are
    // fitted (ui/kit/title_fit.hpp): a shorter form, else wrapped, never cut; when the histogram would
    // be squeezed below its minimum, every text takes its next shorter form first.
    struct Text {
        QRect rect;
        QString text;
        bool bold = false;
    };
    struct Layout {
        Text title, lost, kept, yTitle, xTitle;  // lost, kept: the bands' words above the plot
        QRect plot;                              // the histogram
        double halfUlpX = 0;                     // where the half-ulp line stands
        std::vector<Text> legend;                // per run its line, then its cure's line (if any)
        std::vector<int> legendRun;              // the run of each legend line
    };
    Layout layout() const;
    QWidget* canvas() const;
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
    Layout layoutAt(const QRect& area, int shorter) const;
    std::vector<QStringList> legendForms() const;

    void rebuildChoices();
    void stepsChanged();

    gui::RecordStore* m_store;
    Canvas* m_canvas = nullptr;
    QComboBox* m_layer = nullptr;
    StepScrubber* m_scrub = nullptr;
    PlotWidget* m_plot = nullptr;
    std::vector<int> m_lines;  // per run: its line in m_plot
};

}  // namespace mpx::ui
