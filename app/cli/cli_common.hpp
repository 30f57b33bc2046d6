// Shared by mpx-cli's training commands: building a configuration from --config/--set and the
// shortcut flags, and choosing the backend for a device setting.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/export.hpp"
#include "engine/run/session.hpp"

namespace mpx::cli {

// A shortcut flag that was given is applied even when its value is empty or out of range, so
// that build_config can reject it (naming the flag) instead of silently keeping the preset's value.
struct ConfigFlags {
    static constexpr long long steps_not_given = std::numeric_limits<long long>::min();
    std::string config = "default";
    std::vector<std::string> sets;
    std::optional<std::string> precision, scaler, model, dataset;
    long long steps = steps_not_given;  // a plain number: `run --resume` compares it with the saved steps
    std::optional<std::string> seed;  // as typed: parse_seed reads it whole, never clamped
    std::optional<std::string> device;
};
// Applies the flags in a fixed order: preset, then shortcuts, then --set (the most specific wins),
// and validates the result once. A shortcut flag with an impossible value is a ConfigError naming
// the flag ("--steps: ...").
SessionConfig build_config(const ConfigFlags& f);
// The --config file as an input that no output may replace (an empty path for a preset's name).
NamedPath config_input(const ConfigFlags& f);
// The backend factory for cfg.device, and the device's name in words. Throws DeviceError when
// "cuda" is asked for but cannot be used; "auto" falls back to the CPU and says why in `note`.
BackendFactory backend_for(const std::string& device, std::string& device_name, std::string& note);

}  // namespace mpx::cli

namespace CLI {
class App;
}
namespace mpx::cli {
void add_config_flags(CLI::App* cmd, ConfigFlags& f);
// --threads N, every command's (engine/base/parallel.hpp's set_thread_count: 0 one per core, at
// most k_max_thread_count); `help` where the threads do something else (a sweep's workers).
void add_threads_flag(CLI::App* cmd, unsigned& threads, const std::string& help = {});

// A seed as typed: a whole number from 0 to 2^64 - 1, the engine's seeds' range. Anything else is a
// ConfigError naming `flag`, never clamped (CLI11 reads 2^63 into a long long as 2^63 - 1).
std::uint64_t parse_seed(const std::string& text, const char* flag);
// One rule for every command (issue 41, class 7): a flag either changes the result or is refused.
// Each option given to `cmd` whose name is not in `used` is a ConfigError naming it: "FLAG: does
// nothing <mode>; drop it".
void refuse_unused(const CLI::App& cmd, std::initializer_list<std::string_view> used, const std::string& mode);
}
