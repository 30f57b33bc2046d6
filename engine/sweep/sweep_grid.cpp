// Grid values (lists, linear and geometric ranges) and grid points as --set assignments.
#include "engine/sweep/sweep_grid.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/base/error.hpp"
#include "engine/base/text.hpp"
#include "engine/config/run_plan.hpp"

namespace mpx {
namespace {

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
        const auto at = s.find(sep, from);
        out.push_back(trim(s.substr(from, at == std::string::npos ? std::string::npos : at - from)));
        if (at == std::string::npos) return out;
        from = at + sep.size();
    }
}

std::optional<double> plain_number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v)) return std::nullopt;
    return v;
}

// A number, or base^exponent ("2^8").
std::optional<double> number(const std::string& s) {
    const auto caret = s.find('^');
    if (caret == std::string::npos) return plain_number(s);
    const auto b = plain_number(trim(s.substr(0, caret)));
    const auto e = plain_number(trim(s.substr(caret + 1)));
    if (!b || !e) return std::nullopt;
    const double v = std::pow(*b, *e);
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}

// Steps of a range accumulate rounding (0.1 + 2 × 0.1 = 0.30000000000000004): values are snapped to
// 12 significant digits, far finer than any setting needs and coarse enough to read back as typed.
double snap(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", v);
    return std::strtod(buf, nullptr);
}

[[noreturn]] void fail(const std::string& field, const std::string& spec, const std::string& why) {
    throw ConfigError(field, "grid values '" + spec + "': " + why);
}

double term(const std::string& field, const std::string& spec, const std::string& t) {
    const auto v = number(t);
    if (!v) fail(field, spec, "'" + t + "' is not a number (write 256, 0.5, 1e-3 or 2^8)");
    return *v;
}

void check_count(const std::string& field, const std::string& spec, double n) {
    if (n > static_cast<double>(k_max_sweep_points))
        fail(field, spec, "more than " + std::to_string(k_max_sweep_points) + " values");
}

}  // namespace

GridAxis parse_grid_values(const std::string& field, const std::string& spec_in) {
    GridAxis a;
    a.field = trim(field);
    a.spec = trim(spec_in);
    const std::string& spec = a.spec;
    if (a.field.empty()) throw ConfigError("--grid", "'" + field + "=" + spec_in + "' names no setting (write FIELD=VALUES)");
    if (spec.empty()) fail(a.field, spec, "no values (e.g. 16,256,65536 or 0.1:1:0.1 or 2^8..2^32*4)");
    if (const auto dots = spec.find(".."); dots != std::string::npos) {  // start..stop*factor
        const auto star = spec.rfind('*');
        if (star == std::string::npos || star < dots)
            fail(a.field, spec, "a geometric range is start..stop*factor, e.g. 2^8..2^32*4");
        const double start = term(a.field, spec, trim(spec.substr(0, dots)));
        const double stop = term(a.field, spec, trim(spec.substr(dots + 2, star - dots - 2)));
        const double factor = term(a.field, spec, trim(spec.substr(star + 1)));
        if (factor <= 0 || factor == 1) fail(a.field, spec, "the factor must be positive and not 1");
        if (start == 0 || (start < 0) != (stop < 0)) fail(a.field, spec, "start and stop must be non-zero and of one sign");
        const double n = std::floor(std::log(stop / start) / std::log(factor) + 1e-9) + 1;
        if (!(n >= 1)) fail(a.field, spec, "empty range: factor " + format_number(factor) + " never leads from " +
                                               format_number(start) + " to " + format_number(stop));
        check_count(a.field, spec, n);
        for (long long i = 0; i < static_cast<long long>(n); ++i) a.numbers.push_back(snap(start * std::pow(factor, i)));
    } else if (spec.find(':') != std::string::npos) {  // start:stop:step
        const auto parts = split(spec, ":");
        if (parts.size() != 3) fail(a.field, spec, "a linear range is start:stop:step, e.g. 0.1:1:0.1");
        const double start = term(a.field, spec, parts[0]);
        const double stop = term(a.field, spec, parts[1]);
        const double step = term(a.field, spec, parts[2]);
        if (step == 0) fail(a.field, spec, "the step must not be 0");
        const double n = std::floor((stop - start) / step + 1e-9) + 1;
        if (!(n >= 1)) fail(a.field, spec, "empty range: step " + format_number(step) + " never leads from " +
                                               format_number(start) + " to " + format_number(stop));
        check_count(a.field, spec, n);
        for (long long i = 0; i < static_cast<long long>(n); ++i) a.numbers.push_back(snap(start + static_cast<double>(i) * step));
    } else {
        const auto terms = split(spec, ",");
        check_count(a.field, spec, static_cast<double>(terms.size()));
        bool all_numbers = true;
        for (const auto& t : terms) {
            if (t.empty()) fail(a.field, spec, "an empty value in the list");
            all_numbers = all_numbers && number(t).has_value();
        }
        if (all_numbers) {
            for (const auto& t : terms) a.numbers.push_back(*number(t));
        } else {
            a.kind = AxisKind::categorical;
            a.values = terms;
        }
    }
    if (a.kind == AxisKind::numeric)
        for (double v : a.numbers) a.values.push_back(format_number(v));
    for (std::size_t i = 0; i < a.values.size(); ++i)
        for (std::size_t k = 0; k < i; ++k)
            if (a.values[i] == a.values[k]) fail(a.field, spec, "the value " + a.values[i] + " comes twice");
    return a;
}

GridAxis parse_grid_arg(const std::string& arg) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos)
        throw ConfigError("--grid", "'" + arg + "' is not FIELD=VALUES (e.g. scaler.init_scale=2^8..2^32*4)");
    return parse_grid_values(arg.substr(0, eq), arg.substr(eq + 1));
}

SweepGrid::SweepGrid(std::vector<GridAxis> axes, const SessionConfig& base) : m_axes(std::move(axes)) {
    if (m_axes.empty()) throw ConfigError("--grid", "give at least one FIELD=VALUES");
    int numeric = 0, categorical = 0;
    const nlohmann::json known = to_json(base);
    double points = 1;
    for (std::size_t i = 0; i < m_axes.size(); ++i) {
        const GridAxis& a = m_axes[i];
        (a.kind == AxisKind::numeric ? numeric : categorical)++;
        for (std::size_t k = 0; k < i; ++k)
            if (m_axes[k].field == a.field) throw ConfigError(a.field, "is on the grid twice");
        const nlohmann::json* node = &known;
        for (const auto& part : split(a.field, ".")) {
            if (!node->is_object() || !node->contains(part))
                throw ConfigError(a.field, "unknown setting (a grid field is a key --set takes, e.g. scaler.init_scale, "
                                           "train.lr, data.noise)");
            node = &node->at(part);
        }
        if (a.kind == AxisKind::numeric && !node->is_number() && !node->is_null())
            throw ConfigError(a.field, "is not a numeric setting (it is " + node->dump() +
                                           "); give names to sweep it as the categorical field");
        points *= static_cast<double>(a.values.size());
        // A run that names its preset ("amp-fp16+deepspeed") keeps its own scaler: a grid over the
        // session's scaler that reaches no run would train the same point over and over.
        if (a.field.rfind("scaler.", 0) == 0) {
            bool reaches = false;
            for (const auto& label : base.runs)
                reaches = reaches || resolve_run(label, base.scaler, base.scaler_overrides).follows_session_scaler;
            if (!reaches)
                throw ConfigError(a.field, "no run follows the session's scaler (each run names its own preset or "
                                           "has no dynamic scaler); compare runs without a +preset suffix, e.g. "
                                           "--runs amp-fp16 --grid scaler.preset=pytorch,deepspeed");
        }
    }
    if (numeric > 2) throw ConfigError("--grid", "at most two numeric fields (got " + std::to_string(numeric) + ")");
    if (categorical > 1)
        throw ConfigError("--grid", "at most one categorical field such as scaler.preset=pytorch,deepspeed (got " +
                                        std::to_string(categorical) + ")");
    if (points > static_cast<double>(k_max_sweep_points))
        throw ConfigError("--grid", "the grid has " + format_number(points) + " points; at most " +
                                        std::to_string(k_max_sweep_points) + " are allowed");
    m_size = static_cast<std::size_t>(points);
}

std::vector<std::size_t> SweepGrid::coordinates(std::size_t point) const {
    std::vector<std::size_t> c(m_axes.size());
    for (std::size_t i = m_axes.size(); i-- > 0;) {
        c[i] = point % m_axes[i].values.size();
        point /= m_axes[i].values.size();
    }
    return c;
}

std::vector<std::string> SweepGrid::assignments(std::size_t point) const {
    const auto c = coordinates(point);
    std::vector<std::string> first, rest;
    for (std::size_t i = 0; i < m_axes.size(); ++i)
        (m_axes[i].kind == AxisKind::categorical ? first : rest).push_back(m_axes[i].field + "=" + m_axes[i].values[c[i]]);
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
}

SessionConfig SweepGrid::point_config(const SessionConfig& base, std::size_t point) const {
    SessionConfig c = base;
    try {
        apply_overrides(c, assignments(point));
    } catch (const ConfigError& e) {
        std::string where;
        for (const auto& s : assignments(point)) where += (where.empty() ? "" : " ") + s;
        throw ConfigError(e.field(), e.message() + " (grid point " + std::to_string(point) + ": " + where + ")");
    }
    return c;
}

}  // namespace mpx
