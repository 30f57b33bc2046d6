// When the next step of a paced Run may start (engine/config/pace.hpp). Rule: it only answers
// "how long to wait"; the caller waits without blocking (the app's worker arms a timer and keeps
// serving commands), so a pace never delays a reset, a new session or closing.
#pragma once

#include <limits>
#include <vector>

#include "engine/config/pace.hpp"
#include "engine/run/record.hpp"

namespace mpx {

// How a Run is timed: `paced` follows the pace (the app's Run button, Space, mpx --start);
// `fastest` ignores it (a run to a given step for a picture or a test: a seek, not a lecture).
enum class Timing { paced, fastest };

// A step a paced Run slows down around: a run skipped it, changed its scale, or found inf/NaN.
bool is_pace_event(const StepRecord& r);

class StepPacer {
public:
    void set_pace(const Pace& p) { m_pace = p; }
    const Pace& pace() const { return m_pace; }
    // Forget the last step (a new Run, session or reset): the next step is due at once.
    void restart();
    // Seconds (>= 0) from `now` until the next step is due; 0 when it is (or nothing throttles).
    double wait(double now) const;
    // A step began at `now` and produced `records` (one per run).
    void stepped(double now, const std::vector<StepRecord>& records);
    // The spacing the next step keeps from the last one: 1 / rate, or 1 / k_event_steps_per_second
    // at most in the k_event_steps after an event.
    double interval() const;

private:
    Pace m_pace;
    double m_last = -std::numeric_limits<double>::infinity();
    int m_slow = 0;  // steps still to go at the event pace
};

}  // namespace mpx
