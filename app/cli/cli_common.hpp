// Shared by mpx-cli's training commands: building a configuration from --config/--set and the
// shortcut flags, and choosing the backend for a device setting.
#pragma once

#include <string>
#include <vector>

#include "engine/session.hpp"

namespace mpx::cli {

struct ConfigFlags {
    std::string config = "default";
    std::vector<std::string> sets;
    std::string precision, scaler, model, dataset;
    long long steps = 0;
    long long seed = -1;
    std::string device;
};
// Applies the flags in a fixed order: preset, then shortcuts, then --set (the most specific wins).
SessionConfig build_config(const ConfigFlags& f);
// The backend factory for cfg.device, and the device's name in words. Throws DeviceError when
// "cuda" is asked for but cannot be used; "auto" falls back to the CPU and says why in `note`.
BackendFactory backend_for(const std::string& device, std::string& device_name, std::string& note);

}  // namespace mpx::cli

namespace CLI {
class App;
}
namespace mpx::cli {
void add_config_flags(CLI::App* cmd, ConfigFlags& f);
}
