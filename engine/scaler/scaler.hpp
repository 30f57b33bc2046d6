// The loss scaler: one state machine whose settings reproduce PyTorch, Apex, Keras, legacy tf.keras,
// DeepSpeed, Megatron-LM and NeMo step for step (REFERENCE.md, "Loss-scaler rules"). Rule: update()
// runs exactly one framework step; anything a framework does differently is a setting, never a branch
// on the preset's name.
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/base/enum_names.hpp"
#include "engine/base/fields.hpp"
#include "engine/core/scaler_rule.hpp"

namespace mpx {

// The enums and ScalerState are in engine/core/scaler_rule.hpp, beside the rule that reads them.

// The names of each enum (JSON, --set, the app's choices, messages): one row per value.
constexpr EnumName<ScalerKind> scaler_kind_names[] = {
    {ScalerKind::dynamic, "dynamic"}, {ScalerKind::fixed, "static"}, {ScalerKind::none, "none"}};
constexpr EnumName<HysteresisReset> hysteresis_reset_names[] = {
    {HysteresisReset::on_growth, "on_growth"}, {HysteresisReset::on_clean_step, "on_clean_step"}};
constexpr EnumName<GrowthCount> growth_count_names[] = {
    {GrowthCount::consecutive, "consecutive"},
    {GrowthCount::since_last_overflow, "since_last_overflow"},
    {GrowthCount::stable_interval, "stable_interval"}};
constexpr EnumName<AtMin> at_min_names[] = {{AtMin::clamp, "clamp"}, {AtMin::error, "error"}};
constexpr EnumName<ScaleStorage> scale_storage_names[] = {{ScaleStorage::fp32, "fp32"},
                                                          {ScaleStorage::fp64, "fp64"}};
constexpr EnumName<NonFiniteGrowth> non_finite_growth_names[] = {{NonFiniteGrowth::refuse, "refuse"},
                                                                 {NonFiniteGrowth::apply, "apply"}};
constexpr EnumName<HysteresisDecrement> hysteresis_decrement_names[] = {
    {HysteresisDecrement::stop_at_one, "stop_at_one"}, {HysteresisDecrement::always, "always"}};
constexpr EnumName<ScaleEvent> scale_event_names[] = {{ScaleEvent::none, "none"},
                                                      {ScaleEvent::grow, "grow"},
                                                      {ScaleEvent::backoff, "backoff"},
                                                      {ScaleEvent::hysteresis, "hysteresis"}};
constexpr std::span<const EnumName<ScalerKind>> names_of(ScalerKind) { return scaler_kind_names; }
constexpr std::span<const EnumName<HysteresisReset>> names_of(HysteresisReset) { return hysteresis_reset_names; }
constexpr std::span<const EnumName<GrowthCount>> names_of(GrowthCount) { return growth_count_names; }
constexpr std::span<const EnumName<AtMin>> names_of(AtMin) { return at_min_names; }
constexpr std::span<const EnumName<ScaleStorage>> names_of(ScaleStorage) { return scale_storage_names; }
constexpr std::span<const EnumName<NonFiniteGrowth>> names_of(NonFiniteGrowth) { return non_finite_growth_names; }
constexpr std::span<const EnumName<HysteresisDecrement>> names_of(HysteresisDecrement) {
    return hysteresis_decrement_names;
}
constexpr std::span<const EnumName<ScaleEvent>> names_of(ScaleEvent) { return scale_event_names; }

// A scaler's settings: the rule's (engine/core/scaler_rule.hpp, with its defaults) and the preset
// it started from ("custom" if none).
struct ScalerConfig : ScalerRule {
    std::string preset = "custom";

    bool operator==(const ScalerConfig&) const = default;
};

// Presets: "pytorch", "apex", "keras", "tf-keras-legacy", "deepspeed", "deepspeed-legacy",
// "megatron", "nemo", "static" (a fixed scale of 1, the `pure` mode's default), "none". Unknown name:
// ConfigError("scaler.preset").
ScalerConfig scaler_preset(std::string_view name);
std::vector<std::string> scaler_preset_names();

// What a preset reproduces: the framework release(s) whose rule it follows and the source it was
// copied from. One row per preset in scaler.cpp; the snippets and the app's tooltips read it, the
// README repeats it. Unknown name: ConfigError("scaler.preset").
struct ScalerPresetSource {
    std::string_view framework;  // "DeepSpeed >= 0.17.1 (ZeRO stages 1-3)"
    std::string_view source;     // "deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale"
};
ScalerPresetSource scaler_preset_source(std::string_view name);
// Every setting but `preset`, in the order the app shows them: name, range, help text, access.
std::span<const Field<ScalerConfig>> scaler_fields();

// "growth_factor = 3", "at_min = 'error'": one setting as the snippets and messages quote it.
std::string setting_text(const ScalerConfig& config, std::string_view field);

// Throws ConfigError naming the offending field ("scaler.growth_factor", ...) and the fix.
void validate(const ScalerConfig& config);

// JSON: "preset", then every field of scaler_fields(), enums as text, max_scale +inf as null.
void to_json(nlohmann::json& j, const ScalerConfig& config);
// Starts from the preset named in j["preset"] (default "pytorch"; "custom" starts from pytorch's
// values), then applies the given fields; unknown keys and wrong types throw ConfigError naming
// "scaler.<key>"; the result is validated.
ScalerConfig scaler_config_from_json(const nlohmann::json& j);

// scale is written as a number, or as the string "inf" once an FP32 scale has grown to infinity.
void to_json(nlohmann::json& j, const ScalerState& state);
ScalerState scaler_state_from_json(const nlohmann::json& j);

struct ScalerUpdate {
    ScaleEvent event = ScaleEvent::none;
    double old_scale = 1.0;
    double new_scale = 1.0;
};

// DeepSpeed's raise when an overflow must back off a scale already at min_scale (at_min = error).
class ScalerAtMinimumError : public std::runtime_error {
public:
    explicit ScalerAtMinimumError(double scale);
    double scale() const { return m_scale; }

private:
    double m_scale;
};

class LossScaler {
public:
    explicit LossScaler(const ScalerConfig& config);  // validates

    // The scale this step's loss is multiplied by (1 for kind none).
    double scale() const { return m_state.scale; }
    // Frameworks without a scaler apply the NaN update; every scaler skips the step.
    bool skips_on_inf() const { return m_config.kind != ScalerKind::none; }

    // One step of the configured rule (core::update_scaler, engine/core/scaler_rule.hpp, which says what
    // each event means), after the step's gradients were checked. Throws ScalerAtMinimumError
    // (state untouched, as DeepSpeed raises before updating) when at_min is error and the scale is
    // already at min_scale.
    ScalerUpdate update(bool found_inf);

    const ScalerConfig& config() const { return m_config; }
    // The settings the backends run: the configuration itself.
    const ScalerRule& rule() const { return m_config; }
    const ScalerState& state() const { return m_state; }
    // Takes the state a backend's scaler_update left (a Run mirrors its backend's scaler, which is
    // the one that updates); unchecked: the rule produced it from a state this scaler held.
    void mirror(const ScalerState& state) { m_state = state; }
    // Resume from a saved state; throws ConfigError("scaler.state.<field>") if it cannot belong to
    // this configuration.
    void restore(const ScalerState& state);
    // A live change between steps. Same kind: the scale, trackers and counters carry on (a scaler is
    // tuned, not restarted): the scale is rounded to the new storage and clamped to [min, max]
    // (kind static takes the new init_scale, since that is its scale); the growth tracker is clamped
    // below the new interval, so a shorter interval grows on the next clean step instead of never
    // (PyTorch's `==` test would never fire again); H is clamped to the new hysteresis (and to >= 1
    // for stop_at_one, which never backs off from H < 1). Kind changed: the scale and trackers
    // restart from the new config; iteration and last overflow are kept, they count the run's steps.
    void reconfigure(const ScalerConfig& config);

private:
    ScalerConfig m_config;
    ScalerState m_state;
};

enum class Framework { pytorch, apex, deepspeed, keras, megatron };
constexpr EnumName<Framework> framework_names[] = {{Framework::pytorch, "pytorch"},
                                                   {Framework::apex, "apex"},
                                                   {Framework::deepspeed, "deepspeed"},
                                                   {Framework::keras, "keras"},
                                                   {Framework::megatron, "megatron"}};
constexpr std::span<const EnumName<Framework>> names_of(Framework) { return framework_names; }

// The settings as code/config for that framework. Every setting the framework cannot express gets
// its own comment line ("# not expressible in PyTorch: ...") instead of being dropped.
std::string framework_snippet(const ScalerConfig& config, Framework framework);

inline std::string_view to_string(ScalerKind v) { return enum_name(v); }
inline std::string_view to_string(HysteresisReset v) { return enum_name(v); }
inline std::string_view to_string(GrowthCount v) { return enum_name(v); }
inline std::string_view to_string(AtMin v) { return enum_name(v); }
inline std::string_view to_string(ScaleStorage v) { return enum_name(v); }
inline std::string_view to_string(NonFiniteGrowth v) { return enum_name(v); }
inline std::string_view to_string(HysteresisDecrement v) { return enum_name(v); }
inline std::string_view to_string(ScaleEvent v) { return enum_name(v); }
inline std::string_view to_string(Framework v) { return enum_name(v); }
inline std::optional<ScalerKind> parse_scaler_kind(std::string_view s) { return enum_parse<ScalerKind>(s); }
inline std::optional<HysteresisReset> parse_hysteresis_reset(std::string_view s) {
    return enum_parse<HysteresisReset>(s);
}
inline std::optional<GrowthCount> parse_growth_count(std::string_view s) { return enum_parse<GrowthCount>(s); }
inline std::optional<AtMin> parse_at_min(std::string_view s) { return enum_parse<AtMin>(s); }
inline std::optional<ScaleEvent> parse_scale_event(std::string_view s) { return enum_parse<ScaleEvent>(s); }
inline std::optional<Framework> parse_framework(std::string_view s) { return enum_parse<Framework>(s); }

}  // namespace mpx
