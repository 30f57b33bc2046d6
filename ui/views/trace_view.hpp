// A recorded trace (resources/torch/mpx_trace.py, or a DeepSpeed log rebuilt by mpx-cli trace) with a
// scaler rule replayed over it, in its own window (File ▸ Open trace…): per step the replayed scale
// against the overflow frontier 65504 / amax (a step overflows where the scale is above it), the
// recorded scale and skips beside the predicted ones, and the verdict. The rule's settings are tuned
// live: a replay takes microseconds. Rule: every number is replay_trace's (engine/io/trace.hpp), the
// computation `mpx-cli replay` prints; this file only lays them out.
#pragma once

#include <QWidget>

#include "engine/io/trace.hpp"

class QComboBox;
class QLabel;
class QSpinBox;

namespace mpx::ui {

class PlotWidget;

class TraceView : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget* parent = nullptr);
    // Reads the trace; false with the reason in `error` when it cannot be read (nothing changes).
    bool openFile(const QString& path, QString* error);
    void setTrace(mpx::Trace trace);
    // The rule's settings as the controls hold them, and its replay.
    mpx::ScalerConfig scaler() const;
    const mpx::ReplayResult& result() const { return m_result; }
    QString verdictText() const;

private:
    void replay();
    void presetChanged();
    mpx::Trace m_trace;
    mpx::ReplayResult m_result;
    QComboBox* m_preset = nullptr;
    QSpinBox* m_initLog2 = nullptr;
    QSpinBox* m_interval = nullptr;
    QSpinBox* m_hysteresis = nullptr;
    PlotWidget* m_plot = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_counts = nullptr;
    int m_frontier = -1, m_recorded = -1, m_replayed = -1, m_recordedSkips = -1, m_predictedSkips = -1;
};

}  // namespace mpx::ui
