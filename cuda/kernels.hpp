// Launchers of the CUDA backend's kernels (defined in kernels.cu). Rule: plain C++ (g++ compiles
// the backend against this header); every launcher is asynchronous on `stream`, checks the launch,
// and adds what its rounding did to `counts` (a pass of the device step record; nullptr where the
// CPU discards the stats; a Sink also takes the site's histogram bins). Buffers are row-major; shapes are in the comments. Formats are runtime
// values here and one switch inside each element access (uniform across a warp: no divergence).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/fp8_math.hpp"
#include "engine/core/op_math.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx::cuda {

using core::Bins;
using core::Counts;
using core::OptConsts;

// Where a launcher's rounding goes: a site's counts (nullptr: uncounted) and, on a step that
// collects histograms, its bins (engine/compute/histograms.hpp; nullptr: not binned).
struct Sink {
    Counts* counts = nullptr;
    Bins* bins = nullptr;
    Sink(Counts* c = nullptr, Bins* b = nullptr) : counts(c), bins(b) {}  // NOLINT: from Counts*
};

// ---- FP8 (engine/core/fp8_math.hpp: the CPU backend's arithmetic) ----
// One FP8 cast's device scratch: the tensor's amax, the scale used, the cast's counts.
struct Fp8Work {
    float amax;
    float scale;
    Counts counts;
};
// How one operand is cast: per-tensor recipes (delayed: `delayed_scale`; current: from the amax)
// into `format` with `overflow`; block: MXFP8 blocks of 32 along rows (`along_rows`) or columns.
struct Fp8Cast {
    Fp8Recipe recipe;
    Format format;
    Overflow overflow;
    const float* delayed_scale;  // delayed: the history's scale on the device (nullptr: 1)
    bool along_rows;
};
// dst (rows, cols) FP32 = src (rows, cols) in sf cast as `how` says (per tensor: round(x·scale),
// not descaled; block: the MXFP8 values times their block scales). work (one Fp8Work) ends with
// amax, scale and counts; the counts are added to sink.counts, the pre-cast values binned into
// sink.bins, and amax, scale and counts added to *record (nullptr: not recorded).
void fp8_cast(const void* src, Format sf, int rows, int cols, const Fp8Cast& how, float* dst,
              Fp8Work* work, Sink sink, core::Fp8Record* record, cudaStream_t stream);
// One thread per history: each active state of states (count) takes record->fp8[i].amax into its
// values in hist (core::amax_history_push), which gives the next step's scale.
void update_amax_histories(core::AmaxHistoryState* states, int count, float* hist,
                           const StepStats* record, cudaStream_t stream);
// acc (n) *= core::descale_factor(a->scale, b->scale).
void fp8_descale(float* acc, std::size_t n, const Fp8Work* a, const Fp8Work* b,
                 cudaStream_t stream);

// Launches a do-nothing kernel and returns the launch status: cudaErrorNoKernelImageForDevice when
// this build has no code for the device's architecture.
cudaError_t probe_kernel_image(cudaStream_t stream);

// dst (n) = src (n) FP32 rounded into f.
void encode(const float* src, Format f, void* dst, std::size_t n, Sink sink,
            cudaStream_t stream);
// dst (n) FP32 = src (n) decoded from f.
void decode(const void* src, Format f, float* dst, std::size_t n, cudaStream_t stream);
// dst (n) in df = src (n) in sf, first rounded to `round_to` (fp32: no extra rounding). Copies
// between formats and the casts of GEMM operands into their compute format.
void convert(const void* src, Format sf, Format round_to, void* dst, Format df, std::size_t n,
             Sink sink, cudaStream_t stream);
// dst (n) in df = src (n) in sf rounded to `compute`: a GEMM operand's cast, its rounding into
// `compute` counted (df holds every value of `compute` exactly).
void cast(const void* src, Format sf, Format compute, void* dst, Format df, std::size_t n,
          Sink sink, cudaStream_t stream);
void fill(void* dst, Format f, float value, std::size_t n, cudaStream_t stream);
// t (n) *= factor, rounded back into f (uncounted, as the CPU's scale).
void scale(void* t, Format f, float factor, std::size_t n, cudaStream_t stream);

// y (rows, cols) = acc (rows, cols) FP32 + bias (cols) in bf (bias may be nullptr) rounded to
// `through` (core::bias_format of the GEMM's compute format), the sum rounded into yf.
void bias_store(const float* acc, const void* bias, Format bf, Format through, void* y, Format yf, int rows,
                int cols, Sink sink, cudaStream_t stream);
// dst (n) (+)= values (n) rounded through `through` (core::accumulate_element).
void accumulate(const float* values, Format through, bool add, void* dst, Format df, std::size_t n,
                Sink sink, cudaStream_t stream);
// out (cols) FP32 = column sums of src (rows, cols) in f (core::column_sum).
void column_sums(const void* src, Format f, int rows, int cols, float* out, cudaStream_t stream);

// h (n) = act(z (n))
void activation_forward(Activation a, const void* z, Format zf, void* h, Format hf, std::size_t n,
                        Sink sink, cudaStream_t stream);
// dz (n) = dh (n) ⊙ act'(z (n))
void activation_backward(Activation a, const void* z, Format zf, const void* dh, Format dhf, void* dz,
                         Format dzf, std::size_t n, Sink sink, cudaStream_t stream);

// y (rows, D) = layernorm(x (rows, D)); gamma, beta (1, D); mean, rstd (rows) FP32.
void layernorm_forward(const void* x, Format xf, const void* gamma, Format gf, const void* beta,
                       Format bf, void* y, Format yf, float* mean, float* rstd, int rows, int D,
                       Sink sink, cudaStream_t stream);
// dx (rows, D) rounded into dxf (counted); dgamma, dbeta (D) FP32 sums for the caller to
// accumulate (zero for zero rows); row_sums (2·rows) FP32 scratch. dx may be dy's storage.
void layernorm_backward(const void* x, Format xf, const void* gamma, Format gf, const float* mean,
                        const float* rstd, const void* dy, Format dyf, void* dx, Format dxf,
                        float* dgamma, float* dbeta, float* row_sums, int rows, int D,
                        Sink sink, cudaStream_t stream);

// h (n) = mask ⊙ h · keep, mask from hash_uniform(seed, i).
void dropout(void* h, Format f, float p, float keep, std::uint64_t seed, std::size_t n,
             Counts* counts, cudaStream_t stream);

// logits, dlogits (rows, C); labels (rows) on the device; row_loss (rows) FP32 scratch. The mean
// loss is added to record->loss_sum (core::mean_loss of the row losses in row order). The gradient's
// factor is scale.resolve(scaler) (scaler: the backend's device state, read on the device).
void softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C, float inv_b,
                  ScaleBy scale, const ScalerState* scaler, float* row_loss, void* dlogits,
                  Format df, Sink sink, StepStats* record, cudaStream_t stream);
// pred, target, dpred (n); squared (n) FP32 scratch; the mean loss is added to record->loss_sum.
void mse(const void* pred, Format pf, const void* target, Format tf, std::size_t n, ScaleBy scale,
         const ScalerState* scaler, float* squared, void* dpred, Format df, Sink sink,
         StepStats* record, cudaStream_t stream);
// counts->hits += rows whose argmax equals the label.
void accuracy(const void* logits, Format lf, const int* labels, int rows, int C, Counts* counts,
              cudaStream_t stream);

// What a run carries from step to step on the device (step_state.cu): the loss scaler's rule and
// state, read by the loss and unscale kernels, and the step counts (Adam's applied steps, the LR
// schedule's steps), read by the optimizer kernel.
struct DeviceStepState {
    ScalerRule rule;
    ScalerState scaler;
    long long applied_steps;
    long long schedule_steps;
};

// ---- the update pass (update_kernels.cu): unscale and check, clipping, the optimizer ----
// Each launch covers one tensor (the single-tensor ops) or every parameter of the model (the ops
// over all of them: Backend::unscale_all, clip_all, optimizer_all): a block works on one tensor,
// found from the launch's table, so each tensor's counts and bins go to its own site.
// One parameter tensor of an update launch. Plain data: one layout for g++ and nvcc.
struct ParamEntry {
    const void* grad = nullptr;  // unscale's input
    void* unscaled = nullptr;    // unscale's output (may be grad); clipped; the optimizer's gradient
    float* master = nullptr;     // FP32 master copy, nullable
    void* working = nullptr;     // the working copy
    void* state1 = nullptr;
    void* state2 = nullptr;      // nullable (SGD)
    std::size_t n = 0;
    Format grad_format = Format::fp32, unscaled_format = Format::fp32;
    Format working_format = Format::fp32, state_format = Format::fp32;
    // Indexes into the launch's site counts and bins (-1: uncounted) and its update-ulp bins.
    int unscale_site = -1, optimizer_site = -1, layer = 0;
    // Set by lay_out: the tensor's first chunk of core::k_sum_chunk values among the launch's
    // tensors, and its first block and number of blocks in the chunk-wise grid (unscale: a thread
    // per chunk) and in the element-wise grid (clipping, the optimizer: a thread per value).
    std::size_t first_chunk = 0;
    int chunk_block0 = 0, chunk_blocks = 0, elem_block0 = 0, elem_blocks = 0;
    bool operator==(const ParamEntry&) const = default;
};
// The tensors of one launch: `count` entries in device memory, or (entries nullptr) `single`.
struct ParamLaunch {
    const ParamEntry* entries = nullptr;
    int count = 0;
    ParamEntry single;
    std::size_t chunks = 0;                 // of all tensors: the chunk sums' length
    int chunk_blocks = 0, elem_blocks = 0;  // the two grids' sizes
};
// Lays out entries[0..count) one after another in both grids (each tensor's block counts as a
// single-tensor launch of its size would have them) and returns the totals (entries not set).
ParamLaunch lay_out(ParamEntry* entries, int count);
// Where the launches add their counts and bins: the step record's sites (nullptr: uncounted), the
// step's site bins and update-ulp bins (nullptr: not a collecting step).
struct ParamSinks {
    Counts* site_counts = nullptr;
    Bins* site_bins = nullptr;
    Bins* update_bins = nullptr;
};

// Each tensor's unscaled (n) = grad (n) · inv_scale.resolve(scaler) stored in its format (counted
// at unscale_site); record->found_bad += non-finite values; record->sum_squares += the sums of
// squares of every chunk, tensor after tensor in core::k_sum_chunk order (the CPU's order);
// chunk_sums (launch.chunks) double scratch.
void unscale_check(const ParamLaunch& launch, ScaleBy inv_scale, const ScalerState* scaler,
                   double* chunk_sums, ParamSinks sinks, StepStats* record, cudaStream_t stream);
// Each tensor's unscaled *= core::clip_factor(record's sum of squares, max_norm), unless the record
// found inf/NaN.
void clip_to_norm(const ParamLaunch& launch, double max_norm, const StepStats* record,
                  cudaStream_t stream);
// One optimizer step of every tensor (its gradient: unscaled), counted at optimizer_site, the
// working copy's write-back binned at that site and the update-to-ulp slots at `layer`. Nothing
// when on_inf is skip and the record found inf/NaN. count backend: the learning rate and Adam's
// bias corrections from `tables` at the device's counts (core::take_backend_counts; nothing done
// when a count is beyond its table).
void optimizer_update(const OptConsts& s, const ParamLaunch& launch, ParamSinks sinks,
                      const StepStats* record, OnInf on_inf, StepCount count,
                      const core::StepTables& tables, const DeviceStepState* counts,
                      cudaStream_t stream);

// ---- what a run carries from step to step on the device (step_state.cu: DeviceStepState) ----
// d->rule, d->scaler = rule, state; queued (a one-thread kernel: no host memory to keep alive).
void set_scaler(DeviceStepState* d, const ScalerRule& rule, const ScalerState& state,
                cudaStream_t stream);
// One thread: core::scaler_step on d->scaler with record->found_inf(), into record->scaler.
void scaler_update(DeviceStepState* d, StepStats* record, cudaStream_t stream);
// d->applied_steps = n, queued.
void set_applied_steps(DeviceStepState* d, long long n, cudaStream_t stream);
// One thread: d->applied_steps += step_applied(on_inf, record->found_inf()); the count into
// record->applied_steps.
void count_applied_step(DeviceStepState* d, StepStats* record, OnInf on_inf, cudaStream_t stream);
// d->schedule_steps = n, queued.
void set_schedule_steps(DeviceStepState* d, long long n, cudaStream_t stream);
// One thread: d->schedule_steps += 1 when the step was applied or advance_on_skip; the count into
// record->schedule_steps.
void count_schedule_step(DeviceStepState* d, StepStats* record, OnInf on_inf, bool advance_on_skip,
                         cudaStream_t stream);

}  // namespace mpx::cuda
