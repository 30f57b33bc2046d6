// Configuration flags → SessionConfig, and device choice.
#include "cli_common.hpp"

#include "engine/error.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/device.hpp"
#endif

namespace mpx::cli {

SessionConfig build_config(const ConfigFlags& f) {
    SessionConfig c = load_config(f.config);
    if (!f.precision.empty()) apply_override(c, "runs=" + f.precision);
    if (!f.scaler.empty()) apply_override(c, "scaler.preset=\"" + f.scaler + "\"");
    if (!f.model.empty()) apply_override(c, "model.sizes=\"" + f.model + "\"");
    if (!f.dataset.empty()) apply_override(c, "data.kind=\"" + f.dataset + "\"");
    if (f.steps > 0) apply_override(c, "steps=" + std::to_string(f.steps));
    if (f.seed >= 0) {
        apply_override(c, "seed=" + std::to_string(f.seed));
        apply_override(c, "data.seed=" + std::to_string(f.seed));
    }
    if (!f.device.empty()) apply_override(c, "device=\"" + f.device + "\"");
    for (const auto& s : f.sets) apply_override(c, s);
    return c;
}

BackendFactory backend_for(const std::string& device, std::string& device_name, std::string& note) {
    const auto cpu = [] { return make_cpu_backend(); };
    if (device == "cpu") {
        device_name = "CPU (Eigen)";
        return cpu;
    }
#ifdef MPX_HAVE_CUDA
    const cuda::DeviceProbe p = cuda::probe_device();
    if (p.usable) {
        device_name = p.name;
        return [] { return cuda::make_cuda_backend(); };
    }
    const std::string why = p.reason;
#else
    const std::string why = "this build has no CUDA support (built without nvcc)";
#endif
    if (device == "cuda") throw DeviceError("cannot train on the GPU: " + why + "; use --device cpu");
    device_name = "CPU (Eigen)";
    note = "training on the CPU: " + why;
    return cpu;
}

}  // namespace mpx::cli
