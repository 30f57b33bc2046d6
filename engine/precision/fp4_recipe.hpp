// FP4 training recipes: the session's `fp4` section (Transformer Engine's NVFP4BlockScaling
// defaults), a run label's switches over it ("nvfp4+no-sr"), and what one layer's GEMMs do with
// them on a step (Fp4Gemm: which cast each operand of each GEMM takes).
// Rule: NVFP4 as TE's recipe has it (REFERENCE.md, "FP4"): weights 2D (16×16 tiles), activations and
// gradients 1×16; RNE everywhere but the gradients (stochastic); the 16-point RHT on the column-wise
// (Wgrad) copies of activations and gradients only. MXFP4: 1×32 blocks, RNE, its scale rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/fp8_math.hpp"
#include "engine/precision/fp4_cast.hpp"

namespace mpx {

// The session's `fp4` section. bf16_first/bf16_last: linear layers kept in BF16 (amp-bf16) at the
// start and end of the model (Megatron's --num-layers-at-start/end-in-bf16).
struct Fp4Config {
    bool rht = true;
    bool sr = true;
    bool weights_2d = true;
    int bf16_first = 0;
    int bf16_last = 0;
    bool four_over_six = false;
    Fp4Metric four_over_six_metric = Fp4Metric::mse;
    core::MxScaleRule mx_scale_rule = core::MxScaleRule::rceil;
    bool operator==(const Fp4Config&) const = default;
};
// ConfigError naming "fp4.<field>" for a value out of range.
void validate(const Fp4Config& c);

// A run label's switches ("nvfp4+no-rht+1d", "mxfp4+floor", "nvfp4+bf16-last-1"); absent: the
// session's.
struct Fp4Overrides {
    std::optional<bool> rht, sr, weights_2d, four_over_six;
    std::optional<int> bf16_first, bf16_last;
    std::optional<core::MxScaleRule> mx_scale_rule;
    bool empty() const {
        return !rht && !sr && !weights_2d && !four_over_six && !bf16_first && !bf16_last && !mx_scale_rule;
    }
    bool operator==(const Fp4Overrides&) const = default;
};
// Reads one label part into `o` for a run of `kind`: true where it is an FP4 switch. ConfigError
// naming `field` for a switch the kind does not have (rht, sr, 1d/2d, 4over6 on mxfp4; a scale rule
// on nvfp4) or one given twice.
bool parse_fp4_switch(std::string_view part, Fp4Kind kind, Fp4Overrides& o, std::string_view label,
                      const std::string& field);
// The label parts that give `o` back ("+no-sr+1d"), in a fixed order.
std::string fp4_switch_suffix(const Fp4Overrides& o);
// The session's settings with the run's switches over them (MXFP4: RHT, SR, 2D and 4over6 off).
Fp4Config resolve_fp4(Fp4Kind kind, const Fp4Config& session, const Fp4Overrides& o);

// One FP4 layer's GEMMs on a step (Fp8Gemm::fp4): the run's resolved recipe, and the stream its
// stochastic roundings draw from, set by the model before each backward pass.
struct Fp4Gemm {
    Fp4Kind kind = Fp4Kind::nvfp4;
    Fp4Config recipe;
    std::uint64_t sr_seed = 0;  // the step's (and micro-batch's) seed
    int layer = 0;
    // The cast of an operand: `columnwise` is the Wgrad copy of x or dy (and w's Dgrad copy).
    Fp4Cast cast(Fp8Tensor t, bool columnwise) const;
    // Whether the operand's Wgrad copy takes the Hadamard transform first.
    bool rht(Fp8Tensor t, bool columnwise) const {
        return kind == Fp4Kind::nvfp4 && recipe.rht && columnwise && t != Fp8Tensor::w;
    }
};

}  // namespace mpx
