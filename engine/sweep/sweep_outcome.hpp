// What a sweep point's runs did, as plain values: the CSV's outcome columns and the heatmap's cells.
// Rule: no session here, so the app's views read outcomes without compiling the engine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpx {

// What one run did at one point.
struct SweepOutcome {
    std::string run;                   // the run's label
    double first_loss = 0.0;
    double final_loss = 0.0;
    double tail_loss = 0.0;            // mean loss over the last tenth of the steps (at least one)
    std::optional<double> eval_loss;   // the last evaluation's
    std::optional<double> eval_accuracy;
    long long skipped = 0, backoffs = 0, growths = 0;
    long long settled_step = 0;        // first step after which the scale never backs off again
    long long steps_at_min_scale = 0;  // steps trained at the scaler's min_scale (0 without one)
    double final_scale = 1.0;
    // The final loss is not finite or above 10 × the first loss, or the run stopped.
    bool diverged = false;
    double step_time_us = 0.0;         // mean; the one outcome that differs from run to run
};

struct SweepPoint {
    std::size_t index = 0;             // the point in the whole grid (SweepGrid::coordinates)
    std::vector<SweepOutcome> runs;    // in the configuration's run order
};

// The CSV: point, the grid fields, run, then the outcomes (sweep_outcome_columns()).
const std::vector<std::string>& sweep_outcome_columns();
// An outcome by its column name as a number (diverged 0/1); nullopt where the cell is empty or the
// name is not a column.
std::optional<double> outcome_value(const SweepOutcome& o, std::string_view column);

}  // namespace mpx
