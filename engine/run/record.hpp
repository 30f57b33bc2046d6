// One row of a run's history: what one training step did (DESIGN.md, "StepRecord and the CSV
// export"; the CSV columns follow this struct's order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/compute/memory.hpp"

namespace mpx {

struct StepRecord {
    int run = 0;                 // index of the run in its session
    long long step = 0;          // 0-based
    double loss = 0.0;
    double loss_scale = 1.0;     // the scale applied to this step's loss (before this step's update)
    bool found_inf = false;
    bool skipped = false;
    std::uint8_t scale_event = 0;  // ScaleEvent as integer (none, grow, backoff, hysteresis)
    double new_scale = 1.0;      // the scale after this step's update
    double grad_norm = 0.0;      // global norm of the unscaled gradients, before clipping
    double underflow_frac = 0.0; // gradient values flushed to zero by rounding / values rounded
    long long overflow_count = 0;// finite values that became ±inf (or saturated) this step; -1: not known (a replayed trace)
    double lost_update_frac = 0.0;  // weights whose update left no trace in what is stored
    // Of the weights the optimizer moved, those whose update rounding to nearest would lose (below
    // half an ulp; = lost_update_frac for runs that round to nearest), and of those the share a
    // stochastic or Kahan write-back kept (engine/core/write_back.hpp). 0 on skipped steps.
    double small_update_frac = 0.0;
    double small_kept_frac = 0.0;
    // Kahan write-back runs: the largest |c| of the compensation buffers after this step; empty
    // for other runs.
    std::optional<double> compensation_max;
    double lr = 0.0;
    MemoryTotals mem;
    double step_time_us = 0.0;
    double wall_time_s = 0.0;
    // Evaluation on the held-out split after this step's update (Session::evaluates): empty on
    // steps without one; accuracy is also empty for regression data sets.
    std::optional<double> eval_loss;      // mean loss over the split, × loss_weight as `loss`
    std::optional<double> eval_accuracy;  // fraction of the split classified correctly
    // Where this step's first inf or NaN was stored, in the order the step writes its tensors: a
    // site_index (engine/core/step_stats.hpp; site_name gives "fc2.grad_input"), -1 when none was.
    // An index, not text: records stay trivially copyable (the app spools them as bytes).
    std::int16_t first_nonfinite = -1;
    // The magnitude, before rounding, of the largest finite value that overflowed at that site
    // (FP32, exact): what became inf/NaN there. Empty when the site's inf/NaN arrived with its
    // inputs (nothing overflowed there) and when first_nonfinite is -1.
    std::optional<double> first_nonfinite_magnitude;
    // FP8 runs: of the values cast to FP8 for this step's GEMMs (every scaled tensor, counted
    // once), the fraction that overflowed the format after scaling (saturated, or NaN/inf where
    // the format's overflow gives that), and of the non-zero ones the fraction flushed to zero.
    // Empty for other runs.
    std::optional<double> fp8_saturated_frac;
    std::optional<double> fp8_underflow_frac;
    // How close the backward pass came to overflowing: log2(F / A), A the largest |value| any
    // backward site stored (or, where one overflowed, had before rounding), F that site's format's
    // largest finite value, the smallest over the sites. Negative: a site overflowed by that many
    // binades; with a loss scale S, S · 2^headroom is the largest scale that would not have. Empty
    // where the forward pass already stored an inf or NaN (no scale helps) or nothing was stored.
    // A toy run's counterpart of a trace's headroom_log2 (engine/io/trace.hpp).
    std::optional<double> headroom_log2;
    // Gradient-penalty runs (train.gradient_penalty): the term added to the loss, λ·P summed over the
    // micro-batches (P = ‖ĝ‖ or ‖ĝ‖² of each one's gradient, as computed: with the mistakes' S where
    // a switch puts it there); `loss` stays the data loss. Empty for other runs.
    std::optional<double> penalty;
};

}  // namespace mpx
