// The CUDA backend's kernels, then their launchers. Each kernel maps threads onto the MPX_HOST_DEVICE
// functions of engine/core/op_math.hpp and engine/core/format_core.hpp (the arithmetic the CPU backend runs,
// in its order) and adds what its rounding did to a pass of the device step record with one atomic
// per field per block. Rule: compiled with
// --fmad=false (see cuda/CMakeLists.txt): a fused multiply-add rounds once where the CPU rounds
// twice.
#include "cuda/kernels.hpp"

#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/kernel_common.cuh"

namespace mpx::cuda {
namespace {

// ---- element-wise: dst[i] = value(i) rounded into df, counted ----------------------------------

template <class Value>
__global__ void k_store(Value value, Format df, void* dst, std::size_t n, Counts* counts,
                        Bins* bins) {
    const TallyEdges edges = tally_edges(df);
    MPX_BLOCK_BINS(hist, bins);
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        const float v = value(i);
        hist.add(v);
        tally(edges, v, store_value(df, dst, i, v), c);
    }
    hist.end();
    add_counts(c, counts);
}

template <class Value>
void launch_store(Value value, Format df, void* dst, std::size_t n, Sink sink, cudaStream_t s) {
    if (n == 0) return;
    k_store<<<blocks_for(n), k_threads, 0, s>>>(value, df, dst, n, sink.counts, sink.bins);
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
struct BiasAdded {  // acc (rows, cols) + bias (cols) rounded to `through` (core::bias_format); no bias: the value untouched (−0 stays −0)
    const float* acc;
    const void* bias;
    Format bf;
    Format through;
    int cols;
    __device__ float operator()(std::size_t i) const {
        if (!bias) return acc[i];
        const float b = load_value(bf, bias, i % cols);
        return acc[i] + (through == Format::fp32 ? b : round_value(through, b));
    }
};
struct Activated {
    Activation a;
    const void* z;
    Format zf;
    __device__ float operator()(std::size_t i) const {
        return act_forward(a, load_value(zf, z, i));
    }
};
struct ActivationGrad {
    Activation a;
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
        return layernorm_dx(load_value(xf, x, i), load_value(dyf, dy, i), load_value(gf, gamma, c),
                            mean[r], rstd[r], D, row_sums[r], row_sums[rows + r]);
    }
};
struct MseGrad {  // side output: the squared error of element i
    const void* pred;
    Format pf;
    const void* target;
    Format tf;
    float n;
    ScaleBy by;
    const ScalerState* scaler;  // by's scale, when it is the backend's
    float* squared;
    __device__ float operator()(std::size_t i) const {
        return mse_grad(load_value(pf, pred, i), load_value(tf, target, i), n, by.resolve(scaler),
                        squared[i]);
    }
};

// ---- other kernels -----------------------------------------------------------------------------

__global__ void k_noop() {}

__global__ void k_cast(const void* src, Format sf, Format compute, void* dst, Format df,
                       std::size_t n, Counts* counts, Bins* bins) {
    const TallyEdges edges = tally_edges(compute);
    MPX_BLOCK_BINS(hist, bins);
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        const float v = load_value(sf, src, i);
        hist.add(v);
        const float r = round_value(compute, v);
        tally(edges, v, r, c);
        store_value(df, dst, i, r);
    }
    hist.end();
    add_counts(c, counts);
}

__global__ void k_decode(const void* src, Format f, float* dst, std::size_t n) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = load_value(f, src, i);
}

__global__ void k_accumulate(const float* values, Format through, bool add, void* dst, Format df,
                             std::size_t n, Counts* counts, Bins* bins) {
    MPX_BLOCK_BINS(hist, bins);  // the GEMM's FP32 results, before their first rounding (as the CPU)
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        hist.add(values[i]);
        accumulate_element(values[i], through, add, df, dst, i, c);
    }
    hist.end();
    add_counts(c, counts);
}

// One thread per column: the sums run down the rows in order (core::column_sum).
__global__ void k_column_sums(const void* src, Format f, int rows, int cols, float* out) {
    for (std::size_t c = first_index(); c < static_cast<std::size_t>(cols); c += grid_stride())
        out[c] = column_sum(
            [&](int r) { return load_value(f, src, static_cast<std::size_t>(r) * cols + c); }, rows);
}

// One thread per row: the CPU's sequential row sums, bit for bit (a warp per row would be faster
// for wide rows and no longer equal; the toy widths here are a few hundred at most).
// Per-row kernels, tiled: a block loads R whole rows into shared memory with coalesced reads (all
// its threads), then thread t runs row t's function (engine/core/op_math.hpp) on the tile, in the
// CPU's order, so the bits are the thread-per-row kernels'; the softmax's gradients go back
// through the tile and are stored, counted and binned by all threads. Rows wider than the tile
// take the thread-per-row kernels below.
constexpr int k_tile_floats = 8192;  // 32 KiB of shared memory per block
// Rows per tile when each row needs `per_row` floats (0: one does not fit).
int tile_rows(std::size_t per_row) {
    if (per_row == 0 || per_row > static_cast<std::size_t>(k_tile_floats)) return 0;
    return static_cast<int>(std::min<std::size_t>(k_threads, k_tile_floats / per_row));
}
int blocks_for_tiles(int rows, int R) {
    return std::min((rows + R - 1) / R, k_max_blocks);
}
// Loads rows r0 … r0 + n_rows − 1 (of D values) from src into tile; every thread calls it.
__device__ void load_tile(float* tile, const void* src, Format f, long long r0, int n_rows, int D) {
    const std::size_t base = static_cast<std::size_t>(r0) * D, n = static_cast<std::size_t>(n_rows) * D;
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) tile[i] = load_value(f, src, base + i);
}

__global__ void k_layernorm_stats_tiled(const void* x, Format xf, int rows, int D, int R, float* mean,
                                        float* rstd) {
    __shared__ float tile[k_tile_floats];
    for (long long r0 = static_cast<long long>(blockIdx.x) * R; r0 < rows; r0 += static_cast<long long>(gridDim.x) * R) {
        const int n_rows = static_cast<int>(min(static_cast<long long>(R), rows - r0));
        load_tile(tile, x, xf, r0, n_rows, D);
        __syncthreads();
        if (static_cast<int>(threadIdx.x) < n_rows) {
            const float* row = tile + static_cast<std::size_t>(threadIdx.x) * D;
            const long long r = r0 + threadIdx.x;
            layernorm_row_stats([&](int c) { return row[c]; }, D, mean[r], rstd[r]);
        }
        __syncthreads();  // the tile is read before the next one overwrites it
    }
}

// x's and dy's rows side by side: R rows of x, then R rows of dy.
__global__ void k_layernorm_row_sums_tiled(const void* x, Format xf, const void* gamma, Format gf,
                                           const void* dy, Format dyf, const float* mean,
                                           const float* rstd, int rows, int D, int R, float* row_sums) {
    __shared__ float tile[k_tile_floats];
    for (long long r0 = static_cast<long long>(blockIdx.x) * R; r0 < rows; r0 += static_cast<long long>(gridDim.x) * R) {
        const int n_rows = static_cast<int>(min(static_cast<long long>(R), rows - r0));
        float* dys = tile + static_cast<std::size_t>(R) * D;
        load_tile(tile, x, xf, r0, n_rows, D);
        load_tile(dys, dy, dyf, r0, n_rows, D);
        __syncthreads();
        if (static_cast<int>(threadIdx.x) < n_rows) {
            const std::size_t o = static_cast<std::size_t>(threadIdx.x) * D;
            const long long r = r0 + threadIdx.x;
            layernorm_row_sums([&](int c) { return tile[o + c]; }, [&](int c) { return load_value(gf, gamma, c); },
                               [&](int c) { return dys[o + c]; }, D, mean[r], rstd[r], row_sums[r],
                               row_sums[rows + r]);
        }
        __syncthreads();
    }
}

// The row's gradients overwrite its logits in the tile (softmax_xent_row reads each logit before
// it writes that element's gradient, and none after: the CPU's in-place rule), then every thread
// stores, counts and bins them. dlogits may be the logits' storage: a tile is stored only after
// all of its rows were read, and tiles hold disjoint rows.
__global__ void k_softmax_xent_tiled(const void* logits, Format lf, const int* labels, int rows, int C,
                                     int R, float inv_b, ScaleBy by, const ScalerState* scaler,
                                     float* row_loss, void* dlogits, Format df, Counts* counts, Bins* bins) {
    __shared__ float tile[k_tile_floats];
    const float scale = by.resolve(scaler);
    const TallyEdges edges = tally_edges(df);
    MPX_BLOCK_BINS(hist, bins);
    Counts c;
    for (long long r0 = static_cast<long long>(blockIdx.x) * R; r0 < rows; r0 += static_cast<long long>(gridDim.x) * R) {
        const int n_rows = static_cast<int>(min(static_cast<long long>(R), rows - r0));
        load_tile(tile, logits, lf, r0, n_rows, C);
        __syncthreads();
        if (static_cast<int>(threadIdx.x) < n_rows) {
            float* row = tile + static_cast<std::size_t>(threadIdx.x) * C;
            const long long r = r0 + threadIdx.x;
            row_loss[r] = softmax_xent_row([&](int k) { return row[k]; }, C, labels[r], inv_b, scale,
                                           [&](int k, float v) { row[k] = v; });
        }
        __syncthreads();
        const std::size_t base = static_cast<std::size_t>(r0) * C, n = static_cast<std::size_t>(n_rows) * C;
        for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
            const float v = tile[i];
            hist.add(v);
            tally(edges, v, store_value(df, dlogits, base + i, v), c);
        }
        __syncthreads();
    }
    hist.end();
    add_counts(c, counts);
}

__global__ void k_layernorm_stats(const void* x, Format xf, int rows, int D, float* mean,
                                  float* rstd) {
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride()) {
        const std::size_t o = r * D;
        layernorm_row_stats([&](int c) { return load_value(xf, x, o + c); }, D, mean[r], rstd[r]);
    }
}

__global__ void k_layernorm_row_sums(const void* x, Format xf, const void* gamma, Format gf,
                                     const void* dy, Format dyf, const float* mean,
                                     const float* rstd, int rows, int D, float* row_sums) {
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride()) {
        const std::size_t o = r * D;
        layernorm_row_sums([&](int c) { return load_value(xf, x, o + c); },
                           [&](int c) { return load_value(gf, gamma, c); },
                           [&](int c) { return load_value(dyf, dy, o + c); }, D, mean[r], rstd[r],
                           row_sums[r], row_sums[rows + r]);
    }
}

__global__ void k_layernorm_columns(const void* x, Format xf, const void* dy, Format dyf,
                                    const float* mean, const float* rstd, int rows, int D,
                                    float* dgamma, float* dbeta) {
    for (std::size_t c = first_index(); c < static_cast<std::size_t>(D); c += grid_stride())
        layernorm_column_sums(
            [&](int r) { return load_value(xf, x, static_cast<std::size_t>(r) * D + c); },
            [&](int r) { return load_value(dyf, dy, static_cast<std::size_t>(r) * D + c); }, mean,
            rstd, rows, dgamma[c], dbeta[c]);
}

__global__ void k_softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C,
                               float inv_b, ScaleBy by, const ScalerState* scaler, float* row_loss,
                               void* dlogits, Format df, Counts* counts, Bins* bins) {
    const float scale = by.resolve(scaler);
    const TallyEdges edges = tally_edges(df);
    MPX_BLOCK_BINS(hist, bins);
    Counts c;
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride()) {
        const std::size_t o = r * C;
        row_loss[r] = softmax_xent_row(
            [&](int k) { return load_value(lf, logits, o + k); }, C, labels[r], inv_b, scale,
            [&](int k, float v) {
                hist.add(v);
                tally(edges, v, store_value(df, dlogits, o + k, v), c);
            });
    }
    hist.end();
    add_counts(c, counts);
}

// One thread: the losses added in double in order, their mean into the record (as the CPU).
__global__ void k_add_mean_loss(const float* losses, std::size_t n, double count,
                                StepStats* record) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) total += static_cast<double>(losses[i]);
    record->loss_sum += mean_loss(total, count);
}

__global__ void k_accuracy(const void* logits, Format lf, const int* labels, int rows, int C,
                           Counts* counts) {
    Counts c;
    for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride()) {
        const std::size_t o = r * C;
        if (argmax_row([&](int k) { return load_value(lf, logits, o + k); }, C) == labels[r])
            ++c.hits;
    }
    add_counts(c, counts);
}

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

cudaError_t probe_kernel_image(cudaStream_t stream) {
    k_noop<<<1, 1, 0, stream>>>();
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    return cudaStreamSynchronize(stream);
}

void encode(const float* src, Format f, void* dst, std::size_t n, Sink sink, cudaStream_t stream) {
    launch_store(FromFloat{src}, f, dst, n, sink, stream);
}

void decode(const void* src, Format f, float* dst, std::size_t n, cudaStream_t stream) {
    if (n == 0) return;
    k_decode<<<blocks_for(n), k_threads, 0, stream>>>(src, f, dst, n);
    check_launch();
}

void convert(const void* src, Format sf, Format round_to, void* dst, Format df, std::size_t n,
             Sink sink, cudaStream_t stream) {
    launch_store(Converted{src, sf, round_to}, df, dst, n, sink, stream);
}

void cast(const void* src, Format sf, Format compute, void* dst, Format df, std::size_t n,
          Sink sink, cudaStream_t stream) {
    if (n == 0) return;
    k_cast<<<blocks_for(n), k_threads, 0, stream>>>(src, sf, compute, dst, df, n, sink.counts,
                                                    sink.bins);
    check_launch();
}

void fill(void* dst, Format f, float value, std::size_t n, cudaStream_t stream) {
    launch_store(Constant{value}, f, dst, n, nullptr, stream);
}

void scale(void* t, Format f, float factor, std::size_t n, cudaStream_t stream) {
    launch_store(Scaled{t, f, factor}, f, t, n, nullptr, stream);
}

void bias_store(const float* acc, const void* bias, Format bf, Format through, void* y, Format yf, int rows,
                int cols, Sink sink, cudaStream_t stream) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    launch_store(BiasAdded{acc, bias, bf, through, cols}, yf, y, n, sink, stream);
}

void accumulate(const float* values, Format through, bool add, void* dst, Format df, std::size_t n,
                Sink sink, cudaStream_t stream) {
    if (n == 0) return;
    k_accumulate<<<blocks_for(n), k_threads, 0, stream>>>(values, through, add, dst, df, n,
                                                          sink.counts, sink.bins);
    check_launch();
}

void column_sums(const void* src, Format f, int rows, int cols, float* out, cudaStream_t stream) {
    if (cols == 0) return;
    k_column_sums<<<blocks_for(static_cast<std::size_t>(cols)), k_threads, 0, stream>>>(
        src, f, rows, cols, out);
    check_launch();
}

void activation_forward(Activation a, const void* z, Format zf, void* h, Format hf, std::size_t n,
                        Sink sink, cudaStream_t stream) {
    launch_store(Activated{a, z, zf}, hf, h, n, sink, stream);
}

void activation_backward(Activation a, const void* z, Format zf, const void* dh, Format dhf, void* dz,
                         Format dzf, std::size_t n, Sink sink, cudaStream_t stream) {
    launch_store(ActivationGrad{a, z, zf, dh, dhf}, dzf, dz, n, sink, stream);
}

void layernorm_forward(const void* x, Format xf, const void* gamma, Format gf, const void* beta,
                       Format bf, void* y, Format yf, float* mean, float* rstd, int rows, int D,
                       Sink sink, cudaStream_t stream) {
    if (rows == 0 || D == 0) return;
    if (const int R = tile_rows(static_cast<std::size_t>(D)))
        k_layernorm_stats_tiled<<<blocks_for_tiles(rows, R), k_threads, 0, stream>>>(x, xf, rows, D, R, mean, rstd);
    else
        k_layernorm_stats<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
            x, xf, rows, D, mean, rstd);
    check_launch();
    launch_store(LayerNormed{x, xf, gamma, gf, beta, bf, mean, rstd, D}, yf, y,
                 static_cast<std::size_t>(rows) * D, sink, stream);
}

void layernorm_backward(const void* x, Format xf, const void* gamma, Format gf, const float* mean,
                        const float* rstd, const void* dy, Format dyf, void* dx, Format dxf,
                        float* dgamma, float* dbeta, float* row_sums, int rows, int D,
                        Sink sink, cudaStream_t stream) {
    if (D == 0) return;
    // dγ, dβ first (zero for zero rows): dx may be dy's storage, which the dx store overwrites.
    k_layernorm_columns<<<blocks_for(static_cast<std::size_t>(D)), k_threads, 0, stream>>>(
        x, xf, dy, dyf, mean, rstd, rows, D, dgamma, dbeta);
    check_launch();
    if (rows == 0) return;
    if (const int R = tile_rows(2 * static_cast<std::size_t>(D)))
        k_layernorm_row_sums_tiled<<<blocks_for_tiles(rows, R), k_threads, 0, stream>>>(
            x, xf, gamma, gf, dy, dyf, mean, rstd, rows, D, R, row_sums);
    else
        k_layernorm_row_sums<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
            x, xf, gamma, gf, dy, dyf, mean, rstd, rows, D, row_sums);
    check_launch();
    // Element i reads x, dy at i and then writes dx at i: in place is safe.
    launch_store(LayerNormDx{x, xf, gamma, gf, dy, dyf, mean, rstd, row_sums, rows, D}, dxf, dx,
                 static_cast<std::size_t>(rows) * D, sink, stream);
}

void dropout(void* h, Format f, float p, float keep, std::uint64_t seed, std::size_t n,
             Counts* counts, cudaStream_t stream) {
    launch_store(Dropped{h, f, p, keep, seed}, f, h, n, Sink{counts}, stream);  // binned when first stored
}

void softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C, float inv_b,
                  ScaleBy scale, const ScalerState* scaler, float* row_loss, void* dlogits,
                  Format df, Sink sink, StepStats* record, cudaStream_t stream) {
    if (rows == 0) return;
    if (const int R = tile_rows(static_cast<std::size_t>(C)))
        k_softmax_xent_tiled<<<blocks_for_tiles(rows, R), k_threads, 0, stream>>>(
            logits, lf, labels, rows, C, R, inv_b, scale, scaler, row_loss, dlogits, df, sink.counts,
            sink.bins);
    else
        k_softmax_xent<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
            logits, lf, labels, rows, C, inv_b, scale, scaler, row_loss, dlogits, df, sink.counts,
            sink.bins);
    check_launch();
    k_add_mean_loss<<<1, 1, 0, stream>>>(row_loss, static_cast<std::size_t>(rows), rows, record);
    check_launch();
}

void mse(const void* pred, Format pf, const void* target, Format tf, std::size_t n, ScaleBy scale,
         const ScalerState* scaler, float* squared, void* dpred, Format df, Sink sink,
         StepStats* record, cudaStream_t stream) {
    const float count = static_cast<float>(n);  // the CPU's float n
    launch_store(MseGrad{pred, pf, target, tf, count, scale, scaler, squared}, df, dpred, n, sink,
                 stream);
    k_add_mean_loss<<<1, 1, 0, stream>>>(squared, n, count, record);
    check_launch();
}

void accuracy(const void* logits, Format lf, const int* labels, int rows, int C, Counts* counts,
              cudaStream_t stream) {
    if (rows == 0) return;
    k_accuracy<<<blocks_for(static_cast<std::size_t>(rows)), k_threads, 0, stream>>>(
        logits, lf, labels, rows, C, counts);
    check_launch();
}

}  // namespace mpx::cuda
