// The FP8 scaling view: for one FP8 run, layer and tensor (x activations, w weights, dy gradients),
// the largest |value| (amax) of every step against the largest value its scale lets through without
// saturating (format max ÷ scale), on a log2 axis, with the amax history window that delayed scaling
// took the scale from; beneath it, the share of the tensor's values that saturated and that were
// flushed to zero, step by step.
// Rule: it draws the engine's Fp8ScaleRows (RecordStore::fp8) and computes nothing but the limit
// (format max ÷ the row's scale) and the shares of the row's own counts; each redraw keeps at most
// the lowest and highest point per pixel column (the per-column maximum for the shares).
#pragma once

#include <QWidget>

#include <cmath>
#include <utility>

#include "engine/precision/fp8_scaling.hpp"
#include "ui/session/record_store.hpp"

class QComboBox;
class QLabel;
class QStackedWidget;

namespace mpx::ui {

class PlotWidget;

class Fp8View : public QWidget {
    Q_OBJECT
public:
    // Series of scalePlot() and sharePlot(), in order of creation.
    enum ScaleSeries : int { amaxLine = 0, limitLine = 1, saturatedMarkers = 2 };
    enum ShareSeries : int { saturatedLine = 0, flushedLine = 1 };

    explicit Fp8View(gui::RecordStore* store, QWidget* parent = nullptr);

    // Why no chart is shown (no session, no FP8 run, no step yet), or empty.
    QString message() const;
    // The FP8 runs of the session (indices into the store's runs), in the order the combo lists them.
    const std::vector<int>& fp8Runs() const { return m_runs; }
    int run() const;  // -1: none
    int layer() const;
    mpx::Fp8Tensor tensor() const;
    void setRun(int run);
    void setLayer(int layer);
    void setTensor(mpx::Fp8Tensor t);
    // The recipe of the chosen run (fp8_recipe_of its label and the session's fp8 section).
    mpx::Fp8Recipe recipe() const;
    // Delayed scaling: the steps whose amax chose the scale of `step` — [step − len, step − 1] with
    // fp8.amax_compute_algo max, [step − 1, step − 1] with most_recent, clipped at step 0. Empty
    // ({-1, -1}) for current and block scaling, and for step 0 (its scale is the initial 1).
    std::pair<long long, long long> historyWindow(long long step) const;
    // The step the window is drawn for: the hovered step, else the newest.
    long long windowStep() const;
    void setHoverStep(long long step);  // -1: none (follow the newest step)
    PlotWidget* scalePlot() const { return m_scale; }
    PlotWidget* sharePlot() const { return m_share; }
    QString hoverText(long long step) const;  // the tooltip for a step, in plain words
    QString summary() const;                  // the line between the charts
    void refresh();
    void setPresentationScale(double s);

protected:
    void showEvent(QShowEvent* e) override;  // refreshed only while shown: catch up

private:
    void sessionStarted();
    void fillLayers();
    QString layerText(int layer) const;
    void fillTensors();
    void updateWindow();
    void updateTexts();
    const gui::Fp8Series* series() const;

    gui::RecordStore* m_store;
    std::vector<int> m_runs;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_message = nullptr;
    QComboBox* m_run = nullptr;
    QComboBox* m_layer = nullptr;
    QComboBox* m_tensor = nullptr;
    QLabel* m_explain = nullptr;
    PlotWidget* m_scale = nullptr;
    PlotWidget* m_share = nullptr;
    QLabel* m_summary = nullptr;  // between the charts: steps that saturated, the largest shares
    QString m_where;  // "fc2 · x (activations, E4M3)": the charts' titles end with it
    long long m_hover = -1;
    double m_x0 = 0, m_x1 = -1;  // the zoomed step range; x1 < x0: follow the whole run
    bool m_filling = false;
};

}  // namespace mpx::ui
