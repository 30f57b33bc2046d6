// Round-trip number printing with std::to_chars (locale-independent) and RFC 4180 quoting.
#include "text.hpp"

#include <charconv>
#include <cmath>

namespace mpx {
namespace {
template <typename T>
std::string shortest(T v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}
}  // namespace

std::string format_number(double v) { return shortest(v); }
std::string format_number(float v) { return shortest(v); }

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

}  // namespace mpx
