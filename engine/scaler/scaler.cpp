// Loss-scaler presets, validation, JSON, and LossScaler around the one update rule
// (engine/core/scaler_rule.hpp). Rule: every preset is a set of settings copied from its framework's
// source (cited per preset); the rule never asks which preset it runs, so a "custom" mix of
// settings behaves as predictably as a preset.
#include "engine/scaler/scaler.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/base/text.hpp"

namespace mpx {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

double stored(const ScalerConfig& c, double x) { return core::stored_scale(c.scale_storage, x); }

// Every preset: its name, the rule's settings that differ from ScalerRule's defaults (PyTorch's),
// and what it reproduces, checked against the framework's source (the versions named here; the
// closing note of issue 13 lists the commits). The order is the order of scaler_preset_names().
struct PresetRow {
    std::string_view name;
    ScalerRule rule;
    ScalerPresetSource source;
};
using enum ScaleStorage;
using enum NonFiniteGrowth;
using enum HysteresisReset;
using enum HysteresisDecrement;
const PresetRow preset_rows[] = {
    // torch/amp/grad_scaler.py + the _amp_update_scale_ kernel: float32 scale, growth refused when
    // the FP32 result is inf, no min, no max, no hysteresis.
    {"pytorch", {},
     {"PyTorch >= 2.3 (torch.amp.GradScaler)",
      "torch/amp/grad_scaler.py and the _amp_update_scale_ kernels "
      "(aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, cuda/AmpKernels.cu)"}},
    // apex/amp/scaler.py: Python float; growth min(max, 2S), backoff max(min, S/2), min None.
    {"apex", {.max_scale = 0x1p24, .scale_storage = fp64, .non_finite_growth = apply},
     {"Apex amp up to 25.05 (apex.amp was removed in 25.07)",
      "apex/amp/scaler.py, LossScaler.update_scale"}},
    // keras/src/optimizers/loss_scale_optimizer.py: float32 variable, assign(scale * 2.0) without a
    // finite check, assign(scale / 2.0) without a floor.
    {"keras", {.init_scale = 0x1p15, .non_finite_growth = apply},
     {"Keras 3 (3.0 to 3.15)",
      "keras/src/optimizers/loss_scale_optimizer.py, LossScaleOptimizer"}},
    // tf.keras _DynamicLossScaleState.update: maximum(S / 2, 1) and _assign_if_finite on growth.
    {"tf-keras-legacy", {.init_scale = 0x1p15, .min_scale = 1.0},
     {"tf.keras in TensorFlow 2.4 to 2.15 (Keras 2)",
      "keras/mixed_precision/loss_scale_optimizer.py, _DynamicLossScaleState.update"}},
    // deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler (ZeRO) with the "fp16" defaults:
    // initial_scale_power 16, loss_scale_window 1000, hysteresis 2, consecutive_hysteresis false,
    // min_loss_scale 1, raise_error_at_min_scale True. Since 0.17.1 (PR #6976) it grows when
    // `stable_interval = cur_iter - last_overflow_iter - 1` is a positive multiple of the window.
    {"deepspeed",
     {.growth_interval = 1000, .min_scale = 1.0, .hysteresis = 2, .hysteresis_reset = on_growth,
      .growth_count = GrowthCount::stable_interval, .at_min = AtMin::error, .scale_storage = fp64,
      .non_finite_growth = apply},
     {"DeepSpeed >= 0.17.1 (ZeRO stages 1-3; checked up to 0.19.5)",
      "deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale"}},
    // The same class up to 0.17.0: `(cur_iter - last_overflow_iter) % scale_window == 0`.
    {"deepspeed-legacy",
     {.growth_interval = 1000, .min_scale = 1.0, .hysteresis = 2, .hysteresis_reset = on_growth,
      .growth_count = GrowthCount::since_last_overflow, .at_min = AtMin::error, .scale_storage = fp64,
      .non_finite_growth = apply},
     {"DeepSpeed <= 0.17.0 (ZeRO stages 1-3)",
      "deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale"}},
    // megatron/core/optimizer/grad_scaler.py DynamicGradScaler with the training defaults
    // (--initial-loss-scale 2^32, --min-loss-scale 1, --loss-scale-window 1000, --hysteresis 2).
    {"megatron",
     {.init_scale = 0x1p32, .growth_interval = 1000, .min_scale = 1.0, .hysteresis = 2,
      .hysteresis_reset = on_growth, .non_finite_growth = apply, .hysteresis_decrement = always},
     {"Megatron-LM / megatron-core (unchanged from 2020 to core 0.19)",
      "megatron/core/optimizer/grad_scaler.py, DynamicGradScaler.update"}},
    // NeMo's GradScaler on Apex's update_scale_hysteresis kernel, with the NeMo GPT config values
    // (native_amp_init_scale 2^32, native_amp_growth_interval 1000, hysteresis 2).
    {"nemo",
     {.init_scale = 0x1p32, .growth_interval = 1000, .hysteresis = 2, .hysteresis_reset = on_clean_step,
      .hysteresis_decrement = always},
     {"NeMo 1.x and 2.x NLP collection (checked up to 2.5)",
      "nemo/collections/nlp/parts/nlp_overrides.py GradScaler on Apex's "
      "csrc/update_scale_hysteresis.cu"}},
    // DESIGN.md: the `pure` mode's default is a static scale of 1; the skip on inf remains.
    {"static", {.kind = ScalerKind::fixed, .init_scale = 1.0, .scale_storage = fp64},
     {"any framework's static loss scale (mpx's `pure` mode default of 1)",
      "DESIGN.md, precision policies"}},
    {"none", {.kind = ScalerKind::none, .init_scale = 1.0},
     {"no loss scaling, as every framework runs BF16 and FP32",
      "REFERENCE.md, loss-scaler rules"}},
};

// The row of a preset; ConfigError("scaler.preset") naming the choices for an unknown name.
const PresetRow& preset_row(std::string_view name) {
    for (const auto& row : preset_rows)
        if (row.name == name) return row;
    std::string known;
    for (const auto& row : preset_rows) known += (known.empty() ? "'" : ", '") + std::string(row.name) + "'";
    throw ConfigError("scaler.preset",
                      "unknown preset '" + std::string(name) + "'; choose from " + known);
}

std::string num(double v) { return format_number(v); }

}  // namespace

// --- presets and validation ------------------------------------------------------------------------

std::vector<std::string> scaler_preset_names() {
    std::vector<std::string> out;
    for (const auto& row : preset_rows) out.emplace_back(row.name);
    return out;
}

ScalerConfig scaler_preset(std::string_view name) {
    const PresetRow& row = preset_row(name);
    ScalerConfig c;
    static_cast<ScalerRule&>(c) = row.rule;
    c.preset = row.name;
    return c;
}

ScalerPresetSource scaler_preset_source(std::string_view name) { return preset_row(name).source; }

// The scaler's settings, in the order the app shows them. Every one applies live (the scaler is
// tuned between steps, see LossScaler::reconfigure).
std::span<const Field<ScalerConfig>> scaler_fields() {
    using S = ScalerConfig;
    constexpr Apply live = Apply::live;
    static const Field<S> fields[] = {
        field<&S::kind, S>({.name = "kind", .label = "Kind", .apply = live,
                         .help = "dynamic: the scale adapts to overflows; static: a fixed scale; none: no "
                                 "scaling (FP32, TF32 and BF16 runs use none)."}),
        field<&S::init_scale, S>({.name = "init_scale", .label = "Initial scale", .min = 0, .min_open = true,
                               .apply = live, .help = "The loss scale the run starts with.",
                               .hint = "frameworks start at 2^15 to 2^32, e.g. 65536"}),
        field<&S::growth_factor, S>({.name = "growth_factor", .label = "Growth factor", .min = 1, .min_open = true,
                                  .apply = live, .help = "The scale is multiplied by this when it grows (> 1).",
                                  .hint = "every framework uses 2"}),
        field<&S::backoff_factor, S>({.name = "backoff_factor", .label = "Backoff factor", .min = 0, .max = 1,
                                   .min_open = true, .max_open = true, .apply = live,
                                   .help = "The scale is multiplied by this after an overflow (between 0 and 1).",
                                   .hint = "every framework uses 0.5"}),
        field<&S::growth_interval, S>({.name = "growth_interval", .label = "Growth interval", .min = 1, .apply = live,
                                    .help = "After this many clean steps in a row the scale grows by the "
                                            "growth factor.",
                                    .hint = "PyTorch uses 2000"}),
        field<&S::min_scale, S>({.name = "min_scale", .label = "Minimum scale", .min = 0, .apply = live,
                              .help = "The scale never backs off below this (0: no minimum).",
                              .hint = "0 = no minimum", .nullable = true, .none = 0.0}),
        field<&S::max_scale, S>({.name = "max_scale", .label = "Maximum scale", .min = 0, .min_open = true,
                              .apply = live,
                              .help = "The scale never grows above this (empty or inf: no maximum).",
                              .hint = "use null for no maximum", .nullable = true, .none = inf}),
        field<&S::hysteresis, S>({.name = "hysteresis", .label = "Hysteresis", .min = 1, .apply = live,
                               .help = "Hysteresis: how many overflows the scaler absorbs (skipping the step "
                                       "but keeping the scale) before it backs off. 1 means back off at "
                                       "every overflow.",
                               .hint = "1 means every overflow backs off, DeepSpeed and Megatron use 2"}),
        field<&S::hysteresis_reset, S>({.name = "hysteresis_reset", .label = "Hysteresis refill", .apply = live,
                                     .help = "When a spent hysteresis counter is refilled: after every clean "
                                             "step, or only when the scale grows (DeepSpeed's and "
                                             "Megatron's default)."}),
        field<&S::growth_count, S>({.name = "growth_count", .label = "Growth count", .apply = live,
                                 .help = "How clean steps are counted towards growth: consecutively since the "
                                         "last growth or overflow (consecutive); DeepSpeed <= 0.17.0's "
                                         "steps since the last overflow (since_last_overflow); or DeepSpeed "
                                         ">= 0.17.1's stable interval, which grows one clean step later "
                                         "(stable_interval)."}),
        field<&S::at_min, S>({.name = "at_min", .label = "At minimum", .apply = live,
                           .help = "Backing off at the minimum scale: stay there (clamp), or stop the run "
                                   "with an error as DeepSpeed does."}),
        field<&S::scale_storage, S>({.name = "scale_storage", .label = "Scale stored as", .apply = live,
                                  .help = "Whether the scale is a float32 tensor (PyTorch, Keras, Megatron) or "
                                          "a Python float (Apex, DeepSpeed)."}),
        field<&S::non_finite_growth, S>({.name = "non_finite_growth", .label = "Growth to inf", .apply = live,
                                      .help = "A growth whose result would be infinite: applied, or refused "
                                              "(the scale stays)."}),
        field<&S::hysteresis_decrement, S>({.name = "hysteresis_decrement", .label = "Hysteresis count",
                                         .apply = live,
                                         .help = "How an overflow spends the hysteresis counter: stop at one "
                                                 "(DeepSpeed) or keep counting down (Megatron, NeMo). The "
                                                 "scale is the same either way."}),
    };
    return fields;
}

std::string setting_text(const ScalerConfig& c, std::string_view name) {
    const Field<ScalerConfig>* f = find_field(scaler_fields(), name);
    if (!f) throw std::logic_error("setting_text: no scaler setting " + std::string(name));
    std::string value;
    switch (f->kind) {
        case FieldKind::choice: value = "'" + std::string(f->name_of(c)) + "'"; break;
        case FieldKind::integer: value = std::to_string(static_cast<long long>(f->number(c))); break;
        case FieldKind::flag: value = f->number(c) != 0 ? "true" : "false"; break;
        case FieldKind::number: value = num(f->number(c)); break;
    }
    return std::string(name) + " = " + value;
}

void validate(const ScalerConfig& c) {
    check_ranges(scaler_fields(), c, "scaler");
    if (!(stored(c, c.init_scale) > 0.0) || !std::isfinite(stored(c, c.init_scale)))
        throw ConfigError("scaler.init_scale",
                          num(c.init_scale) +
                              " is out of float32 range, where scale_storage 'fp32' keeps the "
                              "scale; choose a value between 1.4e-45 and 3.4e38 or set "
                              "scaler.scale_storage to 'fp64'");
    if (c.min_scale > c.max_scale)
        throw ConfigError("scaler.min_scale", "min_scale " + num(c.min_scale) +
                                                  " is above max_scale " + num(c.max_scale) +
                                                  "; lower min_scale or raise max_scale");
    if (c.init_scale < c.min_scale)
        throw ConfigError("scaler.min_scale", "min_scale " + num(c.min_scale) +
                                                  " is above init_scale " + num(c.init_scale) +
                                                  "; lower min_scale or raise init_scale");
    if (c.init_scale > c.max_scale)
        throw ConfigError("scaler.max_scale", "max_scale " + num(c.max_scale) +
                                                  " is below init_scale " + num(c.init_scale) +
                                                  "; raise max_scale or lower init_scale");
    if (c.at_min == AtMin::error && !(c.min_scale > 0.0))
        throw ConfigError("scaler.at_min",
                          "'error' needs a min_scale > 0 to stop at (DeepSpeed's default is 1); "
                          "set scaler.min_scale or use at_min 'clamp'");
}

// --- JSON --------------------------------------------------------------------------------------------

void to_json(nlohmann::json& j, const ScalerConfig& c) {
    j = nlohmann::json{{"preset", c.preset}};
    write_fields(j, scaler_fields(), c);
}

ScalerConfig scaler_config_from_json(const nlohmann::json& j) {
    if (!j.is_object())
        throw ConfigError("scaler", "must be a JSON object of settings, got " + j.dump());
    std::string preset = "pytorch";
    if (j.contains("preset")) {
        if (!j["preset"].is_string())
            throw ConfigError("scaler.preset", "must be a preset name (text), got " + j["preset"].dump());
        preset = j["preset"].get<std::string>();
    }
    // "custom" is what to_json writes for a hand-made config; every field follows it, so the base
    // only matters for fields the file leaves out.
    ScalerConfig c = preset == "custom" ? scaler_preset("pytorch") : scaler_preset(preset);
    c.preset = preset;
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "preset") read_field(scaler_fields(), c, it.key(), it.value(), "scaler");
    validate(c);
    return c;
}

void to_json(nlohmann::json& j, const ScalerState& s) {
    j = nlohmann::json{
        {"scale", std::isfinite(s.scale) ? nlohmann::json(s.scale) : nlohmann::json(num(s.scale))},
        {"growth_tracker", s.growth_tracker},
        {"hysteresis_left", s.hysteresis_left},
        {"iteration", s.iteration},
        {"last_overflow_iteration", s.last_overflow_iteration},
    };
}

ScalerState scaler_state_from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw ConfigError("scaler.state", "must be a JSON object, got " + j.dump());
    static const char* const keys[] = {"scale", "growth_tracker", "hysteresis_left", "iteration",
                                       "last_overflow_iteration"};
    const std::string key_list = "scale, growth_tracker, hysteresis_left, iteration, last_overflow_iteration";
    ScalerState s;
    for (const char* k : keys)
        if (!j.contains(k))
            throw ConfigError(std::string("scaler.state.") + k, "missing; a saved state has all of " + key_list);
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        const auto& v = it.value();
        const std::string field = "scaler.state." + k;
        auto whole = [&]() -> long long {
            if (!v.is_number_integer()) throw ConfigError(field, "must be a whole number, got " + v.dump());
            return v.get<long long>();
        };
        if (k == "scale") {
            if (v.is_number()) s.scale = v.get<double>();
            else if (v.is_string() && v.get<std::string>() == "inf") s.scale = inf;
            else throw ConfigError(field, "must be a number or \"inf\", got " + v.dump());
        } else if (k == "growth_tracker") s.growth_tracker = static_cast<int>(whole());
        else if (k == "hysteresis_left") s.hysteresis_left = static_cast<int>(whole());
        else if (k == "iteration") s.iteration = whole();
        else if (k == "last_overflow_iteration") s.last_overflow_iteration = whole();
        else
            throw ConfigError(field, "unknown setting; known: " + key_list);
    }
    return s;
}

// --- the scaler --------------------------------------------------------------------------------------

ScalerAtMinimumError::ScalerAtMinimumError(double scale)
    : std::runtime_error(
          "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run. "
          "(scale " + num(scale) + "; this is DeepSpeed's behaviour, scaler.at_min = 'error': set "
          "scaler.at_min to 'clamp' or lower scaler.min_scale to keep training)"),
      m_scale(scale) {}

LossScaler::LossScaler(const ScalerConfig& config) : m_config(config) {
    validate(m_config);
    m_state.scale = m_config.kind == ScalerKind::none ? 1.0 : stored(m_config, m_config.init_scale);
    m_state.hysteresis_left = m_config.hysteresis;
}

ScalerUpdate LossScaler::update(bool found_inf) {
    ScalerState s = m_state;
    const ScalerOutcome out = core::update_scaler(m_config, s, found_inf);
    if (out.at_minimum) throw ScalerAtMinimumError(m_state.scale);  // m_state untouched
    const ScalerUpdate u{out.event, m_state.scale, s.scale};
    m_state = s;
    return u;
}

void LossScaler::restore(const ScalerState& s) {
    const ScalerConfig& c = m_config;
    if (std::isnan(s.scale) || !(s.scale >= 0.0))
        throw ConfigError("scaler.state.scale", "must be >= 0, got " + num(s.scale));
    if (c.kind == ScalerKind::none && s.scale != 1.0)
        throw ConfigError("scaler.state.scale", "must be 1 for scaler kind 'none', got " + num(s.scale));
    if (c.kind == ScalerKind::fixed && s.scale != stored(c, c.init_scale))
        throw ConfigError("scaler.state.scale", "must equal init_scale " + num(c.init_scale) +
                                                    " for scaler kind 'static', got " + num(s.scale));
    if (c.kind == ScalerKind::dynamic &&
        (s.scale < stored(c, c.min_scale) || s.scale > stored(c, c.max_scale)))
        throw ConfigError("scaler.state.scale", num(s.scale) + " lies outside [min_scale, max_scale] = [" +
                                                    num(c.min_scale) + ", " + num(c.max_scale) +
                                                    "]; was the state saved with other limits?");
    if (s.growth_tracker < 0 || s.growth_tracker >= c.growth_interval)
        throw ConfigError("scaler.state.growth_tracker",
                          "must lie in [0, growth_interval - 1] = [0, " +
                              std::to_string(c.growth_interval - 1) + "], got " +
                              std::to_string(s.growth_tracker) +
                              "; was the state saved with another growth_interval?");
    const int h_min = c.hysteresis_decrement == HysteresisDecrement::stop_at_one ? 1
                                                                                : std::numeric_limits<int>::min();
    if (s.hysteresis_left > c.hysteresis || s.hysteresis_left < h_min)
        throw ConfigError("scaler.state.hysteresis_left",
                          "must be at most hysteresis = " + std::to_string(c.hysteresis) +
                              (h_min == 1 ? " and at least 1" : "") + ", got " +
                              std::to_string(s.hysteresis_left));
    if (s.iteration < 0)
        throw ConfigError("scaler.state.iteration", "must be >= 0, got " + std::to_string(s.iteration));
    if (s.last_overflow_iteration < -1 || s.last_overflow_iteration >= s.iteration)
        throw ConfigError("scaler.state.last_overflow_iteration",
                          "must lie in [-1, iteration - 1], got " +
                              std::to_string(s.last_overflow_iteration));
    m_state = s;
}

void LossScaler::reconfigure(const ScalerConfig& config) {
    validate(config);
    const bool kind_changed = config.kind != m_config.kind;
    m_config = config;
    ScalerState& s = m_state;
    if (kind_changed) {
        s.scale = config.kind == ScalerKind::none ? 1.0 : stored(config, config.init_scale);
        s.growth_tracker = 0;
        s.hysteresis_left = config.hysteresis;
        return;
    }
    if (config.kind == ScalerKind::none) return;
    if (config.kind == ScalerKind::fixed) {
        s.scale = stored(config, config.init_scale);
        return;
    }
    s.scale = std::clamp(stored(config, s.scale), stored(config, config.min_scale),
                         stored(config, config.max_scale));
    // The tracker the last update would have left under the new interval (see update()).
    if (config.growth_count == GrowthCount::since_last_overflow)
        s.growth_tracker = static_cast<int>((s.iteration - 1 - s.last_overflow_iteration) %
                                            config.growth_interval);
    if (config.growth_count == GrowthCount::stable_interval)
        s.growth_tracker = static_cast<int>(
            std::max(0LL, s.iteration - 2 - s.last_overflow_iteration) % config.growth_interval);
    s.growth_tracker = std::clamp(s.growth_tracker, 0, config.growth_interval - 1);
    s.hysteresis_left = std::min(s.hysteresis_left, config.hysteresis);
    if (config.hysteresis_decrement == HysteresisDecrement::stop_at_one)
        s.hysteresis_left = std::max(s.hysteresis_left, 1);
}

}  // namespace mpx
