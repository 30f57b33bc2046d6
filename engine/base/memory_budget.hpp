// What a request may allocate, estimated before anything is allocated. Rule: a request whose
// estimate passes half of the memory this process may use is refused up front, naming the setting
// to lower and the size the request would take; it is never left to end as std::bad_alloc (or the
// kernel's OOM killer) minutes later.
#pragma once

#include <cstdint>
#include <string>

namespace mpx {

// Physical memory, or the address-space limit (ulimit -v) where that is lower.
std::uint64_t usable_memory();

// "512 KiB", "1.4 GiB": a size for a message, in binary units with two significant digits at most
// one decimal.
std::string byte_size(std::uint64_t bytes);

// Throws ConfigError(field, "<what> needs <size>, more than half of the <size> this process may use;
// <fix>") where `need` (bytes; saturate, never wrap, when computing it) passes half of
// usable_memory().
void check_memory(std::uint64_t need, const std::string& field, const std::string& what, const std::string& fix);

// a * b, or UINT64_MAX where that overflows: for estimates that must not wrap to a small size.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b);

}  // namespace mpx
