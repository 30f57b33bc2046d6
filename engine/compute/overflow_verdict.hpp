// Whether a loss scale could have avoided a step's inf/NaN, said in the same words by `replay` (a
// recorded trace) and by a trained run (`mpx-cli run`, the app's Where view).
// Rule: the loss scale multiplies the loss's gradient, so it reaches the backward pass only: an
// inf/NaN first stored in the forward pass arose before any scale was applied, and no scale, however
// small, avoids it. The cure named is the site's own (the GPT's attention scores have theirs).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/config/model_config.hpp"

namespace mpx {

// "3, 7, 60-119": the steps (ascending) as ranges, at most `max_ranges` of them, then how many more.
std::string step_ranges(const std::vector<long long>& steps, std::size_t max_ranges = 4);

// A step record's first_nonfinite site lies in the forward pass (false for -1).
bool forward_site(int site);

// What avoids a forward overflow at `site`: at a GPT's attention scores (or q and k cast for
// q·kᵀ), 1/√d before the product and QK-norm first; everywhere, FP32 for the layer or BF16.
std::string forward_overflow_cure(int site, const ModelConfig& m);

// "forward overflow at SITE from step F (N of M steps poisoned the loss or gradients: RANGES DETAIL):
// no loss scale avoids it; CURE". `poisoned` ascending and not empty; `detail` is added inside the
// parentheses as it is ("; of them ..." or empty).
std::string forward_overflow_verdict(const std::string& site, const std::vector<long long>& poisoned,
                                     long long of_steps, const std::string& detail, const std::string& cure);

// A trained run's verdict from its steps' first inf/NaN sites: `first_sites[k]` is the
// first_nonfinite of the run's k-th step whose inf/NaN reached the loss or gradients (a skipped step,
// or a step of a run without a scaler whose loss is not finite), `steps[k]` that step. Empty when no
// such step's first inf/NaN was stored in the forward pass; otherwise the verdict, naming the first
// forward site by its label (site_label) and counting the steps whose first site is in the forward
// pass out of `of_steps`.
std::string run_forward_verdict(const std::vector<long long>& steps, const std::vector<int>& first_sites,
                                long long of_steps, const ModelConfig& m);

}  // namespace mpx
