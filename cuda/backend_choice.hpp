// The backend a device setting gets in this build: the GPU's where the choice fell on a GPU and the
// build has the CUDA backend, else the CPU's. Rule: the one place the device choice meets the build's
// MPX_HAVE_CUDA; header-only and compiled in every build (without CUDA it can only pick the CPU), so
// the CLI and the app share it.
#pragma once

#include <string>
#include <string_view>

#include "engine/compute/backend.hpp"
#include "engine/compute/backend_factory.hpp"
#include "engine/config/device_choice.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/compare/self_check.hpp"
#include "cuda/cuda_backend.hpp"
#endif

namespace mpx {

struct BackendChoice {
    DeviceChoice device;    // what was chosen and why (name, fallback, an unused GPU)
    BackendFactory factory; // one backend per run
};

// `setting` is "cpu", "cuda" or "auto"; `field` names it in a DeviceError ("--device", "Device").
inline BackendChoice choose_backend(std::string_view setting, std::string_view field) {
#ifdef MPX_HAVE_CUDA
    const GpuProbe gpu = cuda::checked_gpu();  // the probe, then the startup self-check
#else
    const GpuProbe gpu = probe_without_cuda();
#endif
    BackendChoice out{choose_device(setting, gpu, field), {}};
#ifdef MPX_HAVE_CUDA
    if (out.device.gpu) {
        out.factory = [] { return cuda::make_cuda_backend(); };
        return out;
    }
#endif
    out.factory = [] { return make_cpu_backend(); };
    return out;
}

}  // namespace mpx
