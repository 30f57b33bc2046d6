// How fast the app's Run plays a session: a teacher's setting, kept per lesson in its preset
// ("pace"), given on the command line (mpx --pace) and in the toolbar. Rule: it changes when steps
// are shown, never what a step computes; mpx-cli reads it and trains as fast as it can.
#pragma once

#include <string>

namespace mpx {

struct Pace {
    double steps_per_second = 0.0;  // 0: as fast as the engine goes
    // Around an event (a run skipped its step, its scale changed, or an overflow reached its
    // gradients) the next k_event_steps steps go at k_event_steps_per_second at most, so the
    // event unfolds at talking speed however fast the run goes between events.
    bool events = false;
    bool operator==(const Pace&) const = default;
    bool throttles() const { return steps_per_second > 0.0 || events; }
};

inline constexpr double k_min_pace = 0.1;     // steps per second: one step every ten seconds
inline constexpr double k_max_pace = 1000.0;  // above this, "fast"
inline constexpr double k_event_steps_per_second = 2.0;
inline constexpr int k_event_steps = 4;  // two seconds after each event

// Text: "fast", a number of steps per second ("5", "0.5"), either followed by ",events"
// ("20,events", "fast,events"). A bad text is a ConfigError naming `field` and the forms.
Pace parse_pace(const std::string& text, const std::string& field = "pace");
std::string to_string(const Pace& p);  // what parse_pace reads back: "fast", "5", "20,events"
void validate(const Pace& p);          // steps_per_second 0 or in [k_min_pace, k_max_pace]

}  // namespace mpx
