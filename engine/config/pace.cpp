// Pace's text (pace.hpp).
#include "engine/config/pace.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"

namespace mpx {
namespace {

std::string trimmed_lower(std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

const char* k_forms = "write fast, a number of steps per second (e.g. 5 or 0.5), or either followed by "
                      ",events (e.g. 20,events: slow down around skipped steps, scale changes and overflows)";

}  // namespace

void validate(const Pace& p) {
    if (p.steps_per_second == 0.0) return;
    if (!(p.steps_per_second >= k_min_pace && p.steps_per_second <= k_max_pace))
        throw ConfigError("pace", format_number(p.steps_per_second) + " steps per second is outside " +
                                      format_number(k_min_pace) + " to " + format_number(k_max_pace) +
                                      "; use fast for as fast as the engine goes");
}

Pace parse_pace(const std::string& text, const std::string& field) {
    Pace p;
    std::string rate = trimmed_lower(text);
    if (const auto comma = rate.find(','); comma != std::string::npos) {
        if (trimmed_lower(rate.substr(comma + 1)) != "events")
            throw ConfigError(field, quoted_text(text) + " is not a pace; " + k_forms);
        p.events = true;
        rate = trimmed_lower(rate.substr(0, comma));
    }
    if (rate == "fast") return p;
    char* end = nullptr;
    const double v = rate.empty() ? NAN : std::strtod(rate.c_str(), &end);
    if (rate.empty() || end != rate.c_str() + rate.size() || !std::isfinite(v))
        throw ConfigError(field, quoted_text(text) + " is not a pace; " + k_forms);
    if (v <= 0.0) throw ConfigError(field, quoted_text(text) + " steps per second would never step; " + k_forms);
    p.steps_per_second = v;
    try {
        validate(p);
    } catch (const ConfigError& e) {
        throw ConfigError(field, e.message());
    }
    return p;
}

std::string to_string(const Pace& p) {
    const std::string rate = p.steps_per_second > 0.0 ? format_number(p.steps_per_second) : "fast";
    return p.events ? rate + ",events" : rate;
}

}  // namespace mpx
