// The whole-run comparisons (backend_compare.hpp): the same sessions trained on both backends.
#include "cuda/compare/backend_compare.hpp"


#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/compare/rig.hpp"
#include "cuda/compare/tolerance.hpp"
#include "engine/base/error.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/run/session.hpp"

namespace mpx::compare {

// ---- whole runs --------------------------------------------------------------------------------

// Per step: |Δloss| ≤ rel·loss + 1e-4 with rel 1e-3 (fp32), 2e-2 (fp16), 5e-2 (bf16). The GEMMs'
// accumulation order differs by ~1e-7 relative per step and training amplifies it; low precision
// turns some of it into whole-ulp rounding flips (bf16: 8-bit mantissa). First estimates, to be
// tightened from the worst deviations this check notes on a GPU.
Report training_tracks(const Factory& dut, int steps) {
    Report rep;
    SessionConfig c = load_config("default");
    c.steps = steps;
    Session ref(c), gpu(c, dut);
    if (gpu.run_count() != ref.run_count()) {
        rep.fail("run counts differ");
        return rep;
    }
    std::vector<double> worst(ref.run_count(), 0.0);
    for (int s = 0; s < steps; ++s) {
        const auto rr = ref.step(), rd = gpu.step();
        for (std::size_t k = 0; k < rr.size(); ++k) {
            const std::string label = ref.run(k).info().label;
            const double rel = label.find("bf16") != std::string::npos   ? 5e-2
                               : label.find("fp16") != std::string::npos ? 2e-2
                                                                         : 1e-3;
            const double d = std::fabs(rd[k].loss - rr[k].loss);
            worst[k] = std::max(worst[k], d / std::max(1e-12, std::fabs(rr[k].loss)));
            if (!(d <= rel * std::fabs(rr[k].loss) + 1e-4))
                rep.fail(label + " step " + std::to_string(s) + ": loss " +
                         std::to_string(rd[k].loss) + " vs " + std::to_string(rr[k].loss));
            rep.expect(rd[k].mem.bytes == rr[k].mem.bytes, label + ": memory accounting differs");
            rep.expect(rd[k].skipped == rr[k].skipped,
                       label + " step " + std::to_string(s) + ": skipped differs");
        }
    }
    for (std::size_t k = 0; k < worst.size(); ++k) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: worst relative loss deviation over %d steps %.3g",
                      ref.run(k).info().label.c_str(), steps, worst[k]);
        rep.note(buf);
    }
    return rep;
}

Report records_one_step_late(const Factory& dut, int steps) {
    Report rep;
    const auto bits = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
    for (const char* preset : {"default", "overflow-storm"}) {
        SessionConfig c = load_config(preset);
        c.steps = steps;
        // The storm collects histograms on every step, which are read before the next is queued.
        if (std::strcmp(preset, "overflow-storm") == 0) c.instruments.every = 0;
        Session now(c, dut), late(c, dut);
        std::vector<std::vector<StepRecord>> a, b;
        while (!now.finished()) a.push_back(now.step());
        int pending = 0;
        while (!late.finished()) {
            for (auto& recs : late.step_ahead()) b.push_back(std::move(recs));
            pending += late.pending();
        }
        rep.expect(pending > 0, std::string(preset) + ": no step was left pending");
        if (a.size() != b.size()) {
            rep.fail(std::string(preset) + ": step counts differ");
            continue;
        }
        int differing = 0;
        for (std::size_t i = 0; i < a.size(); ++i)
            for (std::size_t k = 0; k < a[i].size(); ++k) {
                const StepRecord &x = a[i][k], &y = b[i][k];
                const bool same = x.step == y.step && bits(x.loss, y.loss) && bits(x.loss_scale, y.loss_scale) &&
                                  bits(x.new_scale, y.new_scale) && bits(x.grad_norm, y.grad_norm) &&
                                  bits(x.underflow_frac, y.underflow_frac) &&
                                  bits(x.lost_update_frac, y.lost_update_frac) && bits(x.lr, y.lr) &&
                                  x.skipped == y.skipped && x.overflow_count == y.overflow_count &&
                                  x.first_nonfinite == y.first_nonfinite && x.mem.bytes == y.mem.bytes &&
                                  bits(x.eval_loss.value_or(0.0), y.eval_loss.value_or(0.0));
                if (!same && differing++ == 0)
                    rep.fail(std::string(preset) + " " + now.run(k).info().label + " step " + std::to_string(i) +
                             ": the record read one step late differs (loss " + std::to_string(y.loss) + " vs " +
                             std::to_string(x.loss) + ")");
            }
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: %d of %zu steps read one step late, %d records differ", preset, pending,
                      a.size(), differing);
        rep.note(buf);
    }
    return rep;
}

Report overflow_storm(const Factory& dut) {
    Report rep;
    const SessionConfig c = load_config("overflow-storm");
    Session ref(c), gpu(c, dut);
    int skipped = 0;
    for (long long s = 0; !ref.finished(); ++s) {
        const auto rr = ref.step(), rd = gpu.step();
        for (std::size_t k = 0; k < rr.size(); ++k) {
            const std::string at = ref.run(k).info().label + " step " + std::to_string(s);
            rep.expect(rd[k].skipped == rr[k].skipped, at + ": skipped differs");
            rep.expect(rd[k].found_inf == rr[k].found_inf, at + ": found_inf differs");
            rep.expect(rd[k].loss_scale == rr[k].loss_scale,
                       at + ": loss scale " + std::to_string(rd[k].loss_scale) + " vs " +
                           std::to_string(rr[k].loss_scale));
            skipped += rr[k].skipped;
        }
    }
    rep.expect(skipped >= 3,
               "the preset should skip a few steps (" + std::to_string(skipped) + ")");
    rep.note("overflow-storm: " + std::to_string(skipped) + " steps skipped on the reference");
    return rep;
}

}  // namespace mpx::compare
