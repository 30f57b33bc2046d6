// The Where view: which layer, at which step, as a heatmap of layers (rows fc1..fcN) × collected
// steps (columns) of one run's backward underflow share (values of the gradient that became 0 ÷
// non-zero values) or its overflow count (every pass), with each skipped step marked in the layer
// where its first inf/NaN was stored. Clicking a cell asks for the Range view at that layer and step.
// Rule: values come from the snapshots' per-layer counts (HistogramSnapshot::layer) and the skips
// from the store's event log; an FP8 or FP4 run's overflow colour from the casts' own rows
// (RecordStore::fp8), every step, the rows the FP8 scaling tab counts; it computes only colours.
// Columns wider than the plot are merged by their largest value, so no overflow hides between pixels.
#pragma once

#include <QImage>
#include <QWidget>

#include <optional>
#include <vector>

#include "engine/core/fp8_math.hpp"
#include "ui/session/record_store.hpp"

class QComboBox;
class QFontMetrics;
class QLabel;

namespace mpx::ui {

template <class View>
class ViewCanvas;

class WhereView : public QWidget {
    Q_OBJECT
public:
    enum class Measure { underflowShare, overflowCount };
    explicit WhereView(gui::RecordStore* store, QWidget* parent = nullptr);

    void setRun(int run);
    int run() const;
    void setMeasure(Measure m);
    Measure measure() const;
    int layers() const;
    int columns() const;  // the run's collected steps, or with castColumns() every step
    long long columnStep(int column) const;
    // A cell's value: backward underflow ÷ backward non-zero (0 where nothing was non-zero), or the
    // overflow count of the layer over every pass; with castColumns(), the values the layer's FP8 or
    // FP4 casts (x, w, dy) saturated on that step.
    double cellValue(int layer, int column) const;
    // An FP8 or FP4 run's overflow map is drawn from the casts' own rows, one column per step as the
    // FP8 scaling tab has them, not from the histograms collected every instruments.every steps:
    // a saturation between two collected steps would otherwise go unseen.
    bool castColumns() const;
    // Steps on which the run's cast of tensor `t` in `layer` saturated any value (the FP8 tab's count),
    // and all of them in a line under the map.
    int saturatingSteps(int layer, mpx::Fp8Tensor t) const;
    QString saturationSummary() const;
    QString subtitle() const;  // the line under the title: rows, columns and how often they are collected
    // A skipped step of the run and the layer its first inf/NaN was stored in (-1: not known).
    struct Skip {
        long long step = 0;
        int layer = -1;
        int site = -1;  // StepRecord::first_nonfinite
        std::optional<double> magnitude;  // StepRecord::first_nonfinite_magnitude
    };
    std::vector<Skip> skips() const;
    // When the run's skipped steps first stored their inf/NaN in the forward pass: the engine's
    // verdict (run_forward_verdict, the words `replay` and `mpx-cli run` use): no loss scale avoids
    // it, and the site's cure. Empty otherwise, and for a session from a trace (replay has its own).
    QString verdict() const;
    // Where things are drawn, in this widget's coordinates (tests, clicks).
    QRect heatRect() const;
    QRectF cellRect(int layer, int column) const;
    QPointF skipPos(const Skip& s) const;
    int columnAt(double x) const;  // -1 outside
    QString message() const;
    void setPresentationScale(double s);
    // A row's label in `room` pixels: whole where it fits, else elided in the middle with the name's
    // last component ("fc1" of "encoder.layers.1.mlp.fc1") kept whole.
    static QString rowLabel(const QFontMetrics& fm, const QString& name, int room);
    // For tests: each row's label as drawn at the view's present size.
    QStringList rowLabels() const;

signals:
    // A cell was clicked: show `layer` of `run` at `step` in the Range view.
    void cellActivated(int run, int layer, qint64 step, WhereView::Measure m);

private:
    class Canvas;
    friend class ViewCanvas<WhereView>;  // draws and explains through paintCanvas and tooltipAt
    void rebuildChoices();
    bool fp8Run() const;  // the run shown casts its GEMM operands to FP8 or FP4 (saturations count as overflows)
    QString castName() const;  // "FP8" or "FP4": what that run casts to
    bool m_fp8Session = false;  // the last session had FP8 runs (rebuildChoices)
    void paintCanvas(QPainter& p, const QRect& area);
    QString tooltipAt(QPoint pos) const;
    QRect heatRectIn(const QRect& area) const;
    QColor colour(double v, double max) const;
    const std::vector<long long>& steps() const;  // the columns' steps
    const gui::Fp8Point* castRow(int layer, mpx::Fp8Tensor t, long long step) const;  // exactly at step
    long long collectedEvery() const;  // steps between two collected histograms of the run
    // The lines under the map (the rings' legend, the colour's meaning, the saturating steps) and the
    // width they wrap to.
    QStringList notes() const;
    int notesWidth(const QRect& area) const;
    int labelWidth(const QRect& area) const;  // the row labels' column

    gui::RecordStore* m_store;
    Canvas* m_canvas = nullptr;
    QComboBox *m_run = nullptr, *m_measure = nullptr;
    // The heatmap as drawn before scaling: one pixel per layer row and merged column.
    QImage m_image;
    struct Key {
        int run = -1, measure = -1, columns = -1, width = -1;
        long long lastStep = -1;
        bool operator==(const Key&) const = default;
    } m_key;
    double m_max = 0;
    struct StepsKey {
        int run = -1;
        bool cast = false;
        std::size_t points = 0;
        long long last = -1;
        bool operator==(const StepsKey&) const = default;
    };
    mutable StepsKey m_stepsKey;
    mutable std::vector<long long> m_steps;
    double m_scale = 1.0;
};

}  // namespace mpx::ui
