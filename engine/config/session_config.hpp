// The one configuration format (JSON) of mpx: shipped presets, the user's files and export sidecars.
// Rule: every field can be overridden with --set key=value; an unknown key, a wrong type or an
// impossible value is a ConfigError that names the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/accumulate_config.hpp"
#include "engine/config/claims.hpp"
#include "engine/config/data_config.hpp"
#include "engine/config/live_change.hpp"
#include "engine/config/model_config.hpp"
#include "engine/config/mismatch_config.hpp"
#include "engine/config/pace.hpp"
#include "engine/config/sample_config.hpp"
#include "engine/config/train_config.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/policy.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {

// Limits of a session, read by the CLI's flags and the app's controls.
inline constexpr long long k_max_steps = 100'000'000;
inline constexpr std::size_t k_max_runs = 16;

// What the runs measure beyond each step's record.
struct InstrumentsConfig {
    // Exponent histograms (engine/compute/histograms.hpp) on every n-th step; 0 = never. The default keeps
    // their cost near 10 % of training time on the default preset (docs/benchmarks.md).
    int every = 10;
};

struct SessionConfig {
    std::string name = "default";
    std::string description;
    // A teaching preset's guided text (ui/panels/lesson_panel.*): {chart:KEY} names a chart, {view:NAME}
    // a central view, {steps:A-B} a step range, {explorer:VALUE} opens the format explorer. Empty for
    // other configurations.
    std::string lesson;
    // How fast the app's Run plays it (engine/config/pace.hpp); the JSON key "pace" holds steps per
    // second (5), or text ("fast", "20,events"). Absent: fast.
    Pace pace;
    // Present: the app opens in its classroom view, keeping these controls visible (ui/panels/classroom.*).
    std::optional<std::vector<std::string>> classroom;
    // The lesson's checked claims (engine/config/claims.hpp): each quotes the lesson's words it checks.
    std::vector<Claim> claims;
    std::vector<std::string> runs{"fp32", "amp-fp16", "amp-bf16"};
    long long steps = 1000;
    std::uint64_t seed = 1;           // weights, batch order, dropout
    std::string device = "cpu";       // cpu | cuda | auto
    int record_every = 1;             // the CSV keeps every n-th step (1 = all)
    int eval_every = 50;              // evaluate on the held-out split every n-th step (0 = never)
    InstrumentsConfig instruments;
    ModelConfig model;
    DatasetConfig data;
    TrainConfig train;
    SampleConfig sample;  // the GPT's text samples (engine/config/sample_config.hpp)
    MismatchConfig mismatch;  // the GPT's log-probability mismatch (engine/config/mismatch_config.hpp)
    ScalerConfig scaler = scaler_preset("pytorch");  // for runs whose label names no scaler
    // Scaler fields laid over every dynamic run's scaler, named presets included (e.g. a shorter
    // growth_interval so several frameworks show their events within a short demo).
    nlohmann::json scaler_overrides = nlohmann::json::object();
    Fp8Config fp8;  // FP8 runs' scaling recipe (engine/precision/fp8_scaling.hpp)
    Fp4Config fp4;  // FP4 runs' recipe (engine/precision/fp4_recipe.hpp)
    // The accumulation models of FP8 runs' GEMMs (engine/config/accumulate_config.hpp); the defaults
    // accumulate exactly in FP32, as every run did before the models existed.
    AccumulateConfig accumulate;
    std::vector<std::string> selective_layers{"fc1"};
    double adaptive_threshold = 0.8;  // adaptive: amp while FP32 memory > threshold × budget
    std::int64_t memory_budget = 1 << 20;
    // Settings changed while the session trained, in step order (engine/config/live_change.hpp): Session
    // applies each at the start of its step and appends the ones made live, so a sidecar replays them.
    std::vector<LiveChange> live_changes;
};

// Everything a Session checks before it trains: each field, every run label resolved (scaler_overrides
// applied), no run twice, the model's first and last sizes against the data set, every live change.
void validate(const SessionConfig& c);
nlohmann::json to_json(const SessionConfig& c);
// Fields absent from j keep their defaults.
SessionConfig session_config_from_json(const nlohmann::json& j);

// A preset name ("default", "underflow") or a path to a JSON file.
SessionConfig load_config(const std::string& name_or_path);
SessionConfig parse_config_text(const std::string& text, const std::string& origin);
std::vector<std::string> preset_names();
std::filesystem::path preset_directory();
// Applies "key=value" assignments (key a dotted path such as scaler.growth_interval; value JSON or
// bare text) all at once: the result is validated once, so their order matters only when two set
// the same key (the later wins). On error c is unchanged.
void apply_overrides(SessionConfig& c, const std::vector<std::string>& assignments);
void apply_override(SessionConfig& c, const std::string& assignment);

}  // namespace mpx
