// The memory categories every tensor is allocated under, and a run's byte totals per category
// (DESIGN.md, "Memory accounting"). Rule: a value type without Eigen, so records and the app's
// views can hold totals without compiling the backend.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace mpx {

// compensation: the Kahan buffers of runs whose write-back is kahan (engine/core/write_back.hpp);
// last, so the CSV's first six memory columns keep their order (its column comes after the others).
enum class MemCategory : std::uint8_t { weights, master, grads, optimizer, activations, workspace, compensation };
inline constexpr int k_mem_categories = 7;
std::string_view to_string(MemCategory c);

struct MemoryTotals {
    std::array<std::int64_t, k_mem_categories> bytes{};
    std::int64_t operator[](MemCategory c) const { return bytes[static_cast<int>(c)]; }
    std::int64_t total() const {
        std::int64_t t = 0;
        for (auto b : bytes) t += b;
        return t;
    }
};

}  // namespace mpx
