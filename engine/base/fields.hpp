// A settings struct described as data: per field its name, kind, range, whether a change applies
// live or needs a reset, its label and help text, and typed access to the member. Rule: JSON
// reading and writing, --set, range messages, live changes and the app's controls all go through
// these lists, so a new setting is one row in its struct's list (scaler_fields(), train_fields()).
#pragma once

#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpx {

enum class FieldKind { number, integer, choice, flag };
enum class Apply { live, reset };  // a change lands before the next step, or needs a reset

struct FieldInfo {
    static constexpr double inf = std::numeric_limits<double>::infinity();
    std::string_view name{};         // the JSON key; --set <section>.<name>
    std::string_view label{};        // the app's form label
    double min = -inf, max = inf;    // the range of number and integer fields
    bool min_open = false, max_open = false;  // the bound itself is outside the range
    Apply apply = Apply::reset;
    std::string_view help{};         // one or two sentences: the tooltip wherever it is shown
    std::string_view hint{};         // ends a range error: what the frameworks use, what 0 means
    bool nullable = false;           // JSON null (or "none") stands for `none`, e.g. no maximum
    double none = 0.0;
};

template <class S>
struct Field : FieldInfo {
    FieldKind kind = FieldKind::number;
    // JSON ⇄ member; read throws ConfigError naming `field` ("train.lr") for a wrong type.
    void (*read)(const FieldInfo&, S&, const nlohmann::json&, const std::string& field) = nullptr;
    nlohmann::json (*write)(const S&) = nullptr;
    void (*copy)(S& to, const S& from) = nullptr;
    // Number, integer and flag (0/1) fields as a double; choice fields by name.
    double (*number)(const S&) = nullptr;
    void (*set_number)(S&, double) = nullptr;
    std::string_view (*name_of)(const S&) = nullptr;
    bool (*set_name)(S&, std::string_view) = nullptr;  // false: not one of the choices
    std::vector<std::string_view> (*choices)() = nullptr;
};

template <class S>
const Field<S>* find_field(std::span<const Field<S>> fields, std::string_view name) {
    for (const auto& f : fields)
        if (f.name == name) return &f;
    return nullptr;
}

template <class S>
std::string field_names(std::span<const Field<S>> fields) {
    std::string out;
    for (const auto& f : fields) out += (out.empty() ? "" : ", ") + std::string(f.name);
    return out;
}

// "must be between 1 and 1024 (got 0)", "must lie strictly between 0 and 1 (got 1); every framework
// uses 0.5": the range error of a number or integer field, or an empty string when v is in range.
// NaN is never in range; infinity only where it is the field's `none`.
std::string range_error(const FieldInfo& f, double v, bool integer);

}  // namespace mpx
