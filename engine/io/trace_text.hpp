// The small text pieces trace.cpp and trace_logs.cpp share when they read a file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/memory_budget.hpp"
#include "engine/io/trace.hpp"

namespace mpx::trace_detail {

// A ConfigError naming the file and line: "trace.csv:12: what".
[[noreturn]] void bad(const std::string& name, int line, const std::string& what);
// A number as the trace writes it ("nan", "inf" and decimal or hex floats); nullopt otherwise.
std::optional<double> number(std::string_view s);


// Before a trace grows to `steps`: within k_max_trace_steps and half the usable memory.
class StepBudget {
public:
    StepBudget() : m_limit(std::min<std::uint64_t>(k_max_trace_steps, usable_memory() / 2 / k_trace_step_bytes)) {}
    void check(std::uint64_t steps, const std::string& name, int line) const {
        if (steps > m_limit)
            bad(name, line, "the trace would hold " + std::to_string(steps) + " steps (" +
                                byte_size(saturating_mul(steps, k_trace_step_bytes)) + "), more than the " +
                                std::to_string(m_limit) + " (" + byte_size(m_limit * k_trace_step_bytes) +
                                ") a trace may hold" + (m_limit < k_max_trace_steps ? " in this process's memory" : "") +
                                "; cut the log or trace to the steps that matter");
    }

private:
    std::uint64_t m_limit;
};

}  // namespace mpx::trace_detail
