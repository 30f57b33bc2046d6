// The session's `accumulate` section: which accumulation model (engine/core/accumulate.hpp) each
// GEMM of the FP8 runs uses, and the resolution of a run's plan to its three GEMMs' models.
// Rule: the defaults are today's behaviour (FP32 accumulation everywhere), so a configuration that
// does not name the section trains exactly as before. These are MODELS of tensor-core accumulation
// (REFERENCE.md, "Accumulation models"), not bit-exact hardware.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/core/accumulate.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

struct AccumulateConfig {
    // The plan of FP8 runs whose label names none (+acc-…); FP16/BF16 runs take a model only from
    // their label (a what-if). custom: the three models below.
    AccumulatePlan plan = AccumulatePlan::custom;
    AccumulateModel fprop = AccumulateModel::exact;
    AccumulateModel dgrad = AccumulateModel::exact;
    AccumulateModel wgrad = AccumulateModel::exact;
    int bits = AccumulateParams{}.bits;                    // B (DeepSeek-V3: 14)
    int group = AccumulateParams{}.group;                  // G (DeepSeek-V3: 32)
    int promote_every = AccumulateParams{}.promote_every;  // N_C (DeepSeek-V3: 128)
    bool operator==(const AccumulateConfig&) const = default;
};

// ConfigError naming "accumulate.<field>": bits outside 1–24, group outside 1–64, promote_every
// below 1, or a GEMM's model set while the plan is not custom (the plan would override it).
void validate(const AccumulateConfig& c);

// The models a plan gives a run's three GEMMs. Transformer Engine (te): fprop fast, dgrad and wgrad
// promoted (its split accumulator) under delayed and current scaling, all three promoted under block
// scaling (`block`: the run is mxfp8); torchao's Float8LinearConfig: the output GEMM fast, the
// other two not (promoted). Every model takes the section's bits, group and promote_every.
GemmAccumulation gemm_accumulation(AccumulatePlan plan, const AccumulateConfig& c, bool block);

// The plan a run trains with: its label's, else the section's plan for FP8 runs, else exact.
AccumulatePlan run_accumulate_plan(const RunSpec& spec, const AccumulateConfig& c);

void to_json(nlohmann::json& j, const AccumulateConfig& c);
// Fields absent from j keep base's; an unknown key or bad value names "accumulate.<key>".
AccumulateConfig accumulate_config_from_json(const nlohmann::json& j, AccumulateConfig base);

}  // namespace mpx
