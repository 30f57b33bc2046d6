// The log-probability mismatch section (engine/run/logprob_mismatch.hpp): one run's weights read
// under other precision policies, every held-out token's log p compared with the reference policy's.
// Rule: the section belongs to the GPT and is off until it names a policy; every label is a run
// label as `runs` takes them, checked by the one parser (resolve_run), refused naming the field.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace mpx {

struct SessionConfig;

struct MismatchConfig {
    std::string run;                // the run whose weights are read; empty: the session's first run
    std::string reference = "fp32"; // the policy the others are compared with
    std::vector<std::string> policies;  // empty: off
    // Measured on every n-th step from step 0 (as eval_every counts) and on the last step; 0: on the
    // last step only.
    int every = 0;
    bool enabled() const { return !policies.empty(); }
    bool operator==(const MismatchConfig&) const = default;
};

nlohmann::json to_json(const MismatchConfig& m);
// Fields absent from j keep those of `base`; a wrong type or an unknown key is refused naming it.
MismatchConfig mismatch_config_from_json(const nlohmann::json& j, MismatchConfig base = {});
// mismatch.run (one of the session's runs), mismatch.reference and mismatch.policies (labels that
// resolve, each once, none the reference, no FP8/FP4 recipe: a fresh model has no amax history to
// scale with, and no +qk-norm: the weights must be the run's own parameters), mismatch.every ≥ 0;
// the section refused on an MLP.
void validate_mismatch(const SessionConfig& c);

}  // namespace mpx
