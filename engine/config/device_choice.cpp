// The device decision and its explanations (DESIGN.md: "the program runs (CPU backend) where no GPU
// or driver is present, saying so in the status bar").
#include "engine/config/device_choice.hpp"

#include <filesystem>
#include <fstream>

#include "engine/base/error.hpp"

namespace mpx {
namespace {
// The first "Model:" line under /proc/driver/nvidia/gpus/*/information.
std::string driver_gpu_name() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
        std::ifstream in(e.path() / "information");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("Model:", 0) == 0) {
                const auto start = line.find_first_not_of(" \t", 6);
                return start == std::string::npos ? std::string() : line.substr(start);
            }
    }
    return {};
}
}  // namespace

GpuProbe probe_without_cuda() {
    GpuProbe p;
    p.name = driver_gpu_name();
    p.reason = p.name.empty() ? "this build has no CUDA backend (built without nvcc)"
                              : "GPU " + p.name + " found, but this build has no CUDA backend (built without nvcc)";
    return p;
}

DeviceChoice choose_device(std::string_view setting, const GpuProbe& gpu, std::string_view flag) {
    const auto s = enum_parse<DeviceSetting>(setting);
    if (!s) throw ConfigError("device", "must be one of " + enum_choices<DeviceSetting>());
    DeviceChoice c;
    c.name = "CPU (Eigen)";
    if (*s == DeviceSetting::cpu) {
        if (gpu.usable) c.unused_gpu = "GPU " + gpu.name + " available (set " + std::string(flag) + " to cuda or auto to use it)";
        else if (!gpu.name.empty()) c.unused_gpu = gpu.reason;
        return c;
    }
    if (gpu.usable) {
        c.gpu = true;
        c.name = gpu.name;
        return c;
    }
    if (*s == DeviceSetting::cuda)
        throw DeviceError("cannot train on the GPU: " + gpu.reason + "; set " + std::string(flag) + " to cpu");
    c.fallback = "training on the CPU: " + gpu.reason;
    return c;
}

}  // namespace mpx
