// The Transformer Engine recipe equivalent to an FP8 run (mpx-cli run --snippet transformer-engine).
// Names and defaults as in transformer_engine/common/recipe/__init__.py (DelayedScaling,
// Float8CurrentScaling and its MMParams, MXFP8BlockScaling); torchao's from torchao/float8/config.py
// (Float8LinearConfig, Float8GemmConfig).
#include "engine/precision/fp8_snippet.hpp"

#include "engine/base/error.hpp"

namespace mpx {

namespace {

// A model as the frameworks' one switch: fast accumulation (fp8-fast) or the split accumulator,
// which promotes to FP32 (promote; exact FP32 accumulation is closest to it). The bits model and a
// promote_every other than 128 have no switch: the comment says so.
const char* split(const AccumulateParams& p) { return p.model == AccumulateModel::fp8_fast ? "False" : "True"; }
const char* fast(const AccumulateParams& p) { return p.model == AccumulateModel::fp8_fast ? "True" : "False"; }

std::string unmatched(const GemmAccumulation& a) {
    std::string s;
    for (const AccumulateParams* p : {&a.fprop, &a.dgrad, &a.wgrad}) {
        if (p->model == AccumulateModel::bits && s.find("bits") == std::string::npos)
            s += "# The bits model is a what-if with no framework setting; it is written here as the split accumulator.\n";
        if ((p->model != AccumulateModel::exact && p->bits != AccumulateParams{}.bits) && s.find("B =") == std::string::npos)
            s += "# B = " + std::to_string(p->bits) + " bits is a what-if: the hardware's width is fixed (DeepSeek-V3: 14).\n";
        if (p->model == AccumulateModel::promote && p->promote_every != AccumulateParams{}.promote_every &&
            s.find("N_C") == std::string::npos)
            s += "# N_C = " + std::to_string(p->promote_every) +
                 " is a what-if: the libraries promote at their own interval (DeepSeek-V3: 128).\n";
    }
    return s;
}

}  // namespace

std::string fp8_recipe_snippet(const Fp8Config& c, Mode mode, std::optional<Fp8Recipe> named,
                               const GemmAccumulation& acc) {
    if (!is_fp8(mode))
        throw ConfigError("--snippet", "transformer-engine describes an FP8 run; add fp8-hybrid, fp8-e4m3 or mxfp8 to the runs");
    const std::string fmt = mode == Mode::fp8_hybrid ? "Format.HYBRID" : "Format.E4M3";
    std::string s = "import transformer_engine.pytorch as te\n";
    std::string recipe;
    if (mode == Mode::mxfp8) {
        s += "from transformer_engine.common.recipe import Format, MXFP8BlockScaling\n\n";
        recipe = "MXFP8BlockScaling(fp8_format=Format.E4M3)";
    } else if (named.value_or(c.recipe) == Fp8Recipe::current) {
        if (acc.all_exact()) {
            s += "from transformer_engine.common.recipe import Format, Float8CurrentScaling\n\n";
            recipe = "Float8CurrentScaling(fp8_format=" + fmt + ")";
        } else {
            s += "from transformer_engine.common.recipe import Format, Float8CurrentScaling, MMParams\n\n";
            recipe = "Float8CurrentScaling(\n    fp8_format=" + fmt +
                     ",\n    fp8_gemm_fprop=MMParams(use_split_accumulator=" + split(acc.fprop) +
                     "),\n    fp8_gemm_dgrad=MMParams(use_split_accumulator=" + split(acc.dgrad) +
                     "),\n    fp8_gemm_wgrad=MMParams(use_split_accumulator=" + split(acc.wgrad) + "))";
        }
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
    if (acc.all_exact()) return s;
    if (mode == Mode::mxfp8 || named.value_or(c.recipe) != Fp8Recipe::current)
        s += std::string("# ") + (mode == Mode::mxfp8 ? "MXFP8BlockScaling" : "DelayedScaling") +
             " has no per-GEMM accumulation setting: Transformer Engine runs it as mpx's te plan\n"
             "# (fprop " + (mode == Mode::mxfp8 ? "promoted" : "fp8-fast") +
             ", dgrad and wgrad promoted). Float8CurrentScaling's MMParams choose per GEMM.\n";
    s += unmatched(acc);
    s += "\n# The same per-GEMM choices in torchao (per-tensor scaling):\n"
         "from torchao.float8 import convert_to_float8_training\n"
         "from torchao.float8.config import Float8GemmConfig, Float8LinearConfig\n"
         "config = Float8LinearConfig(\n"
         "    gemm_config_output=Float8GemmConfig(use_fast_accum=" + std::string(fast(acc.fprop)) + "),\n"
         "    gemm_config_grad_input=Float8GemmConfig(use_fast_accum=" + fast(acc.dgrad) + "),\n"
         "    gemm_config_grad_weight=Float8GemmConfig(use_fast_accum=" + fast(acc.wgrad) + "))\n"
         "convert_to_float8_training(model, config=config)\n";
    return s;
}

std::string fp4_recipe_snippet(Mode mode, const Fp4Config& r) {
    if (!is_fp4(mode))
        throw ConfigError("--snippet", "this describes an FP4 run; add nvfp4 or mxfp4 to the runs");
    const auto py = [](bool b) { return b ? std::string("True") : std::string("False"); };
    std::string s;
    if (mode == Mode::nvfp4) {
        s += "import transformer_engine.pytorch as te\n"
             "from transformer_engine.common.recipe import NVFP4BlockScaling\n\n"
             "recipe = NVFP4BlockScaling(disable_rht=" + py(!r.rht) +
             ", disable_stochastic_rounding=" + py(!r.sr) + ", disable_2d_quantization=" + py(!r.weights_2d) + ")\n"
             "with te.fp8_autocast(enabled=True, fp8_recipe=recipe):  # te.autocast(recipe=...) in newer releases\n"
             "    out = model(inp)  # te.Linear layers run their GEMMs in NVFP4 (Blackwell)\n";
        if (r.four_over_six)
            s += "# 4over6 (each block's amax to 4 or 6, whichever errs less by " +
                 std::string(enum_name(r.four_over_six_metric)) +
                 ") has no Transformer Engine setting yet: this recipe maps every block to 6.\n";
        if (r.bf16_first || r.bf16_last)
            s += "# Keep the first " + std::to_string(r.bf16_first) + " and last " + std::to_string(r.bf16_last) +
                 " linear layers out of the fp8_autocast region (plain BF16).\n";
        s += "\n# Megatron-LM:\n# --fp4-format e2m1 --fp4-recipe nvfp4";
        if (r.bf16_first || r.bf16_last)
            s += " --first-last-layers-bf16 --num-layers-at-start-in-bf16 " + std::to_string(r.bf16_first) +
                 " --num-layers-at-end-in-bf16 " + std::to_string(r.bf16_last);
        s += "\n";
        if (!r.rht || !r.sr || !r.weights_2d)
            s += "# (Megatron takes TE's recipe defaults; the switches above are set through the recipe.)\n";
        return s;
    }
    std::string rule(enum_name(r.mx_scale_rule));
    for (char& ch : rule) ch = static_cast<char>(ch - 'a' + 'A');
    s += "import torch\n"
         "from torchao.prototype.mx_formats.config import MXLinearConfig, ScaleCalculationMode\n"
         "from torchao.quantization import quantize_\n\n"
         "config = MXLinearConfig(elem_dtype=torch.float4_e2m1fn_x2, block_size=32,\n"
         "                        scale_calculation_mode=ScaleCalculationMode." + rule + ")\n"
         "quantize_(model, config)  # nn.Linear GEMMs in MXFP4 (Transformer Engine has no MXFP4 recipe)\n";
    if (r.bf16_first || r.bf16_last)
        s += "# Leave the first " + std::to_string(r.bf16_first) + " and last " + std::to_string(r.bf16_last) +
             " linear layers out (quantize_'s filter_fn).\n";
    return s;
}

}  // namespace mpx
