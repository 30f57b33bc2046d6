// Error texts of the CUDA backend (check.hpp).
#include "cuda/check.hpp"

#include <cublas_v2.h>

#include <cstdio>
#include <string>

namespace mpx::cuda {
namespace {

std::string gib(std::size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB",
                  static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

std::string where(const char* expr, const char* file, int line) {
    return std::string(" (") + expr + " at " + file + ":" + std::to_string(line) + ")";
}

}  // namespace

DeviceError out_of_memory(std::size_t requested) {
    std::size_t free = 0, total = 0;
    std::string free_text = "free memory unknown";
    if (cudaMemGetInfo(&free, &total) == cudaSuccess)
        free_text = gib(free) + " of " + gib(total) + " free";
    cudaGetLastError();  // an allocation failure is not sticky: clear it so the next call is clean
    const std::string asked = requested == 0 ? std::string()
                                             : "asked for " + gib(requested) + " (" +
                                                   std::to_string(requested) + " bytes), ";
    return DeviceError("out of GPU memory: " + asked + free_text +
                       "; lower the batch size or the layer widths, or train on the CPU backend "
                       "(--device cpu)");
}

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
    if (err == cudaErrorMemoryAllocation) {
        DeviceError e = out_of_memory(0);
        throw DeviceError(std::string(e.what()) + where(expr, file, line));
    }
    cudaGetLastError();  // clear a non-sticky error; a sticky one (illegal address) stays
    throw DeviceError(std::string("CUDA error: ") + cudaGetErrorName(err) + ": " +
                      cudaGetErrorString(err) + where(expr, file, line));
}

[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* expr, const char* file,
                                     int line) {
    throw DeviceError(std::string("cuBLAS error: ") + cublasGetStatusName(st) + ": " +
                      cublasGetStatusString(st) + where(expr, file, line));
}

void* device_malloc(std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) throw out_of_memory(bytes);
    if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__);
    return p;
}

}  // namespace mpx::cuda
