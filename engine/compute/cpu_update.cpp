// The CPU backend's update pass: unscale and check, clipping, and the optimizer with its write-back
// (which counts the updates the working copy cannot show).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx::cpu {

void CpuBackend::unscale_and_check(const Tensor& grad, ScaleBy by, Tensor& unscaled) {
    const float inv_scale = by.resolve(m_scaler.scale);
    if (unscaled.size() != grad.size())
        throw ConfigError("", "unscale_and_check: the unscaled gradient's shape differs");
    CMap gv = view(grad, m_a);
    sized(m_c, grad.rows(), grad.cols());
    const float* in = gv.data();
    float* out = m_c.data();
    core::Counts& c = counts();
    const unsigned long long bad_before = c.bad;
    const std::size_t n = grad.size();
    for (std::size_t off = 0; off < n; off += core::k_sum_chunk) {
        const std::size_t end = std::min(n, off + core::k_sum_chunk);
        double chunk = 0.0;
        for (std::size_t i = off; i < end; ++i) {
            const float v = in[i] * inv_scale;
            out[i] = v;
            c.bad += !core::is_finite(v);
            chunk += static_cast<double>(v) * v;
        }
        stats().sum_squares += chunk;
    }
    stats().found_bad += c.bad - bad_before;
    store(out, unscaled);
}

void CpuBackend::optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                      Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf) {
    if (!step_applied(on_inf, stats().found_inf())) return;
    const std::size_t n = grad.size();
    if (working.size() != n || state1.size() != n || (state2 && state2->size() != n) ||
        (master && (master->size() != n || master->format() != Format::fp32)))
        throw ConfigError("", "optimizer_update: shapes or master format do not match");
    core::OptConsts k = optimizer_consts(s);
    if (s.count == StepCount::backend &&  // lr at m_schedule, Adam's t = m_applied + 1
        !core::take_backend_counts(k, {m_lrs.data(), static_cast<long long>(m_lrs.size()), m_bias.data(),
                                     static_cast<long long>(m_bias.size())},
                                 m_schedule, m_applied))
        throw ConfigError("", "optimizer_update: schedule step " + std::to_string(m_schedule) + " or Adam's step " +
                                  std::to_string(m_applied + 1) + " is beyond the host's tables");
    const float* g = view(grad, m_a).data();
    // The weights the optimizer reads: the FP32 master, else the working copy's values.
    sized(m_c, working.rows(), working.cols());
    if (master) std::memcpy(m_c.data(), master->data(), n * sizeof(float));
    else decode_buffer(working.format(), working.data(), {m_c.data(), n});
    float* w = m_c.data();
    float* m1 = state_values(state1, m_s1);
    float* m2 = state2 ? state_values(*state2, m_s2) : nullptr;
    m_moved.assign(n, 0);
    std::uint8_t* moved = m_moved.data();
    core::Bins* ulp_bins = m_collecting && site() >= 0 ? &m_hist->update_ulp[site() / k_tensor_kinds] : nullptr;
    const Format lands_in = master ? Format::fp32 : working.format();  // the weight updated
    core::with_optimizer(k.kind, [&](auto kind) {
        constexpr OptimizerKind K = decltype(kind)::value;
        float unused = 0.0f;
        float* m2s = K == OptimizerKind::sgd ? &unused : m2;
        const std::size_t m2_step = K == OptimizerKind::sgd ? 0 : 1;
        if (!ulp_bins) {
            for (std::size_t i = 0; i < n; ++i)
                moved[i] = core::optimizer_element<K>(k, g[i], w[i], m1[i], m2s[i * m2_step]);
            return;
        }
        for (std::size_t i = 0; i < n; ++i) {
            const float before = w[i];
            float update;
            moved[i] = core::optimizer_element<K>(k, g[i], w[i], m1[i], m2s[i * m2_step], update);
            ++ulp_bins->n[core::update_ulp_slot(lands_in, before, update)];
        }
    });
    if (master) std::memcpy(master->data(), w, n * sizeof(float));
    core::Counts& c = counts();
    const Sink states{&c, nullptr};  // counted, not binned: the histogram is of the weights
    if (state1.format() != Format::fp32) store(m1, state1, states);
    if (state2 && state2->format() != Format::fp32) store(m2, *state2, states);
    // Write back and count updates the working copy cannot show (below half its ulp).
    sized(m_b, working.rows(), working.cols());
    decode_buffer(working.format(), working.data(), {m_b.data(), n});
    store(w, working);
    sized(m_d, working.rows(), working.cols());
    decode_buffer(working.format(), working.data(), {m_d.data(), n});
    for (std::size_t i = 0; i < n; ++i)
        core::count_update(m_moved[i] != 0, m_b.data()[i], m_d.data()[i], c);
}

}  // namespace mpx::cpu
