// StepPacer (step_pacer.hpp).
#include "engine/run/step_pacer.hpp"

#include <algorithm>

#include "engine/core/scaler_rule.hpp"

namespace mpx {

bool is_pace_event(const StepRecord& r) {
    return r.skipped || r.found_inf || r.scale_event != static_cast<std::uint8_t>(ScaleEvent::none);
}

void StepPacer::restart() {
    m_last = -std::numeric_limits<double>::infinity();
    m_slow = 0;
}

double StepPacer::interval() const {
    const double base = m_pace.steps_per_second > 0.0 ? 1.0 / m_pace.steps_per_second : 0.0;
    if (m_pace.events && m_slow > 0) return std::max(base, 1.0 / k_event_steps_per_second);
    return base;
}

double StepPacer::wait(double now) const { return std::max(0.0, m_last + interval() - now); }

void StepPacer::stepped(double now, const std::vector<StepRecord>& records) {
    m_last = now;
    const bool event = std::any_of(records.begin(), records.end(), is_pace_event);
    m_slow = event ? k_event_steps : std::max(0, m_slow - 1);
}

}  // namespace mpx
