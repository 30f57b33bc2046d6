// What a run carries from one step to the next on the device: the loss scaler's rule and state, and
// the step counts (Adam's applied steps, the LR schedule's steps). scaler_update runs the one rule (core::update_scaler,
// engine/core/scaler_rule.hpp, the function LossScaler and the CPU backend run) in a single thread
// after the optimizer, reading the step's own found-inf count; count_applied_step counts the step
// when it was applied. Rule: nothing here returns a value to the host; the record carries the
// results to the step's one read_stats(). Compiled with --fmad=false like kernels.cu.
#include "cuda/kernel_common.cuh"

namespace mpx::cuda {
namespace {

__global__ void k_set_scaler(DeviceStepState* d, ScalerRule rule, ScalerState state) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    d->rule = rule;
    d->scaler = state;
}

__global__ void k_scaler_update(DeviceStepState* d, StepStats* record) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    core::scaler_step(d->rule, d->scaler, record->found_inf(), record->scaler);
}

__global__ void k_set_applied_steps(DeviceStepState* d, long long n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    d->applied_steps = n;
}

__global__ void k_count_applied_step(DeviceStepState* d, StepStats* record, OnInf on_inf) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    d->applied_steps += step_applied(on_inf, record->found_inf()) ? 1 : 0;
    record->applied_steps = d->applied_steps;
}

__global__ void k_set_schedule_steps(DeviceStepState* d, long long n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    d->schedule_steps = n;
}

__global__ void k_count_schedule_step(DeviceStepState* d, StepStats* record, OnInf on_inf,
                                      bool advance_on_skip) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    d->schedule_steps += step_applied(on_inf, record->found_inf()) || advance_on_skip ? 1 : 0;
    record->schedule_steps = d->schedule_steps;
}

}  // namespace

void set_scaler(DeviceStepState* d, const ScalerRule& rule, const ScalerState& state,
                cudaStream_t stream) {
    k_set_scaler<<<1, 1, 0, stream>>>(d, rule, state);
    check_launch();
}

void scaler_update(DeviceStepState* d, StepStats* record, cudaStream_t stream) {
    k_scaler_update<<<1, 1, 0, stream>>>(d, record);
    check_launch();
}

void set_applied_steps(DeviceStepState* d, long long n, cudaStream_t stream) {
    k_set_applied_steps<<<1, 1, 0, stream>>>(d, n);
    check_launch();
}

void count_applied_step(DeviceStepState* d, StepStats* record, OnInf on_inf, cudaStream_t stream) {
    k_count_applied_step<<<1, 1, 0, stream>>>(d, record, on_inf);
    check_launch();
}

void set_schedule_steps(DeviceStepState* d, long long n, cudaStream_t stream) {
    k_set_schedule_steps<<<1, 1, 0, stream>>>(d, n);
    check_launch();
}

void count_schedule_step(DeviceStepState* d, StepStats* record, OnInf on_inf, bool advance_on_skip,
                         cudaStream_t stream) {
    k_count_schedule_step<<<1, 1, 0, stream>>>(d, record, on_inf, advance_on_skip);
    check_launch();
}

}  // namespace mpx::cuda
