#include "engine/sweep/trace_sweep.hpp"

#include <chrono>

#include "engine/base/error.hpp"

namespace mpx {

SweepResult sweep_trace(const SweepGrid& grid, const SessionConfig& base, const Trace& trace) {
    for (const GridAxis& a : grid.axes())
        if (!a.field.starts_with("scaler."))
            throw ConfigError("--grid", "'" + a.field + "': a sweep over a trace varies scaler settings only "
                                                        "(scaler.init_scale, scaler.growth_interval, scaler.preset, ...)");
    const auto t0 = std::chrono::steady_clock::now();
    SweepResult result;
    result.planned = grid.size();
    result.threads = 1;
    // The recording's losses, the same at every point.
    double tail_sum = 0.0;
    const std::size_t n = trace.steps.size(), tail_from = n - std::max<std::size_t>(1, n / 10);
    for (std::size_t i = tail_from; i < n; ++i) tail_sum += trace.steps[i].loss;
    for (std::size_t p = 0; p < grid.size(); ++p) {
        const SessionConfig cfg = grid.point_config(base, p);
        const ReplayResult r = replay_trace(trace, cfg.scaler);
        SweepOutcome o;
        o.run = k_trace_run;
        o.first_loss = trace.steps.front().loss;
        o.final_loss = trace.steps.back().loss;
        o.tail_loss = tail_sum / static_cast<double>(n - tail_from);
        o.skipped = r.skipped;
        const double min_scale = cfg.scaler.min_scale;
        for (const ReplayStep& s : r.steps) {
            if (s.event == ScaleEvent::backoff) {
                ++o.backoffs;
                o.settled_step = s.step + 1;
            }
            if (s.event == ScaleEvent::grow) ++o.growths;
            if (min_scale > 0 && s.scale <= min_scale) ++o.steps_at_min_scale;
        }
        o.final_scale = r.final_scale;
        o.diverged = r.stopped_at.has_value();
        result.points.push_back({p, {o}});
    }
    result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

}  // namespace mpx
