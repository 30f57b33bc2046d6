// A setting changed while a session trained (the scaler of the session, of chosen runs, or the live
// training fields), kept in SessionConfig::live_changes with the step it landed on. Rule: that list is
// the one record of live changes: the app appends to it as the user edits, a sidecar carries it, and
// Session applies every entry at the start of its step, so a replay of the configuration trains the
// same steps bit for bit.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/config/train_config.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {

struct SessionConfig;

// What a live change sets. session_scaler: the scaler of runs whose label names none (each gets it
// with scaler_overrides laid over, as at the start); run_scalers: the named runs' scalers, as given;
// train: the live training fields of every run (lr, schedule, clipping, ...).
enum class LiveTarget { session_scaler, run_scalers, train };

// JSON, one object per change, the key naming the target:
//   {"step": 412, "runs": ["amp-fp16+deepspeed"], "scaler": {every scaler setting}}
//   {"step": 100, "session_scaler": {every scaler setting}}
//   {"step": 50, "train": {every live training setting}}
struct LiveChange {
    long long step = 0;             // applied before step `step` trains (0-based)
    LiveTarget target = LiveTarget::session_scaler;
    std::vector<std::string> runs;  // run_scalers: run labels as the CSV's run column writes them
    ScalerConfig scaler;            // session_scaler, run_scalers: the full new settings
    TrainConfig train;              // train: the live fields are the new values, the rest as the session's

    bool operator==(const LiveChange&) const;
};

nlohmann::json to_json(const LiveChange& c);
// `field` prefixes every error ("live_changes[2]"); the scaler and training settings are read as the
// configuration's own (`base` gives the training fields a change cannot set). Checked further by
// validate_live_change.
LiveChange live_change_from_json(const nlohmann::json& j, const TrainConfig& base, const std::string& field);

// One change against the session it is for: runs it names exist, its scaler is valid for each run it
// reaches (scaler_overrides applied for the session scaler), training fields that need a reset are
// unchanged. Errors name the field under `prefix`: "" for a change made live ("scaler.hysteresis"),
// "live_changes[2]." in a configuration.
void validate_live_change(const SessionConfig& c, const LiveChange& change, const std::string& prefix);
// Every change of c.live_changes, and their order: steps from 0 up, never decreasing.
void validate_live_changes(const SessionConfig& c);

// "hysteresis 2 → 4, growth_interval 20 → 50": the settings that differ, in the app's order, as the
// event log and mpx-cli print them; empty when none does. Training: the live fields only.
std::string scaler_changes(const ScalerConfig& before, const ScalerConfig& after);
std::string train_changes(const TrainConfig& before, const TrainConfig& after);
// The live training fields of `from` written over `to`: what a train change sets.
void copy_live_fields(TrainConfig& to, const TrainConfig& from);

}  // namespace mpx
