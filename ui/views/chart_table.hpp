// The app's charts, one row each: title, axis kind, the metric of a record it plots, and how a run's
// steps become a line (or stacked bars). Rule: ChartsPanel draws every row the same way and knows no
// chart by name, so adding a chart is a row here plus, if new, its metric (ui/session/run_history.*)
// and its concept text (ui/kit/concepts.*).
#pragma once

#include <QString>
#include <optional>
#include <span>

#include "ui/session/run_history.hpp"

namespace mpx::ui {

// Also the charts' order on screen, row by row; k_chart_count follows the last.
enum class ChartId { loss, evalLoss, evalAccuracy, scale, underflow, overflow, lostUpdates, throughput, memory };
inline constexpr int k_chart_count = static_cast<int>(ChartId::memory) + 1;

// The y axis: how values are shown and how its range follows them.
enum class AxisKind {
    loss,     // linear, or log10 with the "Log loss" box; padded around the values
    log2,     // powers of two, an octave of headroom either side (the loss scale)
    percent,  // a fraction shown in %, from 0 to a little above the largest value, at most 100
    count,    // from 0, whole numbers, at least up to 5
};

// How a run's steps become points, at most a couple per pixel column.
enum class Draw {
    rawAndSmoothed,  // a faint min/max envelope, the smoothing slider's moving average on top
    envelope,        // min and max of each pixel column: every spike stays visible
    mean,            // each column's mean (a share whose trend matters more than its jitter)
    max,             // each column's largest value (counts: an overflow is never hidden)
    average,         // a moving average over ~10 steps (noisy timings)
    dots,            // values recorded only every few steps (evaluation): a line through each
                     // column's mean, a dot at each value while they stand apart
    stacked,         // not over steps: one bar per run, stacked by memory category
};

struct ChartSpec {
    ChartId id;
    const char* title;   // rich text, translated in the "ChartTable" context
    const char* yTitle;  // "" for none
    AxisKind axis;
    gui::Metric metric;  // which value of a StepRecord (stacked bars read the memory totals)
    Draw draw;
    bool scaleEvents;    // skipped-step and growth markers on the line
    QString (*explain)();  // the concept shown under the values when hovering
};

std::span<const ChartSpec> chartTable();
const ChartSpec& chartSpec(ChartId id);
QString chartTitle(const ChartSpec& c);
QString chartYTitle(const ChartSpec& c);
// A chart's short name in texts (lessons): "loss", "eval-loss", "eval-accuracy", "scale", "underflow",
// "overflow", "lost-updates", "throughput", "memory".
const char* chartKey(ChartId id);
std::optional<ChartId> chartFromKey(const QString& key);
// The title as plain text (no markup, no legend symbols), for naming the chart in prose.
QString chartPlainTitle(ChartId id);

}  // namespace mpx::ui
