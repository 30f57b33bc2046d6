// The Transformer Engine recipe that matches an FP8 run's settings, as Python text.
// Rule: written from the run's resolved settings (Fp8Config and the run's mode and recipe), never
// from its label.
#pragma once

#include <optional>
#include <string>

#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

// ConfigError naming --snippet when `mode` is not an FP8 mode. `accumulation` (the run's resolved
// models, engine/core/accumulate.hpp) adds the split-accumulator flags where they are not all exact:
// Float8CurrentScaling's MMParams, a comment where the recipe has no such setting, and torchao's
// Float8LinearConfig with the same per-GEMM choices.
std::string fp8_recipe_snippet(const Fp8Config& c, Mode mode, std::optional<Fp8Recipe> named,
                               const GemmAccumulation& accumulation = {});

// An FP4 run's recipe (`recipe`: resolved, RunInfo::fp4): nvfp4 as Transformer Engine's
// NVFP4BlockScaling with its switches and Megatron's flags (--fp4-format, --fp4-recipe, the BF16
// layers at each end); mxfp4 as torchao's MXLinearConfig with its scale rule. What the frameworks
// have no setting for (4over6) is said in a comment. ConfigError naming --snippet for a mode that
// is not FP4.
std::string fp4_recipe_snippet(Mode mode, const Fp4Config& recipe);

}  // namespace mpx
