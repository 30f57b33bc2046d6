// Which backend a device setting trains on ("cpu", "cuda", "auto"), and the reason when the CPU
// trains where a GPU was asked for. Rule: the caller probes the GPU (cuda/ is not the engine's) and
// this one function decides and explains, for the CLI and the app alike.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/base/enum_names.hpp"

namespace mpx {

enum class DeviceSetting { cpu, auto_, cuda };
constexpr EnumName<DeviceSetting> device_setting_names[] = {
    {DeviceSetting::cpu, "cpu"}, {DeviceSetting::auto_, "auto"}, {DeviceSetting::cuda, "cuda"}};
constexpr std::span<const EnumName<DeviceSetting>> names_of(DeviceSetting) { return device_setting_names; }

// What the caller found: cuda::probe_device() where the CUDA backend is built, else
// probe_without_cuda().
struct GpuProbe {
    bool usable = false;
    std::string name;    // the GPU's name, where one was found (usable or not)
    std::string reason;  // why it cannot be used
};
// A build without the CUDA backend: the GPU the NVIDIA driver reports, if any, and that this build
// cannot use it.
GpuProbe probe_without_cuda();

struct DeviceChoice {
    bool gpu = false;
    std::string name;       // "CPU (Eigen)" or the GPU's name
    std::string fallback;   // "auto" on the CPU: why ("training on the CPU: ...")
    std::string unused_gpu; // "cpu" where a GPU is there: what was found and how to use it
};
// Throws DeviceError for "cuda" when the GPU cannot be used; `flag` names the setting in the fix
// ("--device", "Device"). An unknown setting is a ConfigError.
DeviceChoice choose_device(std::string_view setting, const GpuProbe& gpu, std::string_view flag);

}  // namespace mpx
