// Holding a lesson's claims (engine/config/claims.hpp) to what its runs recorded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/config/session_config.hpp"
#include "engine/run/mismatch_result.hpp"
#include "engine/run/record.hpp"

namespace mpx {

struct ClaimResult {
    const Claim* claim = nullptr;
    std::optional<double> value;  // the statistic (or ratio); empty where it could not be computed
    bool holds = false;           // value within [min, max]
    std::string note;             // why there is no value: an unknown run, no step of the range
};

// The metric of one record; empty where the record has none (an evaluation on a step without one,
// an FP8 share on a run that is not FP8).
std::optional<double> claim_metric(ClaimMetric m, const StepRecord& r);

// Every claim of c against records[run][k] of the runs labelled `labels` (as resolved, in the
// session's order), the steps in order; `last_step` is the session's final step (claims' `to` -1).
// The mismatch metrics read `mismatches` (Session::take_mismatches, every one), their runs the policies.
std::vector<ClaimResult> check_claims(const SessionConfig& c, const std::vector<std::string>& labels,
                                      const std::vector<std::vector<StepRecord>>& records, long long last_step,
                                      const std::vector<MismatchResult>& mismatches = {});

// One line a person reads: "holds  underflow_frac mean of amp-fp16+none, steps 0-999 = 0.62 in
// [0.55, 0.7]: 'about 60 %'".
std::string describe(const ClaimResult& r);

}  // namespace mpx
