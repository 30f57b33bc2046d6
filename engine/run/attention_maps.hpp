// The GPT's attention as one training step left it, for the Attention view: every block's scores
// and probabilities (B·H·T, T) as stored, and the step record's own count of the scores that passed
// the scores' format's largest value (the block's attention site, kind output).
// Rule: taken between the step's update and anything else the run does (evaluation, samples), so
// the buffers hold that step's last micro-batch and the counts that step's; reading them changes
// nothing the next step reads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/format_core.hpp"

namespace mpx {

struct AttentionBlock {
    std::vector<float> scores;  // (B·H·T, T) as stored (upper triangle 0), row (b·H + h)·T + i, column j
    std::vector<float> probs;   // (B·H·T, T)
    Format scores_format = Format::fp32, probs_format = Format::fp32;
    // The record's counts at this block's scores site (block{b}.attn output): finite values the
    // rounding made ±inf (the product q·kᵀ, the 1/√d multiply and the soft-cap's ops all count
    // there), and the largest |value| among them before rounding (0: none).
    unsigned long long overflow = 0;
    double overflow_max = 0.0;
};

struct AttentionMaps {
    int run = 0;
    long long step = 0;
    int batch = 0, heads = 0, T = 0;
    std::vector<AttentionBlock> blocks;
    // With train.accumulation > 1 the buffers hold the last micro-batch, the counts every one.
    int accumulation = 1;
    std::size_t bytes() const;
};

// Every run's maps at one step (runs in session order; a stopped run is left out).
struct AttentionSnapshot {
    long long step = 0;
    std::vector<AttentionMaps> runs;
    std::size_t bytes() const;
};

}  // namespace mpx
