// The one way mpx reads a file the user named (a configuration, a sidecar, a saved state).
// Rule: only a regular file is read, never more than `max_bytes`, and every message names the file
// and what it was wanted as; a FIFO, a device or a directory is refused without blocking on it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace mpx {

inline constexpr std::size_t k_max_config_bytes = 16u << 20;  // presets are a few KiB
inline constexpr std::size_t k_max_state_bytes = 1u << 30;    // a 784-512-10 state is ~40 MiB of text

// The whole of `path`. `what` says what the file is for ("the configuration file"); it starts
// every message: "the configuration file 'x.json' is a directory; give a JSON file". Throws IoError.
std::string read_input_file(const std::filesystem::path& path, const std::string& what,
                            std::size_t max_bytes = k_max_config_bytes);

}  // namespace mpx
