// Device probe through the CUDA runtime API; every failure becomes a reason string.
#include "device.hpp"

#include <cuda_runtime_api.h>

namespace mpx::cuda {

DeviceProbe probe_device() {
    DeviceProbe p;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        p.reason = std::string("no usable CUDA driver or device (") + cudaGetErrorString(err) + ")";
        return p;
    }
    if (count == 0) {
        p.reason = "no CUDA device present";
        return p;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        p.reason = "could not read the properties of CUDA device 0";
        return p;
    }
    p.name = prop.name;
    p.major = prop.major;
    p.minor = prop.minor;
    if (cudaMemGetInfo(&p.free_bytes, &p.total_bytes) != cudaSuccess) {
        p.reason = "could not query the memory of CUDA device 0";
        return p;
    }
    p.usable = true;
    return p;
}

}  // namespace mpx::cuda
