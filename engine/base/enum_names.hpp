// Names ↔ values of an enum, one table per enum: the only place an enum value's spelling lives.
// Rule: to_string, parse, JSON, --set, error messages and the app's choice lists all read the
// table; a new enum value is one row in it. A table is found by `names_of(E{})` (declare it
// beside the enum, constexpr), and lists the values a user may choose, in the order to offer them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mpx {

template <class E>
struct EnumName {
    E value;
    std::string_view name;
};

// The value's name, or "?" for a value the table does not list.
template <class E>
constexpr std::string_view enum_name(E v) {
    for (const auto& e : names_of(E{}))
        if (e.value == v) return e.name;
    return "?";
}

template <class E>
constexpr std::optional<E> enum_parse(std::string_view s) {
    for (const auto& e : names_of(E{}))
        if (e.name == s) return e.value;
    return std::nullopt;
}

// "'a', 'b', 'c'": the choices, for an error message.
template <class E>
std::string enum_choices() {
    std::string out;
    for (const auto& e : names_of(E{})) out += (out.empty() ? "'" : ", '") + std::string(e.name) + "'";
    return out;
}

}  // namespace mpx
