// Strict JSON field reading for configuration objects: every read names its field ("train.lr") in
// the error, wrong types are rejected, and finish() rejects keys nobody read (typos must not pass).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "engine/base/enum_names.hpp"
#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"

namespace mpx {

// A JSON integer (or a whole-valued number such as 1e3) that fits T; anything else, a value out
// of T's range included, is a ConfigError naming `field` instead of a silent wrap-around.
template <typename T>
T json_integer(const nlohmann::json& v, const std::string& field) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    using L = std::numeric_limits<T>;
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(L::max())) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
        const auto s = v.get<std::int64_t>();
        if (std::in_range<T>(s)) return static_cast<T>(s);
    } else if (v.is_number_float()) {
        // Both bounds are exact in double: min() is 0 or -2^digits, the limit is 2^digits.
        const double d = v.get<double>();
        if (d == std::floor(d) && d >= static_cast<double>(L::min()) && d < std::ldexp(1.0, L::digits))
            return static_cast<T>(d);
    }
    throw ConfigError(field, "must be an integer between " + std::to_string(L::min()) + " and " +
                                 std::to_string(L::max()) + " (got " + v.dump() + ")");
}

class JsonReader {
public:
    JsonReader(const nlohmann::json& j, std::string prefix) : m_j(j), m_prefix(std::move(prefix)) {
        if (!j.is_object()) throw ConfigError(m_prefix, "must be a JSON object");
    }
    std::string field(const std::string& key) const {
        return m_prefix.empty() ? key : m_prefix + "." + key;
    }
    bool has(const std::string& key) const { return m_j.contains(key); }
    const nlohmann::json& at(const std::string& key) {
        m_seen.insert(key);
        return m_j.at(key);
    }

    template <typename T>
    void get(const std::string& key, T& out) {
        if (!m_j.contains(key)) return;
        m_seen.insert(key);
        const auto& v = m_j.at(key);
        if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) throw ConfigError(field(key), "must be true or false");
        } else if constexpr (std::is_integral_v<T>) {
            out = json_integer<T>(v, field(key));
            return;
        } else if constexpr (std::is_floating_point_v<T>) {
            if (v.is_string()) {  // "inf", "nan" and friends, which JSON numbers cannot carry
                const auto s = v.get<std::string>();
                char* end = nullptr;
                const double d = std::strtod(s.c_str(), &end);
                if (s.empty() || *end != '\0') throw ConfigError(field(key), "must be a number");
                out = static_cast<T>(d);
                return;
            }
            if (!v.is_number()) throw ConfigError(field(key), "must be a number");
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!v.is_string()) throw ConfigError(field(key), "must be a string");
        }
        out = v.get<T>();
    }

    // An enum by the names in its table (enum_names.hpp).
    template <typename E>
    void get_enum(const std::string& key, E& out) {
        if (!m_j.contains(key)) return;
        m_seen.insert(key);
        const auto& v = m_j.at(key);
        if (v.is_string())
            if (const auto e = enum_parse<E>(v.get<std::string>())) {
                out = *e;
                return;
            }
        throw ConfigError(field(key), "must be one of " + enum_choices<E>() + " (got " + v.dump() + ")");
    }

    // Rejects keys that no get() asked for.
    void finish() const {
        std::string known;
        for (auto it = m_j.begin(); it != m_j.end(); ++it) {
            if (!m_seen.count(it.key()))
                throw ConfigError(field(plain_or_quoted(it.key())), "unknown setting");  // a key as typed, escaped
        }
    }

private:
    const nlohmann::json& m_j;
    std::string m_prefix;
    std::set<std::string> m_seen;
};

}  // namespace mpx
