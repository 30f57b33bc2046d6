// The Range view: where one tensor's values sit against its format's range, as a histogram of
// log2|value| (bars: the share of the tensor's values in each power-of-two bin) over the format's
// bands (flushed to zero, subnormal, normal, overflow) and thin lines at the other formats' limits.
// For a scaled gradient the unscaled values are drawn faintly beside it, so the shift by
// log2(loss scale) shows. For an FP8 GEMM operand (input, weight, grad_output of an FP8 layer) the
// bands are the FP8 format's where the cast puts them in these values: moved by −log2(scale).
// Two runs (A above B, one shared axis) at the same collected step.
// Rule: it draws what RecordStore::histograms() holds (counts binned by the engine before
// rounding) and computes nothing but shares; the bands come from format_info(), nowhere else, and
// FP8 scales from the engine's rows in RecordStore::fp8() (ui/views/range_bands.hpp).
#pragma once

#include <QStringList>
#include <QWidget>

#include <array>
#include <utility>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "ui/session/record_store.hpp"
#include "ui/views/range_bands.hpp"

class QComboBox;

namespace mpx::ui {

template <class View>
class ViewCanvas;
class StepScrubber;

class RangeView : public QWidget {
    Q_OBJECT
public:
    explicit RangeView(gui::RecordStore* store, QWidget* parent = nullptr);

    // A format's bands on the log2|value| axis (ui/views/range_bands.hpp).
    using Band = mpx::ui::Band;
    using BandSpan = mpx::ui::BandSpan;
    static std::vector<BandSpan> bands(mpx::Format f) { return formatBands(f); }

    // What one side (0: run A, 1: run B) shows at the selected layer, tensor and step.
    struct Panel {
        int run = -1;             // -1: nothing (no run B, no histogram yet)
        long long step = -1;
        double lossScale = 1.0;
        mpx::Format format = mpx::Format::fp32;
        bool found = false;        // the tensor exists at this layer (normalized: only with LayerNorm)
        unsigned long long total = 0;  // every value, zero/inf/NaN included
        std::array<double, core::k_log2_bins> share{};  // per log2 bin (index bin − k_bin_min), of total
        double zero = 0, inf = 0, nan = 0;              // shares of total
        // Scaled gradients with a loss scale ≠ 1: the unscaled values' bars as (left edge in log2,
        // share); grad_weight: grad_weight_unscaled's bins, grad_output: its own bins − log2(scale).
        std::vector<std::pair<double, double>> unscaled;
        double shift = 0;  // log2(loss scale)
        // FP8 runs: how the matrix product cast these values at this step. Active: the shaded bands
        // are fp8.bands (MXFP8: the storage format's, with the amax block's window as a strip).
        Fp8Cast fp8;
        std::vector<BandSpan> shaded;  // the bands shaded over the plot
    };
    Panel panel(int side) const;

    void setRuns(int a, int b);  // b = -1: run A alone
    int runA() const;
    int runB() const;
    void setLayer(int layer);
    int layer() const;
    void setTensor(mpx::HistTensor t);
    mpx::HistTensor tensor() const;
    // Shows the collected step nearest `step` and stops following the newest.
    void setStep(long long step);
    long long step() const;  // the collected step shown, -1 when none
    bool following() const;
    QString message() const;  // what the view says instead of histograms, or empty
    QRect plotRect(int side) const;  // where a side's bars are drawn, in this widget's coordinates
    // The caption under a side's plot, one paragraph an item (wrapped where drawn): what the exact
    // zeros are, the overlay, the FP8 cast, the formats whose limits are off the axis.
    QStringList caption(int side) const;
    // The formats whose limits are drawn as thin lines: those the session's runs store values in or
    // cast them to (FP8's only where a run casts to FP8), FP32, BF16, FP16, E4M3, E5M2 in that order.
    std::vector<mpx::Format> limitFormats() const;
    std::pair<double, double> axisRange() const;  // log2 at the plots' left and right edge
    void setPresentationScale(double s);

private:
    class Canvas;
    friend class ViewCanvas<RangeView>;  // draws and explains through paintCanvas and tooltipAt
    void rebuildChoices();
    void refresh();
    void fitCanvasHeight();
    void stepsChanged();
    const std::vector<mpx::HistogramSnapshot>* snapshots(int run) const;
    const mpx::HistogramSnapshot* snapshotAt(int run, long long step) const;
    // One paint's worth of layout: both sides' panels, the axis, each side's caption lines (wrapped
    // to the plot's width) and the plots' rectangles, which leave the captions their room.
    struct LegendItem {
        Band band;
        bool dashed;  // the thin lines' entry, not a band's
        QString text;
        int x = 0, row = 0;
    };
    struct Layout {
        std::vector<LegendItem> legend;
        int sides = 1;
        Panel panels[2];
        double lo = 0, hi = 0;
        QStringList caption[2];
        QRect plot[2];
        int minHeight = 0;  // of the canvas, for plots of k_minPlot pixels and the whole captions
    };
    Layout layoutIn(const QRect& area, const QFont& font) const;
    QStringList captionOf(const Panel& pn, double lo, double hi) const;
    void paintCanvas(QPainter& p, const QRect& area) const;
    QString tooltipAt(QPoint pos) const;  // canvas coordinates

    gui::RecordStore* m_store;
    Canvas* m_canvas = nullptr;
    QComboBox *m_runA = nullptr, *m_runB = nullptr, *m_layer = nullptr, *m_tensor = nullptr;
    StepScrubber* m_scrub = nullptr;
    double m_scale = 1.0;
};

}  // namespace mpx::ui
