// The update pass's kernels: unscale and check, clipping, the optimizer. One kernel per op serves
// one tensor (ParamLaunch::single, by value) and every parameter at once (a table in device
// memory): each block works on one tensor, found by its block index in the table, and adds its
// counts and bins to that tensor's own site, so one launch over all parameters counts exactly as
// the single-tensor ops do one after another. Rule: compiled with --fmad=false, as kernels.cu.
#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace mpx::cuda {
namespace {

enum class Grid : bool { chunks, elements };

// The entry whose blocks include this block (tensors with no blocks are never chosen: a later
// entry starts at the same block).
__device__ ParamEntry entry_of(const ParamLaunch& l, Grid grid) {
    if (!l.entries) return l.single;
    int lo = 0, hi = l.count - 1;
    const int block = static_cast<int>(blockIdx.x);
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        const ParamEntry& e = l.entries[mid];
        if ((grid == Grid::chunks ? e.chunk_block0 : e.elem_block0) <= block) lo = mid;
        else hi = mid - 1;
    }
    return l.entries[lo];
}

template <class T>
__device__ T* at(T* base, int index) {
    return base && index >= 0 ? base + index : nullptr;
}

// A thread's first index and stride within its tensor's part of the grid.
__device__ std::size_t first_in(int block0) {
    return static_cast<std::size_t>(static_cast<int>(blockIdx.x) - block0) * blockDim.x + threadIdx.x;
}
__device__ std::size_t stride_of(int blocks) { return static_cast<std::size_t>(blocks) * blockDim.x; }

// One thread per chunk of core::k_sum_chunk elements: unscale, store (counted), flag inf/NaN, and the
// chunk's sum of squares in double in element order.
__global__ void k_unscale_check(ParamLaunch l, ScaleBy by, const ScalerState* scaler,
                                double* chunk_sums, ParamSinks sinks, StepStats* record) {
    const ParamEntry e = entry_of(l, Grid::chunks);
    const float inv_scale = by.resolve(scaler);
    const TallyEdges edges = tally_edges(e.unscaled_format);
    const std::size_t chunks = (e.n + k_sum_chunk - 1) / k_sum_chunk;
    MPX_BLOCK_BINS(hist, at(sinks.site_bins, e.unscale_site));
    Counts c;
    for (std::size_t k = first_in(e.chunk_block0); k < chunks; k += stride_of(e.chunk_blocks)) {
        const std::size_t end = (k + 1) * k_sum_chunk < e.n ? (k + 1) * k_sum_chunk : e.n;
        double ss = 0.0;
        for (std::size_t i = k * k_sum_chunk; i < end; ++i) {
            const float v = load_value(e.grad_format, e.grad, i) * inv_scale;
            hist.add(v);
            // unscaled may be grad: read, then write
            tally(edges, v, store_value(e.unscaled_format, e.unscaled, i, v), c);
            if (!is_finite(v)) ++c.bad;
            ss += static_cast<double>(v) * v;
        }
        chunk_sums[e.first_chunk + k] = ss;
    }
    hist.end();
    if (c.bad) atomicAdd(&record->found_bad, c.bad);  // rare: only on a step with inf/NaN
    add_counts(c, at(sinks.site_counts, e.unscale_site));
}

// One thread: the chunk sums added into the record in chunk order (as the CPU).
__global__ void k_add_chunk_sums(const double* chunk_sums, std::size_t chunks, StepStats* record) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (std::size_t k = 0; k < chunks; ++k) record->sum_squares += chunk_sums[k];
}

__global__ void k_clip(ParamLaunch l, double max_norm, const StepStats* record) {
    float factor = 1.0f;
    if (record->found_inf() || !clip_factor(record->sum_squares, max_norm, factor)) return;
    const ParamEntry e = entry_of(l, Grid::elements);
    for (std::size_t i = first_in(e.elem_block0); i < e.n; i += stride_of(e.elem_blocks))
        store_value(e.unscaled_format, e.unscaled, i,
                    load_value(e.unscaled_format, e.unscaled, i) * factor);
}

__global__ void k_optimizer(OptConsts s, ParamLaunch l, ParamSinks sinks, const StepStats* record,
                            OnInf on_inf, StepCount count, StepTables tables,
                            const DeviceStepState* counts) {
    if (!step_applied(on_inf, record->found_inf())) return;  // uniform: every thread returns
    // lr at the schedule count, Adam's t = applied + 1; beyond a table (the run keeps them ahead:
    // never) the step changes nothing
    if (count == StepCount::backend &&
        !take_backend_counts(s, tables, counts->schedule_steps, counts->applied_steps))
        return;
    const ParamEntry e = entry_of(l, Grid::elements);
    const Format gf = e.unscaled_format, wf = e.working_format, sf = e.state_format;
    const TallyEdges wedges = tally_edges(wf), sedges = tally_edges(sf);
    // The working copy's write-back (not the states) at the site; the updates at the layer.
    MPX_BLOCK_BINS(weights, at(sinks.site_bins, e.optimizer_site));
    MPX_BLOCK_BINS(updates, e.optimizer_site >= 0 ? at(sinks.update_bins, e.layer) : nullptr);
    const Format lands_in = e.master ? Format::fp32 : wf;  // the weight an update is applied to
    Counts c;
    for (std::size_t i = first_in(e.elem_block0); i < e.n; i += stride_of(e.elem_blocks)) {
        float w = e.master ? e.master[i] : load_value(wf, e.working, i);
        const float old = w;
        float m1 = load_value(sf, e.state1, i);
        float m2 = e.state2 ? load_value(sf, e.state2, i) : 0.0f;
        float update;
        const bool moved = optimizer_element(s, load_value(gf, e.unscaled, i), w, m1, m2, update);
        if (sf != Format::fp32) {
            tally(sedges, m1, store_value(sf, e.state1, i, m1), c);
            if (e.state2) tally(sedges, m2, store_value(sf, e.state2, i, m2), c);
        } else {
            static_cast<float*>(e.state1)[i] = m1;
            if (e.state2) static_cast<float*>(e.state2)[i] = m2;
        }
        if (e.master) e.master[i] = w;
        updates.add_slot(update_ulp_slot(lands_in, old, update));
        weights.add(w);
        const float before = load_value(wf, e.working, i);
        const float after = store_value(wf, e.working, i, w);
        tally(wedges, w, after, c);
        count_update(moved, before, after, c);
    }
    weights.end();
    updates.end();
    add_counts(c, at(sinks.site_counts, e.optimizer_site));
}

}  // namespace

// ---- launchers ---------------------------------------------------------------------------------

ParamLaunch lay_out(ParamEntry* entries, int count) {
    ParamLaunch l;
    for (int k = 0; k < count; ++k) {
        ParamEntry& e = entries[k];
        const std::size_t chunks = (e.n + k_sum_chunk - 1) / k_sum_chunk;
        e.first_chunk = l.chunks;
        e.chunk_block0 = l.chunk_blocks;
        e.chunk_blocks = chunks ? blocks_for(chunks) : 0;
        e.elem_block0 = l.elem_blocks;
        e.elem_blocks = e.n ? blocks_for(e.n) : 0;
        l.chunks += chunks;
        l.chunk_blocks += e.chunk_blocks;
        l.elem_blocks += e.elem_blocks;
    }
    return l;
}

void unscale_check(const ParamLaunch& launch, ScaleBy inv_scale, const ScalerState* scaler,
                   double* chunk_sums, ParamSinks sinks, StepStats* record, cudaStream_t stream) {
    if (launch.chunk_blocks == 0) return;
    k_unscale_check<<<launch.chunk_blocks, k_threads, 0, stream>>>(launch, inv_scale, scaler,
                                                                   chunk_sums, sinks, record);
    check_launch();
    k_add_chunk_sums<<<1, 1, 0, stream>>>(chunk_sums, launch.chunks, record);
    check_launch();
}

void clip_to_norm(const ParamLaunch& launch, double max_norm, const StepStats* record,
                  cudaStream_t stream) {
    if (launch.elem_blocks == 0) return;
    k_clip<<<launch.elem_blocks, k_threads, 0, stream>>>(launch, max_norm, record);
    check_launch();
}

void optimizer_update(const OptConsts& s, const ParamLaunch& launch, ParamSinks sinks,
                      const StepStats* record, OnInf on_inf, StepCount count,
                      const core::StepTables& tables, const DeviceStepState* counts,
                      cudaStream_t stream) {
    if (launch.elem_blocks == 0) return;
    k_optimizer<<<launch.elem_blocks, k_threads, 0, stream>>>(s, launch, sinks, record, on_inf,
                                                              count, tables, counts);
    check_launch();
}

}  // namespace mpx::cuda
