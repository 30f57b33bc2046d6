// The library call that does what a run's write-back does, for an engineer to paste: torchao's
// stochastic rounding, optimi's Kahan summation. Rule: names only calls that exist; where none
// matches (SR with SGD, SR on FP16) the snippet says so instead of inventing one.
#pragma once

#include <string>

#include "engine/config/train_config.hpp"
#include "engine/config/run_plan.hpp"

namespace mpx {

// Python lines (comments and code) for one run; empty for a run that rounds to nearest.
std::string write_back_snippet(const RunInfo& run, const TrainConfig& train);

}  // namespace mpx
