// Live changes: JSON, validation against their session, and the "old → new" text of what changed.
#include "engine/config/live_change.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/base/text.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"

namespace mpx {
namespace {

// A ConfigError of a settings reader ("scaler.hysteresis", "train") named under `to` instead of
// `from` ("live_changes[2].session_scaler.hysteresis"), with `note` after its message.
[[noreturn]] void rename(const ConfigError& e, const std::string& from, const std::string& to,
                         const std::string& note = {}) {
    std::string f = e.field();
    if (f.rfind(from, 0) == 0) f = to + f.substr(from.size());
    throw ConfigError(f, e.message() + note);
}

std::string value_text(const nlohmann::json& v) {
    if (v.is_null()) return "none";  // a nullable field's `none` (no maximum scale)
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) return format_number(v.get<double>());
    return v.dump();
}

template <class S>
std::string field_changes(std::span<const Field<S>> fields, const S& before, const S& after, bool live_only) {
    std::string out;
    for (const auto& f : fields) {
        if (live_only && f.apply != Apply::live) continue;
        const nlohmann::json a = f.write(before), b = f.write(after);
        if (a == b) continue;
        out += (out.empty() ? "" : ", ") + std::string(f.name) + " " + value_text(a) + " → " + value_text(b);
    }
    return out;
}

std::string live_train_names() {
    std::string out;
    for (const auto& f : train_fields())
        if (f.apply == Apply::live) out += (out.empty() ? "" : ", ") + std::string(f.name);
    return out;
}

}  // namespace

bool LiveChange::operator==(const LiveChange& o) const { return to_json(*this) == to_json(o); }

void copy_live_fields(TrainConfig& to, const TrainConfig& from) {
    for (const auto& f : train_fields())
        if (f.apply == Apply::live) f.copy(to, from);
}

nlohmann::json to_json(const LiveChange& c) {
    nlohmann::json j{{"step", c.step}};
    nlohmann::json s;
    switch (c.target) {
        case LiveTarget::session_scaler:
            to_json(s, c.scaler);
            j["session_scaler"] = s;
            break;
        case LiveTarget::run_scalers:
            j["runs"] = c.runs;
            to_json(s, c.scaler);
            j["scaler"] = s;
            break;
        case LiveTarget::train: {
            nlohmann::json t = nlohmann::json::object();
            for (const auto& f : train_fields())
                if (f.apply == Apply::live) t[std::string(f.name)] = f.write(c.train);
            j["train"] = t;
            break;
        }
    }
    return j;
}

LiveChange live_change_from_json(const nlohmann::json& j, const TrainConfig& base, const std::string& field) {
    JsonReader r(j, field);
    LiveChange c;
    if (!r.has("step")) throw ConfigError(r.field("step"), "is missing: the step the change lands on (0 = before the first)");
    r.get("step", c.step);
    const int targets = int(r.has("session_scaler")) + int(r.has("scaler")) + int(r.has("train"));
    if (targets != 1)
        throw ConfigError(field, "needs exactly one of \"scaler\" (with \"runs\"), \"session_scaler\" or \"train\"");
    if (r.has("runs") != r.has("scaler"))
        throw ConfigError(r.field(r.has("runs") ? "runs" : "scaler"),
                          "\"runs\" and \"scaler\" go together: the runs whose scaler the change sets");
    if (r.has("session_scaler")) {
        c.target = LiveTarget::session_scaler;
        try {
            c.scaler = scaler_config_from_json(r.at("session_scaler"));
        } catch (const ConfigError& e) {
            rename(e, "scaler", r.field("session_scaler"));
        }
    } else if (r.has("scaler")) {
        c.target = LiveTarget::run_scalers;
        const auto& runs = r.at("runs");
        if (!runs.is_array() || runs.empty())
            throw ConfigError(r.field("runs"), "must be a list of run labels, e.g. [\"amp-fp16+deepspeed\"]");
        for (const auto& e : runs) {
            if (!e.is_string()) throw ConfigError(r.field("runs"), "must be a list of run labels (text), got " + e.dump());
            c.runs.push_back(e.get<std::string>());
        }
        try {
            c.scaler = scaler_config_from_json(r.at("scaler"));
        } catch (const ConfigError& e) {
            rename(e, "scaler", r.field("scaler"));
        }
    } else {
        c.target = LiveTarget::train;
        const auto& t = r.at("train");
        if (t.is_object())
            for (auto it = t.begin(); it != t.end(); ++it) {
                const auto* f = find_field(train_fields(), it.key());
                if (f && f->apply != Apply::live)
                    throw ConfigError(r.field("train") + "." + it.key(),
                                      "needs a reset, so a live change cannot set it; the live training settings "
                                      "are " + live_train_names());
            }
        try {
            c.train = train_config_from_json(t, base);
        } catch (const ConfigError& e) {
            rename(e, "train", r.field("train"));
        }
    }
    r.finish();
    return c;
}

void validate_live_change(const SessionConfig& c, const LiveChange& change, const std::string& prefix) {
    if (change.step < 0 || change.step > k_max_steps)
        throw ConfigError(prefix + "step", "must be between 0 and " + std::to_string(k_max_steps) + " (got " +
                                               std::to_string(change.step) + ")");
    // A change made live names "scaler.<key>" as the Scaler tab does; one in a file names its place.
    const std::string scaler_field = prefix.empty() ? "scaler"
                                     : prefix + (change.target == LiveTarget::session_scaler ? "session_scaler" : "scaler");
    switch (change.target) {
        case LiveTarget::session_scaler: {
            try {
                validate(change.scaler);
            } catch (const ConfigError& e) {
                rename(e, "scaler", scaler_field, " (the session scaler)");
            }
            for (const auto& label : c.runs) {  // each run that follows it gets it with the overrides
                const RunInfo info = resolve_run(label, c);
                if (!info.follows_session_scaler) continue;
                try {
                    with_overrides(change.scaler, c.scaler_overrides);
                } catch (const ConfigError& e) {
                    rename(e, "scaler", scaler_field, " (run " + info.label + ", with scaler_overrides)");
                }
                break;  // every follower gets the same settings
            }
            break;
        }
        case LiveTarget::run_scalers: {
            if (change.runs.empty()) throw ConfigError(prefix + "runs", "name at least one run");
            std::vector<std::string> labels;
            for (const auto& label : c.runs) labels.push_back(resolve_run(label, c).label);
            for (const auto& name : change.runs)
                if (std::find(labels.begin(), labels.end(), name) == labels.end()) {
                    std::string known;
                    for (const auto& l : labels) known += (known.empty() ? "" : ", ") + l;
                    throw ConfigError(prefix + "runs", "no run '" + name + "' in this session; its runs are " + known);
                }
            std::string names;
            for (const auto& n : change.runs) names += (names.empty() ? "" : ", ") + n;
            try {
                validate(change.scaler);
            } catch (const ConfigError& e) {
                rename(e, "scaler", scaler_field, " (run " + names + ")");
            }
            break;
        }
        case LiveTarget::train: {
            try {
                validate(change.train);
            } catch (const ConfigError& e) {
                rename(e, "train", prefix + "train");
            }
            for (const auto& f : train_fields())
                if (f.apply != Apply::live && f.write(change.train) != f.write(c.train))
                    throw ConfigError(prefix + "train." + std::string(f.name),
                                      "needs a reset, so a live change cannot set it; the live training settings "
                                      "are " + live_train_names());
            break;
        }
    }
}

void validate_live_changes(const SessionConfig& c) {
    long long previous = 0;
    for (std::size_t i = 0; i < c.live_changes.size(); ++i) {
        const std::string prefix = "live_changes[" + std::to_string(i) + "].";
        const LiveChange& change = c.live_changes[i];
        validate_live_change(c, change, prefix);
        if (change.step < previous)
            throw ConfigError(prefix + "step", "is " + std::to_string(change.step) + ", before the step of the change " +
                                                   "above it (" + std::to_string(previous) +
                                                   "); list the changes in step order");
        previous = change.step;
    }
}

std::string scaler_changes(const ScalerConfig& before, const ScalerConfig& after) {
    std::string out = before.preset == after.preset ? "" : "preset " + before.preset + " → " + after.preset;
    const std::string fields = field_changes(scaler_fields(), before, after, false);
    if (!fields.empty()) out += (out.empty() ? "" : ", ") + fields;
    return out;
}

std::string train_changes(const TrainConfig& before, const TrainConfig& after) {
    return field_changes(train_fields(), before, after, true);
}

}  // namespace mpx
