// A session configuration to JSON and back (session_config.hpp): to_json, session_config_from_json.
#include "engine/config/session_config.hpp"
#include "engine/config/session_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/json_util.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/config/device_choice.hpp"
#include "engine/config/run_plan.hpp"

namespace mpx {

namespace session_json {
nlohmann::json fp8_to_json(const Fp8Config& f) {
    return {{"recipe", std::string(enum_name(f.recipe))},
            {"amax_history_len", f.amax_history_len},
            {"amax_compute_algo", std::string(enum_name(f.amax_compute_algo))},
            {"margin", f.margin},
            {"e4m3_overflow", std::string(enum_name(f.e4m3_overflow))}};
}
nlohmann::json pace_to_json(const Pace& p) {
    if (p.events || p.steps_per_second == 0.0) return to_string(p);  // "fast,events", "20,events"
    const double r = p.steps_per_second;  // a plain rate as the number a teacher writes: 5, 0.5
    if (r == std::floor(r)) return static_cast<long long>(r);
    return r;
}
Pace pace_from_json(const nlohmann::json& v) {
    if (v.is_string()) return parse_pace(v.get<std::string>());
    if (v.is_number()) return parse_pace(format_number(v.get<double>()));
    throw ConfigError("pace", "must be steps per second (e.g. 5) or text such as \"fast\" or \"20,events\"");
}
nlohmann::json fp4_to_json(const Fp4Config& f) {
    return {{"rht", f.rht},
            {"sr", f.sr},
            {"weights_2d", f.weights_2d},
            {"bf16_first", f.bf16_first},
            {"bf16_last", f.bf16_last},
            {"four_over_six", f.four_over_six},
            {"four_over_six_metric", std::string(enum_name(f.four_over_six_metric))},
            {"mx_scale_rule", std::string(enum_name(f.mx_scale_rule))}};
}
}  // namespace session_json

using session_json::fp4_to_json;
using session_json::fp8_to_json;
using session_json::pace_from_json;
using session_json::pace_to_json;

nlohmann::json to_json(const SessionConfig& c) {
    nlohmann::json j;
    j["name"] = c.name;
    j["description"] = c.description;
    if (!c.lesson.empty()) j["lesson"] = c.lesson;
    if (c.classroom) j["classroom"] = *c.classroom;
    if (c.pace != Pace{}) j["pace"] = pace_to_json(c.pace);
    if (!c.claims.empty()) {
        nlohmann::json claims = nlohmann::json::array();
        for (const Claim& claim : c.claims) claims.push_back(to_json(claim));
        j["claims"] = claims;
    }
    j["runs"] = c.runs;
    j["steps"] = c.steps;
    j["seed"] = c.seed;
    j["device"] = c.device;
    j["record_every"] = c.record_every;
    j["eval_every"] = c.eval_every;
    j["instruments"] = {{"every", c.instruments.every}};
    if (c.model.kind == ModelKind::gpt) {
        const GptConfig& g = c.model.gpt;
        j["model"] = {{"kind", "gpt"},           {"n_layer", g.n_layer},       {"n_head", g.n_head},
                      {"n_embd", g.n_embd},      {"block_size", g.block_size}, {"tie_embeddings", g.tie_embeddings}, {"init_scale", g.init_scale}, {"qk_init_scale", g.qk_init_scale},
                      {"dropout", c.model.dropout}, {"keep_output_fp32", c.model.keep_output_fp32}};
        j["attention"] = {{"scale", std::string(to_string(c.model.attention.scale))},
                          {"softmax", std::string(to_string(c.model.attention.softmax))},
                          {"softcap", c.model.attention.softcap},
                          {"qk_norm", c.model.attention.qk_norm}};
        j["autocast"] = std::string(to_string(c.model.autocast));
        j["norm"] = {{"stats", std::string(to_string(c.model.norm_stats))}};
        j["sample"] = to_json(c.sample);
        if (c.mismatch.enabled()) j["mismatch"] = to_json(c.mismatch);
    } else {
        j["model"] = {{"sizes", model_sizes_text(c.model.sizes)},
                      {"activation", std::string(to_string(c.model.activation))},
                      {"layernorm", c.model.layernorm},
                      {"dropout", c.model.dropout},
                      {"recompute", c.model.recompute},
                      {"keep_output_fp32", c.model.keep_output_fp32}};
    }
    j["data"] = c.data;
    j["train"] = c.train;
    j["scaler"] = c.scaler;
    j["scaler_overrides"] = c.scaler_overrides;
    // The fp8 section only where it matters: presets and sidecars without FP8 runs stay as they were.
    const Fp8Config d8;
    bool any_fp8 = c.fp8.recipe != d8.recipe || c.fp8.amax_history_len != d8.amax_history_len ||
                   c.fp8.amax_compute_algo != d8.amax_compute_algo || c.fp8.margin != d8.margin ||
                   c.fp8.e4m3_overflow != d8.e4m3_overflow;
    for (const auto& r : c.runs) any_fp8 = any_fp8 || r.rfind("fp8-", 0) == 0 || r.rfind("mxfp8", 0) == 0;
    if (any_fp8) j["fp8"] = fp8_to_json(c.fp8);
    bool any_fp4 = c.fp4 != Fp4Config{};
    for (const auto& r : c.runs) any_fp4 = any_fp4 || r.rfind("nvfp4", 0) == 0 || r.rfind("mxfp4", 0) == 0;
    if (any_fp4) j["fp4"] = fp4_to_json(c.fp4);
    // Likewise the accumulate section only where it differs from exact FP32 accumulation.
    if (c.accumulate != AccumulateConfig{}) j["accumulate"] = c.accumulate;
    j["selective_layers"] = c.selective_layers;
    j["adaptive_threshold"] = c.adaptive_threshold;
    j["memory_budget"] = c.memory_budget;
    if (!c.live_changes.empty()) {  // absent until a change is made: presets and plain runs stay as they were
        nlohmann::json changes = nlohmann::json::array();
        for (const auto& change : c.live_changes) changes.push_back(to_json(change));
        j["live_changes"] = changes;
    }
    return j;
}

namespace {
std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        part.erase(0, part.find_first_not_of(' '));
        part.erase(part.find_last_not_of(' ') + 1);
        if (!part.empty()) out.push_back(part);
    }
    return out;
}

std::vector<std::string> string_list(JsonReader& r, const std::string& key) {
    const auto& v = r.at(key);
    if (v.is_string()) return split_list(v.get<std::string>());
    if (!v.is_array()) throw ConfigError(r.field(key), "must be a list of names");
    std::vector<std::string> out;
    for (const auto& e : v) {
        if (!e.is_string()) throw ConfigError(r.field(key), "must be a list of names");
        out.push_back(e.get<std::string>());
    }
    return out;
}
}  // namespace

SessionConfig session_config_from_json(const nlohmann::json& j) {
    SessionConfig c;
    JsonReader r(j, "");
    r.get("name", c.name);
    r.get("description", c.description);
    r.get("lesson", c.lesson);
    if (r.has("pace")) c.pace = pace_from_json(r.at("pace"));
    if (r.has("runs")) c.runs = string_list(r, "runs");
    r.get("steps", c.steps);
    r.get("seed", c.seed);
    r.get("device", c.device);
    r.get("record_every", c.record_every);
    r.get("eval_every", c.eval_every);
    if (r.has("instruments")) {
        JsonReader in(r.at("instruments"), "instruments");
        in.get("every", c.instruments.every);
        in.finish();
    }
    if (r.has("model")) {
        JsonReader m(r.at("model"), "model");
        if (m.has("sizes")) {
            const auto& v = m.at("sizes");
            if (v.is_string()) c.model.sizes = parse_model_sizes(v.get<std::string>(), "model.sizes");
            else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number_integer(); })) {
                c.model.sizes.clear();
                for (const auto& e : v) c.model.sizes.push_back(json_integer<int>(e, "model.sizes"));
            } else throw ConfigError("model.sizes", "must be like \"2-64-64-2\" or [2, 64, 64, 2]");
        }
        m.get_enum("activation", c.model.activation);
        m.get("layernorm", c.model.layernorm);
        m.get("dropout", c.model.dropout);
        m.get("recompute", c.model.recompute);
        m.get("keep_output_fp32", c.model.keep_output_fp32);
        m.get_enum("kind", c.model.kind);
        m.get("n_layer", c.model.gpt.n_layer);
        m.get("n_head", c.model.gpt.n_head);
        m.get("n_embd", c.model.gpt.n_embd);
        m.get("block_size", c.model.gpt.block_size);
        m.get("tie_embeddings", c.model.gpt.tie_embeddings);
        m.get("init_scale", c.model.gpt.init_scale);
        m.get("qk_init_scale", c.model.gpt.qk_init_scale);
        m.finish();
    }
    if (r.has("attention")) {
        JsonReader a(r.at("attention"), "attention");
        a.get_enum("scale", c.model.attention.scale);
        a.get_enum("softmax", c.model.attention.softmax);
        a.get("softcap", c.model.attention.softcap);
        a.get("qk_norm", c.model.attention.qk_norm);
        a.finish();
    }
    if (r.has("norm")) {
        JsonReader n(r.at("norm"), "norm");
        n.get_enum("stats", c.model.norm_stats);
        n.finish();
    }
    if (r.has("autocast")) {
        const auto& v = r.at("autocast");
        const auto p = v.is_string() ? enum_parse<AutocastPolicy>(v.get<std::string>()) : std::nullopt;
        if (!p) throw ConfigError("autocast", "must be \"cuda\" (CUDA autocast's lists) or \"cpu-1.13\" (torch 1.13's CPU "
                                              "BF16 autocast: softmax and layer_norm in BF16)");
        c.model.autocast = *p;
    }
    if (r.has("data")) c.data = dataset_config_from_json(r.at("data"), c.data);
    if (r.has("train")) c.train = train_config_from_json(r.at("train"), c.train);
    if (r.has("sample")) c.sample = sample_config_from_json(r.at("sample"), c.sample);
    if (r.has("mismatch")) c.mismatch = mismatch_config_from_json(r.at("mismatch"), c.mismatch);
    if (r.has("scaler")) c.scaler = scaler_config_from_json(r.at("scaler"));
    if (r.has("scaler_overrides")) {
        const auto& o = r.at("scaler_overrides");
        if (!o.is_object()) throw ConfigError("scaler_overrides", "must be an object of scaler settings");
        if (o.contains("preset") || o.contains("kind"))
            throw ConfigError("scaler_overrides", "cannot change preset or kind; name the preset in the run label");
        c.scaler_overrides = o;
    }
    if (r.has("fp8")) {
        JsonReader f(r.at("fp8"), "fp8");
        f.get_enum("recipe", c.fp8.recipe);
        f.get("amax_history_len", c.fp8.amax_history_len);
        f.get_enum("amax_compute_algo", c.fp8.amax_compute_algo);
        f.get("margin", c.fp8.margin);
        f.get_enum("e4m3_overflow", c.fp8.e4m3_overflow);
        f.finish();
    }
    if (r.has("fp4")) {
        JsonReader f(r.at("fp4"), "fp4");
        f.get("rht", c.fp4.rht);
        f.get("sr", c.fp4.sr);
        f.get("weights_2d", c.fp4.weights_2d);
        f.get("bf16_first", c.fp4.bf16_first);
        f.get("bf16_last", c.fp4.bf16_last);
        f.get("four_over_six", c.fp4.four_over_six);
        f.get_enum("four_over_six_metric", c.fp4.four_over_six_metric);
        f.get_enum("mx_scale_rule", c.fp4.mx_scale_rule);
        f.finish();
    }
    if (r.has("accumulate")) c.accumulate = accumulate_config_from_json(r.at("accumulate"), c.accumulate);
    if (r.has("selective_layers")) c.selective_layers = string_list(r, "selective_layers");
    if (r.has("classroom")) c.classroom = string_list(r, "classroom");
    if (r.has("claims")) {
        const auto& list = r.at("claims");
        if (!list.is_array()) throw ConfigError("claims", "must be a list of claims, [] for none");
        c.claims.clear();
        for (std::size_t i = 0; i < list.size(); ++i)
            c.claims.push_back(claim_from_json(list[i], "claims[" + std::to_string(i) + "]"));
    }
    r.get("adaptive_threshold", c.adaptive_threshold);
    r.get("memory_budget", c.memory_budget);
    if (r.has("live_changes")) {  // after "train": a training change starts from the session's settings
        const auto& list = r.at("live_changes");
        if (!list.is_array()) throw ConfigError("live_changes", "must be a list of changes, [] for none");
        for (std::size_t i = 0; i < list.size(); ++i)
            c.live_changes.push_back(
                live_change_from_json(list[i], c.train, "live_changes[" + std::to_string(i) + "]"));
    }
    r.finish();
    validate(c);
    return c;
}

}  // namespace mpx
