// What one precision policy's log-probabilities of the held-out tokens differ from the reference
// policy's, for one run's weights at one step (engine/run/logprob_mismatch.hpp measures it).
// Rule: plain data, so the CSV, the CLI, the claims and the app read it without the model's headers;
// the histogram is binned by core::bin_slot, the engine's one binning function.
#pragma once

#include <string>

#include "engine/core/format_core.hpp"

namespace mpx {

struct MismatchResult {
    long long step = 0;       // the weights are those after this step's update
    std::string policy;       // the policy evaluated, as mismatch.policies writes it ("amp-fp16")
    std::string reference;    // the policy it is compared with, as mismatch.reference writes it
    std::string weights;      // the run whose weights both read
    long long tokens = 0;     // held-out tokens: every position of every held-out window
    // Over the tokens, Δ = log p_policy(next token) − log p_reference(next token), in nats: the mean
    // of |Δ| and its largest (NaN where a policy's logits held inf or NaN), and the signed mean.
    double mean_abs = 0.0, max_abs = 0.0, mean = 0.0;
    // |Δ| in log2 bins (core::bin_slot of the FP32 Δ): bin b counts b ≤ log2|Δ| < b + 1; exact
    // zeros, infinities and NaNs in their own slots. The counts sum to `tokens`.
    core::Bins bins;
};

}  // namespace mpx
