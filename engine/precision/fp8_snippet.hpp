// The Transformer Engine recipe that matches an FP8 run's settings, as Python text.
// Rule: written from the run's resolved settings (Fp8Config and the run's mode and recipe), never
// from its label.
#pragma once

#include <optional>
#include <string>

#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

// ConfigError naming --snippet when `mode` is not an FP8 mode.
std::string fp8_recipe_snippet(const Fp8Config& c, Mode mode, std::optional<Fp8Recipe> named);

}  // namespace mpx
