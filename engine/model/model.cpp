// MLP forward and backward through the backend, layer by layer.
#include "engine/model/model.hpp"
#include "engine/model/gpt.hpp"

#include <algorithm>
#include <cmath>

#include "engine/base/error.hpp"
#include "engine/config/train_config.hpp"
#include "engine/core/rng.hpp"

namespace mpx {

std::vector<int> updated_layers(const ModelConfig& m) {
    std::vector<int> out;
    if (m.kind == ModelKind::gpt) {
        out = gpt_param_layers(m.gpt, m.attention.qk_norm);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    } else {
        for (int l = 0; l < m.layers(); ++l) out.push_back(l);
    }
    return out;
}

InitialWeights init_weights(const ModelConfig& m, std::uint64_t seed) {
    if (m.kind == ModelKind::gpt) return init_gpt_weights(m, seed);
    InitialWeights iw;
    for (int i = 0; i < m.layers(); ++i) {
        const int in = m.sizes[i], out = m.sizes[i + 1];
        Rng rng = Rng::derive(seed, 1000 + static_cast<std::uint64_t>(i));
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        RowMatrix w(out, in), b(1, out);
        for (Eigen::Index k = 0; k < w.size(); ++k)
            w.data()[k] = static_cast<float>(rng.uniform(-bound, bound));
        for (Eigen::Index k = 0; k < b.size(); ++k)
            b.data()[k] = static_cast<float>(rng.uniform(-bound, bound));
        iw.w.push_back(std::move(w));
        iw.b.push_back(std::move(b));
    }
    return iw;
}

// One independent stream per (step, micro-batch): accumulation is at most k_max_accumulation.
std::uint64_t dropout_step_seed(std::uint64_t session_seed, long long step, int micro) {
    return Rng::derive(session_seed, static_cast<std::uint64_t>(step) * k_max_accumulation + static_cast<std::uint64_t>(micro))
        .next_u64();
}
// Each layer's dropout mask gets its own stream of the step's seed.
std::uint64_t dropout_layer_seed(std::uint64_t step_seed, int layer) {
    return Rng::derive(step_seed, static_cast<std::uint64_t>(layer)).next_u64();
}

Param make_param(Backend& be, const RowMatrix& init, const LayerPrecision& lp, OptimizerKind opt) {
    Param p;
    const int r = static_cast<int>(init.rows()), c = static_cast<int>(init.cols());
    const std::span<const float> values(init.data(), static_cast<std::size_t>(init.size()));
    p.working = be.alloc(lp.weight, r, c, MemCategory::weights);
    be.upload(values, p.working);
    if (lp.master) {
        p.master = be.alloc(Format::fp32, r, c, MemCategory::master);
        be.upload(values, p.master);
    }
    p.grad = be.alloc(lp.grad, r, c, MemCategory::grads);
    if (lp.unscaled != lp.grad) p.grad32 = be.alloc(lp.unscaled, r, c, MemCategory::grads);
    p.state1 = be.alloc(lp.state, r, c, MemCategory::optimizer);
    be.fill(p.state1, 0.0f);
    if (opt != OptimizerKind::sgd) {
        p.state2 = be.alloc(lp.state, r, c, MemCategory::optimizer);
        be.fill(p.state2, 0.0f);
    }
    if (lp.write_back == WriteBack::kahan) {
        p.compensation = be.alloc(lp.weight, r, c, MemCategory::compensation);
        be.fill(p.compensation, 0.0f);
    }
    return p;
}

Mlp::Mlp(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> prec, int batch,
         const InitialWeights& init, OptimizerKind opt)
    : m_be(be), m_cfg(cfg), m_prec(std::move(prec)), m_batch(batch) {
    validate(cfg);
    const int L = cfg.layers();
    // Reserve so Param pointers held by layers stay valid.
    m_params.reserve(static_cast<std::size_t>(L) * 4);
    m_layers.resize(static_cast<std::size_t>(L));
    m_fp8.resize(static_cast<std::size_t>(L));
    for (int i = 0; i < L; ++i) {
        m_fp8[static_cast<std::size_t>(i)].layer = i;
        m_fp8[static_cast<std::size_t>(i)].fwd = m_prec[static_cast<std::size_t>(i)].compute;
        m_fp8[static_cast<std::size_t>(i)].grad = m_prec[static_cast<std::size_t>(i)].grad_compute;
    }
    m_input = be.alloc(m_prec[0].weight, batch, cfg.sizes[0], MemCategory::activations);
    // Recomputation rebuilds pre-activations into one shared buffer, which must have the layer's exact
    // shape and format: it serves the hidden layers of the widest hidden width in the first layer's
    // activation format; a hidden layer of another width or format keeps its own z.
    int shared_w = 0;
    for (int i = 0; i + 1 < L; ++i) shared_w = std::max(shared_w, cfg.sizes[static_cast<std::size_t>(i) + 1]);
    const Format shared_f = m_prec[0].activation;
    bool any_shared = false;
    for (int i = 0; i < L; ++i) {
        const LayerPrecision& p = m_prec[static_cast<std::size_t>(i)];
        Layer& l = m_layers[static_cast<std::size_t>(i)];
        l.hidden = i + 1 < L;
        const int out = cfg.sizes[static_cast<std::size_t>(i) + 1];
        m_params.push_back(make_param(be, init.w[i], p, opt));
        m_params.back().layer = i;
        l.w = &m_params.back();
        m_params.push_back(make_param(be, init.b[i], p, opt));
        m_params.back().layer = i;
        l.b = &m_params.back();
        const bool ln = l.hidden && cfg.layernorm;
        if (ln) {
            RowMatrix ones = RowMatrix::Ones(1, out), zeros = RowMatrix::Zero(1, out);
            // LayerNorm's affine parameters stay FP32 in every mode (autocast runs norms in FP32).
            const LayerPrecision norm{};
            m_params.push_back(make_param(be, ones, norm, opt));
            m_params.back().layer = i;
            l.gamma = &m_params.back();
            m_params.push_back(make_param(be, zeros, norm, opt));
            m_params.back().layer = i;
            l.beta = &m_params.back();
            l.ln_mean = be.alloc(Format::fp32, batch, 1, MemCategory::activations);
            l.ln_rstd = be.alloc(Format::fp32, batch, 1, MemCategory::activations);
        }
        const bool keep_z = !(cfg.recompute && l.hidden && out == shared_w && p.activation == shared_f);
        any_shared = any_shared || !keep_z;
        if (keep_z) l.z = be.alloc(p.activation, batch, out, MemCategory::activations);
        if (ln && keep_z) l.y = be.alloc(p.activation, batch, out, MemCategory::activations);
        if (l.hidden) l.h = be.alloc(p.activation, batch, out, MemCategory::activations);
        l.dh = be.alloc(p.activation, batch, out, MemCategory::workspace);
        if (l.hidden) l.dz = be.alloc(p.activation, batch, out, MemCategory::workspace);
        if (ln) l.dy = be.alloc(p.activation, batch, out, MemCategory::workspace);
    }
    if (any_shared) {
        m_recompute_z = be.alloc(shared_f, batch, shared_w, MemCategory::workspace);
        if (cfg.layernorm) m_recompute_y = be.alloc(shared_f, batch, shared_w, MemCategory::workspace);
    }
    // The logits' gradient lives in the output layer's dh.
    m_target = be.alloc(Format::fp32, batch, cfg.sizes.back(), MemCategory::activations);
    for (std::size_t i = 0; i < m_params.size(); ++i) m_params[i].index = static_cast<int>(i);
}

void Mlp::set_input(const RowMatrix& x) {
    m_be.set_site(0, TensorKind::input);  // evaluation clears the record afterwards
    m_be.upload({x.data(), static_cast<std::size_t>(x.size())}, m_input);
}

void Mlp::at(int layer, TensorKind kind) {
    if (m_counting) m_be.set_site(layer, kind);
    else m_be.set_uncounted();
}

void Mlp::forward_layer(int i, const Tensor& x, std::uint64_t seed, bool train, bool recomputing) {
    Layer& l = m_layers[static_cast<std::size_t>(i)];
    const LayerPrecision& p = m_prec[static_cast<std::size_t>(i)];
    Tensor& z = l.z.empty() ? m_recompute_z : l.z;
    at(i, TensorKind::output);
    m_be.set_fp8(fp8_of(i));
    m_be.set_accumulation(&p.accumulate);
    m_be.linear_forward(x, l.w->working, &l.b->working, p.compute, z);
    m_be.set_accumulation(nullptr);
    m_be.set_fp8(nullptr);
    if (!l.hidden) return;
    const Tensor* act_in = &z;
    if (l.gamma) {
        Tensor& y = l.y.empty() ? m_recompute_y : l.y;
        at(i, TensorKind::normalized);
        m_be.layernorm_forward(z, l.gamma->working, l.beta->working, y, l.ln_mean, l.ln_rstd);
        act_in = &y;
    }
    if (recomputing) return;  // h is still held from the forward pass
    at(i, TensorKind::activation);
    m_be.activation_forward(m_cfg.activation, *act_in, l.h);
    if (train && m_cfg.dropout > 0.0f) m_be.dropout(l.h, m_cfg.dropout, dropout_layer_seed(seed, i));
}

const Tensor& Mlp::forward(std::uint64_t dropout_seed, bool train, Pass pass) {
    m_counting = pass != Pass::uncounted;
    const int L = m_cfg.layers();
    for (int i = 0; i < L; ++i) forward_layer(i, layer_input(i), dropout_seed, train, false);
    return m_layers.back().z;
}

void Mlp::backward(const Tensor& dlogits, std::uint64_t dropout_seed, Accumulate acc) {
    m_counting = true;
    const int L = m_cfg.layers();
    const Tensor* dz = &dlogits;  // the output layer has no activation: dz = dlogits
    for (int i = L - 1; i >= 0; --i) {
        Layer& l = m_layers[static_cast<std::size_t>(i)];
        const LayerPrecision& p = m_prec[static_cast<std::size_t>(i)];
        if (l.hidden) {
            if (l.z.empty()) {  // recompute; its roundings were counted in the forward pass
                m_counting = false;
                forward_layer(i, layer_input(i), dropout_seed, true, true);
                m_counting = true;
            }
            at(i, TensorKind::grad_output);
            if (m_cfg.dropout > 0.0f)  // same mask and scale as forward
                m_be.dropout(l.dh, m_cfg.dropout, dropout_layer_seed(dropout_seed, i));
            at(i, TensorKind::grad_activation);
            const Tensor& z = l.z.empty() ? m_recompute_z : l.z;
            if (l.gamma) {
                const Tensor& y = l.y.empty() ? m_recompute_y : l.y;
                m_be.activation_backward(m_cfg.activation, y, l.dh, l.dy);
                m_be.layernorm_backward(z, l.gamma->working, l.ln_mean, l.ln_rstd, l.dy, l.dz,
                                              l.gamma->grad, l.beta->grad, acc);
            } else {
                m_be.activation_backward(m_cfg.activation, z, l.dh, l.dz);
            }
            dz = &l.dz;
        }
        const Tensor& x = layer_input(i);
        Tensor* dx = i > 0 ? &m_layers[static_cast<std::size_t>(i) - 1].dh : nullptr;
        at(i, TensorKind::grad_weight);  // the op counts dy's cast, dw/db and dx under their kinds
        if (auto& f = m_fp8[static_cast<std::size_t>(i)].fp4) f->sr_seed = dropout_seed;  // the gradients' SR stream
        m_be.set_fp8(fp8_of(i));
        m_be.set_accumulation(&p.accumulate);
        m_be.linear_backward(*dz, x, l.w->working, p.compute, p.grad_through, l.w->grad,
                                   &l.b->grad, acc, dx);
        m_be.set_accumulation(nullptr);
        m_be.set_fp8(nullptr);
    }
}

Format Mlp::stored_format(int layer, HistTensor t) const {
    const Layer& l = m_layers[static_cast<std::size_t>(layer)];
    switch (t) {
        case HistTensor::input: return layer_input(layer).format();
        case HistTensor::preact: return l.z.empty() ? m_recompute_z.format() : l.z.format();
        case HistTensor::normalized: return l.y.empty() ? m_recompute_y.format() : l.y.format();
        case HistTensor::output: return l.hidden ? l.h.format() : l.z.format();
        case HistTensor::grad_output: return l.dh.format();
        case HistTensor::grad_weight:  // the GEMM's write format, where it rounds first
            return m_prec[static_cast<std::size_t>(layer)].grad_through != Format::fp32
                       ? m_prec[static_cast<std::size_t>(layer)].grad_through
                       : l.w->grad.format();
        case HistTensor::grad_weight_unscaled: return l.w->unscaled().format();
        case HistTensor::weight: return l.w->working.format();
        case HistTensor::update_ulp: return l.w->has_master() ? Format::fp32 : l.w->working.format();
    }
    return Format::fp32;
}

std::vector<std::vector<float>> export_params_state(Backend& be, const std::vector<Param>& params) {
    std::vector<std::vector<float>> out;
    for (const Param& p : params) {
        for (const Tensor* t : {&p.working, &p.master, &p.state1, &p.state2}) {
            std::vector<float> v(t->empty() ? 0 : t->size());
            if (!t->empty()) be.download(*t, v);
            out.push_back(std::move(v));
        }
    }
    return out;
}

void import_params_state(Backend& be, std::vector<Param>& params, const std::vector<std::vector<float>>& values) {
    if (values.size() != params.size() * 4)
        throw ConfigError("", "the saved state does not match this model (parameter count differs)");
    for (std::size_t i = 0; i < params.size(); ++i) {
        Param& p = params[i];
        Tensor* ts[] = {&p.working, &p.master, &p.state1, &p.state2};
        for (int k = 0; k < 4; ++k) {
            const auto& v = values[i * 4 + static_cast<std::size_t>(k)];
            if (v.size() != (ts[k]->empty() ? 0 : ts[k]->size()))
                throw ConfigError("", "the saved state does not match this model (layer sizes differ)");
            if (!v.empty()) be.upload(v, *ts[k]);
        }
    }
}

bool params_have_compensation(const std::vector<Param>& params) {
    for (const Param& p : params)
        if (!p.compensation.empty()) return true;
    return false;
}

std::vector<std::vector<float>> export_params_compensation(Backend& be, const std::vector<Param>& params) {
    std::vector<std::vector<float>> out;
    for (const Param& p : params) {
        std::vector<float> v(p.compensation.size());
        if (!v.empty()) be.download(p.compensation, v);
        out.push_back(std::move(v));
    }
    return out;
}

void import_params_compensation(Backend& be, std::vector<Param>& params, const std::vector<std::vector<float>>& values) {
    if (values.size() != params.size())
        throw ConfigError("", params_have_compensation(params)
                                  ? "the saved state has no Kahan compensation buffers; this run's write-back is kahan"
                                  : "the saved state holds Kahan compensation buffers; this run's write-back is not kahan");
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (values[i].size() != params[i].compensation.size())
            throw ConfigError("", "the saved state does not match this model (compensation sizes differ)");
        if (!values[i].empty()) be.upload(values[i], params[i].compensation);
    }
}

std::vector<std::vector<float>> Mlp::export_state() const { return export_params_state(m_be, m_params); }
void Mlp::import_state(const std::vector<std::vector<float>>& v) { import_params_state(m_be, m_params, v); }
bool Mlp::has_compensation() const { return params_have_compensation(m_params); }
std::vector<std::vector<float>> Mlp::export_compensation() const { return export_params_compensation(m_be, m_params); }
void Mlp::import_compensation(const std::vector<std::vector<float>>& v) { import_params_compensation(m_be, m_params, v); }

std::unique_ptr<Model> make_model(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> prec, int batch,
                                  const InitialWeights& init, OptimizerKind opt) {
    if (cfg.kind == ModelKind::gpt) return std::make_unique<Gpt>(be, cfg, std::move(prec), batch, init, opt);
    return std::make_unique<Mlp>(be, cfg, std::move(prec), batch, init, opt);
}

}  // namespace mpx
