// What the CUDA runtime can see: the GPU's name and capability, or why no GPU can be used.
// Rule: never throws for a missing device or driver; the caller falls back to the CPU backend.
#pragma once

#include <cstddef>
#include <string>

namespace mpx::cuda {

struct DeviceProbe {
    bool usable = false;
    std::string name;          // e.g. "NVIDIA H100 80GB HBM3"
    int major = 0, minor = 0;  // compute capability
    std::size_t total_bytes = 0, free_bytes = 0;
    std::string reason;        // why not usable: no driver, no device, ...
};

DeviceProbe probe_device();

}  // namespace mpx::cuda
