// The shared halves of the field lists: reading a JSON number and the range message.
#include <cmath>
#include <cstdlib>

#include "engine/base/field_table.hpp"
#include "engine/base/text.hpp"

namespace mpx {
namespace {
// Whole numbers as integers ("1000000", not "1e+06"): ranges are read by people.
std::string range_number(double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    return format_number(v);
}
}  // namespace

namespace detail {
double read_number(const FieldInfo& f, const nlohmann::json& v, const std::string& field) {
    if (v.is_number()) return v.get<double>();
    if (f.nullable && (v.is_null() || (v.is_string() && v.get<std::string>() == "none"))) return f.none;
    if (v.is_string()) {  // only "inf", "nan" and friends, which JSON numbers cannot carry
        const auto s = v.get<std::string>();
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0' && !std::isfinite(d)) return d;
    }
    throw ConfigError(field, std::string("must be a number") + (f.nullable ? " (or null for none)" : "") +
                                 ", got " + v.dump());
}
}  // namespace detail

std::string range_error(const FieldInfo& f, double v, bool integer) {
    if (f.nullable && v == f.none) return {};
    const bool ok = (f.min_open ? v > f.min : v >= f.min) && (f.max_open ? v < f.max : v <= f.max) &&
                    std::isfinite(v);
    if (ok) return {};
    const std::string lo = range_number(f.min), hi = range_number(f.max);
    std::string m;
    if (integer) m = std::isinf(f.max) ? "must be at least " + lo : "must be between " + lo + " and " + hi;
    else if (std::isinf(f.max)) m = "must be a finite number " + std::string(f.min_open ? "> " : ">= ") + lo;
    else if (f.min_open && f.max_open) m = "must lie strictly between " + lo + " and " + hi;
    else if (!f.min_open && !f.max_open) m = "must be between " + lo + " and " + hi;
    else m = std::string("must be in ") + (f.min_open ? "(" : "[") + lo + ", " + hi + (f.max_open ? ")" : "]");
    m += " (got " + range_number(v) + ")";
    if (!f.hint.empty()) m += "; " + std::string(f.hint);
    return m;
}

}  // namespace mpx
