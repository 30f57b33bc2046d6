// CudaBackend's update pass: unscale and check, clipping and the optimizer, for one tensor and for
// every parameter at once (Backend::unscale_all, clip_all, optimizer_all: one launch each, kernels
// in update_kernels.cu). Rule: both forms fill the same ParamEntry and run the same kernel, so the
// ops over all parameters give the single ops' bits and counts by construction; none waits.
#include "cuda/backend_impl.hpp"

namespace mpx::cuda {
namespace {

void require_optimizer_shapes(const Tensor& grad, const Tensor* master, const Tensor& working,
                              const Tensor& state1, const Tensor* state2, OptimizerKind kind) {
    const std::size_t n = grad.size();
    require(working.size() == n && state1.size() == n,
            "optimizer_update: working copy and state must match the gradient");
    require(!state2 || (state2->size() == n && state2->format() == state1.format()),
            "optimizer_update: both states must have the gradient's size and one format");
    require(!master || (master->size() == n && master->format() == Format::fp32),
            "optimizer_update: the master copy must be FP32 of the gradient's size");
    require(kind == OptimizerKind::sgd || state2, "optimizer_update: Adam needs a second state");
}

// One tensor's entry: unscale reads grad into unscaled; clipping and the optimizer work on
// unscaled (the optimizer's gradient). Sites as Backend::site() gives them (-1: uncounted).
ParamEntry entry(const Tensor& grad, Tensor& unscaled, Tensor* master, Tensor* working,
                 Tensor* state1, Tensor* state2, int unscale_site, int optimizer_site) {
    ParamEntry e;
    e.grad = grad.data();
    e.grad_format = grad.format();
    e.unscaled = unscaled.data();
    e.unscaled_format = unscaled.format();
    e.master = master ? static_cast<float*>(master->data()) : nullptr;
    e.working = working ? working->data() : nullptr;
    e.working_format = working ? working->format() : Format::fp32;
    e.state1 = state1 ? state1->data() : nullptr;
    e.state2 = state2 ? state2->data() : nullptr;
    e.state_format = state1 ? state1->format() : Format::fp32;
    e.n = unscaled.size();
    e.unscale_site = unscale_site;
    e.optimizer_site = optimizer_site;
    const int site = optimizer_site >= 0 ? optimizer_site : unscale_site;
    e.layer = site < 0 ? 0 : site / k_tensor_kinds;
    return e;
}

// The table for `ps`, on the device: uploaded (through a pinned slot, no wait) only when it differs
// from the last one, which in a run is its first step.
const ParamLaunch& params_table(const Backend* be, CudaBackend::Impl& m, std::span<const ParamRef> ps) {
    std::vector<ParamEntry> es;
    es.reserve(ps.size());
    for (const ParamRef& p : ps) {
        require(p.grad && p.unscaled && p.working && p.state1,
                "a parameter lacks its gradient, working copy or state");
        require_own(be, {p.grad, p.unscaled, p.master, p.working, p.state1, p.state2});
        require(p.unscaled->size() == p.grad->size(),
                "unscale_and_check: the unscaled gradient's shape differs");
        require_optimizer_shapes(*p.unscaled, p.master, *p.working, *p.state1, p.state2,
                                 OptimizerKind::sgd);
        es.push_back(entry(*p.grad, *p.unscaled, p.master, p.working, p.state1, p.state2,
                           site_index(p.layer, TensorKind::unscaled),
                           site_index(p.layer, TensorKind::optimizer)));
    }
    ParamLaunch l = lay_out(es.data(), static_cast<int>(es.size()));
    if (es != m.params_host) {
        ParamEntry* d = m.params.get<ParamEntry>(std::max<std::size_t>(1, es.size()));
        m.upload_bytes(d, es.data(), es.size() * sizeof(ParamEntry));
        m.params_host = std::move(es);
    }
    l.entries = static_cast<const ParamEntry*>(m.params.data());
    m.params_launch = l;
    return m.params_launch;
}

ParamLaunch single(ParamEntry e) {
    ParamLaunch l = lay_out(&e, 1);
    l.single = e;
    return l;
}

}  // namespace

void CudaBackend::unscale_and_check(const Tensor& grad, ScaleBy inv_scale, Tensor& unscaled) {
    require_own(this, {&grad, &unscaled});
    require(unscaled.size() == grad.size(), "unscale_and_check: the unscaled gradient's shape differs");
    m->use();
    const ParamLaunch l = single(entry(grad, unscaled, nullptr, nullptr, nullptr, nullptr, site(), -1));
    cuda::unscale_check(l, inv_scale, &m->steps()->scaler, m->aux.get<double>(std::max<std::size_t>(1, l.chunks)),
                        m->param_sinks(), m->rec(), m->s());
}

void CudaBackend::clip_to_norm(Tensor& t, double max_norm) {
    require_own(this, {&t});
    m->use();
    cuda::clip_to_norm(single(entry(t, t, nullptr, nullptr, nullptr, nullptr, -1, -1)), max_norm,
                       m->rec(), m->s());
}

namespace {
// Stochastic rounding and Kahan write-back are built on the CPU backend only: the CUDA backend has
// not run on a GPU yet, and nothing GPU-only is added before it has (docs/gpu.md).
void require_nearest(WriteBack w) {
    if (w != WriteBack::nearest)
        throw ConfigError("runs", "stochastic rounding and Kahan write-back run on the CPU backend only; "
                                  "choose device cpu for pure-*+sr and pure-*+kahan runs");
}
}  // namespace

void CudaBackend::optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                                   Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf,
                                   Tensor* /*compensation*/, int /*param*/) {
    require_nearest(s.write_back);
    require_own(this, {&grad, master, &working, &state1, state2});
    require_optimizer_shapes(grad, master, working, state1, state2, s.kind);
    m->use();
    // The optimizer reads its gradient from the entry's unscaled tensor, which only unscale writes.
    Tensor& g = const_cast<Tensor&>(grad);
    cuda::optimizer_update(optimizer_consts(s),
                           single(entry(grad, g, master, &working, &state1, state2, -1, site())),
                           m->param_sinks(), m->rec(), on_inf, s.count, m->step_tables(), m->steps(),
                           m->s());
}

// ---- every parameter at once -------------------------------------------------------------------

void CudaBackend::unscale_all(std::span<const ParamRef> ps, ScaleBy inv_scale) {
    if (ps.empty()) return;
    m->use();
    const ParamLaunch& l = params_table(this, *m, ps);
    cuda::unscale_check(l, inv_scale, &m->steps()->scaler,
                        m->aux.get<double>(std::max<std::size_t>(1, l.chunks)), m->param_sinks(),
                        m->rec(), m->s());
    set_site(ps.back().layer, TensorKind::unscaled);
}

void CudaBackend::clip_all(std::span<const ParamRef> ps, double max_norm) {
    if (ps.empty()) return;
    m->use();
    cuda::clip_to_norm(params_table(this, *m, ps), max_norm, m->rec(), m->s());
}

void CudaBackend::optimizer_all(const OptimizerStep& s, std::span<const ParamRef> ps, OnInf on_inf) {
    if (ps.empty()) return;
    require_nearest(s.write_back);
    for (const ParamRef& p : ps)
        require(s.kind == OptimizerKind::sgd || p.state2, "optimizer_update: Adam needs a second state");
    m->use();
    cuda::optimizer_update(optimizer_consts(s), params_table(this, *m, ps), m->param_sinks(), m->rec(), on_inf,
                           s.count, m->step_tables(), m->steps(), m->s());
    set_site(ps.back().layer, TensorKind::optimizer);
}

}  // namespace mpx::cuda
