// Memory estimates against what this process may use (engine/base/memory_budget.hpp).
#include "engine/base/memory_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sys/resource.h>
#include <unistd.h>

#include "engine/base/error.hpp"

namespace mpx {

std::uint64_t usable_memory() {
    std::uint64_t bytes = std::numeric_limits<std::uint64_t>::max();
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
    struct rlimit lim {};
    if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        bytes = std::min<std::uint64_t>(bytes, lim.rlim_cur);
    return bytes;
}

std::string byte_size(std::uint64_t bytes) {
    static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    std::size_t u = 0;
    while (v >= 1023.5 && u + 1 < std::size(units)) v /= 1024.0, ++u;  // never "1024 MiB"
    char buf[32];
    if (u == 0) std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    else std::snprintf(buf, sizeof buf, v < 10.0 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

void check_memory(std::uint64_t need, const std::string& field, const std::string& what, const std::string& fix) {
    const std::uint64_t have = usable_memory();
    if (need > have / 2)
        throw ConfigError(field, what + " needs " + byte_size(need) + ", more than half of the " + byte_size(have) +
                                     " this process may use; " + fix);
}

}  // namespace mpx
