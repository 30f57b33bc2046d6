// The sample section of a session configuration: JSON both ways and its checks.
#include "engine/config/sample_config.hpp"

#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/json_util.hpp"
#include "engine/base/text.hpp"
#include "engine/config/session_config.hpp"

namespace mpx {

nlohmann::json to_json(const SampleConfig& s) {
    return {{"every", s.every}, {"length", s.length}, {"prompt", s.prompt}};
}

SampleConfig sample_config_from_json(const nlohmann::json& j, SampleConfig base) {
    JsonReader r(j, "sample");
    r.get("every", base.every);
    r.get("length", base.length);
    if (r.has("prompt")) {
        const auto& v = r.at("prompt");
        if (!v.is_string()) throw ConfigError("sample.prompt", "must be text, e.g. \"The \"");
        base.prompt = v.get<std::string>();
    }
    r.finish();
    return base;
}

void validate_sample(const SessionConfig& c) {
    const SampleConfig& s = c.sample;
    if (c.model.kind != ModelKind::gpt) {
        const SampleConfig d;
        const char* field = s.every != d.every ? "sample.every" : s.length != d.length ? "sample.length" : "sample.prompt";
        if (!(s == d))
            throw ConfigError(field, "is set but an MLP writes no text; samples are the GPT's (model.kind = gpt)");
        return;
    }
    if (s.every < 0) throw ConfigError("sample.every", "must be 0 (no samples while training) or a step count");
    if (s.length < 1 || s.length > k_max_sample_length)
        throw ConfigError("sample.length", "must be 1 to " + std::to_string(k_max_sample_length) + " characters");
    if (s.prompt.empty()) throw ConfigError("sample.prompt", "is empty; give at least one character to continue, e.g. \"The \"");
    if (!valid_utf8(s.prompt)) throw ConfigError("sample.prompt", "is not UTF-8 text");
}

}  // namespace mpx
