// Run labels → precision and scaler (DESIGN.md, "Precision policies" and the `run` column).
#include "engine/config/run_plan.hpp"

#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/config/session_config.hpp"
#include "engine/precision/fp8_scaling.hpp"

namespace mpx {

ScalerConfig with_overrides(ScalerConfig s, const nlohmann::json& overrides) {
    if (s.kind != ScalerKind::dynamic) return s;
    if (!overrides.is_object() && !overrides.is_null())
        throw ConfigError("scaler_overrides", "must be an object of scaler settings");
    for (auto it = overrides.begin(); it != overrides.end(); ++it) {
        const auto* f = find_field(scaler_fields(), it.key());
        if (!f) throw ConfigError("scaler_overrides." + it.key(), "unknown scaler setting");
        f->read(*f, s, it.value(), "scaler_overrides." + it.key());
    }
    validate(s);
    return s;
}

RunInfo resolve_run(std::string_view label, const ScalerConfig& session_scaler,
                    const nlohmann::json& overrides, WriteBack session_write_back,
                    const AccumulateConfig& accumulate, const Fp4Config& fp4) {
    RunInfo info;
    info.spec = parse_run_spec(label, "runs");
    const DefaultScaler def = default_scaler(info.spec);
    ScalerConfig s;
    if (info.spec.scaler_preset) {
        try {
            s = scaler_preset(*info.spec.scaler_preset);
        } catch (const ConfigError&) {  // the user wrote it in the run label, not scaler.preset
            std::string known;
            for (const auto& n : scaler_preset_names()) known += (known.empty() ? "" : ", ") + n;
            throw ConfigError("runs", "run '" + std::string(label) + "': unknown scaler '" +
                                          *info.spec.scaler_preset + "'; choose from " + known);
        }
    } else if (def == DefaultScaler::dynamic) {
        s = session_scaler;
        info.follows_session_scaler = true;
    } else if (def == DefaultScaler::fixed_one) {
        s = scaler_preset("static");
        s.init_scale = 1.0;
    } else {
        s = scaler_preset("none");
    }
    info.label = info.spec.base_label();
    if (info.spec.fp8_recipe) info.label += "+" + std::string(enum_name(*info.spec.fp8_recipe));
    info.label += fp4_switch_suffix(info.spec.fp4);
    if (is_fp4(info.spec.mode)) info.fp4 = resolve_fp4(fp4_kind(info.spec.mode), fp4, info.spec.fp4);
    if (writes_narrow_weights(info.spec.mode)) info.write_back = info.spec.write_back.value_or(session_write_back);
    if (info.write_back != WriteBack::nearest) info.label += "+" + std::string(write_back_suffix(info.write_back));
    if (info.spec.penalty_mistake) info.label += "+" + std::string(enum_name(*info.spec.penalty_mistake));
    for (const GptSwitch g : info.spec.gpt_switches) info.label += "+" + std::string(enum_name(g));
    info.accumulate_plan = run_accumulate_plan(info.spec, accumulate);
    info.accumulation = gemm_accumulation(info.accumulate_plan, accumulate, info.spec.mode == Mode::mxfp8);
    if (!info.accumulation.all_exact())
        info.label += "+" + std::string(k_accumulate_suffix) + std::string(to_string(info.accumulate_plan));
    else
        info.accumulate_plan = AccumulatePlan::exact;
    if (info.spec.scaler_preset || def == DefaultScaler::dynamic) info.label += "+" + s.preset;
    try {
        info.scaler = with_overrides(s, overrides);
    } catch (const ConfigError& e) {
        throw ConfigError(e.field(), e.message() + " (run " + std::string(label) + ")");
    }
    return info;
}

RunInfo resolve_run(std::string_view label, const SessionConfig& c) {
    RunInfo info = resolve_run(label, c.scaler, c.scaler_overrides, c.train.write_back, c.accumulate, c.fp4);
    info.model = c.model;
    if (!info.spec.gpt_switches.empty() && c.model.kind != ModelKind::gpt)
        throw ConfigError("runs", "run '" + std::string(label) + "': +" +
                                      std::string(enum_name(info.spec.gpt_switches.front())) +
                                      " is a GPT switch and the model is an MLP; set model.kind = gpt or drop it");
    AttentionConfig& a = info.model.attention;
    for (const GptSwitch g : info.spec.gpt_switches) switch (g) {
            case GptSwitch::attn_after: a.scale = AttentionScale::after; break;
            case GptSwitch::attn_before: a.scale = AttentionScale::before; break;
            case GptSwitch::attn_split: a.scale = AttentionScale::split; break;
            case GptSwitch::qk_norm: a.qk_norm = true; break;
            case GptSwitch::softmax_storage: a.softmax = SoftmaxFormat::storage; break;
            case GptSwitch::norm_storage: info.model.norm_stats = NormStats::storage; break;
            case GptSwitch::autocast_cpu: info.model.autocast = AutocastPolicy::cpu_1_13; break;
        }
    return info;
}

}  // namespace mpx
