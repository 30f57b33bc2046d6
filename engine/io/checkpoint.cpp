// The checkpoint format: writing and strictly reading a session's state (engine/io/checkpoint.hpp).
#include "engine/io/checkpoint.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/run/run.hpp"
#include "engine/run/session.hpp"

namespace mpx {

namespace {
// JSON numbers cannot carry NaN or ±inf (nlohmann writes null), yet a diverged run's weights are data
// to save and resume: those values travel as text, "nan", "-nan", "inf", "-inf", as in the CSV.
nlohmann::json params_to_json(const std::vector<std::vector<float>>& values) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : values) {
        nlohmann::json a = nlohmann::json::array();
        for (const float x : v) {
            if (std::isfinite(x)) a.push_back(x);
            else if (std::isnan(x)) a.push_back(std::signbit(x) ? "-nan" : "nan");
            else a.push_back(x > 0 ? "inf" : "-inf");
        }
        out.push_back(std::move(a));
    }
    return out;
}

// `field` names the list in the saved state ("params", "compensation", "fp8_amax") in every error.
std::vector<std::vector<float>> params_from_json(const nlohmann::json& j, const std::string& field) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<std::vector<float>> out;
    if (!j.is_array()) throw ConfigError(field, "must be a list of value lists, got " + j.dump().substr(0, 40));
    for (std::size_t i = 0; i < j.size(); ++i) {
        const auto& a = j[i];
        if (!a.is_array()) throw ConfigError(field, "must be a list of value lists; entry " + std::to_string(i) + " is not a list");
        std::vector<float> v;
        v.reserve(a.size());
        for (std::size_t k = 0; k < a.size(); ++k) {
            const auto& x = a[k];
            const std::string where = "[" + std::to_string(i) + "][" + std::to_string(k) + "]";
            const std::string s = x.is_string() ? x.get<std::string>() : "";
            if (x.is_number()) {
                // A number beyond FP32 would silently become inf: only the text "inf" stands for it.
                const double d = x.get<double>();
                if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max())))
                    throw ConfigError(field + where, "the saved state holds " + x.dump() +
                                                         ", outside the FP32 range (a diverged value is saved as \"inf\" or \"nan\")");
                v.push_back(static_cast<float>(d));
            }
            else if (s == "nan" || s == "-nan") v.push_back(s == "nan" ? nan : -nan);
            else if (s == "inf" || s == "-inf") v.push_back(s == "inf" ? inf : -inf);
            else throw ConfigError(field + where, "the saved state holds " + x.dump().substr(0, 40) +
                                                      ", not a number (or \"nan\", \"inf\", \"-inf\")");
        }
        out.push_back(std::move(v));
    }
    return out;
}

// A run's key that must be there: ConfigError naming it otherwise.
const nlohmann::json& run_key(const nlohmann::json& j, const char* key) {
    if (!j.contains(key)) throw ConfigError(key, "is missing from a run's saved state");
    return j.at(key);
}

std::string run_text(const nlohmann::json& j, const char* key) {
    const auto& v = run_key(j, key);
    if (!v.is_string()) throw ConfigError(key, "must be text, got " + v.dump().substr(0, 40));
    return v.get<std::string>();
}

// A whole number from lo to hi, named.
long long run_whole(const nlohmann::json& v, const std::string& field, long long lo, long long hi) {
    const bool fits = v.is_number_integer() &&
                      (v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                                              : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi);
    if (!fits)
        throw ConfigError(field, "is " + v.dump().substr(0, 40) + ", not a whole number from " + std::to_string(lo) +
                                     " to " + std::to_string(hi));
    return v.get<long long>();
}

// The model's own checks (counts and sizes) name no field: the saved state's key is the field.
template <typename F>
void named(const char* field, F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        if (!e.field().empty()) throw;
        throw ConfigError(field, e.message());
    }
}
}  // namespace

nlohmann::json save_state(const Run& run) {
    nlohmann::json j;
    j["label"] = run.m_info.label;
    j["applied_steps"] = run.m_applied_steps;
    j["schedule_steps"] = run.m_schedule_steps;
    j["failure"] = run.m_failure;
    nlohmann::json sc;
    to_json(sc, run.m_scaler.config());
    j["scaler_config"] = sc;
    nlohmann::json ss;
    to_json(ss, run.m_scaler.state());
    j["scaler_state"] = ss;
    j["params"] = params_to_json(run.m_model->export_state());
    // Kahan write-back: the compensation buffers, a list per parameter (empty where it has none).
    if (run.m_model->has_compensation()) {
        j["compensation"] = params_to_json(run.m_model->export_compensation());
        j["compensation_max"] = run.m_compensation_max;
    }
    if (run.m_fp8_tensors) {
        // Delayed scaling's state, one list per tensor: scale, next slot, then the history (as
        // params: an inf or NaN amax of a diverged step travels as text).
        std::vector<core::AmaxHistoryState> states;
        std::vector<float> hist;
        run.m_backend->read_amax_histories(states, hist);
        std::vector<std::vector<float>> fp8;
        for (const core::AmaxHistoryState& h : states) {
            std::vector<float> v{h.scale, static_cast<float>(h.next)};
            v.insert(v.end(), hist.begin() + h.offset, hist.begin() + h.offset + h.len);
            fp8.push_back(std::move(v));
        }
        j["fp8_amax"] = params_to_json(fp8);
    }
    return j;
}

void load_run_state(Run& run, const nlohmann::json& j) {
    // As strict as a configuration: every key known, every value in the range the engine can reach
    // (an FP8 scale of 0 or NaN, a negative count, would resume into a run no training makes), and
    // each error names its key.
    if (!j.is_object()) throw ConfigError("", "a run's saved state must be a JSON object");
    static const std::set<std::string> keys = {"label", "applied_steps", "schedule_steps", "failure",
                                               "scaler_config", "scaler_state", "params", "fp8_amax",
                                               "compensation", "compensation_max"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!keys.count(it.key())) throw ConfigError(it.key(), "unknown key in a run's saved state");
    const std::string label = run_text(j, "label");
    if (label != run.m_info.label)
        throw ConfigError("label", "saved run " + quoted_text(label) + " does not match run " + quoted_text(run.m_info.label));
    constexpr long long most = std::numeric_limits<long long>::max();
    run.m_applied_steps = run_whole(run_key(j, "applied_steps"), "applied_steps", 0, most);
    run.m_backend->set_applied_steps(run.m_applied_steps);
    run.m_schedule_steps = run_whole(run_key(j, "schedule_steps"), "schedule_steps", 0, most);
    run.m_backend->set_schedule_steps(run.m_schedule_steps);
    run.m_failure = run_text(j, "failure");
    run.m_scaler = LossScaler(scaler_config_from_json(run_key(j, "scaler_config")));
    const auto& saved_scaler = run_key(j, "scaler_state");
    // The state's counters are int and long long in the scaler: a value beyond them would wrap
    // into range (2^64 - 1 would read as last_overflow_iteration -1, "none").
    const auto beyond = [&](const char* k, long long lo, long long hi) {
        if (saved_scaler.is_object() && saved_scaler.contains(k) && saved_scaler[k].is_number_integer())
            run_whole(saved_scaler[k], std::string("scaler.state.") + k, lo, hi);
    };
    beyond("growth_tracker", std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    beyond("hysteresis_left", std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    beyond("iteration", std::numeric_limits<long long>::min(), most);
    beyond("last_overflow_iteration", std::numeric_limits<long long>::min(), most);
    const ScalerState st = scaler_state_from_json(saved_scaler);
    if (!std::isfinite(st.scale))
        throw ConfigError("scaler.state.scale", "must be a finite number, got " + format_number(st.scale));
    run.m_scaler.restore(st);
    run.m_backend->set_scaler(run.m_scaler.rule(), run.m_scaler.state());
    const auto params = params_from_json(run_key(j, "params"), "params");
    named("params", [&] { run.m_model->import_state(params); });
    if (j.contains("compensation") != run.m_model->has_compensation())
        throw ConfigError("compensation", "the saved state's Kahan compensation does not match run " + quoted_text(run.m_info.label));
    if (j.contains("compensation_max") != j.contains("compensation"))
        throw ConfigError("compensation_max", j.contains("compensation")
                                                  ? "is missing; a Kahan run saves it beside its compensation"
                                                  : "belongs to a Kahan run's compensation, which this saved run has not");
    if (j.contains("compensation")) {
        const auto comp = params_from_json(j.at("compensation"), "compensation");
        named("compensation", [&] { run.m_model->import_compensation(comp); });
        // The FP32 bits of the largest |c|: the sign bit is clear (a NaN's bits may be data).
        run.m_compensation_max = static_cast<std::uint32_t>(
            run_whole(j.at("compensation_max"), "compensation_max", 0, 0x7fffffff));
    }
    if (j.contains("fp8_amax") != (run.m_fp8_tensors > 0))
        throw ConfigError("fp8_amax", "the saved state's FP8 scaling does not match run " + quoted_text(run.m_info.label));
    if (run.m_fp8_tensors) {
        const auto fp8 = params_from_json(j.at("fp8_amax"), "fp8_amax");
        if (fp8.size() != static_cast<std::size_t>(run.m_fp8_tensors))
            throw ConfigError("fp8_amax", "the saved state has " + std::to_string(fp8.size()) + " FP8 tensors, run " +
                                              quoted_text(run.m_info.label) + " has " + std::to_string(run.m_fp8_tensors));
        std::vector<core::AmaxHistoryState> states;
        std::vector<float> hist;
        run.m_backend->read_amax_histories(states, hist);  // the settings; the values come from the file
        for (std::size_t i = 0; i < fp8.size(); ++i) {
            const auto& v = fp8[i];
            core::AmaxHistoryState& h = states[i];
            const auto len = static_cast<std::size_t>(h.len);
            const std::string tensor = "fp8_amax[" + std::to_string(i) + "]";
            if (v.size() != len + 2)
                throw ConfigError(tensor, "holds " + std::to_string(v.size()) + " values, not the scale, the next slot and " +
                                              std::to_string(len) + " amaxes (fp8.amax_history_len)");
            // A delayed scale is scaled_max / amax for a finite amax > 0, inf after a tiny one, and
            // otherwise the previous scale (core/fp8_math.hpp): never NaN, 0 or negative.
            if (!(v[0] > 0.0f))
                throw ConfigError(tensor + "[0]", "the FP8 scale is " + format_number(v[0]) +
                                                      "; a saved scale is > 0 (or \"inf\")");
            if (!(v[1] >= 0.0f) || v[1] >= static_cast<float>(len) || v[1] != std::floor(v[1]))
                throw ConfigError(tensor + "[1]", "the next slot of the amax history is " + format_number(v[1]) +
                                                      ", not a whole number from 0 to " + std::to_string(len - 1));
            // An amax is a magnitude: >= 0, inf or NaN on a diverged step.
            for (std::size_t k = 2; k < v.size(); ++k)
                if (v[k] < 0.0f || (v[k] == 0.0f && std::signbit(v[k])))
                    throw ConfigError(tensor + "[" + std::to_string(k) + "]",
                                      "an amax is " + format_number(v[k]) + "; an amax is >= 0 (or \"inf\", \"nan\")");
            h.scale = v[0];
            h.next = static_cast<int>(v[1]);
            std::copy(v.begin() + 2, v.end(), hist.begin() + h.offset);
        }
        run.m_backend->set_amax_histories(states, hist);
    }
}


nlohmann::json save_state(const Session& session) {
    session.require_nothing_pending("save_state");
    nlohmann::json j;
    j["format"] = "mpx-session-state";
    j["version"] = 1;
    j["config"] = to_json(session.m_cfg);
    j["step"] = session.m_step;
    const auto st = session.m_sampler->state();
    j["sampler"] = {{"epoch", st.epoch}, {"position", st.position}};
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : session.m_runs) runs.push_back(save_state(*r));
    j["runs"] = runs;
    return j;
}

namespace {
[[noreturn]] void bad_state(const std::string& what) { throw ConfigError("--resume", what + " in the saved state"); }

const nlohmann::json& saved(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) bad_state("\"" + std::string(key) + "\" is missing" + where);
    return j.at(key);
}

// A count the state holds: a whole number from 0 to max.
long long saved_count(const nlohmann::json& j, const char* key, long long max, const std::string& where) {
    const auto& v = saved(j, key, where);
    if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                                                          : v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > max))
        bad_state("\"" + std::string(key) + "\"" + where + " is " + v.dump() + ", not a whole number from 0 to " +
                  std::to_string(max));
    return v.get<long long>();
}
}  // namespace

std::unique_ptr<Session> load_session_state(const nlohmann::json& j, BackendFactory factory) {
    if (!j.is_object() || !j.contains("format") || j["format"] != "mpx-session-state")
        throw ConfigError("--resume", "not an mpx session state file (it has no \"format\": \"mpx-session-state\")");
    if (!j.contains("version") || j["version"] != 1)
        throw ConfigError("--resume", "this state was saved by another mpx version (state version " +
                                          (j.contains("version") ? j["version"].dump() : std::string("missing")) +
                                          ", this mpx reads version 1); it cannot be resumed, but the run can be "
                                          "re-run from its export sidecar: mpx-cli run --config <export>.json");
    static const std::set<std::string> keys = {"format", "version", "config", "step", "sampler", "runs"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!keys.count(it.key())) bad_state("\"" + it.key() + "\" is an unknown key");
    try {
        std::unique_ptr<Session> s;
        try {
            s = std::make_unique<Session>(session_config_from_json(saved(j, "config", "")), std::move(factory));
        } catch (const ConfigError& e) {
            if (e.field() == "--resume") throw;
            throw ConfigError(e.field(), e.message() + " (in the saved state)");
        }
        // Counts must agree with each other and the configuration: a state edited by hand or cut
        // short would otherwise resume into a different session than the one saved.
        const long long step = saved_count(j, "step", s->m_cfg.steps, "");
        const auto& sampler = saved(j, "sampler", "");
        if (!sampler.is_object()) bad_state("\"sampler\" is " + sampler.dump().substr(0, 40) + ", not {\"epoch\": .., \"position\": ..}");
        for (auto it = sampler.begin(); it != sampler.end(); ++it)
            if (it.key() != "epoch" && it.key() != "position") bad_state("\"" + it.key() + "\" of the sampler is an unknown key");
        BatchSampler::State st;
        st.epoch = static_cast<std::uint64_t>(
            saved_count(sampler, "epoch", std::numeric_limits<long long>::max(), " of the sampler"));
        st.position = static_cast<std::size_t>(
            saved_count(sampler, "position", s->m_cfg.data.n_train, " of the sampler"));
        // The session draws `accumulation` batches per step and starts a new epoch lazily, when the
        // next batch would not fit: (epoch, position) follows from the step.
        const auto batch = static_cast<std::uint64_t>(s->m_cfg.train.batch);
        const auto per_epoch = static_cast<std::uint64_t>(s->m_sampler->batches_per_epoch());
        const std::uint64_t drawn = static_cast<std::uint64_t>(step) * static_cast<std::uint64_t>(s->m_cfg.train.accumulation);
        const std::uint64_t epoch = drawn == 0 ? 0 : (drawn - 1) / per_epoch;
        const std::uint64_t position = drawn == 0 ? 0 : ((drawn - 1) % per_epoch + 1) * batch;
        if (st.epoch != epoch || st.position != position)
            bad_state("the batch order (epoch " + std::to_string(st.epoch) + ", position " +
                      std::to_string(st.position) + ") does not match step " + std::to_string(step));
        const auto& runs = saved(j, "runs", "");
        if (!runs.is_array() || runs.size() != s->m_runs.size())
            bad_state("the number of runs differs from the configuration's " + std::to_string(s->m_runs.size()));
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const std::string where = " of run " + std::to_string(i + 1);
            saved_count(runs[i], "applied_steps", step, where);  // at most one update per step
            saved_count(runs[i], "schedule_steps", step, where);
            // One scaler update per step at most (a failed run stops updating).
            if (runs[i].is_object() && runs[i].contains("scaler_state") && runs[i]["scaler_state"].is_object() &&
                runs[i]["scaler_state"].contains("iteration"))
                saved_count(runs[i]["scaler_state"], "iteration", step, " of the scaler state" + where);
        }
        s->m_step = step;
        s->m_sampler->restore(st);
        // The runs' scalers are in their states; the session scaler and training settings follow
        // from the changes of the configuration up to this step.
        s->fold_applied();
        for (std::size_t i = 0; i < runs.size(); ++i) {
            try {
                load_run_state(*s->m_runs[i], runs[i]);
            } catch (const ConfigError& e) {  // a run that does not match, its scaler, its parameters
                throw ConfigError("--resume", (e.field().empty() ? "" : e.field() + ": ") + e.message() +
                                                  " (run " + std::to_string(i + 1) + " in the saved state)");
            }
        }
        return s;
    } catch (const nlohmann::json::exception& e) {
        // A key missing or of the wrong type deeper inside (a run's scaler state, its parameters).
        const std::string what = e.what();
        const auto cut = what.find("] ");
        bad_state("a value is missing or of the wrong type (" +
                  (cut == std::string::npos ? what : what.substr(cut + 2)) + ")");
    }
}

}  // namespace mpx
