// CudaBackend's ops for what a run carries from one step to the next on the device: the loss
// scaler (set_scaler, scaler_update), Adam's applied-step count with its bias-correction table and
// the LR schedule's step count with its learning-rate table.
// Rule: every op is queued on the backend's stream; none waits, the record carries the results to
// read_stats() (kernels in step_state.cu).
#include <algorithm>

#include "cuda/backend_impl.hpp"

namespace mpx::cuda {

void CudaBackend::set_scaler(const ScalerRule& rule, const ScalerState& state) {
    m->use();
    cuda::set_scaler(m->steps(), rule, state, m->s());
}

void CudaBackend::scaler_update() {
    m->use();
    cuda::scaler_update(m->steps(), m->rec(), m->s());
}

void CudaBackend::set_bias_corrections(std::span<const hd::BiasCorrection> table) {
    m->use();
    // A larger table reallocates: that waits for queued work that may read the old one (rare: the
    // table doubles when a run outgrows it; counted in host_syncs).
    hd::BiasCorrection* d = m->bias.get<hd::BiasCorrection>(std::max<std::size_t>(1, table.size()));
    m->upload_bytes(d, table.data(), table.size_bytes());
    m->bias_size = static_cast<long long>(table.size());
}

void CudaBackend::set_applied_steps(long long n) {
    m->use();
    cuda::set_applied_steps(m->steps(), n, m->s());
}

void CudaBackend::count_applied_step(OnInf on_inf) {
    m->use();
    cuda::count_applied_step(m->steps(), m->rec(), on_inf, m->s());
}

void CudaBackend::set_lr_schedule(std::span<const float> lrs) {
    m->use();
    // As the bias-correction table: a larger table reallocates (a counted wait, rare).
    float* d = m->lrs.get<float>(std::max<std::size_t>(1, lrs.size()));
    m->upload_bytes(d, lrs.data(), lrs.size_bytes());
    m->lrs_size = static_cast<long long>(lrs.size());
}

void CudaBackend::set_schedule_steps(long long n) {
    m->use();
    cuda::set_schedule_steps(m->steps(), n, m->s());
}

void CudaBackend::count_schedule_step(OnInf on_inf, bool advance_on_skip) {
    m->use();
    cuda::count_schedule_step(m->steps(), m->rec(), on_inf, advance_on_skip, m->s());
}

}  // namespace mpx::cuda
