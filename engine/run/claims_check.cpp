// Claims against records (engine/run/claims_check.hpp).
#include "engine/run/claims_check.hpp"

#include <algorithm>
#include <cmath>

#include "engine/base/text.hpp"
#include "engine/compute/overflow_verdict.hpp"
#include "engine/core/scaler_rule.hpp"

namespace mpx {

std::optional<double> claim_metric(ClaimMetric m, const StepRecord& r) {
    const auto event = static_cast<ScaleEvent>(r.scale_event);
    switch (m) {
        case ClaimMetric::loss: return r.loss;
        case ClaimMetric::loss_scale: return r.loss_scale;
        case ClaimMetric::new_scale: return r.new_scale;
        case ClaimMetric::skipped: return r.skipped ? 1.0 : 0.0;
        case ClaimMetric::found_inf: return r.found_inf ? 1.0 : 0.0;
        case ClaimMetric::backed_off: return event == ScaleEvent::backoff ? 1.0 : 0.0;
        case ClaimMetric::grew: return event == ScaleEvent::grow ? 1.0 : 0.0;
        case ClaimMetric::hysteresis: return event == ScaleEvent::hysteresis ? 1.0 : 0.0;
        case ClaimMetric::grad_norm: return r.grad_norm;
        case ClaimMetric::underflow_frac: return r.underflow_frac;
        case ClaimMetric::overflow_count: return static_cast<double>(r.overflow_count);
        case ClaimMetric::lost_update_frac: return r.lost_update_frac;
        case ClaimMetric::small_update_frac: return r.small_update_frac;
        case ClaimMetric::small_kept_frac: return r.small_kept_frac;
        case ClaimMetric::eval_loss: return r.eval_loss;
        case ClaimMetric::eval_accuracy: return r.eval_accuracy;
        case ClaimMetric::fp8_saturated_frac: return r.fp8_saturated_frac;
        case ClaimMetric::fp8_underflow_frac: return r.fp8_underflow_frac;
        case ClaimMetric::penalty: return r.penalty;
        case ClaimMetric::forward_inf: return forward_site(r.first_nonfinite) ? 1.0 : 0.0;
        case ClaimMetric::inf_magnitude: return r.first_nonfinite_magnitude;
        case ClaimMetric::mismatch_mean_abs:
        case ClaimMetric::mismatch_max_abs: return std::nullopt;  // not a step record's: check_claims reads them
    }
    return std::nullopt;
}

namespace {

bool is_mismatch(ClaimMetric m) { return m == ClaimMetric::mismatch_mean_abs || m == ClaimMetric::mismatch_max_abs; }

// A claim's values step by step: the run's records, or the mismatch results of the policy `run`.
std::vector<std::pair<long long, std::optional<double>>> series(const Claim& c, const std::vector<StepRecord>* records,
                                                                const std::vector<MismatchResult>& mismatches,
                                                                const std::string& run) {
    std::vector<std::pair<long long, std::optional<double>>> out;
    if (!is_mismatch(c.metric)) {
        for (const StepRecord& r : *records) out.emplace_back(r.step, claim_metric(c.metric, r));
        return out;
    }
    for (const MismatchResult& m : mismatches)
        if (m.policy == run)
            out.emplace_back(m.step, c.metric == ClaimMetric::mismatch_mean_abs ? m.mean_abs : m.max_abs);
    return out;
}

std::optional<double> statistic(const Claim& c, const std::vector<std::pair<long long, std::optional<double>>>& run,
                                long long last_step) {
    const long long to = c.to < 0 ? last_step : c.to;
    double acc = 0.0;
    long long n = 0;
    for (const auto& [step, v] : run) {
        if (step < c.from || step > to) continue;
        if (!v) continue;
        switch (c.stat) {
            case ClaimStat::mean:
            case ClaimStat::sum: acc += *v; break;
            case ClaimStat::min: acc = n == 0 ? *v : std::min(acc, *v); break;
            case ClaimStat::max: acc = n == 0 ? *v : std::max(acc, *v); break;
            case ClaimStat::last: acc = *v; break;
        }
        ++n;
    }
    if (n == 0) return std::nullopt;
    return c.stat == ClaimStat::mean ? acc / static_cast<double>(n) : acc;
}

}  // namespace

std::vector<ClaimResult> check_claims(const SessionConfig& c, const std::vector<std::string>& labels,
                                      const std::vector<std::vector<StepRecord>>& records, long long last_step,
                                      const std::vector<MismatchResult>& mismatches) {
    std::vector<ClaimResult> out;
    std::vector<std::string> policies;  // the mismatch metrics' runs
    for (const MismatchResult& m : mismatches)
        if (std::find(policies.begin(), policies.end(), m.policy) == policies.end()) policies.push_back(m.policy);
    for (const Claim& claim : c.claims) {
        ClaimResult r;
        r.claim = &claim;
        const std::vector<std::string>& names = is_mismatch(claim.metric) ? policies : labels;
        const auto index = [&](const std::string& label) -> long long {
            const auto it = std::find(names.begin(), names.end(), label);
            return it == names.end() ? -1 : it - names.begin();
        };
        const long long run = index(claim.run);
        const long long base = claim.relative_to.empty() ? -2 : index(claim.relative_to);
        const auto values = [&](long long i, const std::string& name) {
            return series(claim, is_mismatch(claim.metric) ? nullptr : &records[static_cast<std::size_t>(i)], mismatches, name);
        };
        if (run < 0 || base == -1) {
            r.note = (is_mismatch(claim.metric) ? "no mismatch policy '" : "no run '") +
                     (run < 0 ? claim.run : claim.relative_to) + "' in this session";
        } else if (claim.from > last_step || (claim.to >= 0 && claim.to > last_step)) {
            r.note = "steps beyond the session's last (" + std::to_string(last_step) + ")";
        } else {
            const auto v = statistic(claim, values(run, claim.run), last_step);
            const auto b = base < 0 ? std::optional<double>(1.0) : statistic(claim, values(base, claim.relative_to), last_step);
            if (!v || !b) r.note = "no value of " + std::string(enum_name(claim.metric)) + " in the range";
            else if (base >= 0 && *b == 0.0) r.note = "the run it is relative to has 0";
            else r.value = base < 0 ? *v : *v / *b;
        }
        r.holds = r.value && *r.value >= claim.min && *r.value <= claim.max;
        out.push_back(std::move(r));
    }
    return out;
}

std::string describe(const ClaimResult& r) {
    const Claim& c = *r.claim;
    std::string s = r.holds ? "holds   " : "FAILS   ";
    s += std::string(enum_name(c.stat)) + " " + std::string(enum_name(c.metric)) + " of " + c.run;
    if (!c.relative_to.empty()) s += " / " + c.relative_to + "'s";
    s += ", steps " + std::to_string(c.from) + "-" + (c.to < 0 ? std::string("end") : std::to_string(c.to));
    s += r.value ? " = " + format_number(*r.value) : " (" + r.note + ")";
    s += " in [" + (std::isfinite(c.min) ? format_number(c.min) : std::string("-inf")) + ", " +
         (std::isfinite(c.max) ? format_number(c.max) : std::string("inf")) + "]: '" + c.says + "'";
    return s;
}

}  // namespace mpx
