// SessionConfig: validation, preset lookup and --set overrides (its JSON: session_json.cpp).
#include "engine/config/session_config.hpp"
#include "engine/config/session_json.hpp"

#include <algorithm>
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

namespace {
// Where no run follows the session's scaler (every dynamic run names its preset, "+deepspeed", or no
// run has a dynamic scaler), a scaler section other than the default one would be dropped without
// a word: refused, naming the first field that differs and the ways that do reach a run.
void check_scaler_unused(const ScalerConfig& s, bool any_dynamic) {
    const ScalerConfig base = scaler_preset("pytorch");
    if (s == base) return;
    std::string field = "scaler.preset", key, value;
    if (s.preset == base.preset)
        for (const auto& f : scaler_fields())
            if (f.write(s) != f.write(base)) {
                key = std::string(f.name);
                field = "scaler." + key;
                const nlohmann::json v = f.write(s);
                value = v.is_number() ? format_number(v.get<double>()) : v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
                break;
            }
    if (!any_dynamic)
        throw ConfigError(field, "reaches no run: no run has a dynamic loss scaler (FP32, TF32, BF16 and FP8 runs train "
                                 "without one), so the session's scaler is not used; add an FP16 run such as amp-fp16");
    throw ConfigError(field, "reaches no run: every run with a dynamic scaler names its own preset (e.g. "
                             "amp-fp16+deepspeed), so the session's scaler is not used. To change those runs, set " +
                                 (key.empty() ? std::string("scaler_overrides (e.g. scaler_overrides={\"init_scale\":1024})")
                                              : "scaler_overrides={\"" + key + "\":" + value + "}") +
                                 "; to use the session's scaler, drop a run's +preset suffix (amp-fp16)");
}

// A setting reaches a run when the engine, resolving the run with it and with it at its default,
// gives the run different arithmetic (issue 41, classes 7 and 8). Compared here as the engine reads
// them: an accumulation model's parameters only where the model reads them (reads_bits, reads_group,
// reads_promote_every of engine/core/accumulate.hpp), and an FP4 run's switches only where its kind
// has them (resolve_fp4 clears NVFP4's on MXFP4; NVFP4's scales are E4M3, so it reads no MX scale
// rule; the metric goes with 4over6).
bool same_arithmetic(const AccumulateParams& a, const AccumulateParams& b) {
    if (a.model != b.model) return false;
    if (reads_bits(a.model) && a.bits != b.bits) return false;
    if (reads_group(a.model) && a.group != b.group) return false;
    return !reads_promote_every(a.model) || a.promote_every == b.promote_every;
}
bool same_arithmetic(const GemmAccumulation& a, const GemmAccumulation& b) {
    return same_arithmetic(a.fprop, b.fprop) && same_arithmetic(a.dgrad, b.dgrad) && same_arithmetic(a.wgrad, b.wgrad);
}
GemmAccumulation run_gemms(const RunSpec& spec, const AccumulateConfig& c) {
    return gemm_accumulation(run_accumulate_plan(spec, c), c, spec.mode == Mode::mxfp8);
}
Fp4Config fp4_as_read(Fp4Kind kind, Fp4Config c) {
    if (kind == Fp4Kind::nvfp4) c.mx_scale_rule = Fp4Config{}.mx_scale_rule;
    if (!c.four_over_six) c.four_over_six_metric = Fp4Config{}.four_over_six_metric;
    return c;
}

using session_json::fp4_to_json;  // session_json.cpp, beside the other sections' JSON
using session_json::fp8_to_json;

template <class Section>
struct SectionField {
    const char* name;
    void (*reset)(Section&);  // the field back to its default
};
const SectionField<AccumulateConfig> k_accumulate_fields[] = {
    {"plan", [](AccumulateConfig& a) { a.plan = AccumulateConfig{}.plan; }},
    {"fprop", [](AccumulateConfig& a) { a.fprop = AccumulateConfig{}.fprop; }},
    {"dgrad", [](AccumulateConfig& a) { a.dgrad = AccumulateConfig{}.dgrad; }},
    {"wgrad", [](AccumulateConfig& a) { a.wgrad = AccumulateConfig{}.wgrad; }},
    {"bits", [](AccumulateConfig& a) { a.bits = AccumulateConfig{}.bits; }},
    {"group", [](AccumulateConfig& a) { a.group = AccumulateConfig{}.group; }},
    {"promote_every", [](AccumulateConfig& a) { a.promote_every = AccumulateConfig{}.promote_every; }},
};
const SectionField<Fp4Config> k_fp4_fields[] = {
    {"rht", [](Fp4Config& f) { f.rht = Fp4Config{}.rht; }},
    {"sr", [](Fp4Config& f) { f.sr = Fp4Config{}.sr; }},
    {"weights_2d", [](Fp4Config& f) { f.weights_2d = Fp4Config{}.weights_2d; }},
    {"bf16_first", [](Fp4Config& f) { f.bf16_first = Fp4Config{}.bf16_first; }},
    {"bf16_last", [](Fp4Config& f) { f.bf16_last = Fp4Config{}.bf16_last; }},
    {"four_over_six", [](Fp4Config& f) { f.four_over_six = Fp4Config{}.four_over_six; }},
    {"four_over_six_metric", [](Fp4Config& f) { f.four_over_six_metric = Fp4Config{}.four_over_six_metric; }},
    {"mx_scale_rule", [](Fp4Config& f) { f.mx_scale_rule = Fp4Config{}.mx_scale_rule; }},
};

// The run a label resolves to, for telling two labels of one run apart: its label with the FP4
// switches as resolved, not as written ("nvfp4+sr" is "nvfp4" while fp4.sr is on).
std::string run_identity(const RunInfo& info) {
    if (!is_fp4(info.spec.mode)) return info.label;
    std::string id = info.label;
    const std::string written = fp4_switch_suffix(info.spec.fp4);
    const std::size_t at = id.find(written, info.spec.base_label().size());
    if (!written.empty() && at != std::string::npos) id.erase(at, written.size());
    const Fp4Config f = fp4_as_read(fp4_kind(info.spec.mode), info.fp4);
    return id + "|" + std::to_string(f.rht) + std::to_string(f.sr) + std::to_string(f.weights_2d) + "," +
           std::to_string(f.bf16_first) + "," + std::to_string(f.bf16_last) + "," + std::to_string(f.four_over_six) +
           std::string(enum_name(f.four_over_six_metric)) + "," + std::string(enum_name(f.mx_scale_rule));
}
}  // namespace

void validate(const SessionConfig& c) {
    // Free text goes into every sidecar and state file: JSON carries only UTF-8, so refuse it now
    // rather than after the last step, when the export would fail.
    if (!valid_utf8(c.name)) throw ConfigError("name", "is not valid UTF-8 text; use UTF-8 characters only");
    if (!valid_utf8(c.description))
        throw ConfigError("description", "is not valid UTF-8 text; use UTF-8 characters only");
    for (std::size_t i = 0; i < c.claims.size(); ++i)  // a rewritten lesson cannot leave its claims behind
        if (c.lesson.find(c.claims[i].says) == std::string::npos)
            throw ConfigError("claims[" + std::to_string(i) + "].says",
                              "'" + c.claims[i].says + "' is not in the lesson text; a claim quotes the words it checks");
    if (c.runs.empty()) throw ConfigError("runs", "choose at least one run, e.g. fp32,amp-fp16");
    if (c.runs.size() > k_max_runs)
        throw ConfigError("runs", "at most " + std::to_string(k_max_runs) + " runs can be compared at once");
    if (c.steps < 1 || c.steps > k_max_steps) throw ConfigError("steps", "must be between 1 and " + std::to_string(k_max_steps));
    if (c.record_every < 1) throw ConfigError("record_every", "must be at least 1");
    if (c.eval_every < 0) throw ConfigError("eval_every", "must be 0 (never) or a step count");
    if (c.instruments.every < 0)
        throw ConfigError("instruments.every", "must be 0 (no histograms) or a step count");
    if (!enum_parse<DeviceSetting>(c.device))
        throw ConfigError("device", "must be one of " + enum_choices<DeviceSetting>() + " (got '" + c.device + "')");
    if (!(c.adaptive_threshold > 0.0 && c.adaptive_threshold <= 1.0))
        throw ConfigError("adaptive_threshold", "must be in (0, 1]");
    if (c.memory_budget < 1) throw ConfigError("memory_budget", "must be a positive byte count");
    validate(c.pace);
    validate(c.model);
    validate(c.data);
    validate(c.train);
    validate(c.scaler);
    validate(c.fp8);
    validate(c.fp4);
    validate(c.accumulate);
    std::set<std::string> labels;
    std::map<std::string, std::string> identities;  // run_identity → the label that has it
    std::vector<RunSpec> specs;       // every run's, for the accumulate and fp4 sections' reach
    bool write_back_reaches = false;  // train.write_back reaches a run (a pure-* run naming none)
    bool scaler_reaches = false;      // the session's scaler reaches a run (a dynamic run naming none)
    bool any_dynamic = false;         // a run has a dynamic scaler, its own or the session's
    for (const auto& r : c.runs) {  // every label resolves, its scaler (overrides applied) is valid
        const RunInfo info = resolve_run(r, c);
        if (!labels.insert(info.label).second) throw ConfigError("runs", "run '" + info.label + "' appears twice");
        const auto [same, fresh] = identities.try_emplace(run_identity(info), info.label);
        if (!fresh)
            throw ConfigError("runs", "run '" + info.label + "' is run '" + same->second + "' again: the fp4 section "
                                      "already gives it these switches; drop one, or name a switch that differs");
        specs.push_back(info.spec);
        write_back_reaches = write_back_reaches || (writes_narrow_weights(info.spec.mode) && !info.spec.write_back);
        scaler_reaches = scaler_reaches || info.follows_session_scaler;
        any_dynamic = any_dynamic || info.scaler.kind == ScalerKind::dynamic;
        if (is_fp4(info.spec.mode) && info.fp4.bf16_first + info.fp4.bf16_last >= linear_layer_count(c.model))
            throw ConfigError(info.spec.fp4.bf16_first || info.spec.fp4.bf16_last ? "runs" : "fp4.bf16_last",
                              "run '" + info.label + "' keeps " + std::to_string(info.fp4.bf16_first) + " first and " +
                                  std::to_string(info.fp4.bf16_last) + " last linear layers in BF16, and this model has " +
                                  std::to_string(linear_layer_count(c.model)) + ": no layer would train in FP4");
        if (info.spec.mode != Mode::selective) continue;
        for (const auto& name : c.selective_layers) {
            bool found = false;
            std::string names;
            for (int i = 0; i < c.model.layers(); ++i) {
                if (!is_linear_layer(c.model, i)) continue;
                if (name == layer_name(c.model, i)) found = true;
                if (c.model.kind == ModelKind::gpt) names += (names.empty() ? "" : ", ") + layer_name(c.model, i);
            }
            if (c.model.kind != ModelKind::gpt) names = "fc1..fc" + std::to_string(c.model.layers());
            if (!found) throw ConfigError("selective_layers", "unknown layer '" + name + "'; this model has " + names);
        }
    }
    if (c.train.write_back != WriteBack::nearest && !write_back_reaches)
        throw ConfigError("train.write_back", "'" + std::string(to_string(c.train.write_back)) +
                                                  "' reaches no run: it changes runs whose weights are FP16/BF16 with "
                                                  "no FP32 master and whose label names no write-back (pure-fp16, "
                                                  "pure-bf16); add one, or name it on a run (pure-bf16+sr, "
                                                  "pure-fp16+kahan)");
    if (!scaler_reaches) check_scaler_unused(c.scaler, any_dynamic);
    // Each accumulate.* and fp4.* field that is not its default must change some run as the engine
    // resolves it; else it would be dropped without a word.
    nlohmann::json acc_json, fp4_json;
    to_json(acc_json, c.accumulate);
    fp4_json = fp4_to_json(c.fp4);
    for (const auto& f : k_accumulate_fields) {
        AccumulateConfig without = c.accumulate;
        f.reset(without);
        if (without == c.accumulate) continue;
        const bool reaches = std::any_of(specs.begin(), specs.end(), [&](const RunSpec& spec) {
            return !same_arithmetic(run_gemms(spec, c.accumulate), run_gemms(spec, without));
        });
        if (!reaches)
            throw ConfigError("accumulate." + std::string(f.name),
                              acc_json.at(f.name).dump() + " reaches no run: no run's GEMMs read it (plan sets the FP8 "
                              "runs whose label names no plan; fprop, dgrad and wgrad the runs whose plan is custom; "
                              "bits every model but exact; group fp8-fast and promote; promote_every promote); add "
                              "such a run (fp8-e4m3+acc-fast, amp-bf16+acc-custom), or drop it");
    }
    for (const auto& f : k_fp4_fields) {
        Fp4Config without = c.fp4;
        f.reset(without);
        if (without == c.fp4) continue;
        const bool reaches = std::any_of(specs.begin(), specs.end(), [&](const RunSpec& spec) {
            if (!is_fp4(spec.mode)) return false;
            const Fp4Kind kind = fp4_kind(spec.mode);
            return fp4_as_read(kind, resolve_fp4(kind, c.fp4, spec.fp4)) != fp4_as_read(kind, resolve_fp4(kind, without, spec.fp4));
        });
        if (!reaches)
            throw ConfigError("fp4." + std::string(f.name),
                              fp4_json.at(f.name).dump() + " reaches no run: no FP4 run reads it (no nvfp4 or mxfp4 "
                              "run, or each names this switch in its label; rht, sr, weights_2d and four_over_six are "
                              "NVFP4's, mx_scale_rule MXFP4's, four_over_six_metric goes with four_over_six); add "
                              "such a run, or drop it");
    }
    if ((c.model.kind == ModelKind::gpt) != (c.data.kind == DatasetKind::text))
        throw ConfigError(c.model.kind == ModelKind::gpt ? "data.kind" : "model.kind",
                          c.model.kind == ModelKind::gpt
                              ? "the GPT reads characters: set data.kind = text (Debian's fortunes, or data.text_file)"
                              : "a text trains the GPT: set model.kind = gpt (the MLP reads points, digits or a sine)");
    if (c.model.kind != ModelKind::gpt && c.train.z_loss != 0.0)
        throw ConfigError("train.z_loss", "is the GPT's (the log Z of its LM head's softmax); the MLP's losses have no "
                                          "z-loss: set train.z_loss = 0, or model.kind = gpt");
    validate_mismatch(c);  // the GPT's section (refused on an MLP)
    if (c.model.kind == ModelKind::gpt) {
        if (c.device == "cuda")
            throw ConfigError("device", "the GPT trains on the CPU backend only until the CUDA backend has been measured "
                                        "on a GPU; train it on the CPU backend (device = cpu)");
        validate_live_changes(c);
        return;
    }
    const DatasetShape shape = dataset_shape(c.data);
    const std::string kind(to_string(c.data.kind));
    if (c.model.sizes.front() != shape.features)
        throw ConfigError("model.sizes", "the input size is " + std::to_string(c.model.sizes.front()) +
                                             " but data set '" + kind + "' has " + std::to_string(shape.features) +
                                             " features; start the layer sizes with " +
                                             std::to_string(shape.features));
    if (c.model.sizes.back() != shape.outputs)
        throw ConfigError("model.sizes", "the output size is " + std::to_string(c.model.sizes.back()) +
                                             " but data set '" + kind + "' needs " + std::to_string(shape.outputs) +
                                             "; end the layer sizes with " + std::to_string(shape.outputs));
    if (c.train.batch > c.data.n_train)
        throw ConfigError("train.batch", "is larger than the training set (data.n_train = " +
                                             std::to_string(c.data.n_train) + ")");
    const std::int64_t activations = static_cast<std::int64_t>(c.train.batch) *
                                     *std::max_element(c.model.sizes.begin(), c.model.sizes.end()) *
                                     static_cast<std::int64_t>(c.model.sizes.size());
    if (activations > 2'000'000'000)
        throw ConfigError("train.batch", "batch × layer width is too large for memory; lower one");
    validate_live_changes(c);
}

std::filesystem::path preset_directory() {
    if (const char* env = std::getenv("MPX_PRESET_DIR"); env && *env) return env;
    return MPX_PRESET_DIR;
}

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(preset_directory(), ec))
        if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

SessionConfig parse_config_text(const std::string& text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw ConfigError("", origin + " is not valid JSON: " + e.what());
    }
    // An export sidecar carries the configuration that reproduces its CSV under "config".
    if (j.is_object() && j.contains("format") && j["format"] == "mpx-export") {
        if (!j.contains("config"))
            throw ConfigError("config", origin + " is an mpx export sidecar without its \"config\" object");
        j = nlohmann::json(j["config"]);
    } else if (j.is_object() && j.contains("format") && j["format"] == "mpx-session-state") {
        throw ConfigError("config", origin + " is a saved session state; continue it with --resume " + origin);
    }
    try {
        return session_config_from_json(j);
    } catch (const ConfigError& e) {
        throw ConfigError(e.field(), e.message() + " (in " + origin + ")");
    }
}

SessionConfig load_config(const std::string& name_or_path) {
    std::filesystem::path path = name_or_path;
    const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                                 path.extension() == ".json";
    if (!looks_like_path) {
        path = preset_directory() / (name_or_path + ".json");
        std::error_code ec;
        if (name_or_path.empty() || !std::filesystem::is_regular_file(path, ec)) {
            std::string known;
            for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
            throw ConfigError("config", "unknown preset '" + name_or_path + "'; choose from " + known +
                                            " or give a path to a .json file");
        }
    }
    return parse_config_text(read_input_file(path, "the configuration file"), path.filename().string());
}

void apply_overrides(SessionConfig& c, const std::vector<std::string>& assignments) {
    // Every assignment lands in the JSON first and the result is converted and validated once, so
    // the order of --set flags that only make sense together (data.n_train=1, train.batch=1) does
    // not matter; a later assignment to the same key wins.
    nlohmann::json known = to_json(c);  // the keys that exist
    if (!known.contains("live_changes")) known["live_changes"] = nlohmann::json::array();
    if (!known.contains("fp8")) known["fp8"] = fp8_to_json(c.fp8);  // to_json leaves it out without FP8 runs
    if (!known.contains("fp4")) known["fp4"] = fp4_to_json(c.fp4);  // and this one without FP4 runs
    if (!known.contains("pace")) known["pace"] = session_json::pace_to_json(c.pace);  // and this one at fast
    if (!known.contains("accumulate")) known["accumulate"] = c.accumulate;  // and this one at its defaults
    if (!known.contains("mismatch")) known["mismatch"] = to_json(c.mismatch);  // and this one while it is off
    // and the GPT's norm section on an MLP, so --set model.kind=gpt --set norm.stats=storage works
    // in either order (validation refuses it on a run that stays an MLP, naming norm.stats)
    if (!known.contains("norm")) known["norm"] = {{"stats", std::string(to_string(NormStats::fp32))}};
    nlohmann::json j = known;
    for (const auto& assignment : assignments) {
        // Checked first: JSON carries only UTF-8, and every message below quotes the assignment.
        if (!valid_utf8(assignment))
            throw ConfigError("--set", "an assignment is not valid UTF-8 text; use UTF-8 characters only");
        const auto eq = assignment.find('=');
        if (eq == std::string::npos || eq == 0)
            throw ConfigError("--set", "'" + assignment + "' is not key=value (e.g. scaler.growth_interval=50)");
        const std::string key = assignment.substr(0, eq);
        const std::string text = assignment.substr(eq + 1);
        nlohmann::json value;
        try {
            value = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception&) {
            value = text;  // bare text: a name such as fp32,amp-fp16 or 2-64-2
        }
        std::stringstream ss(key);
        std::string part;
        std::vector<std::string> parts;
        while (std::getline(ss, part, '.')) parts.push_back(part);
        if (parts.empty()) throw ConfigError("--set", "'" + assignment + "' has an empty key");
        // A key is known when the configuration had it, or an earlier assignment made it.
        const auto find = [&](const nlohmann::json& root, std::string& walked) {
            const nlohmann::json* node = &root;
            walked.clear();
            for (const auto& p : parts) {
                walked += (walked.empty() ? "" : ".") + p;
                if (!node->is_object() || !node->contains(p)) return false;
                node = &node->at(p);
            }
            return true;
        };
        std::string walked, walked_now;
        if (!find(known, walked) && !find(j, walked_now)) {
            std::string message = "unknown setting (in --set " + plain_or_quoted(assignment) + ")";
            if (parts.size() == 2 && parts[0] == "scaler_overrides") {
                nlohmann::json o = j["scaler_overrides"].is_object() ? j["scaler_overrides"] : nlohmann::json::object();
                o[parts[1]] = value;
                message += "; scaler_overrides is one object: write scaler_overrides=" + o.dump();
            }
            throw ConfigError(plain_or_quoted(walked), message);  // the user's key: never echoed raw
        }
        if (key == "scaler.preset") {
            j["scaler"] = nlohmann::json{{"preset", value}};  // a new preset brings all its values
            continue;
        }
        nlohmann::json* node = &j;
        walked.clear();
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
            walked += (walked.empty() ? "" : ".") + parts[i];
            node = &(*node)[parts[i]];
            if (node->is_null()) *node = nlohmann::json::object();
            if (!node->is_object())
                throw ConfigError(walked, "was set to " + node->dump() + " by an earlier --set, so " + key +
                                              " cannot be set");
        }
        (*node)[parts.back()] = value;
    }
    c = session_config_from_json(j);
}

void apply_override(SessionConfig& c, const std::string& assignment) { apply_overrides(c, {assignment}); }

}  // namespace mpx
