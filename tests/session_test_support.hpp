// What the engine's session tests share: a small comparison that trains in well under a second,
// stepping a session, and comparing step records bit for bit.
#pragma once

#include <QString>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/run/session.hpp"

namespace mpx::test {

// 2-32-32-2 on spiral points, batch 64, lr 0.01; n_test rows held out (0: no evaluation).
inline SessionConfig small_config(std::vector<std::string> runs, long long steps, int n_train = 1024,
                                  int n_test = 0) {
    SessionConfig c;
    c.model.sizes = {2, 32, 32, 2};
    c.data.n_train = n_train, c.data.n_test = n_test;
    c.train.batch = 64, c.train.lr = 0.01;
    c.steps = steps, c.runs = std::move(runs);
    return c;
}

// records[step][run] of the next n steps, or fewer where the session finishes first.
inline std::vector<std::vector<StepRecord>> train(Session& s, long long n) {
    std::vector<std::vector<StepRecord>> out;
    for (long long i = 0; i < n && !s.finished(); ++i) out.push_back(s.step());
    return out;
}

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
inline bool same_bits(const std::optional<double>& a, const std::optional<double>& b) {
    return a.has_value() == b.has_value() && (!a || same_bits(*a, *b));
}

// The first deterministic field of two records that differs, bit for bit (not the timings; not
// memory where `memory` is false), or an empty string.
inline QString differs(const StepRecord& a, const StepRecord& b, bool memory = true) {
    const std::pair<const char*, std::pair<double, double>> fields[] = {
        {"loss", {a.loss, b.loss}}, {"loss_scale", {a.loss_scale, b.loss_scale}},
        {"new_scale", {a.new_scale, b.new_scale}}, {"grad_norm", {a.grad_norm, b.grad_norm}},
        {"underflow_frac", {a.underflow_frac, b.underflow_frac}},
        {"lost_update_frac", {a.lost_update_frac, b.lost_update_frac}}, {"lr", {a.lr, b.lr}},
        {"small_update_frac", {a.small_update_frac, b.small_update_frac}},
        {"small_kept_frac", {a.small_kept_frac, b.small_kept_frac}}};
    for (const auto& [name, v] : fields)
        if (!same_bits(v.first, v.second))
            return QStringLiteral("step %1 run %2: %3 %4 vs %5").arg(a.step).arg(a.run).arg(name)
                .arg(v.first, 0, 'g', 17).arg(v.second, 0, 'g', 17);
    if (a.step != b.step || a.run != b.run || a.found_inf != b.found_inf || a.skipped != b.skipped ||
        a.scale_event != b.scale_event || a.overflow_count != b.overflow_count ||
        (memory && a.mem.bytes != b.mem.bytes))
        return QStringLiteral("step %1 run %2: flags, counts or memory differ").arg(a.step).arg(a.run);
    if (a.first_nonfinite != b.first_nonfinite || !same_bits(a.first_nonfinite_magnitude, b.first_nonfinite_magnitude))
        return QStringLiteral("step %1 run %2: the first inf/NaN differs").arg(a.step).arg(a.run);
    if (!same_bits(a.eval_loss, b.eval_loss) || !same_bits(a.eval_accuracy, b.eval_accuracy) ||
        !same_bits(a.fp8_saturated_frac, b.fp8_saturated_frac) || !same_bits(a.fp8_underflow_frac, b.fp8_underflow_frac) ||
        !same_bits(a.compensation_max, b.compensation_max))
        return QStringLiteral("step %1 run %2: evaluation or FP8 shares differ").arg(a.step).arg(a.run);
    return {};
}

// The first difference of run `run` (all runs: -1) between two record sets, or an empty string.
inline QString differs(const std::vector<std::vector<StepRecord>>& a, const std::vector<std::vector<StepRecord>>& b,
                       int run = -1) {
    if (a.size() != b.size()) return QStringLiteral("step counts differ: %1 vs %2").arg(a.size()).arg(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) return QStringLiteral("run counts differ at step %1").arg(i);
        for (std::size_t r = 0; r < a[i].size(); ++r)
            if (run < 0 || static_cast<int>(r) == run)
                if (auto d = differs(a[i][r], b[i][r]); !d.isEmpty()) return d;
    }
    return {};
}

}  // namespace mpx::test
