// The loss scaler on the device: the backend's rule and state live in device memory, and
// scaler_update runs the one rule (hd::update_scaler, engine/scaler_rule.hpp, the function
// LossScaler and the CPU backend run) in a single thread after the optimizer, reading the step's
// own found-inf count. Rule: nothing here returns a value to the host; the record carries the
// result to the step's one read_stats(). Compiled with --fmad=false like kernels.cu (the rule's
// products are single multiplies, rounded as on the CPU either way).
#include "cuda/kernel_common.cuh"

namespace mpx::cuda {
namespace {

__global__ void k_set_scaler(DeviceScaler* scaler, ScalerRule rule, ScalerState state) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    scaler->rule = rule;
    scaler->state = state;
}

__global__ void k_scaler_update(DeviceScaler* scaler, StepStats* record) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    hd::scaler_step(scaler->rule, scaler->state, record->found_inf(), record->scaler);
}

}  // namespace

void set_scaler(DeviceScaler* scaler, const ScalerRule& rule, const ScalerState& state,
                cudaStream_t stream) {
    k_set_scaler<<<1, 1, 0, stream>>>(scaler, rule, state);
    check_launch();
}

void scaler_update(DeviceScaler* scaler, StepStats* record, cudaStream_t stream) {
    k_scaler_update<<<1, 1, 0, stream>>>(scaler, record);
    check_launch();
}

}  // namespace mpx::cuda
