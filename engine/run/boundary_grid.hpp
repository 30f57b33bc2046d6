// Decision boundaries, the values (grids, extents, the pacer) the app draws and keeps: which class each run's model predicts over a grid on the input plane of a 2-D
// data set, through the run's own forward pass (Run::predict) in the run's own precisions. Every 2-D
// data set is a classification (the one regression set, sine, has one input), so grids hold classes.
// Rule: a grid is a read of the weights, like an evaluation: it never changes training, and its
// predictions are exactly what that forward pass gives on the cell centres (no second model, no
// FP32 shortcut). Cells are row-major with row 0 at the bottom (lowest y).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/data_config.hpp"

namespace mpx {

// The part of the input plane a grid covers: [x0, x1] × [y0, y1].
struct PlaneExtent {
    double x0 = -1, x1 = 1, y0 = -1, y1 = 1;
    bool operator==(const PlaneExtent&) const = default;
};

// Resolutions (cells per side) a grid may have; the pacer climbs and falls along these rungs.
inline constexpr int k_boundary_resolutions[] = {16, 24, 32, 48, 64, 96, 128};
inline constexpr int k_min_boundary_resolution = 16, k_max_boundary_resolution = 128;
// Held-out points handed along for drawing (the first ones: labels cycle, so every class shows).
inline constexpr int k_max_boundary_points = 2000;

// Empty when the data set has a plane to draw (two input features); else, in plain words, why not.
std::string boundary_refusal(const DatasetConfig& c);

// One run's predictions, one entry per cell.
struct BoundaryGrid {
    std::vector<std::int8_t> label;  // the predicted class (core::argmax_row, as accuracy counts it); -1
                                     // where a logit is inf or NaN (no prediction)
    std::vector<float> confidence;   // that class's softmax probability, FP32 as the loss op computes it
};

// Every run's grid at one moment, with what the view draws beside it.
struct Boundaries {
    long long step = 0;  // steps done when evaluated (the weights after step - 1)
    PlaneExtent plane;
    int resolution = 0;
    int classes = 0;               // the model's outputs
    std::vector<BoundaryGrid> runs;  // in run order
    // The first FP32 run, the one the others are compared with, or -1 where there is none; and per
    // run the share of cells where it predicts the same class as that run.
    int reference = -1;
    std::vector<std::optional<double>> agreement;
    std::vector<float> points;     // (n ≤ k_max_boundary_points, 2) held-out inputs, row-major
    std::vector<int> point_labels; // (n) their classes
    double seconds = 0;            // wall time of the evaluation, every run together
    // The share of the engine's time grids took while training, as the caller's BoundaryPacer last
    // measured it (a grid made while training was stopped takes nothing from training).
    std::optional<double> share;
};

// Why a grid is made: paced while training runs, or at once because training stopped on a step the
// last grid did not show (those cost no training time, and do not move the pacer's clock).
enum class BoundaryTrigger : std::uint8_t { paced, on_request };

// Keeps the grid's cost within a share of the engine's time: evaluations at most every
// `min_interval` seconds (further apart when even the smallest grid costs more than the share), and
// the resolution chosen from the last evaluation's measured cost per cell.
// Rule: the resolution stays on k_boundary_resolutions, climbs at most one rung per evaluation (one
// slow measurement must not set it swinging) and falls at once to a rung that fits.
class BoundaryPacer {
public:
    explicit BoundaryPacer(double share = 0.10, double min_interval = 0.25)
        : m_share(share), m_min_interval(min_interval) {}

    int resolution() const { return m_resolution; }
    // Whether an evaluation may start at `now` (seconds on one monotonic clock).
    bool due(double now) const { return !m_last || now >= *m_last + m_wait; }
    // An evaluation at resolution() started at `start` and took `seconds`: picks the next
    // resolution and, when paced, the earliest next start and the measured share.
    void record(double start, double seconds, BoundaryTrigger why = BoundaryTrigger::paced);
    // The largest rung whose predicted cost fits the budget, from a measured cost at `resolution`
    // (at most one rung above it); never below the first rung nor above the last.
    static int next_resolution(int resolution, double seconds, double budget_seconds);
    // Seconds one evaluation may take: share × min_interval.
    double budget() const { return m_share * m_min_interval; }
    // The share of wall time the grid made at the start of the last complete period (between the
    // last two paced starts) took; empty until two paced grids.
    std::optional<double> measured_share() const { return m_measured; }

private:
    double m_share, m_min_interval;
    int m_resolution = 32;  // a modest first guess; the first measurement corrects it
    std::optional<double> m_last;  // start of the last evaluation
    double m_wait = 0;
    double m_last_seconds = 0;  // cost of the grid made at m_last
    std::optional<double> m_measured;
};

}  // namespace mpx
