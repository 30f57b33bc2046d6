// Validation of the `fp8` section (engine/precision/fp8_scaling.hpp).
#include "engine/precision/fp8_scaling.hpp"

#include "engine/base/error.hpp"

namespace mpx {

void validate(const Fp8Config& c) {
    if (c.amax_history_len < 1 || c.amax_history_len > k_max_amax_history)
        throw ConfigError("fp8.amax_history_len",
                          "must be between 1 and " + std::to_string(k_max_amax_history) +
                              " steps (Transformer Engine's default is 1024)");
    if (c.margin < 0 || c.margin > 64)
        throw ConfigError("fp8.margin", "must be between 0 and 64 (the scale is divided by 2^margin)");
    if (c.recipe == Fp8Recipe::block)
        throw ConfigError("fp8.recipe",
                          "must be delayed or current; block scaling is the mxfp8 run's own recipe");
}

}  // namespace mpx
