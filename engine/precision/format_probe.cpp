// The format explorer's per-format figures (see format_probe.hpp).
#include "engine/precision/format_probe.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace mpx {

std::optional<TypedValue> parse_typed_value(std::string_view text) {
    const std::string s(text);
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    const bool beyond_double = errno == ERANGE && std::isinf(d);
    const float f = std::strtof(s.c_str(), nullptr);
    return TypedValue{f, d, std::isfinite(d) || beyond_double};
}

TypedValue typed_value(float x) { return {x, static_cast<double>(x), std::isfinite(x)}; }

FormatProbe probe(Format f, const TypedValue& v, Overflow mode) {
    FormatProbe p{};
    p.format = f;
    p.bits = encode(f, v.as_float, mode);
    p.code = core::from_container(f, p.bits);
    p.value = decode(f, p.bits);
    p.cls = classify(f, p.bits);
    if (std::isnan(v.exact) || std::isnan(p.value)) {
        p.abs_error = (std::isnan(v.exact) && std::isnan(p.value)) ? 0.0 : NAN;
    } else if (std::isinf(v.exact) || std::isinf(p.value)) {
        p.abs_error = static_cast<double>(p.value) == v.exact ? 0.0 : INFINITY;
    } else {
        p.abs_error = std::fabs(static_cast<double>(p.value) - v.exact);
    }
    p.rel_error = p.abs_error;
    if (std::isfinite(v.exact) && v.exact != 0.0) p.rel_error = p.abs_error / std::fabs(v.exact);
    p.ulp = ulp(f, p.value);
    p.next_up = decode(f, next_up(f, p.bits));
    p.next_down = decode(f, next_down(f, p.bits));
    p.overflow = rounding_overflows(f, v.as_float) || (v.finite && std::isinf(v.as_float));
    p.underflow = rounding_underflows(f, v.as_float, mode) ||
                  (v.exact != 0.0 && !std::isnan(v.exact) && p.value == 0.0f);
    return p;
}

std::uint32_t flip_code_bit(Format f, std::uint32_t bits, int code_bit) {
    const std::uint32_t code = core::from_container(f, bits) ^ (1u << code_bit);
    return core::to_container(f, code);
}

}  // namespace mpx
