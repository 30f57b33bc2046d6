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
    std::vector<std::string> sets;
    // Text values go in as JSON strings, so quotes or digits in them reach the setting as typed.
    const auto text = [&](const std::optional<std::string>& value, const char* flag, const char* key,
                          const char* example) {
        if (!value) return;
        if (value->find_first_not_of(" ,") == std::string::npos)
            throw ConfigError(flag, std::string("must not be empty, e.g. ") + flag + " " + example);
        sets.push_back(std::string(key) + "=" + nlohmann::json(*value).dump());
    };
    text(f.precision, "--precision", "runs", "fp32,amp-fp16");
    text(f.scaler, "--scaler", "scaler.preset", "pytorch");
    text(f.model, "--model", "model.sizes", "2-64-64-2");
    text(f.dataset, "--dataset", "data.kind", "spirals");
    if (f.steps != ConfigFlags::steps_not_given) {
        if (f.steps < 1 || f.steps > 100'000'000)
            throw ConfigError("--steps", "must be between 1 and 100,000,000 (got " + std::to_string(f.steps) + ")");
        sets.push_back("steps=" + std::to_string(f.steps));
    }
    if (f.seed) {
        if (*f.seed < 0) throw ConfigError("--seed", "must be at least 0 (got " + std::to_string(*f.seed) + ")");
        sets.push_back("seed=" + std::to_string(*f.seed));
        sets.push_back("data.seed=" + std::to_string(*f.seed));
    }
    text(f.device, "--device", "device", "cpu");
    sets.insert(sets.end(), f.sets.begin(), f.sets.end());
    apply_overrides(c, sets);
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
