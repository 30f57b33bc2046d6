// The CUDA backend's kernels, then their launchers. Each kernel maps threads onto an MPX_HD
// function of kernel_math.cuh (the arithmetic the CPU twin does, in its order) and adds what its
// rounding did to a device Counts with one atomic per field per block. Rule: compiled with
// --fmad=false (see cuda/CMakeLists.txt): a fused multiply-add rounds once where the CPU rounds
// twice.
#include "cuda/kernels.hpp"

#include <algorithm>

#include "cuda/check.hpp"

namespace mpx::cuda {
namespace {

using namespace mpx::dev;

constexpr int k_threads = 256;      // every kernel: full warps, the reductions below rely on it
constexpr int k_max_blocks = 4096;  // grid-stride loops above this
constexpr int k_warps = k_threads / 32;
constexpr int k_fields = sizeof(Counts) / sizeof(unsigned long long);
static_assert(sizeof(Counts) == k_fields * sizeof(unsigned long long),
              "Counts: 64-bit fields only");

int blocks_for(std::size_t n) {
    return static_cast<int>(std::min<std::size_t>((n + k_threads - 1) / k_threads, k_max_blocks));
}

__device__ std::size_t first_index() { return std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ std::size_t grid_stride() { return std::size_t{gridDim.x} * blockDim.x; }

// Block reduction of every thread's counts, then one atomicAdd per non-zero field. Integer sums:
// the result does not depend on the order blocks finish in. Every thread of the block calls it.
__device__ void add_counts(const Counts& mine, Counts* out) {
    __shared__ unsigned long long warp_sums[k_fields][k_warps];
    const auto* v = reinterpret_cast<const unsigned long long*>(&mine);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int f = 0; f < k_fields; ++f) {
        unsigned long long s = v[f];
        for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
        if (lane == 0) warp_sums[f][warp] = s;
    }
    __syncthreads();
    if (out && threadIdx.x < k_fields) {
        unsigned long long s = 0;
        for (int w = 0; w < k_warps; ++w) s += warp_sums[threadIdx.x][w];
        if (s) atomicAdd(reinterpret_cast<unsigned long long*>(out) + threadIdx.x, s);
    }
}

// ---- element-wise: dst[i] = value(i) rounded into df, counted ----------------------------------

template <class Value>
__global__ void k_store(Value value, Format df, void* dst, std::size_t n, Counts* counts) {
    const TallyEdges edges = tally_edges(df);
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        const float v = value(i);
        tally(edges, v, store_value(df, dst, i, v), c);
    }
    add_counts(c, counts);
}

template <class Value>
void launch_store(Value value, Format df, void* dst, std::size_t n, Counts* counts,
                  cudaStream_t s) {
    if (n == 0) return;
    k_store<<<blocks_for(n), k_threads, 0, s>>>(value, df, dst, n, counts);
    CUDA_CHECK(cudaGetLastError());
}

// The values k_store writes, one functor per op (plain structs: no extended lambdas needed).
struct FromFloat {
    const float* src;
    __device__ float operator()(std::size_t i) const { return src[i]; }
};
struct Converted {  // decode, then (GEMM operands) round to the compute format
    const void* src;
    Format sf, round_to;
    __device__ float operator()(std::size_t i) const {
        const float v = load_value(sf, src, i);
        return round_to == Format::fp32 ? v : round_value(round_to, v);
    }
};
struct Constant {
    float value;
    __device__ float operator()(std::size_t) const { return value; }
};
struct Scaled {
    const void* t;
    Format f;
    float factor;
    __device__ float operator()(std::size_t i) const { return load_value(f, t, i) * factor; }
};
struct BiasAdded {  // acc (rows, cols) + bias (cols); no bias: the value untouched (−0 stays −0)
    const float* acc;
    const void* bias;
    Format bf;
    int cols;
    __device__ float operator()(std::size_t i) const {
        return bias ? acc[i] + load_value(bf, bias, i % cols) : acc[i];
    }
};
struct Activated {
    Act a;
    const void* z;
    Format zf;
    __device__ float operator()(std::size_t i) const {
        return act_forward(a, load_value(zf, z, i));
    }
};
struct ActivationGrad {
    Act a;
    const void* z;
    Format zf;
    const void* dh;
    Format dhf;
    __device__ float operator()(std::size_t i) const {
        return act_backward(a, load_value(zf, z, i), load_value(dhf, dh, i));
    }
};
struct Dropped {
    const void* h;
    Format f;
    float p, keep;
    std::uint64_t seed;
    __device__ float operator()(std::size_t i) const {
        return dropout_value(load_value(f, h, i), p, keep, seed, i);
    }
};
struct LayerNormed {
    const void* x;
    Format xf;
    const void* gamma;
    Format gf;
    const void* beta;
    Format bf;
    const float *mean, *rstd;
    int D;
    __device__ float operator()(std::size_t i) const {
        const std::size_t r = i / D, c = i % D;
        return layernorm_value(load_value(xf, x, i), mean[r], rstd[r], load_value(gf, gamma, c),
                               load_value(bf, beta, c));
    }
};
struct LayerNormDx {
    const void* x;
    Format xf;
    const void* gamma;
    Format gf;
    const void* dy;
    Format dyf;
    const float *mean, *rstd, *row_sums;  // row_sums: (rows) Σ dy·γ, then (rows) Σ dy·γ·x̂
    int rows, D;
    __device__ float operator()(std::size_t i) const {
        const std::size_t r = i / D, c = i % D;
        const float inv_d = 1.0f / static_cast<float>(D);
        return layernorm_dx(load_value(xf, x, i), load_value(dyf, dy, i), load_value(gf, gamma, c),
                            mean[r], rstd[r], inv_d, row_sums[r], row_sums[rows + r]);
    }
};
struct MseGrad {  // side output: the squared error of element i
    const void* pred;
    Format pf;
    const void* target;
    Format tf;
    float n, scale;
    float* squared;
    __device__ float operator()(std::size_t i) const {
        return mse_grad(load_value(pf, pred, i), load_value(tf, target, i), n, scale, squared[i]);
    }
};

// ---- other kernels -----------------------------------------------------------------------------

__global__ void k_noop() {}

__global__ void k_decode(const void* src, Format f, float* dst, std::size_t n) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = load_value(f, src, i);
}

__global__ void k_accumulate(const float* values, Format through, bool add, void* dst, Format df,
                             std::size_t n, Counts* counts) {
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride())
        accumulate_element(values[i], through, add, df, dst, i, c);
    add_counts(c, counts);
}

// One thread per column: the sums run down the rows in the CPU's order.
__global__ void k_column_sums(const void* src, Format f, int rows, int cols, int pairwise_cols,
                              float* out) {
    for (std::size_t c = first_index(); c < static_cast<std::size_t>(cols); c += grid_stride())
        out[c] = column_sum(f, src, rows, cols, static_cast<int>(c), pairwise_cols);
}

// One thread per row: the CPU's sequential row sums, bit for bit (a warp per row would be faster
// for wide rows and no longer equal; the toy widths here are a few hundred at most).
__global__ void k_layernorm_stats(const void* x, Format xf, int rows, int D, float* mean,
                                  float* rstd) {
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride())
        layernorm_row_stats(xf, x, r, D, mean[r], rstd[r]);
}

__global__ void k_layernorm_row_sums(const void* x, Format xf, const void* gamma, Format gf,
                                     const void* dy, Format dyf, const float* mean,
                                     const float* rstd, int rows, int D, float* row_sums) {
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride())
        layernorm_row_sums(xf, x, gf, gamma, dyf, dy, r, D, mean[r], rstd[r], row_sums[r],
                           row_sums[rows + r]);
}

__global__ void k_layernorm_columns(const void* x, Format xf, const void* dy, Format dyf,
                                    const float* mean, const float* rstd, int rows, int D,
                                    float* dgamma, float* dbeta) {
    for (std::size_t c = first_index(); c < static_cast<std::size_t>(D); c += grid_stride())
        layernorm_column_sums(xf, x, dyf, dy, mean, rstd, rows, D, static_cast<int>(c), dgamma[c],
                              dbeta[c]);
}

__global__ void k_softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C,
                               float inv_b, float scale, float* row_loss, void* dlogits, Format df,
                               Counts* counts) {
    const TallyEdges edges = tally_edges(df);
    Counts c;
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride())
        row_loss[r] =
            softmax_xent_row(lf, logits, C, r, labels[r], inv_b, scale, df, dlogits, edges, c);
    add_counts(c, counts);
}

__global__ void k_accuracy(const void* logits, Format lf, const int* labels, int rows, int C,
                           Counts* counts) {
    Counts c;
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride())
        if (argmax_row(lf, logits, C, r) == labels[r]) ++c.hits;
    add_counts(c, counts);
}

__global__ void k_unscale_check(const void* grad, Format gf, float inv_scale, float* out,
                                std::size_t n, double* block_sums, Counts* counts) {
    __shared__ double warp_ss[k_warps];
    Counts c;
    double ss = 0.0;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        const float v = load_value(gf, grad, i) * inv_scale;
        out[i] = v;  // out may be grad itself (FP32 gradients are unscaled in place)
        if (!is_finite(v)) ++c.bad;
        ss += static_cast<double>(v) * v;
    }
    for (int off = 16; off > 0; off /= 2) ss += __shfl_down_sync(0xffffffffu, ss, off);
    if (threadIdx.x % 32 == 0) warp_ss[threadIdx.x / 32] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < k_warps; ++w) t += warp_ss[w];
        block_sums[blockIdx.x] = t;
    }
    add_counts(c, counts);
}

__global__ void k_optimizer(OptConsts s, const void* grad, Format gf, float* master, void* working,
                            Format wf, float* state1, float* state2, std::size_t n,
                            Counts* counts) {
    const TallyEdges edges = tally_edges(wf);
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        float w = master ? master[i] : load_value(wf, working, i);
        float m1 = state1[i];
        float m2 = state2 ? state2[i] : 0.0f;
        const bool moved = optimizer_element(s, load_value(gf, grad, i), w, m1, m2);
        state1[i] = m1;
        if (state2) state2[i] = m2;
        optimizer_write_back(moved, w, master, wf, working, i, edges, c);
    }
    add_counts(c, counts);
}

void check_launch() { CUDA_CHECK(cudaGetLastError()); }

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

cudaError_t probe_kernel_image(cudaStream_t stream) {
    k_noop<<<1, 1, 0, stream>>>();
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    return cudaStreamSynchronize(stream);
}

void encode(const float* src, Format f, void* dst, std::size_t n, Counts* counts,
            cudaStream_t stream) {
    launch_store(FromFloat{src}, f, dst, n, counts, stream);
}

void decode(const void* src, Format f, float* dst, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    k_decode<<<blocks_for(n), k_threads, 0, stream>>>(src, f, dst, n);
    check_launch();
}

void convert(const void* src, Format sf, Format round_to, void* dst, Format df, std::size_t n,
             Counts* counts, cudaStream_t stream) {
    launch_store(Converted{src, sf, round_to}, df, dst, n, counts, stream);
}

void fill(void* dst, Format f, float value, std::size_t n, cudaStream_t stream) {
    launch_store(Constant{value}, f, dst, n, nullptr, stream);
}

void scale(void* t, Format f, float factor, std::size_t n, cudaStream_t stream) {
    launch_store(Scaled{t, f, factor}, f, t, n, nullptr, stream);
}

void bias_store(const float* acc, const void* bias, Format bf, void* y, Format yf, int rows,
                int cols, Counts* counts, cudaStream_t stream) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    launch_store(BiasAdded{acc, bias, bf, cols}, yf, y, n, counts, stream);
}

void accumulate(const float* values, Format through, bool add, void* dst, Format df, std::size_t n,
                Counts* counts, cudaStream_t stream) {
    if (n == 0) return;
    k_accumulate<<<blocks_for(n), k_threads, 0, stream>>>(values, through, add, dst, df, n, counts);
    check_launch();
}

void column_sums(const void* src, Format f, int rows, int cols, int pairwise_cols, float* out,
                 cudaStream_t stream) {
    if (cols == 0) return;
    k_column_sums<<<blocks_for(static_cast<std::size_t>(cols)), k_threads, 0, stream>>>(
        src, f, rows, cols, pairwise_cols, out);
    check_launch();
}

void activation_forward(Act a, const void* z, Format zf, void* h, Format hf, std::size_t n,
                        Counts* counts, cudaStream_t stream) {
    launch_store(Activated{a, z, zf}, hf, h, n, counts, stream);
}

void activation_backward(Act a, const void* z, Format zf, const void* dh, Format dhf, void* dz,
                         Format dzf, std::size_t n, Counts* counts, cudaStream_t stream) {
    launch_store(ActivationGrad{a, z, zf, dh, dhf}, dzf, dz, n, counts, stream);
}

void layernorm_forward(const void* x, Format xf, const void* gamma, Format gf, const void* beta,
                       Format bf, void* y, Format yf, float* mean, float* rstd, int rows, int D,
                       Counts* counts, cudaStream_t stream) {
    if (rows == 0 || D == 0) return;
    k_layernorm_stats<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
        x, xf, rows, D, mean, rstd);
    check_launch();
    launch_store(LayerNormed{x, xf, gamma, gf, beta, bf, mean, rstd, D}, yf, y,
                 static_cast<std::size_t>(rows) * D, counts, stream);
}

void layernorm_backward(const void* x, Format xf, const void* gamma, Format gf, const float* mean,
                        const float* rstd, const void* dy, Format dyf, void* dx, Format dxf,
                        float* dgamma, float* dbeta, float* row_sums, int rows, int D,
                        Counts* counts, cudaStream_t stream) {
    if (rows == 0 || D == 0) return;
    k_layernorm_row_sums<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
        x, xf, gamma, gf, dy, dyf, mean, rstd, rows, D, row_sums);
    check_launch();
    launch_store(LayerNormDx{x, xf, gamma, gf, dy, dyf, mean, rstd, row_sums, rows, D}, dxf, dx,
                 static_cast<std::size_t>(rows) * D, counts, stream);
    k_layernorm_columns<<<blocks_for(static_cast<std::size_t>(D)), k_threads, 0, stream>>>(
        x, xf, dy, dyf, mean, rstd, rows, D, dgamma, dbeta);
    check_launch();
}

void dropout(void* h, Format f, float p, float keep, std::uint64_t seed, std::size_t n,
             Counts* counts, cudaStream_t stream) {
    launch_store(Dropped{h, f, p, keep, seed}, f, h, n, counts, stream);
}

void softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C, float inv_b,
                  float scale, float* row_loss, void* dlogits, Format df, Counts* counts,
                  cudaStream_t stream) {
    if (rows == 0) return;
    k_softmax_xent<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
        logits, lf, labels, rows, C, inv_b, scale, row_loss, dlogits, df, counts);
    check_launch();
}

void mse(const void* pred, Format pf, const void* target, Format tf, std::size_t n, float scale,
         float* squared, void* dpred, Format df, Counts* counts, cudaStream_t stream) {
    launch_store(MseGrad{pred, pf, target, tf, static_cast<float>(n), scale, squared}, df, dpred, n,
                 counts, stream);
}

void accuracy(const void* logits, Format lf, const int* labels, int rows, int C, Counts* counts,
              cudaStream_t stream) {
    if (rows == 0) return;
    k_accuracy<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
        logits, lf, labels, rows, C, counts);
    check_launch();
}

int unscale_blocks(std::size_t n) { return std::max(1, blocks_for(n)); }

void unscale_check(const void* grad, Format gf, float inv_scale, float* out, std::size_t n,
                   double* block_sums, Counts* counts, cudaStream_t stream) {
    // Launched even for n == 0 so block_sums[0] is written (0.0).
    k_unscale_check<<<unscale_blocks(n), k_threads, 0, stream>>>(grad, gf, inv_scale, out, n,
                                                                 block_sums, counts);
    check_launch();
}

void optimizer_update(const OptConsts& s, const void* grad, Format gf, float* master, void* working,
                      Format wf, float* state1, float* state2, std::size_t n, Counts* counts,
                      cudaStream_t stream) {
    if (n == 0) return;
    k_optimizer<<<blocks_for(n), k_threads, 0, stream>>>(s, grad, gf, master, working, wf, state1,
                                                         state2, n, counts);
    check_launch();
}

}  // namespace mpx::cuda
