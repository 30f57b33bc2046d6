// The checkpoint format: writing and strictly reading a session's state (engine/io/checkpoint.hpp).
#include "engine/io/checkpoint.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "engine/base/error.hpp"
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

std::vector<std::vector<float>> params_from_json(const nlohmann::json& j) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<std::vector<float>> out;
    if (!j.is_array()) throw ConfigError("params", "must be a list of parameter lists");
    for (const auto& a : j) {
        if (!a.is_array()) throw ConfigError("params", "must be a list of parameter lists");
        std::vector<float> v;
        v.reserve(a.size());
        for (const auto& x : a) {
            const std::string s = x.is_string() ? x.get<std::string>() : "";
            if (x.is_number()) {
                // A number beyond FP32 would silently become inf: only the text "inf" stands for it.
                const double d = x.get<double>();
                if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max())))
                    throw ConfigError("params", "the saved state holds " + x.dump() +
                                                    ", outside the FP32 range (a diverged value is saved as \"inf\" or \"nan\")");
                v.push_back(static_cast<float>(d));
            }
            else if (s == "nan" || s == "-nan") v.push_back(s == "nan" ? nan : -nan);
            else if (s == "inf" || s == "-inf") v.push_back(s == "inf" ? inf : -inf);
            else throw ConfigError("", "the saved state holds a parameter value that is not a number");
        }
        out.push_back(std::move(v));
    }
    return out;
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
    // As strict as a configuration: every key known, values finite where they must be.
    if (!j.is_object()) throw ConfigError("", "a run's saved state must be a JSON object");
    static const std::set<std::string> keys = {"label", "applied_steps", "schedule_steps", "failure",
                                               "scaler_config", "scaler_state", "params", "fp8_amax",
                                               "compensation", "compensation_max"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!keys.count(it.key())) throw ConfigError(it.key(), "unknown key in a run's saved state");
    if (j.at("label").get<std::string>() != run.m_info.label)
        throw ConfigError("", "saved run '" + j.at("label").get<std::string>() +
                                  "' does not match run '" + run.m_info.label + "'");
    run.m_applied_steps = j.at("applied_steps").get<long long>();
    if (run.m_applied_steps < 0) throw ConfigError("applied_steps", "must be >= 0");
    run.m_backend->set_applied_steps(run.m_applied_steps);
    run.m_schedule_steps = j.at("schedule_steps").get<long long>();
    if (run.m_schedule_steps < 0) throw ConfigError("schedule_steps", "must be >= 0");
    run.m_backend->set_schedule_steps(run.m_schedule_steps);
    run.m_failure = j.at("failure").get<std::string>();
    run.m_scaler = LossScaler(scaler_config_from_json(j.at("scaler_config")));
    const ScalerState st = scaler_state_from_json(j.at("scaler_state"));
    if (!std::isfinite(st.scale))
        throw ConfigError("scaler.state.scale", "must be a finite number, got " + format_number(st.scale));
    run.m_scaler.restore(st);
    run.m_backend->set_scaler(run.m_scaler.rule(), run.m_scaler.state());
    run.m_model->import_state(params_from_json(j.at("params")));
    if (j.contains("compensation") != run.m_model->has_compensation())
        throw ConfigError("compensation", "the saved state's Kahan compensation does not match run '" + run.m_info.label + "'");
    if (j.contains("compensation")) {
        run.m_model->import_compensation(params_from_json(j.at("compensation")));
        run.m_compensation_max = j.value("compensation_max", std::uint32_t{0});
    }
    if (j.contains("fp8_amax") != (run.m_fp8_tensors > 0))
        throw ConfigError("fp8_amax", "the saved state's FP8 scaling does not match run '" + run.m_info.label + "'");
    if (run.m_fp8_tensors) {
        const auto fp8 = params_from_json(j.at("fp8_amax"));
        if (fp8.size() != static_cast<std::size_t>(run.m_fp8_tensors))
            throw ConfigError("fp8_amax", "the saved state has a different number of FP8 tensors");
        std::vector<core::AmaxHistoryState> states;
        std::vector<float> hist;
        run.m_backend->read_amax_histories(states, hist);  // the settings; the values come from the file
        for (std::size_t i = 0; i < fp8.size(); ++i) {
            const auto& v = fp8[i];
            core::AmaxHistoryState& h = states[i];
            const auto len = static_cast<std::size_t>(h.len);
            if (v.size() != len + 2 || !(v[1] >= 0.0f) || v[1] >= static_cast<float>(len))
                throw ConfigError("fp8_amax", "an amax history does not match fp8.amax_history_len");
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
