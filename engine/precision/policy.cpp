// Run labels and the per-layer formats of each precision mode (DESIGN.md table).
#include "engine/precision/policy.hpp"

#include <algorithm>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/precision/fp8_scaling.hpp"

namespace mpx {

bool uses_low_precision(Mode m) {
    return m == Mode::amp || m == Mode::half || m == Mode::pure || m == Mode::selective ||
           m == Mode::adaptive;
}

bool is_fp8(Mode m) { return m == Mode::fp8_hybrid || m == Mode::fp8_e4m3 || m == Mode::mxfp8; }

bool is_fp4(Mode m) { return m == Mode::nvfp4 || m == Mode::mxfp4; }

std::string_view mode_help(Mode m) {
    switch (m) {
        case Mode::fp32: return "Everything in FP32: the reference.";
        case Mode::tf32:
            return "FP32, but matrix products round their inputs to TF32 (10-bit mantissa), as tensor cores do.";
        case Mode::amp:
            return "Autocast: matrix products and activations in low precision, FP32 weights, softmax, loss and norms.";
        case Mode::half: return "The whole model in low precision with an FP32 master copy of the weights (Apex O2).";
        case Mode::pure: return "Everything in low precision, no master copy (Apex O3): small updates get lost.";
        case Mode::selective: return "Low precision only for the chosen layers.";
        case Mode::adaptive: return "Autocast while memory is over the threshold, FP32 otherwise.";
        case Mode::scaling_only: return "FP32 with a loss scaler: shows that scaling alone is harmless but useless.";
        case Mode::fp8_hybrid:
            return "Matrix products in FP8: E4M3 activations and weights, E5M2 gradients, each tensor scaled (Transformer Engine's HYBRID); the rest as amp-bf16.";
        case Mode::fp8_e4m3: return "Matrix products in FP8 E4M3 for every operand, each tensor scaled; the rest as amp-bf16.";
        case Mode::mxfp8:
            return "Matrix products in MXFP8: E4M3 elements in blocks of 32, each block with a power-of-two scale; the rest as amp-bf16.";
        case Mode::nvfp4:
            return "Matrix products in NVFP4 (Transformer Engine's recipe): 4-bit E2M1 values in blocks of 16, each block "
                   "with an E4M3 scale, weights in 16x16 tiles, gradients rounded stochastically, a Hadamard transform "
                   "on the weight-gradient inputs; the rest as amp-bf16.";
        case Mode::mxfp4:
            return "Matrix products in MXFP4: 4-bit E2M1 values in blocks of 32, each block with a power-of-two scale; "
                   "the rest as amp-bf16.";
    }
    return "";
}

std::string RunSpec::precision() const {
    switch (mode) {
        case Mode::fp32:
        case Mode::scaling_only: return "fp32";
        case Mode::tf32: return "tf32";
        case Mode::fp8_hybrid: return "e4m3/e5m2";
        case Mode::fp8_e4m3: return "e4m3";
        case Mode::mxfp8: return "mxfp8";
        case Mode::nvfp4: return "nvfp4";
        case Mode::mxfp4: return "mxfp4";
        default: return std::string(to_string(low));
    }
}

std::string RunSpec::base_label() const {
    std::string s(to_string(mode));
    if (uses_low_precision(mode)) s += "-" + std::string(to_string(low));
    return s;
}

std::string_view write_back_suffix(WriteBack w) {
    for (const auto& n : write_back_suffixes)
        if (n.value == w) return n.name;
    return "nearest";
}

bool writes_narrow_weights(Mode m) { return m == Mode::pure; }

bool takes_accumulation(Mode m) { return is_fp8(m) || uses_low_precision(m); }

std::string_view accumulate_plan_help(AccumulatePlan p) {
    switch (p) {
        case AccumulatePlan::custom:
            return "Its GEMMs add under the models of the accumulate section (fprop, dgrad, wgrad).";
        case AccumulatePlan::exact: return "Its GEMMs add in FP32, as every run does by default.";
        case AccumulatePlan::fast:
            return "All three GEMMs add with a model of FP8 fast accumulation: about 14 bits, never promoted to FP32.";
        case AccumulatePlan::promote:
            return "All three GEMMs add with a model of FP8 accumulation promoted to FP32 every 128 products.";
        case AccumulatePlan::te:
            return "Transformer Engine's choice: the forward GEMM adds fast (about 14 bits), the two gradient GEMMs "
                   "are promoted to FP32 every 128 products (all three promoted for block scaling).";
        case AccumulatePlan::torchao:
            return "torchao's choice: the output GEMM adds fast (about 14 bits), the two gradient GEMMs are promoted "
                   "to FP32 every 128 products.";
    }
    return {};
}

RunSpec parse_run_spec(std::string_view label, const std::string& field) {
    RunSpec spec;
    std::string_view base = label;
    if (const auto plus = label.find('+'); plus != std::string_view::npos) {
        base = label.substr(0, plus);
        // Each part after the base: a write-back suffix, else the run's one scaler (or FP8 recipe).
        std::string_view rest = label.substr(plus + 1);
        while (true) {
            const auto next = rest.find('+');
            const std::string_view part = rest.substr(0, next);
            if (part.empty())
                throw ConfigError(field, "run " + quoted_text(label) + " has an empty part after '+'");
            std::optional<WriteBack> wb;
            for (const auto& n : write_back_suffixes)
                if (n.name == part) wb = n.value;
            if (const auto m = enum_parse<Mode>(base); m && is_fp4(*m) &&
                parse_fp4_switch(part, fp4_kind(*m), spec.fp4, label, field)) {
                // an FP4 recipe switch ("no-sr" before the write-back suffix "sr" could claim it)
            } else if (part.starts_with(k_accumulate_suffix)) {
                const auto plan = enum_parse<AccumulatePlan>(part.substr(k_accumulate_suffix.size()));
                if (!plan)
                    throw ConfigError(field, "run " + quoted_text(label) + ": unknown accumulation '" +
                                                 std::string(part) +
                                                 "'; choose acc-exact, acc-fast, acc-promote, acc-te, acc-torchao "
                                                 "or acc-custom (the accumulate section's models)");
                if (spec.accumulate)
                    throw ConfigError(field, "run " + quoted_text(label) + " names two accumulations");
                spec.accumulate = plan;
            } else if (const auto mistake = enum_parse<PenaltyMistake>(part)) {
                if (spec.penalty_mistake)
                    throw ConfigError(field, "run " + quoted_text(label) + " names two penalty mistakes; keep one");
                spec.penalty_mistake = mistake;
            } else if (const auto sw = enum_parse<GptSwitch>(part)) {
                const auto attn = [](GptSwitch g) { return g <= GptSwitch::attn_split; };
                for (const GptSwitch had : spec.gpt_switches)
                    if (had == *sw || (attn(had) && attn(*sw)))
                        throw ConfigError(field, "run " + quoted_text(label) + " names " +
                                                     (had == *sw ? "+" + std::string(part) + " twice"
                                                                 : "two places for 1/√d (+" + std::string(enum_name(had)) +
                                                                       ", +" + std::string(part) + "); keep one"));
                spec.gpt_switches.insert(std::upper_bound(spec.gpt_switches.begin(), spec.gpt_switches.end(), *sw), *sw);
            } else if (wb) {
                if (spec.write_back)
                    throw ConfigError(field, "run " + quoted_text(label) + " names two write-back modes");
                spec.write_back = wb;
            } else {
                if (spec.scaler_preset)
                    throw ConfigError(field, "run " + quoted_text(label) + " names two scalers ('" +
                                                 *spec.scaler_preset + "' and '" + std::string(part) + "')");
                spec.scaler_preset = std::string(part);
            }
            if (next == std::string_view::npos) break;
            rest = rest.substr(next + 1);
        }
    }
    if (const auto m = enum_parse<Mode>(base); m && is_fp8(*m) && spec.scaler_preset) {
        // An FP8 label names its scaling recipe where AMP labels name their scaler.
        const auto r = enum_parse<Fp8Recipe>(*spec.scaler_preset);
        if (r && *m == Mode::mxfp8)
            throw ConfigError(field, "run " + quoted_text(label) +
                                         ": mxfp8 scales blocks by powers of two; it takes no delayed or current recipe");
        if (r && *r == Fp8Recipe::block)
            throw ConfigError(field, "run " + quoted_text(label) + ": block scaling is the mxfp8 run; write mxfp8");
        if (r) {
            spec.fp8_recipe = *r;
            spec.scaler_preset.reset();
        }
    }
    const std::string known =
        "fp32, tf32, amp-fp16, amp-bf16, half-fp16, half-bf16, pure-fp16, pure-bf16, "
        "selective-fp16, adaptive-fp16, scaling-only (optionally +scaler, e.g. amp-fp16+pytorch), "
        "fp8-hybrid, fp8-e4m3 (optionally +delayed or +current), mxfp8, nvfp4 (optionally +no-rht, +no-sr, +1d, "
        "+4over6, +bf16-first-N, +bf16-last-N), mxfp4 (optionally +floor, +ceil, +rceil, +even); pure-fp16 and pure-bf16 also take +sr "
        "(stochastic rounding) or +kahan (Kahan-compensated updates); FP8 and FP16/BF16 runs take an "
        "accumulation model, +acc-exact, +acc-fast, +acc-promote, +acc-te or +acc-torchao; with a gradient penalty, "
        "+no-unscale or +unscaled-grads make its mistakes; a GPT's runs take +attn-after, +attn-before, +attn-split, "
        "+qk-norm, +softmax-storage, +norm-storage or +autocast-cpu-1.13 (its switches, for that run)";
    // A mode without a low format is its own label ("fp32"); the others are "<mode>-<format>".
    if (const auto m = enum_parse<Mode>(base); m && !uses_low_precision(*m)) spec.mode = *m;
    else {
        const auto dash = base.rfind('-');
        const auto mode = dash == std::string_view::npos ? std::nullopt : enum_parse<Mode>(base.substr(0, dash));
        if (!mode || !uses_low_precision(*mode))
            throw ConfigError(field, "unknown run " + quoted_text(label) + "; choose from " + known);
        spec.mode = *mode;
        const auto fmt = parse_format(base.substr(dash + 1));
        if (!fmt || (*fmt != Format::fp16 && *fmt != Format::bf16))
            throw ConfigError(field, "run " + quoted_text(label) +
                                         ": the low format must be fp16 or bf16 (FP8 training is "
                                         "not available yet)");
        spec.low = *fmt;
    }
    if (spec.accumulate && is_fp4(spec.mode))
        throw ConfigError(field, "run " + quoted_text(label) + ": FP4 GEMMs add their products in FP32 (as "
                                     "Blackwell's tensor cores do); accumulation models are for FP8 and FP16/BF16 GEMMs");
    if (spec.accumulate && !takes_accumulation(spec.mode))
        throw ConfigError(field, "run " + quoted_text(label) + ": accumulation models are for GEMMs in FP8 "
                                     "(and, as a what-if, FP16/BF16); " + spec.base_label() +
                                     " multiplies in FP32 or TF32. Use e.g. fp8-e4m3+acc-fast or amp-bf16+acc-fast");
    if (is_fp4(spec.mode) && spec.scaler_preset && *spec.scaler_preset == "sr")
        spec.scaler_preset.reset();  // unreachable: "sr" is an FP4 switch there
    if (spec.write_back && *spec.write_back != WriteBack::nearest && !writes_narrow_weights(spec.mode))
        throw ConfigError(field, "run " + quoted_text(label) + ": stochastic rounding and Kahan updates cure "
                                     "updates lost by weights stored in FP16/BF16 with no FP32 master; " +
                                     spec.base_label() + " updates FP32 weights. Use pure-fp16 or pure-bf16, "
                                     "e.g. pure-bf16+sr or pure-fp16+kahan");
    return spec;
}

DefaultScaler default_scaler(const RunSpec& spec) {
    switch (spec.mode) {
        case Mode::fp32:
        case Mode::tf32: return DefaultScaler::none;
        case Mode::scaling_only: return DefaultScaler::dynamic;
        case Mode::pure: return DefaultScaler::fixed_one;
        // Per-tensor scaling keeps E5M2 gradients in range; Transformer Engine trains FP8 with a
        // BF16 base and no loss scaler. A scaler can still be named ("fp8-hybrid+pytorch").
        case Mode::fp8_hybrid:
        case Mode::fp8_e4m3:
        case Mode::mxfp8:
        case Mode::nvfp4:
        case Mode::mxfp4: return DefaultScaler::none;
        default: return spec.low == Format::fp16 ? DefaultScaler::dynamic : DefaultScaler::none;
    }
}

std::vector<LayerPrecision> layer_precisions(const RunSpec& spec, int layers,
                                             const PolicyOptions& opt, bool adaptive_low, WriteBack write_back,
                                             const GemmAccumulation& accumulate) {
    const Format X = spec.low;
    LayerPrecision fp32{};
    const Format F = Format::fp32;
    LayerPrecision tf32{Format::tf32, F, F, F, F, false, F, F};
    // autocast: FP32 weights cast per GEMM, low-precision activations, FP32 .grad written through
    // the low format by the GEMM.
    LayerPrecision amp{X, X, F, X, F, false, F, F};
    const LayerPrecision amp_bf16{Format::bf16, Format::bf16, F, Format::bf16, F, false, F, F};
    // A low-precision model with FP32 masters (Apex O2): gradients unscaled into an FP32 copy, FP32
    // optimizer state.
    LayerPrecision half{X, X, X, X, X, true, F, F};
    // Plain .half()/.bfloat16() training with a standard optimizer: everything in the low format,
    // gradients unscaled in place, optimizer state in the low format.
    LayerPrecision pure{X, X, X, X, X, false, X, X};
    // FP8: autocast with BF16, GEMM operands in FP8 (TE: only the GEMMs of te.Linear are FP8).
    const Format B = Format::bf16;
    LayerPrecision fp8{Format::e4m3, B, F, B, F, false, F, F, true,
                       spec.mode == Mode::fp8_hybrid ? Format::e5m2 : Format::e4m3};
    // FP4: the same, with E2M1 operands (NVFP4 or MXFP4 blocks).
    LayerPrecision fp4{Format::e2m1, B, F, B, F, false, F, F, true, Format::e2m1};
    std::vector<LayerPrecision> out(static_cast<std::size_t>(layers));
    for (int i = 0; i < layers; ++i) {
        const std::string name = opt.names.empty() ? "fc" + std::to_string(i + 1) : opt.names[static_cast<std::size_t>(i)];
        LayerPrecision p;
        switch (spec.mode) {
            case Mode::fp32:
            case Mode::scaling_only: p = fp32; break;
            case Mode::tf32: p = tf32; break;
            case Mode::amp: p = amp; break;
            case Mode::half: p = half; break;
            case Mode::pure: p = pure; break;
            case Mode::adaptive: p = adaptive_low ? amp : fp32; break;
            case Mode::fp8_hybrid:
            case Mode::fp8_e4m3:
            case Mode::mxfp8: p = fp8; break;
            case Mode::nvfp4:
            case Mode::mxfp4:
                p = i < opt.fp4_bf16_first || i >= layers - opt.fp4_bf16_last ? amp_bf16 : fp4;
                break;
            case Mode::selective: {
                const auto& l = opt.selective_layers;
                p = std::find(l.begin(), l.end(), name) != l.end() ? half : fp32;
                break;
            }
        }
        out[static_cast<std::size_t>(i)] = p;
    }
    if (opt.keep_output_fp32 && layers > 0) out.back() = fp32;
    for (LayerPrecision& p : out) {
        if (!p.master && p.weight != Format::fp32) p.write_back = write_back;
        if (p.fp8 || p.compute == Format::fp16 || p.compute == Format::bf16) p.accumulate = accumulate;
    }
    return out;
}

}  // namespace mpx
