// MPX_HOST_DEVICE marks small functions compiled for both the CPU and the GPU (nvcc), so a kernel and its
// CPU twin share one definition of the arithmetic that must agree bit for bit.
#pragma once

#ifdef __CUDACC__
#define MPX_HOST_DEVICE __host__ __device__
#else
#define MPX_HOST_DEVICE
#endif
