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

void CudaBackend::set_bias_corrections(std::span<const core::BiasCorrection> table) {
    m->use();
    // A larger table reallocates: that waits for queued work that may read the old one (rare: the
    // table doubles when a run outgrows it; counted in host_syncs).
    core::BiasCorrection* d = m->bias.get<core::BiasCorrection>(std::max<std::size_t>(1, table.size()));
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

void CudaBackend::set_amax_histories(std::span<const core::AmaxHistoryState> states,
                                     std::span<const float> hist) {
    require(states.size() <= static_cast<std::size_t>(k_max_layers * k_fp8_tensors),
            "set_amax_histories: more histories than the step record has FP8 tensors");
    for (const core::AmaxHistoryState& s : states)
        require(s.len >= 1 && s.offset >= 0 && s.offset + s.len <= static_cast<long long>(hist.size()),
                "set_amax_histories: a history lies outside the values given");
    m->use();
    // Sized once per run (a larger table reallocates: a counted wait).
    auto* d = m->amax_states.get<core::AmaxHistoryState>(std::max<std::size_t>(1, states.size()));
    float* v = m->amax_hist.get<float>(std::max<std::size_t>(1, hist.size()));
    m->upload_bytes(d, states.data(), states.size_bytes());
    m->upload_bytes(v, hist.data(), hist.size_bytes());
    m->amax_count = static_cast<int>(states.size());
    m->amax_values = static_cast<long long>(hist.size());
}

void CudaBackend::update_amax_histories() {
    m->use();
    cuda::update_amax_histories(m->amax_states_at(), m->amax_count,
                                static_cast<float*>(m->amax_hist.data()), m->rec(), m->s());
}

void CudaBackend::read_amax_histories(std::vector<core::AmaxHistoryState>& states, std::vector<float>& hist) {
    m->use();
    states.resize(static_cast<std::size_t>(m->amax_count));
    hist.resize(static_cast<std::size_t>(m->amax_values));
    // Pageable destinations: these copies wait for the stream (counted: a save, not a step).
    if (!states.empty())
        CUDA_CHECK(cudaMemcpyAsync(states.data(), m->amax_states.data(), states.size() * sizeof(core::AmaxHistoryState),
                                   cudaMemcpyDeviceToHost, m->s()));
    if (!hist.empty())
        CUDA_CHECK(cudaMemcpyAsync(hist.data(), m->amax_hist.data(), hist.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, m->s()));
    m->wait();
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
