// A run label resolved once: its precision policy, its loss scaler (scaler_overrides applied) and
// whether live edits of the session's scaler reach it. Rule: resolve_run is the only place a label
// turns into settings and the only check of a run's scaler; Run, Session, the CSV and the app read
// the RunInfo it returns and never re-read the label or the session's scaler.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "engine/config/accumulate_config.hpp"
#include "engine/config/model_config.hpp"
#include "engine/precision/policy.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {

struct RunInfo {
    std::string label;      // unique: "amp-fp16+pytorch"
    RunSpec spec;           // mode, formats, named scaler and FP8 recipe (spec.precision(): the CSV's)
    ScalerConfig scaler;    // as the run starts, scaler_overrides applied
    bool follows_session_scaler = false;  // no "+preset" and a dynamic default: live edits reach it
    WriteBack write_back = WriteBack::nearest;  // resolved: the label's, else the session's (pure-*)
    // Resolved: the label's plan, else the session's accumulate.plan (FP8 runs), as the three GEMMs'
    // models (engine/config/accumulate_config.hpp); all exact unless one of them names a model.
    AccumulatePlan accumulate_plan = AccumulatePlan::exact;
    GemmAccumulation accumulation;
    // FP4 runs: the session's fp4 section with the label's switches over it (resolve_fp4).
    Fp4Config fp4;
    // The session's model (the SessionConfig overload sets it): what the run's sites are called
    // (site_name: "fc2.grad_input", "block0.attn.output").
    ModelConfig model;
};

// `label` as in SessionConfig::runs; `session_scaler` is the scaler of runs that name none. Throws
// ConfigError naming "runs" for a bad label or unknown preset, and naming the scaler field (with the
// run) when scaler_overrides make the run's scaler invalid.
// `session_write_back` (train.write_back) reaches the runs that can take it (pure-*) and whose
// label names none; a run whose write-back is not nearest carries it in its label ("+sr", "+kahan").
// `accumulate` (the session's section) reaches the FP8 runs whose label names no plan; a run whose
// GEMMs are not all exact carries its plan in its label ("+acc-te").
RunInfo resolve_run(std::string_view label, const ScalerConfig& session_scaler,
                    const nlohmann::json& scaler_overrides, WriteBack session_write_back = WriteBack::nearest,
                    const AccumulateConfig& accumulate = {}, const Fp4Config& fp4 = {});

struct SessionConfig;
// A label of session c's, resolved with c's scaler, scaler_overrides, train.write_back and accumulate.
RunInfo resolve_run(std::string_view label, const SessionConfig& c);

// `overrides` (an object of scaler settings) laid over a dynamic scaler and validated; a static or
// absent scaler is returned as it is. Errors name "scaler_overrides.<key>" or the scaler field.
ScalerConfig with_overrides(ScalerConfig scaler, const nlohmann::json& overrides);

}  // namespace mpx
