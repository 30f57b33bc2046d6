// Claims ⇄ JSON (engine/config/claims.hpp).
#include "engine/config/claims.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/json_util.hpp"

namespace mpx {

nlohmann::json to_json(const Claim& c) {
    nlohmann::json j = {{"says", c.says},
                        {"metric", std::string(enum_name(c.metric))},
                        {"run", c.run},
                        {"steps", {c.from, c.to}},
                        {"stat", std::string(enum_name(c.stat))}};
    if (!c.relative_to.empty()) j["relative_to"] = c.relative_to;
    if (std::isfinite(c.min)) j["min"] = c.min;
    if (std::isfinite(c.max)) j["max"] = c.max;
    return j;
}

Claim claim_from_json(const nlohmann::json& j, const std::string& field) {
    Claim c;
    JsonReader r(j, field);
    for (const char* key : {"says", "metric", "run"})
        if (!r.has(key)) throw ConfigError(r.field(key), "is missing; a claim names what it checks, the metric and the run");
    r.get("says", c.says);
    r.get_enum("metric", c.metric);
    r.get("run", c.run);
    if (r.has("steps")) {
        const auto& s = r.at("steps");
        if (!s.is_array() || s.size() != 2)
            throw ConfigError(r.field("steps"), "must be [first, last] (0-based, inclusive; last -1: the final step)");
        c.from = json_integer<long long>(s[0], r.field("steps"));
        c.to = json_integer<long long>(s[1], r.field("steps"));
    }
    r.get_enum("stat", c.stat);
    r.get("relative_to", c.relative_to);
    r.get("min", c.min);
    r.get("max", c.max);
    r.finish();
    if (c.says.empty()) throw ConfigError(r.field("says"), "is empty; quote the lesson's words the claim checks");
    if (c.from < 0 || (c.to >= 0 && c.to < c.from))
        throw ConfigError(r.field("steps"), "must be [first, last] with 0 <= first <= last (last -1: the final step)");
    if (!(c.min <= c.max)) throw ConfigError(r.field("min"), "must not exceed max");
    return c;
}

}  // namespace mpx
