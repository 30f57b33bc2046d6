// How a settings struct's field list is built and used: field<&S::member>(info) makes one row,
// and the JSON reading, writing and range checks every list shares. Rule: include it only where a
// list is defined or read (it brings in nlohmann/json); fields.hpp is the light half.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "engine/base/enum_names.hpp"
#include "engine/base/error.hpp"
#include "engine/base/fields.hpp"
#include "engine/base/json_util.hpp"
#include "engine/base/quote.hpp"

namespace mpx {

namespace detail {
template <class M>
struct member_of;
template <class S, class V>
struct member_of<V S::*> {
    using owner = S;
    using type = V;
};

double read_number(const FieldInfo& f, const nlohmann::json& v, const std::string& field);

template <class E>
E read_choice(const nlohmann::json& v, const std::string& field) {
    if (v.is_string())
        if (const auto e = enum_parse<E>(v.get<std::string>())) return *e;
    throw ConfigError(field, "must be one of " + enum_choices<E>() + " (got " + v.dump() + ")");
}
}  // namespace detail

// The row of one member: field<&TrainConfig::lr>({.name = "lr", ...}). Its kind follows the
// member's type: enum → choice (names from its table), bool → flag, integer, floating → number.
// S names the settings struct where the member is one of its base's (ScalerConfig's ScalerRule).
template <auto M, class S = typename detail::member_of<decltype(M)>::owner>
Field<S> field(const FieldInfo& info) {
    using V = typename detail::member_of<decltype(M)>::type;
    Field<S> f{info};
    f.copy = [](S& to, const S& from) { to.*M = from.*M; };
    if constexpr (std::is_enum_v<V>) {
        f.kind = FieldKind::choice;
        f.read = [](const FieldInfo&, S& s, const nlohmann::json& v, const std::string& field) {
            s.*M = detail::read_choice<V>(v, field);
        };
        f.write = [](const S& s) { return nlohmann::json(std::string(enum_name(s.*M))); };
        f.name_of = [](const S& s) { return enum_name(s.*M); };
        f.set_name = [](S& s, std::string_view n) {
            const auto e = enum_parse<V>(n);
            if (e) s.*M = *e;
            return e.has_value();
        };
        f.choices = [] {
            std::vector<std::string_view> out;
            for (const auto& e : names_of(V{})) out.push_back(e.name);
            return out;
        };
    } else {
        f.number = [](const S& s) { return static_cast<double>(s.*M); };
        f.set_number = [](S& s, double v) { s.*M = static_cast<V>(v); };
        f.write = [](const S& s) {
            if constexpr (std::is_floating_point_v<V>)  // JSON has no infinity: null reads back as none
                if (!std::isfinite(s.*M)) return nlohmann::json(nullptr);
            return nlohmann::json(s.*M);
        };
        if constexpr (std::is_same_v<V, bool>) {
            f.kind = FieldKind::flag;
            f.read = [](const FieldInfo&, S& s, const nlohmann::json& v, const std::string& field) {
                if (!v.is_boolean()) throw ConfigError(field, "must be true or false, got " + v.dump());
                s.*M = v.get<bool>();
            };
        } else if constexpr (std::is_integral_v<V>) {
            f.kind = FieldKind::integer;
            f.read = [](const FieldInfo&, S& s, const nlohmann::json& v, const std::string& field) {
                s.*M = json_integer<V>(v, field);
            };
        } else {
            f.kind = FieldKind::number;
            f.read = [](const FieldInfo& fi, S& s, const nlohmann::json& v, const std::string& field) {
                s.*M = static_cast<V>(detail::read_number(fi, v, field));
            };
        }
    }
    return f;
}

// Every field of s under its name.
template <class S>
void write_fields(nlohmann::json& j, std::span<const Field<S>> fields, const S& s) {
    for (const auto& f : fields) j[std::string(f.name)] = f.write(s);
}

// One JSON key into s; an unknown key is "<section>.<key>: unknown setting; known: ...".
template <class S>
void read_field(std::span<const Field<S>> fields, S& s, const std::string& key, const nlohmann::json& v,
                const std::string& section) {
    const Field<S>* f = find_field(fields, key);
    if (!f) throw ConfigError(section + "." + plain_or_quoted(key), "unknown setting; known: " + field_names(fields));
    f->read(*f, s, v, section + "." + key);
}

// Checks every number and integer field against its range, in the list's order.
template <class S>
void check_ranges(std::span<const Field<S>> fields, const S& s, const std::string& section) {
    for (const auto& f : fields) {
        if (f.kind != FieldKind::number && f.kind != FieldKind::integer) continue;
        const std::string e = range_error(f, f.number(s), f.kind == FieldKind::integer);
        if (!e.empty()) throw ConfigError(section + "." + std::string(f.name), e);
    }
}

}  // namespace mpx
