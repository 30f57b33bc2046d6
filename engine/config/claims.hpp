// A lesson's checked claims: every number or visible effect a lesson text states, declared beside
// it in the preset ("claims") as a metric of one run over a step range, a statistic and a bound, so
// a test can train the preset and hold the text to the engine (engine/run/claims_check.hpp).
// Rule: a claim quotes the words of the lesson it checks (`says`), and the configuration is refused
// when the lesson does not contain them, so a rewritten text cannot leave its claims behind.
#pragma once

#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/base/enum_names.hpp"

namespace mpx {

// What a claim measures on each step record: a CSV column of the same name, or an event as 0/1
// (backed_off, grew, hysteresis: the step's scale event; forward_inf: the step's first inf/NaN was
// stored in the forward pass, where no loss scale reaches — engine/compute/overflow_verdict.hpp;
// inf_magnitude: StepRecord::first_nonfinite_magnitude, what overflowed there before rounding).
// mismatch_mean_abs, mismatch_max_abs: the log-probability mismatch's mean and largest |Δ log p| of
// the policy the claim's `run` names (mismatch.policies; engine/run/mismatch_result.hpp), on the
// steps it was measured.
enum class ClaimMetric : std::uint8_t {
    loss, loss_scale, new_scale, skipped, found_inf, backed_off, grew, hysteresis, grad_norm, underflow_frac,
    overflow_count, lost_update_frac, small_update_frac, small_kept_frac, eval_loss, eval_accuracy,
    fp8_saturated_frac, fp8_underflow_frac, penalty, forward_inf, inf_magnitude, mismatch_mean_abs, mismatch_max_abs };
constexpr EnumName<ClaimMetric> claim_metric_names[] = {
    {ClaimMetric::loss, "loss"},
    {ClaimMetric::loss_scale, "loss_scale"},
    {ClaimMetric::new_scale, "new_scale"},
    {ClaimMetric::skipped, "skipped"},
    {ClaimMetric::found_inf, "found_inf"},
    {ClaimMetric::backed_off, "backed_off"},
    {ClaimMetric::grew, "grew"},
    {ClaimMetric::hysteresis, "hysteresis"},
    {ClaimMetric::grad_norm, "grad_norm"},
    {ClaimMetric::underflow_frac, "underflow_frac"},
    {ClaimMetric::overflow_count, "overflow_count"},
    {ClaimMetric::lost_update_frac, "lost_update_frac"},
    {ClaimMetric::small_update_frac, "small_update_frac"},
    {ClaimMetric::small_kept_frac, "small_kept_frac"},
    {ClaimMetric::eval_loss, "eval_loss"},
    {ClaimMetric::eval_accuracy, "eval_accuracy"},
    {ClaimMetric::fp8_saturated_frac, "fp8_saturated_frac"},
    {ClaimMetric::fp8_underflow_frac, "fp8_underflow_frac"},
    {ClaimMetric::penalty, "penalty"},
    {ClaimMetric::forward_inf, "forward_inf"},
    {ClaimMetric::inf_magnitude, "inf_magnitude"},
    {ClaimMetric::mismatch_mean_abs, "mismatch_mean_abs"},
    {ClaimMetric::mismatch_max_abs, "mismatch_max_abs"}};
constexpr std::span<const EnumName<ClaimMetric>> names_of(ClaimMetric) { return claim_metric_names; }

// Over the steps of the range that have a value (evaluations only on evaluating steps).
enum class ClaimStat : std::uint8_t { mean, sum, min, max, last };
constexpr EnumName<ClaimStat> claim_stat_names[] = {{ClaimStat::mean, "mean"}, {ClaimStat::sum, "sum"},
                                                     {ClaimStat::min, "min"},   {ClaimStat::max, "max"},
                                                     {ClaimStat::last, "last"}};
constexpr std::span<const EnumName<ClaimStat>> names_of(ClaimStat) { return claim_stat_names; }

struct Claim {
    std::string says;         // the lesson's words this claim checks, verbatim
    ClaimMetric metric = ClaimMetric::loss;
    std::string run;          // a run label as resolved (the CSV's `run`)
    long long from = 0;       // first step (0-based) of the range
    long long to = -1;        // last step, inclusive; -1: the session's last
    ClaimStat stat = ClaimStat::mean;
    std::string relative_to;  // empty: the statistic itself; else its ratio to the same one of this run
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool operator==(const Claim&) const = default;
};

nlohmann::json to_json(const Claim& c);
// ConfigError naming "<field>.<key>" for an unknown key, a missing says/metric/run or a bad value.
Claim claim_from_json(const nlohmann::json& j, const std::string& field);

}  // namespace mpx
