// The mismatch section of a session configuration: JSON both ways and its checks.
#include "engine/config/mismatch_config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/json_util.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"

namespace mpx {

nlohmann::json to_json(const MismatchConfig& m) {
    return {{"run", m.run}, {"reference", m.reference}, {"policies", m.policies}, {"every", m.every}};
}

MismatchConfig mismatch_config_from_json(const nlohmann::json& j, MismatchConfig base) {
    JsonReader r(j, "mismatch");
    const auto text = [&](const char* key, std::string& out) {
        if (!r.has(key)) return;
        const auto& v = r.at(key);
        if (!v.is_string()) throw ConfigError(std::string("mismatch.") + key, "must be a run label, e.g. \"fp32\"");
        out = v.get<std::string>();
    };
    text("run", base.run);
    text("reference", base.reference);
    if (r.has("policies")) {
        const auto& v = r.at("policies");
        if (!v.is_array()) throw ConfigError("mismatch.policies", "must be a list of run labels, e.g. [\"amp-fp16\", \"amp-bf16\"]");
        base.policies.clear();
        for (const auto& p : v) {
            if (!p.is_string()) throw ConfigError("mismatch.policies", "must be a list of run labels, e.g. [\"amp-fp16\", \"amp-bf16\"]");
            base.policies.push_back(p.get<std::string>());
        }
    }
    r.get("every", base.every);
    r.finish();
    return base;
}

namespace {
// A policy label as resolve_run reads it, refused naming `field` where a fresh model cannot take it.
RunInfo resolve_policy(const std::string& label, const SessionConfig& c, const char* field) {
    RunInfo info;
    try {
        info = resolve_run(label, c);
    } catch (const ConfigError& e) {
        throw ConfigError(field, "'" + label + "': " + e.message());
    }
    const Mode m = info.spec.mode;
    if (m == Mode::fp8_hybrid || m == Mode::fp8_e4m3 || m == Mode::mxfp8 || m == Mode::nvfp4 || m == Mode::mxfp4 ||
        m == Mode::adaptive)
        throw ConfigError(field, "'" + label + "': its casts depend on the run's history (scales, memory); choose fp32, "
                                 "tf32, amp-, half-, pure- or selective- policies");
    if (info.model.kind == ModelKind::gpt && info.model.attention.qk_norm != c.model.attention.qk_norm)
        throw ConfigError(field, "'" + label + "': +qk-norm adds parameters the run's weights do not have");
    return info;
}
}  // namespace

void validate_mismatch(const SessionConfig& c) {
    const MismatchConfig& m = c.mismatch;
    if (c.model.kind != ModelKind::gpt) {
        if (!(m == MismatchConfig{}))
            throw ConfigError("mismatch.policies", "is set but an MLP has no per-token log-probabilities; the mismatch is "
                                                   "the GPT's (model.kind = gpt)");
        return;
    }
    if (m.every < 0) throw ConfigError("mismatch.every", "must be 0 (the last step only) or a step count");
    if (!m.enabled()) return;
    if (!m.run.empty() && std::find(c.runs.begin(), c.runs.end(), m.run) == c.runs.end() &&
        std::none_of(c.runs.begin(), c.runs.end(), [&](const std::string& r) { return resolve_run(r, c).label == m.run; }))
        throw ConfigError("mismatch.run", "'" + m.run + "' is not one of the session's runs; name the run whose weights are read");
    const std::string ref = resolve_policy(m.reference, c, "mismatch.reference").label;
    std::vector<std::string> seen;
    for (const std::string& p : m.policies) {
        const std::string label = resolve_policy(p, c, "mismatch.policies").label;
        if (label == ref) throw ConfigError("mismatch.policies", "'" + p + "' is the reference; it would differ by 0");
        if (std::find(seen.begin(), seen.end(), label) != seen.end())
            throw ConfigError("mismatch.policies", "'" + p + "' is listed twice");
        seen.push_back(label);
    }
}

}  // namespace mpx
