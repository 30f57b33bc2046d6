// The MLP's Hessian-vector products: Pearlmutter's R-forward and R-backward passes beside
// Mlp::forward and Mlp::backward (REFERENCE.md, "Gradient penalty under AMP"; rules in
// engine/core/r_op.hpp). Rule: an R-pass reads the values its first-order pass left (z, y, h, the
// LayerNorm statistics, dh, dy, dz) and stores each R{·} in its twin's format.
#include "engine/base/error.hpp"
#include "engine/model/model.hpp"

namespace mpx {
namespace {
[[noreturn]] void no_hvp() {
    throw ConfigError("train.gradient_penalty", "the GPT has no Hessian-vector products: the R-rules of attention, "
                                                "embeddings and the residual stream are not built yet; set "
                                                "train.gradient_penalty = 0, or train the MLP");
}
}  // namespace

void Model::enable_hessian_vector() { no_hvp(); }
const Tensor& Model::r_forward(std::span<Tensor* const>, std::uint64_t) { no_hvp(); }
Tensor& Model::r_dlogits() { no_hvp(); }
void Model::r_backward(std::span<Tensor* const>, std::uint64_t, Accumulate) { no_hvp(); }

void Mlp::enable_hessian_vector() {
    if (m_cfg.recompute)
        throw ConfigError("train.gradient_penalty", "needs every layer's pre-activation kept for the R-passes; set "
                                                    "model.recompute = false");
    const int L = m_cfg.layers();
    for (int i = 0; i < L; ++i) {
        Layer& l = m_layers[static_cast<std::size_t>(i)];
        if (!l.rz.empty()) continue;
        const Format f = m_prec[static_cast<std::size_t>(i)].activation;
        const int out = m_cfg.sizes[static_cast<std::size_t>(i) + 1];
        l.rz = m_be.alloc(l.z.format(), m_batch, out, MemCategory::workspace);
        if (l.gamma) l.ry = m_be.alloc(l.y.format(), m_batch, out, MemCategory::workspace);
        if (l.hidden) l.rh = m_be.alloc(l.h.format(), m_batch, out, MemCategory::workspace);
        l.rdh = m_be.alloc(l.dh.format(), m_batch, out, MemCategory::workspace);
        if (l.gamma) l.rdy = m_be.alloc(l.dy.format(), m_batch, out, MemCategory::workspace);
        if (l.hidden) l.rdz = m_be.alloc(f, m_batch, out, MemCategory::workspace);
    }
}

// R{z} = V·x + W·R{x} + c; R{y} = R{LayerNorm}; R{h} = σ′(·)⊙R{·}, through the same dropout mask.
// Its roundings count at the layer's backward sites: in PyTorch this arithmetic is part of the second
// backward pass (the double backward), and the forward pass's diagnoses stay the first-order pass's.
const Tensor& Mlp::r_forward(std::span<Tensor* const> v, std::uint64_t dropout_seed) {
    m_counting = true;
    const int L = m_cfg.layers();
    for (int i = 0; i < L; ++i) {
        Layer& l = m_layers[static_cast<std::size_t>(i)];
        const LayerPrecision& p = m_prec[static_cast<std::size_t>(i)];
        at(i, TensorKind::grad_output);
        m_be.set_accumulation(&p.accumulate);
        m_be.linear_r_forward(layer_input(i), i > 0 ? &m_layers[static_cast<std::size_t>(i) - 1].rh : nullptr,
                              l.w->working, *v[static_cast<std::size_t>(l.w->index)], v[static_cast<std::size_t>(l.b->index)],
                              p.compute, l.rz);
        m_be.set_accumulation(nullptr);
        if (!l.hidden) break;
        const Tensor* act_in = &l.z;
        const Tensor* r_act_in = &l.rz;
        if (l.gamma) {
            at(i, TensorKind::grad_activation);
            m_be.layernorm_r_forward(l.z, l.rz, l.gamma->working, *v[static_cast<std::size_t>(l.gamma->index)],
                                     *v[static_cast<std::size_t>(l.beta->index)], l.ln_mean, l.ln_rstd, l.ry);
            act_in = &l.y;
            r_act_in = &l.ry;
        }
        at(i, TensorKind::grad_activation);
        m_be.activation_r_forward(m_cfg.activation, *act_in, *r_act_in, l.rh);
        if (m_cfg.dropout > 0.0f) m_be.dropout(l.rh, m_cfg.dropout, dropout_layer_seed(dropout_seed, i));
    }
    return m_layers.back().rz;
}

// From R{dlogits}: R{δ} down the layers, H·v of each parameter written or added into its grad.
void Mlp::r_backward(std::span<Tensor* const> v, std::uint64_t dropout_seed, Accumulate acc) {
    m_counting = true;
    const int L = m_cfg.layers();
    for (int i = L - 1; i >= 0; --i) {
        Layer& l = m_layers[static_cast<std::size_t>(i)];
        const LayerPrecision& p = m_prec[static_cast<std::size_t>(i)];
        const Tensor* dz = &l.dh;  // the output layer: dlogits and R{dlogits}
        const Tensor* rdz = &l.rdh;
        if (l.hidden) {
            at(i, TensorKind::grad_output);
            if (m_cfg.dropout > 0.0f) m_be.dropout(l.rdh, m_cfg.dropout, dropout_layer_seed(dropout_seed, i));
            at(i, TensorKind::grad_activation);
            if (l.gamma) {
                m_be.activation_r_backward(m_cfg.activation, l.y, l.ry, l.dh, l.rdh, l.rdy);
                m_be.layernorm_r_backward(l.z, l.rz, l.gamma->working, *v[static_cast<std::size_t>(l.gamma->index)],
                                          l.ln_mean, l.ln_rstd, l.dy, l.rdy, l.rdz, l.gamma->grad, l.beta->grad, acc);
            } else {
                m_be.activation_r_backward(m_cfg.activation, l.z, l.rz, l.dh, l.rdh, l.rdz);
            }
            dz = &l.dz;
            rdz = &l.rdz;
        }
        at(i, TensorKind::grad_weight);
        m_be.set_accumulation(&p.accumulate);
        m_be.linear_r_backward(*dz, *rdz, layer_input(i), i > 0 ? &m_layers[static_cast<std::size_t>(i) - 1].rh : nullptr,
                               l.w->working, *v[static_cast<std::size_t>(l.w->index)], p.compute, p.grad_through,
                               l.w->grad, &l.b->grad, acc,
                               i > 0 ? &m_layers[static_cast<std::size_t>(i) - 1].rdh : nullptr);
        m_be.set_accumulation(nullptr);
    }
}

}  // namespace mpx
