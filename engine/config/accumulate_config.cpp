// The `accumulate` section and the plans' models (engine/config/accumulate_config.hpp).
#include "engine/config/accumulate_config.hpp"

#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/base/json_util.hpp"
#include "engine/precision/accumulation.hpp"

namespace mpx {

void validate(const AccumulateConfig& c) {
    AccumulateParams p;
    p.bits = c.bits;
    p.group = c.group;
    p.promote_every = c.promote_every;
    try {
        validate(p);
    } catch (const ConfigError& e) {  // validate names the CLI's flags; here they are settings
        const std::string f = e.field() == "--bits" ? "bits" : e.field() == "--promote-every" ? "promote_every" : "group";
        throw ConfigError("accumulate." + f, e.message());
    }
    if (c.plan == AccumulatePlan::custom) return;
    const std::pair<const char*, AccumulateModel> gemms[] = {
        {"fprop", c.fprop}, {"dgrad", c.dgrad}, {"wgrad", c.wgrad}};
    for (const auto& [name, model] : gemms)
        if (model != AccumulateModel::exact)
            throw ConfigError(std::string("accumulate.") + name,
                              "is set, but accumulate.plan is '" + std::string(to_string(c.plan)) +
                                  "', which chooses every GEMM's model; set accumulate.plan to custom to choose "
                                  "each GEMM's");
}

GemmAccumulation gemm_accumulation(AccumulatePlan plan, const AccumulateConfig& c, bool block) {
    const auto with = [&c](AccumulateModel m) {
        AccumulateParams p;
        p.model = m;
        p.bits = c.bits;
        p.group = c.group;
        p.promote_every = c.promote_every;
        return p;
    };
    using M = AccumulateModel;
    switch (plan) {
        case AccumulatePlan::custom: return {with(c.fprop), with(c.dgrad), with(c.wgrad)};
        case AccumulatePlan::exact: return {with(M::exact), with(M::exact), with(M::exact)};
        case AccumulatePlan::fast: return {with(M::fp8_fast), with(M::fp8_fast), with(M::fp8_fast)};
        case AccumulatePlan::promote: return {with(M::promote), with(M::promote), with(M::promote)};
        // transformer_engine/common/recipe/__init__.py: Float8CurrentScaling's fp8_gemm_fprop has
        // use_split_accumulator=False, dgrad and wgrad True (delayed scaling: the modules'
        // _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True); Float8BlockScaling: all True.
        case AccumulatePlan::te:
            return {with(block ? M::promote : M::fp8_fast), with(M::promote), with(M::promote)};
        // torchao/float8/config.py: gemm_config_output use_fast_accum=True, grad_input and
        // grad_weight False.
        case AccumulatePlan::torchao: return {with(M::fp8_fast), with(M::promote), with(M::promote)};
    }
    return {};
}

AccumulatePlan run_accumulate_plan(const RunSpec& spec, const AccumulateConfig& c) {
    if (spec.accumulate) return *spec.accumulate;
    return is_fp8(spec.mode) ? c.plan : AccumulatePlan::exact;
}

void to_json(nlohmann::json& j, const AccumulateConfig& c) {
    j = {{"plan", std::string(to_string(c.plan))},
         {"fprop", std::string(to_string(c.fprop))},
         {"dgrad", std::string(to_string(c.dgrad))},
         {"wgrad", std::string(to_string(c.wgrad))},
         {"bits", c.bits},
         {"group", c.group},
         {"promote_every", c.promote_every}};
}

AccumulateConfig accumulate_config_from_json(const nlohmann::json& j, AccumulateConfig c) {
    JsonReader r(j, "accumulate");
    r.get_enum("plan", c.plan);
    r.get_enum("fprop", c.fprop);
    r.get_enum("dgrad", c.dgrad);
    r.get_enum("wgrad", c.wgrad);
    r.get("bits", c.bits);
    r.get("group", c.group);
    r.get("promote_every", c.promote_every);
    r.finish();
    return c;
}

}  // namespace mpx
