// The Transformer Engine recipe equivalent to an FP8 run (mpx-cli run --snippet transformer-engine).
// Names and defaults as in transformer_engine/common/recipe/__init__.py (DelayedScaling,
// Float8CurrentScaling, MXFP8BlockScaling).
#include "engine/precision/fp8_snippet.hpp"

#include "engine/base/error.hpp"

namespace mpx {

std::string fp8_recipe_snippet(const Fp8Config& c, Mode mode, std::optional<Fp8Recipe> named) {
    if (!is_fp8(mode))
        throw ConfigError("--snippet", "transformer-engine describes an FP8 run; add fp8-hybrid, fp8-e4m3 or mxfp8 to the runs");
    const std::string fmt = mode == Mode::fp8_hybrid ? "Format.HYBRID" : "Format.E4M3";
    std::string s = "import transformer_engine.pytorch as te\n";
    std::string recipe;
    if (mode == Mode::mxfp8) {
        s += "from transformer_engine.common.recipe import Format, MXFP8BlockScaling\n\n";
        recipe = "MXFP8BlockScaling(fp8_format=Format.E4M3)";
    } else if (named.value_or(c.recipe) == Fp8Recipe::current) {
        s += "from transformer_engine.common.recipe import Format, Float8CurrentScaling\n\n";
        recipe = "Float8CurrentScaling(fp8_format=" + fmt + ")";
    } else {
        s += "from transformer_engine.common.recipe import DelayedScaling, Format\n\n";
        recipe = "DelayedScaling(margin=" + std::to_string(c.margin) + ", fp8_format=" + fmt +
                 ", amax_history_len=" + std::to_string(c.amax_history_len) + ", amax_compute_algo=\"" +
                 std::string(enum_name(c.amax_compute_algo)) + "\")";
    }
    s += "recipe = " + recipe + "\n";
    s += "with te.fp8_autocast(enabled=True, fp8_recipe=recipe):  # te.autocast(recipe=...) in newer releases\n";
    s += "    out = model(inp)  # te.Linear layers run their GEMMs in FP8\n";
    if (c.e4m3_overflow == E4m3Overflow::nan)
        s += "# fp8.e4m3_overflow = nan has no Transformer Engine setting: its casts saturate.\n";
    return s;
}

}  // namespace mpx
