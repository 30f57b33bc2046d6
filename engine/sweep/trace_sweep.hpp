// A sweep over a recorded trace (`mpx-cli sweep --trace`): each grid point's scaler replayed over the
// trace (engine/io/trace.hpp) instead of a training run, into the same CSV and sidecar as a training
// sweep, so the heatmap reads it unchanged. Rule: the grid may vary scaler settings only (the trace
// fixes everything else); the outcome's loss columns are the recording's own (a replay predicts the
// scaler's decisions, not the losses a different run would have had).
#pragma once

#include "engine/io/trace.hpp"
#include "engine/sweep/sweep.hpp"
#include "engine/sweep/sweep_grid.hpp"

namespace mpx {

// The run label a trace sweep's outcomes carry.
inline constexpr const char* k_trace_run = "replay";

// Throws ConfigError("--grid") for an axis that is not a scaler setting, or naming the point whose
// scaler is invalid.
SweepResult sweep_trace(const SweepGrid& grid, const SessionConfig& base, const Trace& trace);

}  // namespace mpx
