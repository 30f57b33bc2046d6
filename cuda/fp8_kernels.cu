// The CUDA backend's FP8 casts (engine/core/fp8_math.hpp, the CPU's functions): amax, the per-tensor
// scale (current or delayed), the scaled cast into E4M3/E5M2 or MXFP8's blocks of 32, the record of
// what the cast did, and the descale of a GEMM's FP32 result. Compiled with --fmad=false like
// kernels.cu.
#include "cuda/kernel_common.cuh"

namespace mpx::cuda {
namespace {

// amax of src into work->amax (zeroed before): non-negative floats order as their bits, so an
// integer atomicMax is a float max; NaN is skipped (core::amax_fold, fmaxf). Bins the values.
__global__ void k_fp8_amax(const void* src, Format sf, std::size_t n, Fp8Work* work, Bins* bins) {
    MPX_BLOCK_BINS(hist, bins);
    float a = 0.0f;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        const float v = load_value(sf, src, i);
        hist.add(v);
        a = amax_fold(a, v);
    }
    hist.end();
    for (int off = 16; off > 0; off /= 2) a = fmaxf(a, __shfl_down_sync(0xffffffffu, a, off));
    if (threadIdx.x % 32 == 0)
        atomicMax(reinterpret_cast<unsigned int*>(&work->amax), __float_as_uint(a));
}

__global__ void k_fp8_scale(Fp8Work* work, Fp8Recipe recipe, float fp8_max, const float* delayed) {
    work->scale = recipe == Fp8Recipe::current ? current_scale(work->amax, fp8_max)
                                               : (delayed ? *delayed : 1.0f);
}

__global__ void k_amax_update(AmaxHistoryState* states, int count, float* hist, const StepStats* record) {
    const std::size_t i = first_index();
    if (i >= static_cast<std::size_t>(count) || !states[i].active) return;
    amax_history_push(states[i], hist + states[i].offset, record->fp8[i].amax);
}

__global__ void k_fp8_cast(const void* src, Format sf, std::size_t n, Format f, Overflow mode,
                           Fp8Work* work, float* dst) {
    const TallyEdges edges = tally_edges(f);
    const float scale = work->scale;
    Counts c;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        float scaled;
        const float q = scaled_cast(f, load_value(sf, src, i), scale, mode, scaled);
        tally(edges, scaled, q, c);
        dst[i] = q;
    }
    add_counts(c, &work->counts);
}

// One thread per MXFP8 block (core::k_mx_block values along a row or down a column).
__global__ void k_mx_cast(const void* src, Format sf, int rows, int cols, bool along_rows,
                          Fp8Work* work, float* dst) {
    const TallyEdges edges = tally_edges(Format::e4m3);
    const int lines = along_rows ? rows : cols, len = along_rows ? cols : rows;
    const std::size_t per_line = static_cast<std::size_t>((len + k_mx_block - 1) / k_mx_block);
    const std::size_t blocks = static_cast<std::size_t>(lines) * per_line;
    Counts c;
    for (std::size_t b = first_index(); b < blocks; b += grid_stride()) {
        const int line = static_cast<int>(b / per_line);
        const int b0 = static_cast<int>(b % per_line) * k_mx_block;
        const int b1 = min(len, b0 + k_mx_block);
        auto at = [&](int k) {
            return along_rows ? static_cast<std::size_t>(line) * cols + k
                              : static_cast<std::size_t>(k) * cols + line;
        };
        float amax = 0.0f;
        for (int k = b0; k < b1; ++k) amax = amax_fold(amax, load_value(sf, src, at(k)));
        const int e = mx_shared_exponent(amax);
        for (int k = b0; k < b1; ++k) {
            float scaled, q;
            dst[at(k)] = mx_element(load_value(sf, src, at(k)), e, scaled, q);
            tally(edges, scaled, q, c);
        }
    }
    add_counts(c, &work->counts);
}

__global__ void k_fp8_finish(const Fp8Work* work, std::size_t n, bool block, Counts* site,
                             Fp8Record* record) {
    if (site) *site += work->counts;
    if (!record) return;
    Fp8Record r;
    r.amax = work->amax;
    r.scale = block ? 0.0f : work->scale;
    r.saturated = work->counts.overflow;
    r.underflow = work->counts.underflow;
    r.nonzero = work->counts.nonzero;
    r.count = n;
    record->add(r);
}

__global__ void k_fp8_descale(float* acc, std::size_t n, const Fp8Work* a, const Fp8Work* b) {
    const float f = descale_factor(a->scale, b->scale);
    for (std::size_t i = first_index(); i < n; i += grid_stride()) acc[i] *= f;
}

}  // namespace

void fp8_cast(const void* src, Format sf, int rows, int cols, const Fp8Cast& how, float* dst,
              Fp8Work* work, Sink sink, core::Fp8Record* record, cudaStream_t stream) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    CUDA_CHECK(cudaMemsetAsync(work, 0, sizeof(Fp8Work), stream));
    if (n == 0) return;
    k_fp8_amax<<<blocks_for(n), k_threads, 0, stream>>>(src, sf, n, work, sink.bins);
    check_launch();
    const bool block = how.recipe == Fp8Recipe::block;
    if (block) {
        const std::size_t lines = static_cast<std::size_t>(how.along_rows ? rows : cols);
        const std::size_t len = static_cast<std::size_t>(how.along_rows ? cols : rows);
        k_mx_cast<<<blocks_for(lines * ((len + k_mx_block - 1) / k_mx_block)), k_threads, 0, stream>>>(
            src, sf, rows, cols, how.along_rows, work, dst);
        check_launch();
    } else {
        k_fp8_scale<<<1, 1, 0, stream>>>(work, how.recipe, format_info(how.format).max_finite,
                                         how.delayed_scale);
        check_launch();
        k_fp8_cast<<<blocks_for(n), k_threads, 0, stream>>>(src, sf, n, how.format, how.overflow,
                                                            work, dst);
        check_launch();
    }
    k_fp8_finish<<<1, 1, 0, stream>>>(work, n, block, sink.counts, record);
    check_launch();
}

void update_amax_histories(core::AmaxHistoryState* states, int count, float* hist,
                           const StepStats* record, cudaStream_t stream) {
    if (count == 0) return;
    k_amax_update<<<blocks_for(static_cast<std::size_t>(count)), k_threads, 0, stream>>>(states, count, hist, record);
    check_launch();
}

void fp8_descale(float* acc, std::size_t n, const Fp8Work* a, const Fp8Work* b,
                 cudaStream_t stream) {
    if (n == 0) return;
    k_fp8_descale<<<blocks_for(n), k_threads, 0, stream>>>(acc, n, a, b);
    check_launch();
}

}  // namespace mpx::cuda
