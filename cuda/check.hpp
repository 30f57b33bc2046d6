// CUDA and cuBLAS error checks. Rule: every failing call throws mpx::DeviceError naming the call,
// file:line and the library's own error text; nothing here exits or aborts. Out of memory gets a
// message with the request, the free memory and what to do.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "engine/base/error.hpp"

namespace mpx::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* expr, const char* file,
                                     int line);

// "out of GPU memory: asked for 3.2 GiB, 1.1 GiB of 79.1 GiB free; lower the batch size or the
// layer widths, or train on the CPU backend (--device cpu)". requested 0: not known.
DeviceError out_of_memory(std::size_t requested);

// cudaMalloc that throws out_of_memory (and leaves no error pending, so the backend stays usable).
void* device_malloc(std::size_t bytes);

}  // namespace mpx::cuda

#define CUDA_CHECK(expr)                                                        \
    do {                                                                        \
        const cudaError_t mpx_err_ = (expr);                                    \
        if (mpx_err_ != cudaSuccess)                                            \
            ::mpx::cuda::throw_cuda_error(mpx_err_, #expr, __FILE__, __LINE__); \
    } while (0)

#define CUBLAS_CHECK(expr)                                                       \
    do {                                                                         \
        const cublasStatus_t mpx_st_ = (expr);                                   \
        if (mpx_st_ != CUBLAS_STATUS_SUCCESS)                                    \
            ::mpx::cuda::throw_cublas_error(mpx_st_, #expr, __FILE__, __LINE__); \
    } while (0)
