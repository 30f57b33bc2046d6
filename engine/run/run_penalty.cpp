// A gradient-penalty run's micro-batch, in the order of PyTorch's AMP examples ("Gradient penalty",
// REFERENCE.md): gradients of the scaled loss, × 1/S by hand, the penalty λ·‖ĝ‖ (or λ·‖ĝ‖²) with
// its sum of squares in FP32, then the total loss scaled and backpropagated — the penalty's part
// ∇θ(λ‖ĝ‖) = λ·k·H·ĝ/‖ĝ‖ by Pearlmutter's R-operator (docs/penalty.md).
// Rule: the final gradient is S·∇(loss) from a first-order pass plus H·v from the R-passes over the
// pass that made ĝ, v = S·λ·k·ĝ/‖ĝ‖: no other ordering or scaling of the terms.
#include <utility>

#include "engine/base/error.hpp"
#include "engine/run/run.hpp"

namespace mpx {

void Run::setup_penalty() {
    const std::string who = "run '" + m_info.label + "': ";
    const auto mistake = m_info.spec.penalty_mistake;
    if (mistake && m_train.gradient_penalty == 0.0)
        throw ConfigError("runs", who + "+" + std::string(enum_name(*mistake)) + " is a gradient-penalty mistake, and "
                                        "train.gradient_penalty is 0; set a λ, or drop the suffix");
    if (mistake && m_info.scaler.kind == ScalerKind::none)
        throw ConfigError("runs", who + "+" + std::string(enum_name(*mistake)) + " changes nothing without a loss "
                                        "scale; give the run a scaler (e.g. amp-fp16+pytorch), or drop the suffix");
    if (m_train.gradient_penalty == 0.0) return;
    if (m_backend->is_gpu())
        throw ConfigError("train.gradient_penalty", who + "the CUDA backend has no Hessian-vector products until a GPU "
                                                          "run has measured them; train the penalty on the CPU backend "
                                                          "(device = cpu)");
    if (scales_gemms(m_info.spec.mode))
        throw ConfigError("train.gradient_penalty", who + "FP8/FP4 recipes scale the three GEMMs of a Linear layer, "
                                                          "not the R-passes' four more (no framework defines their "
                                                          "scales); drop the FP8/FP4 runs or set "
                                                          "train.gradient_penalty = 0");
    m_model->enable_hessian_vector();  // the GPT and model.recompute refuse here
    auto& params = m_model->params();
    m_penalty = PenaltyBuffers{};
    m_penalty.scaled_grads = m_train.penalty_scaled_grads && mistake != PenaltyMistake::unscaled_grads;
    m_penalty.unscale = m_penalty.scaled_grads && m_train.penalty_unscale && mistake != PenaltyMistake::no_unscale;
    const bool alone = m_train.accumulation > 1 || !m_penalty.scaled_grads;
    m_penalty.direction.reserve(params.size());
    m_penalty.grad.reserve(params.size());
    for (Param& p : params) {
        m_penalty.direction.push_back(m_backend->alloc(Format::fp32, p.grad.rows(), p.grad.cols(), MemCategory::workspace));
        if (alone) m_penalty.grad.push_back(m_backend->alloc(p.grad.format(), p.grad.rows(), p.grad.cols(), MemCategory::grads));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        m_penalty.v.push_back(&m_penalty.direction[i]);
        m_penalty.in_place.push_back({&params[i].grad, &m_penalty.direction[i]});
        if (alone) m_penalty.alone.push_back({&m_penalty.grad[i], &m_penalty.direction[i]});
    }
}

void Run::penalty_micro_batch(int k, int accum, const Batch& b, LossKind loss, std::uint64_t drop_seed) {
    Backend& be = *m_backend;
    Model& model = *m_model;
    // ĝ of a micro-batch alone: its own gradient tensors where the step's gradients already hold
    // earlier micro-batches, or where the final pass's gradient is not the one ĝ comes from.
    const bool scaled = m_penalty.scaled_grads;
    const bool alone = k > 0 || !scaled;
    const ScaleBy step_factor = ScaleBy::loss(m_train.loss_weight, accum);
    const ScaleBy first = scaled ? step_factor : ScaleBy(core::loss_factor(1.0, m_train.loss_weight, accum));
    model.set_input(b.x);
    const Tensor& logits = model.forward(drop_seed, true);
    loss_op(b, loss, logits, first);
    auto& params = model.params();
    struct Swapped {  // the backward writes into the micro-batch's own tensors while swapped in
        std::vector<Param>& params;
        std::vector<Tensor>& own;
        bool on;
        void swap() {
            if (on)
                for (std::size_t i = 0; i < params.size(); ++i) std::swap(params[i].grad, own[i]);
        }
    } swapped{params, m_penalty.grad, alone};
    swapped.swap();
    try {
        model.backward(model.dlogits(), drop_seed, Accumulate::overwrite);
    } catch (...) {
        swapped.swap();
        throw;
    }
    swapped.swap();
    // PyTorch's `g = p * (1/scaler.get_scale())` (penalty_unscale = false: g = p), the penalty, v.
    be.set_uncounted();
    PenaltyOptions o;
    o.kind = m_train.penalty;
    o.lambda = m_train.gradient_penalty;
    o.unscale = m_penalty.unscale;
    be.gradient_penalty(alone ? m_penalty.alone : m_penalty.in_place, o);
    // H·v through the pass that made ĝ (its loss factor), into the step's gradients.
    const Tensor& rlogits = model.r_forward(m_penalty.v, drop_seed);
    be.set_site(m_cfg->model.layers() - 1, TensorKind::grad_output);
    if (loss == LossKind::cross_entropy) be.softmax_cross_entropy_r(logits, rlogits, first, model.r_dlogits());
    else be.mse_r(rlogits, first, model.r_dlogits());
    model.r_backward(m_penalty.v, drop_seed, k == 0 && alone ? Accumulate::overwrite : Accumulate::add);
    if (!alone) return;  // the step's gradients already hold S·∇loss of this micro-batch
    if (!scaled) {  // the scaled loss's gradient, its value counted once already
        be.set_loss_recorded(false);
        loss_op(b, loss, logits, step_factor);
        be.set_loss_recorded(true);
    }
    model.backward(model.dlogits(), drop_seed, Accumulate::add);
}

}  // namespace mpx
