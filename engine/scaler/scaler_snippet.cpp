// Prints a scaler configuration as code or config for each framework, so settings tuned in mpx can be
// pasted into a real training script. Rule: a setting the framework cannot express becomes a comment
// line ("not expressible in X: ..."), never a silent drop. Settings that only change mpx's
// bookkeeping (growth_count consecutive vs since_last_overflow, hysteresis_decrement: same scale
// either way) are not mentioned; growth_count stable_interval changes the scale and is.
#include <cmath>
#include <string>
#include <vector>

#include "engine/base/text.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {
namespace {

std::string py_float(double v) {
    if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
    std::string s = format_number(v);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

std::string json_number(double v) { return format_number(v); }

bool is_power_of_two(double v) {
    int e = 0;
    return v > 0 && std::isfinite(v) && std::frexp(v, &e) == 0.5;
}

// Collects the comment lines and the code lines of one snippet.
class Snippet {
public:
    Snippet(std::string comment, std::string framework)
        : m_comment(std::move(comment)), m_framework(std::move(framework)) {}
    void header(const ScalerConfig& c) {
        m_text += m_comment + " mpx scaler preset '" + c.preset + "' (" +
                  std::string(to_string(c.kind)) + ") for " + m_framework + "\n";
        // The preset's own claim, so that a reader knows which release "reproduces X" means.
        if (c.preset == "custom") return;
        try {
            const ScalerPresetSource src = scaler_preset_source(c.preset);
            comment("preset '" + c.preset + "' follows " + std::string(src.framework) + ": " +
                    std::string(src.source));
        } catch (const std::exception&) {
            // A config may name a preset this build does not know; the header above still holds.
        }
    }
    void comment(const std::string& line) { m_text += m_comment + " " + line + "\n"; }
    void missing(bool expressible, const std::string& what) {
        if (!expressible) comment("not expressible in " + m_framework + ": " + what);
    }
    void code(const std::string& line) { m_text += line + "\n"; }
    const std::string& name() const { return m_framework; }
    std::string text() const { return m_text; }

private:
    std::string m_comment;
    std::string m_framework;
    std::string m_text;
};

std::string value(double v) { return format_number(v); }

// DeepSpeed >= 0.17.1's first growth after an overflow (and from the start) waits one clean step
// more than every other framework's; they cannot express it.
void stable_interval_note(Snippet& s, const ScalerConfig& c) {
    s.missing(c.growth_count != GrowthCount::stable_interval,
              "growth_count = 'stable_interval' (DeepSpeed >= 0.17.1 grows first after " +
                  std::to_string(c.growth_interval) + " + 1 clean steps; " + s.name() +
                  " after " + std::to_string(c.growth_interval) + ")");
}

// The notes every dynamic scaler shares; `fp32_scale` says whether the framework keeps the scale in
// a float32 tensor (then non_finite_growth matters; a double never reaches infinity in practice).
void common_notes(Snippet& s, const ScalerConfig& c, bool has_min, bool has_max, bool factors,
                  bool has_hysteresis, bool errors_at_min, bool fp32_scale, bool refuses_inf) {
    const std::string& fw = s.name();
    if (!factors) {
        s.missing(c.growth_factor == 2.0,
                  setting_text(c, "growth_factor") + " (" + fw + " fixes it at 2)");
        s.missing(c.backoff_factor == 0.5,
                  setting_text(c, "backoff_factor") + " (" + fw + " fixes it at 0.5)");
    }
    if (!has_min)
        s.missing(c.min_scale == 0.0, setting_text(c, "min_scale") + " (" + fw + " has no floor)");
    if (!has_max)
        s.missing(std::isinf(c.max_scale),
                  setting_text(c, "max_scale") + " (" + fw + " has no ceiling)");
    if (!has_hysteresis)
        s.missing(c.hysteresis == 1, setting_text(c, "hysteresis") + " (" + fw +
                                         " backs off on every overflow)");
    if (!errors_at_min)
        s.missing(c.at_min == AtMin::clamp,
                  "at_min = 'error' (" + fw + " never stops the run at the minimum scale)");
    s.missing((c.scale_storage == ScaleStorage::fp32) == fp32_scale,
              setting_text(c, "scale_storage") + " (" + fw +
                  " keeps the scale as " + (fp32_scale ? "a float32 tensor" : "a Python float") +
                  "; it matters only where rounding or range do)");
    if (fp32_scale)
        s.missing((c.non_finite_growth == NonFiniteGrowth::refuse) == refuses_inf,
                  setting_text(c, "non_finite_growth") + " (" +
                      fw + (refuses_inf ? " refuses" : " applies") + " a growth to inf)");
}

std::string pytorch(const ScalerConfig& c) {
    Snippet s("#", "PyTorch");
    s.header(c);
    if (c.kind == ScalerKind::none) {
        s.comment("no loss scaling (a disabled scaler passes the loss and gradients through)");
        s.code("scaler = torch.amp.GradScaler(enabled=False)");
        return s.text();
    }
    if (c.kind == ScalerKind::fixed) {
        s.missing(false, "a static scale (GradScaler always adapts; it asserts growth_factor > 1 and "
                         "backoff_factor < 1); scale by hand instead:");
        s.comment("(loss * loss_scale).backward(); divide the gradients by loss_scale; skip "
                  "optimizer.step() when any gradient is not finite");
        s.code("loss_scale = " + py_float(c.init_scale));
        return s.text();
    }
    common_notes(s, c, false, false, true, false, false, true, true);
    stable_interval_note(s, c);
    s.code("scaler = torch.amp.GradScaler(init_scale=" + py_float(c.init_scale) +
           ", growth_factor=" + py_float(c.growth_factor) + ", backoff_factor=" +
           py_float(c.backoff_factor) + ", growth_interval=" + std::to_string(c.growth_interval) + ")");
    return s.text();
}

std::string apex(const ScalerConfig& c) {
    Snippet s("#", "Apex amp");
    s.header(c);
    s.comment("apex.amp was removed in Apex 25.07 (last in 25.05); torch.amp replaces it");
    if (c.kind == ScalerKind::none) {
        s.code("model, optimizer = amp.initialize(model, optimizer, enabled=False)");
        return s.text();
    }
    if (c.kind == ScalerKind::fixed) {
        s.missing(false, "skipping steps with non-finite gradients (a static Apex loss_scale "
                         "neither checks for inf/NaN nor skips the step)");
        s.code("model, optimizer = amp.initialize(model, optimizer, opt_level=\"O1\", loss_scale=" +
               py_float(c.init_scale) + ")");
        return s.text();
    }
    // amp.initialize exposes only the bounds: LossScaler starts at 2^16 and uses a 2000-step window.
    s.missing(c.init_scale == 65536.0,
              setting_text(c, "init_scale") + " (amp.initialize always starts at 65536)");
    s.missing(c.growth_interval == 2000, setting_text(c, "growth_interval") +
                                             " (amp.initialize always uses 2000)");
    common_notes(s, c, true, true, false, false, false, false, false);
    stable_interval_note(s, c);
    s.code("model, optimizer = amp.initialize(model, optimizer, opt_level=\"O1\", "
           "loss_scale=\"dynamic\", min_loss_scale=" +
           (c.min_scale > 0.0 ? py_float(c.min_scale) : std::string("None")) +
           ", max_loss_scale=" + py_float(c.max_scale) + ")");
    return s.text();
}

std::string deepspeed(const ScalerConfig& c) {
    Snippet s("//", "DeepSpeed");
    s.header(c);
    s.comment("an entry of the DeepSpeed config object (JSON has no comments: drop these lines)");
    if (c.kind == ScalerKind::none) {
        s.comment("no loss scaling: train in bf16 (\"bf16\": {\"enabled\": true}) or FP32");
        s.code("\"fp16\": {\n  \"enabled\": false\n}");
        return s.text();
    }
    if (c.kind == ScalerKind::fixed) {
        s.code("\"fp16\": {\n  \"enabled\": true,\n  \"loss_scale\": " + json_number(c.init_scale) +
               "\n}");
        return s.text();
    }
    const int power = static_cast<int>(std::lround(std::log2(c.init_scale)));
    s.missing(is_power_of_two(c.init_scale),
              setting_text(c, "init_scale") + " (initial_scale_power takes powers of two; " +
                  std::to_string(power) + " is the nearest)");
    s.missing(c.min_scale > 0.0, "min_scale = 0 (min_loss_scale must be > 0; DeepSpeed's default is 1)");
    if (c.at_min == AtMin::clamp)
        s.missing(false, "at_min = 'clamp' in the config (after deepspeed.initialize, set "
                         "engine.optimizer.loss_scaler.raise_error_at_min_scale = False)");
    common_notes(s, c, true, false, false, true, true, false, false);
    // The growth rule is DeepSpeed's version boundary (PR #6976): ZeRO's DynamicLossScaler grew after
    // window clean steps up to 0.17.0 and after window + 1 since 0.17.1 (stable_interval), as the
    // non-ZeRO FP16_Optimizer (fused_optimizer.py, unfused_optimizer.py) always has. That optimizer
    // has no hysteresis and never raises at the minimum, in every version.
    if (c.growth_count == GrowthCount::stable_interval) {
        s.comment("the rule of DeepSpeed >= 0.17.1: the first growth after an overflow (or from the "
                  "start) comes after loss_scale_window + 1 clean steps, later ones every window");
    } else {
        s.missing(false, "growth after " + std::to_string(c.growth_interval) +
                             " clean steps following an overflow (DeepSpeed >= 0.17.1 waits "
                             "loss_scale_window + 1); this block grows as set only in DeepSpeed "
                             "<= 0.17.0 with ZeRO");
    }
    s.comment("with ZeRO stages 1-3 (DynamicLossScaler); without ZeRO, FP16_Optimizer has always "
              "grown after loss_scale_window + 1 clean steps, has no hysteresis and never raises at "
              "the minimum");
    const bool consecutive = c.hysteresis_reset == HysteresisReset::on_clean_step;
    std::string block = "\"fp16\": {\n  \"enabled\": true,\n  \"loss_scale\": 0,\n";
    block += "  \"initial_scale_power\": " + std::to_string(power) + ",\n";
    block += "  \"loss_scale_window\": " + std::to_string(c.growth_interval) + ",\n";
    block += "  \"hysteresis\": " + std::to_string(c.hysteresis) + ",\n";
    block += std::string("  \"consecutive_hysteresis\": ") + (consecutive ? "true" : "false") + ",\n";
    block += "  \"min_loss_scale\": " + json_number(c.min_scale > 0.0 ? c.min_scale : 1.0) + "\n}";
    s.code(block);
    return s.text();
}

std::string keras(const ScalerConfig& c) {
    // Legacy tf.keras floors at 1 and refuses a growth to inf; a config that does both maps there.
    const bool legacy = c.min_scale == 1.0 && c.non_finite_growth == NonFiniteGrowth::refuse;
    Snippet s("#", legacy ? "tf.keras (TensorFlow 2.4 to 2.15)" : "Keras 3");
    s.header(c);
    if (c.kind == ScalerKind::none) {
        s.comment("no loss scaling: use the inner optimizer as it is");
        s.code("optimizer = inner");
        return s.text();
    }
    if (c.kind == ScalerKind::fixed) {
        s.missing(false, "skipping steps with non-finite gradients (a fixed loss_scale_factor "
                         "applies every update)");
        s.code("inner = keras.optimizers.Adam(loss_scale_factor=" + py_float(c.init_scale) +
               ")  # every Keras optimizer takes loss_scale_factor");
        return s.text();
    }
    common_notes(s, c, legacy, false, false, false, false, true, legacy);
    stable_interval_note(s, c);
    if (legacy)
        s.code("optimizer = tf.keras.mixed_precision.LossScaleOptimizer(inner, dynamic=True, "
               "initial_scale=" + py_float(c.init_scale) +
               ", dynamic_growth_steps=" + std::to_string(c.growth_interval) + ")");
    else
        s.code("optimizer = keras.optimizers.LossScaleOptimizer(inner, initial_scale=" +
               py_float(c.init_scale) + ", dynamic_growth_steps=" +
               std::to_string(c.growth_interval) + ")");
    return s.text();
}

std::string megatron(const ScalerConfig& c) {
    Snippet s("#", "Megatron-LM");
    s.header(c);
    if (c.kind == ScalerKind::none) {
        s.comment("no loss scaling: every --fp16 run is scaled; train in --bf16 or FP32 instead");
        s.code("--bf16");
        return s.text();
    }
    if (c.kind == ScalerKind::fixed) {
        s.code("--fp16 --loss-scale " + value(c.init_scale));
        return s.text();
    }
    s.missing(c.min_scale > 0.0, "min_scale = 0 (DynamicGradScaler asserts min_scale > 0; the "
                                 "default --min-loss-scale is 1)");
    if (c.hysteresis > 1)
        s.missing(c.hysteresis_reset == HysteresisReset::on_growth,
                  "hysteresis_reset = 'on_clean_step' (Megatron refills the hysteresis only when "
                  "the scale grows)");
    common_notes(s, c, true, false, false, true, false, true, false);
    stable_interval_note(s, c);
    s.code("--fp16 --initial-loss-scale " + value(c.init_scale) + " --min-loss-scale " +
           value(c.min_scale > 0.0 ? c.min_scale : 1.0) + " --loss-scale-window " +
           std::to_string(c.growth_interval) + " --hysteresis " + std::to_string(c.hysteresis));
    return s.text();
}

}  // namespace

std::string framework_snippet(const ScalerConfig& config, Framework framework) {
    switch (framework) {
        case Framework::pytorch: return pytorch(config);
        case Framework::apex: return apex(config);
        case Framework::deepspeed: return deepspeed(config);
        case Framework::keras: return keras(config);
        case Framework::megatron: return megatron(config);
    }
    return {};
}

}  // namespace mpx
