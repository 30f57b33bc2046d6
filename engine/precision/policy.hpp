// Precision policies: which format each layer's GEMMs, activations, weights and gradients use.
// Rule: a run's label ("amp-fp16+pytorch") is parsed once into a RunSpec; everything downstream
// reads per-layer LayerPrecision, never the mode name (DESIGN.md, "Precision policies").
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/accumulate.hpp"
#include "engine/core/fp8_math.hpp"
#include "engine/core/write_back.hpp"
#include "engine/precision/format.hpp"
#include "engine/precision/fp4_recipe.hpp"

namespace mpx {

enum class Mode : std::uint8_t {
    fp32, tf32, amp, half, pure, selective, adaptive, scaling_only, fp8_hybrid, fp8_e4m3, mxfp8, nvfp4, mxfp4 };
constexpr EnumName<Mode> mode_names[] = {
    {Mode::fp32, "fp32"},           {Mode::tf32, "tf32"},     {Mode::amp, "amp"},
    {Mode::half, "half"},           {Mode::pure, "pure"},     {Mode::selective, "selective"},
    {Mode::adaptive, "adaptive"},   {Mode::scaling_only, "scaling-only"},
    {Mode::fp8_hybrid, "fp8-hybrid"}, {Mode::fp8_e4m3, "fp8-e4m3"}, {Mode::mxfp8, "mxfp8"},
    {Mode::nvfp4, "nvfp4"},         {Mode::mxfp4, "mxfp4"}};
constexpr std::span<const EnumName<Mode>> names_of(Mode) { return mode_names; }
inline std::string_view to_string(Mode m) { return enum_name(m); }

// How the optimizer's FP32 result is written into weights stored in FP16/BF16 with no FP32 master
// (engine/core/write_back.hpp): the setting train.write_back takes these names, a run label the
// suffixes of write_back_suffixes ("pure-bf16+sr", "pure-fp16+kahan").
constexpr EnumName<WriteBack> write_back_names[] = {
    {WriteBack::nearest, "nearest"}, {WriteBack::stochastic, "stochastic"}, {WriteBack::kahan, "kahan"}};
constexpr std::span<const EnumName<WriteBack>> names_of(WriteBack) { return write_back_names; }
inline std::string_view to_string(WriteBack w) { return enum_name(w); }
constexpr EnumName<WriteBack> write_back_suffixes[] = {
    {WriteBack::nearest, "nearest"}, {WriteBack::stochastic, "sr"}, {WriteBack::kahan, "kahan"}};
std::string_view write_back_suffix(WriteBack w);
// Whether a mode writes its optimizer's result into FP16/BF16 weights with no FP32 master: the
// runs a write-back mode can change (pure-*).
bool writes_narrow_weights(Mode m);

// Which accumulation models a run's GEMMs use (engine/core/accumulate.hpp; engine/config/
// accumulate_config.hpp resolves a plan to the three GEMMs' models). custom: the session's
// accumulate.fprop/dgrad/wgrad; exact: FP32 for all three (today's behaviour); fast: fp8-fast for
// all three; promote: all three promoted every N_C; te: Transformer Engine's split-accumulator flags
// for the run's recipe; torchao: Float8LinearConfig's use_fast_accum. A run label names one as a
// suffix "+acc-<plan>" ("fp8-e4m3+acc-te").
enum class AccumulatePlan : std::uint8_t { custom, exact, fast, promote, te, torchao };
constexpr EnumName<AccumulatePlan> accumulate_plan_names[] = {
    {AccumulatePlan::custom, "custom"}, {AccumulatePlan::exact, "exact"}, {AccumulatePlan::fast, "fast"},
    {AccumulatePlan::promote, "promote"}, {AccumulatePlan::te, "te"},     {AccumulatePlan::torchao, "torchao"}};
constexpr std::span<const EnumName<AccumulatePlan>> names_of(AccumulatePlan) { return accumulate_plan_names; }
inline std::string_view to_string(AccumulatePlan p) { return enum_name(p); }
inline constexpr std::string_view k_accumulate_suffix = "acc-";
// One plain sentence on what a plan does to the run's GEMMs: the app's tooltip.
std::string_view accumulate_plan_help(AccumulatePlan p);
// Whether a mode's GEMMs can take an accumulation model: the FP8 modes, and as a what-if the
// modes whose GEMMs run in FP16/BF16.
bool takes_accumulation(Mode m);

// The gradient penalty's two classic mistakes as run-label suffixes: forgetting the × 1/S, taking
// the gradients of the unscaled loss.
enum class PenaltyMistake : std::uint8_t { no_unscale, unscaled_grads };
constexpr EnumName<PenaltyMistake> penalty_mistake_suffixes[] = {{PenaltyMistake::no_unscale, "no-unscale"},
                                                                 {PenaltyMistake::unscaled_grads, "unscaled-grads"}};
constexpr std::span<const EnumName<PenaltyMistake>> names_of(PenaltyMistake) { return penalty_mistake_suffixes; }

// The GPT's switches as run-label suffixes, so that their effect stands side by side in one session
// ("amp-fp16+attn-before", "amp-fp16+qk-norm"): each sets, for that run alone, what the session's
// sections set for all (attention.scale, attention.qk_norm, attention.softmax, norm.stats,
// autocast; docs/gpt.md). engine/config/run_plan.cpp applies them, and refuses them on an MLP.
enum class GptSwitch : std::uint8_t { attn_after, attn_before, attn_split, qk_norm, softmax_storage, norm_storage,
                                      autocast_cpu };
constexpr EnumName<GptSwitch> gpt_switch_suffixes[] = {
    {GptSwitch::attn_after, "attn-after"},           {GptSwitch::attn_before, "attn-before"},
    {GptSwitch::attn_split, "attn-split"},           {GptSwitch::qk_norm, "qk-norm"},
    {GptSwitch::softmax_storage, "softmax-storage"}, {GptSwitch::norm_storage, "norm-storage"},
    {GptSwitch::autocast_cpu, "autocast-cpu-1.13"}};
constexpr std::span<const EnumName<GptSwitch>> names_of(GptSwitch) { return gpt_switch_suffixes; }

struct RunSpec {
    Mode mode = Mode::fp32;
    Format low = Format::fp16;                 // the low format of amp/half/pure/selective/adaptive
    std::optional<std::string> scaler_preset;  // given after '+' in the label
    // FP8 modes: the recipe named after '+' ("fp8-hybrid+current"); absent: the session's fp8.recipe.
    std::optional<Fp8Recipe> fp8_recipe;
    // A write-back named after '+' ("pure-bf16+sr"); absent: the session's train.write_back.
    std::optional<WriteBack> write_back;
    // A gradient-penalty mistake named after '+' ("amp-fp16+no-unscale", "amp-fp16+unscaled-grads"):
    // this run makes it whatever train.penalty_unscale / penalty_scaled_grads say (docs/penalty.md).
    std::optional<PenaltyMistake> penalty_mistake;
    // The GPT's switches named after '+', in GptSwitch's order, each at most once, one attn-* at most.
    std::vector<GptSwitch> gpt_switches;
    // An accumulation plan named after '+' ("fp8-e4m3+acc-fast"); absent: the session's accumulate.plan.
    std::optional<AccumulatePlan> accumulate;
    // FP4 modes: the recipe's switches named after '+' ("nvfp4+no-sr+bf16-last-1").
    Fp4Overrides fp4;
    std::string base_label() const;            // "amp-fp16", "fp32", "scaling-only"
    // The CSV's precision column: "fp32" (fp32, scaling-only), "tf32", the low format ("fp16",
    // "bf16"), "e4m3/e5m2" (fp8-hybrid), "e4m3", "mxfp8", "nvfp4", "mxfp4".
    std::string precision() const;
};
// Parses "fp32", "tf32", "amp-fp16", "amp-bf16+pytorch", "half-fp16+deepspeed", "pure-bf16",
// "selective-fp16", "adaptive-bf16", "scaling-only+apex", "pure-fp16+kahan", "pure-bf16+sr+dynamic",
// "fp8-e4m3+current+acc-te" (after the base, each '+' part is a write-back suffix, an accumulation
// "acc-<plan>", or the one scaler or FP8 recipe, in any order); ConfigError naming `field` otherwise,
// for a write-back on a run with FP32 weights and an accumulation on a run that multiplies in FP32/TF32.
RunSpec parse_run_spec(std::string_view label, const std::string& field = "runs");
bool uses_low_precision(Mode m);
// The FP8 modes: GEMM operands in E4M3/E5M2 (per-tensor scaled) or MXFP8, the rest as amp-bf16.
bool is_fp8(Mode m);
// The FP4 modes: GEMM operands in NVFP4 or MXFP4 (E2M1 in scaled blocks), the rest as amp-bf16.
bool is_fp4(Mode m);
// Whether a mode's GEMMs take scaled operands (FP8 or FP4): the layers LayerPrecision::fp8 marks.
inline bool scales_gemms(Mode m) { return is_fp8(m) || is_fp4(m); }
// The FP4 kind of an FP4 mode.
inline Fp4Kind fp4_kind(Mode m) { return m == Mode::mxfp4 ? Fp4Kind::mxfp4 : Fp4Kind::nvfp4; }
// One plain sentence on what the mode does (DESIGN.md, "Precision policies"): the app's tooltip.
std::string_view mode_help(Mode m);
// The scaler a mode gets when none is named: "pytorch"-style dynamic for FP16 that trains in low
// precision, none for FP32/TF32/BF16, static 1 for pure.
enum class DefaultScaler { none, fixed_one, dynamic };
DefaultScaler default_scaler(const RunSpec& spec);

struct LayerPrecision {
    Format compute = Format::fp32;     // GEMM operands are rounded to this
    Format activation = Format::fp32;  // outputs and their gradients are stored in this
    Format weight = Format::fp32;      // the working copy of the weights
    Format grad_through = Format::fp32;// the GEMM writes weight gradients in this (autocast: low)
    Format grad = Format::fp32;        // weight gradients are stored in this
    bool master = false;               // an FP32 master copy beside the working copy
    Format unscaled = Format::fp32;    // gradients are unscaled into this (= grad: in place)
    Format state = Format::fp32;       // optimizer state is stored in this
    bool fp8 = false;                  // compute is FP8 or FP4 (E2M1): operands are scaled (fp8_math.hpp, fp4.hpp)
    Format grad_compute = Format::fp32;// FP8/FP4: the format of the gradient operand dy of backward GEMMs
    WriteBack write_back = WriteBack::nearest;  // how the optimizer writes `weight` (no master)
    GemmAccumulation accumulate{};     // the accumulation models of this layer's GEMMs
};

struct PolicyOptions {
    std::vector<std::string> selective_layers;  // selective: layers in low precision
    bool keep_output_fp32 = false;
    int fp4_bf16_first = 0, fp4_bf16_last = 0;  // FP4: linear layers kept in amp-bf16 at each end
    // The layers' names (ModelConfig's layer_name: "block0.attn.qkv"); empty: fc1..fcN.
    std::vector<std::string> names;
};
// Per-layer precision for `layers` layers named fc1..fcN. For adaptive, `adaptive_low` says whether
// this step trains in amp (true) or FP32.
// `write_back` (the run's, resolved) goes to every layer whose weights are narrow without a master.
// `accumulate` (the run's, resolved) goes to every layer whose GEMMs run in FP8, FP16 or BF16.
std::vector<LayerPrecision> layer_precisions(const RunSpec& spec, int layers,
                                             const PolicyOptions& opt, bool adaptive_low = true,
                                             WriteBack write_back = WriteBack::nearest,
                                             const GemmAccumulation& accumulate = {});

}  // namespace mpx
