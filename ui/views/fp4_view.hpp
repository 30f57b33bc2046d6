// The FP4 view: for one FP4 run (nvfp4, mxfp4), layer and tensor (x activations, w weights, dy
// gradients), what the cast to E2M1 did on a chosen step — how many values landed on each of its 8
// magnitudes (0, 0.5, 1, 1.5, 2, 3, 4, 6), where each block's largest value landed (6, 4, or 3 and
// below: MXFP4's "lost binade") and, for weights, whether the forward and backward quantizations
// agree — and step by step the shares clamped at ±6 and flushed to 0, and NVFP4's tensor scale S_enc.
// Rule: it draws the engine's Fp8ScaleRows of format e2m1 (RecordStore::fp8, Fp8Series::fp4) and
// computes nothing but shares of the row's own counts; the time charts keep one point per pixel
// column (the largest share, the lowest and highest scale).
#pragma once

#include <QWidget>

#include <optional>

#include "engine/precision/fp4_recipe.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "ui/session/record_store.hpp"
#include "ui/views/fp4_words.hpp"

class QComboBox;
class QLabel;
class QSlider;
class QStackedWidget;

namespace mpx::ui {

class ColumnChart;
class PlotWidget;

class Fp4View : public QWidget {
    Q_OBJECT
public:
    // Series of sharePlot() and scalePlot(), in order of creation.
    enum ShareSeries : int { saturatedLine = 0, flushedLine = 1 };
    enum ScaleSeries : int { scaleLine = 0 };

    explicit Fp4View(gui::RecordStore* store, QWidget* parent = nullptr);

    // Why no chart is shown (no session, no FP4 run), or empty.
    QString message() const;
    // The FP4 runs of the session (indices into the store's runs), in the order the combo lists them.
    const std::vector<int>& fp4Runs() const { return m_runs; }
    int run() const;  // -1: none
    int layer() const;
    mpx::Fp8Tensor tensor() const;
    void setRun(int run);
    void setLayer(int layer);
    void setTensor(mpx::Fp8Tensor t);
    // The chosen run's FP4 kind and resolved recipe (the session's fp4 section under its label's switches).
    mpx::Fp4Kind kind() const;
    mpx::Fp4Config recipe() const;
    // The step the bars show: the hovered step, else the one the slider holds, else the newest.
    long long shownStep() const;
    void setStep(long long step);  // -1: follow the newest step
    void setHoverStep(long long step);  // -1: none
    // The engine's record of the step shown (nullptr: none yet), and its step.
    const mpx::core::Fp4Record* record() const;
    const gui::Fp8Point* point() const;
    // Weights: the newest comparison of the two quantizations at or before the step shown.
    std::optional<gui::Fp4Consistency> consistency() const;
    QString consistencyText() const;
    ColumnChart* codeChart() const { return m_codes; }
    ColumnChart* blockChart() const { return m_tops; }
    PlotWidget* sharePlot() const { return m_share; }
    PlotWidget* scalePlot() const { return m_scale; }
    QString hoverText(long long step) const;
    void refresh();
    void setPresentationScale(double s);

protected:
    void showEvent(QShowEvent* e) override;  // refreshed only while shown: catch up

private:
    void sessionStarted();
    void fillLayers();
    QString layerText(int layer) const;
    void fillTensors();
    void updateTexts();
    void updateBars();
    void updateSlider();
    const gui::Fp8Series* series() const;
    std::size_t shownIndex() const;  // into series()->points(); npos: none
    fp4words::Shown shown() const;

    gui::RecordStore* m_store;
    std::vector<int> m_runs;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_message = nullptr;
    QComboBox* m_run = nullptr;
    QComboBox* m_layer = nullptr;
    QComboBox* m_tensor = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_stepLabel = nullptr;
    QLabel* m_explain = nullptr;
    QLabel* m_codesTitle = nullptr;
    QLabel* m_codesCaption = nullptr;
    ColumnChart* m_codes = nullptr;
    QLabel* m_topsTitle = nullptr;
    QLabel* m_topsCaption = nullptr;
    ColumnChart* m_tops = nullptr;
    QLabel* m_consistency = nullptr;
    PlotWidget* m_share = nullptr;
    QLabel* m_shareCaption = nullptr;
    PlotWidget* m_scale = nullptr;
    QLabel* m_scaleCaption = nullptr;
    QWidget* m_scaleBox = nullptr;
    QString m_where;  // "fc2 · x (activations)": the charts' titles start with it
    long long m_step = -1;   // the slider's step; -1: follow the newest
    long long m_hover = -1;
    double m_x0 = 0, m_x1 = -1;  // the zoomed step range; x1 < x0: follow the whole run
    bool m_filling = false;
};

}  // namespace mpx::ui
