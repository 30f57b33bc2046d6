// The grid of a sweep: up to two numeric settings and one categorical one, each with its values.
// Rule: a grid point is nothing but `--set` assignments applied to the base configuration with
// apply_overrides, so any setting a configuration has can be swept and every point is validated
// exactly as `mpx-cli run --set` would validate it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/config/session_config.hpp"

namespace mpx {

inline constexpr std::size_t k_max_sweep_points = 10'000;

enum class AxisKind { numeric, categorical };

struct GridAxis {
    std::string field;                // dotted key, as --set takes it: "scaler.init_scale"
    std::string spec;                 // the values as the user wrote them: "2^8..2^32*4"
    AxisKind kind = AxisKind::numeric;
    std::vector<double> numbers;      // numeric axes: the values, in order
    std::vector<std::string> values;  // every axis: the values as --set text ("256", "pytorch")
};

// "16,256,65536" (a list; a term may be written 2^8), "0.1:1:0.1" (start:stop:step, stop included
// when the steps land on it), "2^8..2^32*4" (start..stop*factor, geometric). A list of names
// ("pytorch,deepspeed") makes a categorical axis. Throws ConfigError naming `field` for an empty
// range, a zero step, a value that is not a number, or more than k_max_sweep_points values.
GridAxis parse_grid_values(const std::string& field, const std::string& spec);
// "FIELD=VALUES", as --grid takes it.
GridAxis parse_grid_arg(const std::string& arg);

class SweepGrid {
public:
    SweepGrid() = default;
    // Checks the axes against `base`: at most two numeric and one categorical axis, no field twice,
    // each field a setting the configuration has (numeric axes: a number or `none` there), at most
    // k_max_sweep_points points. Throws ConfigError naming the problem.
    SweepGrid(std::vector<GridAxis> axes, const SessionConfig& base);

    const std::vector<GridAxis>& axes() const { return m_axes; }
    std::size_t size() const { return m_size; }
    // Index of each axis's value at point `point`; the last axis varies fastest.
    std::vector<std::size_t> coordinates(std::size_t point) const;
    // The --set assignments of a point, the categorical one first (a new scaler.preset brings all
    // its values, so it must come before the numeric scaler fields it is combined with).
    std::vector<std::string> assignments(std::size_t point) const;
    // base with the point's assignments applied and validated; ConfigError names the point.
    SessionConfig point_config(const SessionConfig& base, std::size_t point) const;

private:
    std::vector<GridAxis> m_axes;
    std::size_t m_size = 0;
};

}  // namespace mpx
