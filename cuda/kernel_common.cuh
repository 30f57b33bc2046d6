// What every kernel file of the CUDA backend shares: launch geometry, the block reduction that adds a
// block's counts to the step record (one atomic per field per block), and the block's exponent
// histogram. Included by the .cu files only (nvcc); everything is internal to each translation unit.
#pragma once

#include <algorithm>
#include <cstddef>

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"

namespace mpx::cuda {
namespace {

using namespace mpx::core;

constexpr int k_threads = 256;      // every kernel: full warps, the reductions below rely on it
constexpr int k_max_blocks = 4096;  // grid-stride loops above this
constexpr int k_warps = k_threads / 32;
constexpr int k_fields = sizeof(Counts) / sizeof(unsigned long long);
static_assert(sizeof(Counts) == k_fields * sizeof(unsigned long long),
              "Counts: 64-bit fields only");
// Every field is a sum but the last three, Counts::overflow_max, compensation_max and stored_max, maxima.
constexpr int k_max_field = k_fields - 3;
static_assert(offsetof(Counts, overflow_max) == k_max_field * sizeof(unsigned long long),
              "Counts: overflow_max, compensation_max and stored_max are the last fields");
__device__ unsigned long long combine(int field, unsigned long long a, unsigned long long b) {
    return field >= k_max_field ? (a > b ? a : b) : a + b;
}

int blocks_for(std::size_t n) {
    return static_cast<int>(std::min<std::size_t>((n + k_threads - 1) / k_threads, k_max_blocks));
}

__device__ std::size_t first_index() { return std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ std::size_t grid_stride() { return std::size_t{gridDim.x} * blockDim.x; }

// Block reduction of every thread's counts, then one atomic per non-zero field (atomicAdd, and
// atomicMax for the maxima). Integer sums and maxima: the result does not depend on the order
// blocks finish in. Every thread of the block calls it.
__device__ void add_counts(const Counts& mine, Counts* out) {
    __shared__ unsigned long long warp_sums[k_fields][k_warps];
    const auto* v = reinterpret_cast<const unsigned long long*>(&mine);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int f = 0; f < k_fields; ++f) {
        unsigned long long s = v[f];
        for (int off = 16; off > 0; off /= 2) s = combine(f, s, __shfl_down_sync(0xffffffffu, s, off));
        if (lane == 0) warp_sums[f][warp] = s;
    }
    __syncthreads();
    if (out && threadIdx.x < k_fields) {
        unsigned long long s = 0;
        for (int w = 0; w < k_warps; ++w) s = combine(threadIdx.x, s, warp_sums[threadIdx.x][w]);
        auto* field = reinterpret_cast<unsigned long long*>(out) + threadIdx.x;
        if (s) threadIdx.x >= k_max_field ? atomicMax(field, s) : atomicAdd(field, s);
    }
}

// A block's exponent histogram (core::bin_slot, the CPU's binning) in shared memory, added to the
// step's bins with one atomic per non-zero slot. Inactive (no bins: not a collecting step) it costs
// one branch per value. `bins` is uniform across the grid, so the barriers are too.
struct BlockBins {
    unsigned long long* shared;  // k_slots, declared by the kernel
    Bins* out;
    __device__ void begin() {
        if (!out) return;
        for (int i = threadIdx.x; i < k_slots; i += blockDim.x) shared[i] = 0;
        __syncthreads();
    }
    __device__ void add_slot(int slot) {
        if (out) atomicAdd(&shared[slot], 1ull);
    }
    __device__ void add(float v) { add_slot(bin_slot(v)); }
    __device__ void end() {
        if (!out) return;
        __syncthreads();
        for (int i = threadIdx.x; i < k_slots; i += blockDim.x)
            if (shared[i]) atomicAdd(&out->n[i], shared[i]);
    }
};
#define MPX_BLOCK_BINS(name, out)                        \
    __shared__ unsigned long long name##_slots[k_slots]; \
    BlockBins name{name##_slots, out};                   \
    name.begin()

void check_launch() { CUDA_CHECK(cudaGetLastError()); }

}  // namespace
}  // namespace mpx::cuda
