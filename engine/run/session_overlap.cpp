// Session::step_ahead on the CPU's threads: the runs' steps overlap. Each run is a chain of steps
// on the pool (Chains, engine/base/parallel.hpp), so a run done with step N−1 starts N while another
// still trains N−1, instead of every run waiting for the slowest at a barrier. Rule: a step's
// records are taken only once every run has finished it, and nothing a running step reads (the
// runs' settings, the batches of its slot, the configuration) changes until then, so every record,
// and the order the caller reads them in, is what lockstep gives.
#include "engine/run/session.hpp"

namespace mpx {

bool Session::pipelines() const {
    return steps_in_parallel() && lane_count(m_runs.size()) > 1;  // not under SerialHere
}

std::vector<std::vector<StepRecord>> Session::step_pipelined(double wall) {
    // Step N's batches into its slot (N−2's, taken by the last call), then N open on every run's
    // chain: a run done with the pending N−1 starts N while the others still train N−1. N−1's
    // records are taken once every run has finished it; N stays pending where nothing needs it
    // finished (can_leave_pending), training while the caller reads N−1's records.
    std::vector<std::vector<StepRecord>> out;
    const long long n = m_step;
    if (!m_chains)
        m_chains = std::make_unique<Chains>(m_runs.size(), [this](std::size_t r, long long s) { pipeline_step(r, s); });
    if (!m_pending) m_chains->restart(n);
    m_drawn[n % 2] = m_sampler->state();
    gather_batches(micro_for(n));
    m_chains->open_to(n);
    long long waiting = n - 1;
    try {
        if (m_pending) {
            m_chains->wait_for(n - 1);
            out.push_back(take_pipelined(n - 1, *std::exchange(m_pending, std::nullopt)));
        }
        if (can_leave_pending()) {
            m_pending = wall;
            m_pipelined = true;
            ++m_step;  // no change is due at the next step (can_leave_pending)
            return out;
        }
        waiting = n;
        m_chains->wait_for(n);
    } catch (...) {
        // N−1's records, taken before N failed, come from finish_pending, as on the GPU.
        if (!out.empty()) m_late = std::move(out.back());
        drop_pipelined(waiting);
        throw;
    }
    m_pipelined = false;
    out.push_back(complete_step(take_pipelined(n, wall)));
    return out;
}

void Session::pipeline_step(std::size_t run, long long step) {
    Run& r = *m_runs[run];
    r.queue_step(step, micro_for(step), m_data.loss);
    m_ahead[step % 2][run] = r.finish_step();
}

std::vector<StepRecord> Session::take_pipelined(long long step, double wall) {
    std::vector<StepRecord> out = m_ahead[step % 2];
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i].wall_time_s = wall;
        m_last_us[i] = out[i].step_time_us;
    }
    order_longest_first();
    return out;
}

void Session::drop_pipelined(long long failed) {
    // As a lockstep step that failed: the step is taken again with the same batches; the runs that
    // had trained it (or the next) have moved on all the same.
    m_chains->stop();
    m_pending.reset();
    m_pipelined = false;
    m_step = failed;
    m_sampler->restore(m_drawn[failed % 2]);
    for (auto& r : m_runs) r->abandon_step();
}

}  // namespace mpx
