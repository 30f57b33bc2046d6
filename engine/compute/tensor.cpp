// Tensor lifetime and the backend's per-category byte totals.
#include "engine/base/error.hpp"
#include "engine/compute/backend.hpp"
#include "engine/config/backend_names.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace mpx {

std::string_view to_string(MemCategory c) {
    switch (c) {
        case MemCategory::weights: return "weights";
        case MemCategory::master: return "master";
        case MemCategory::grads: return "grads";
        case MemCategory::optimizer: return "optimizer";
        case MemCategory::activations: return "activations";
        case MemCategory::workspace: return "workspace";
        case MemCategory::compensation: return "compensation";
    }
    return "?";
}

const char* to_string(TensorKind k) {
    static constexpr const char* names[k_tensor_kinds] = {
        "input",           "operand",         "output",       "normalized",
        "activation",      "grad_output",     "grad_operand", "grad_activation",
        "grad_input",      "grad_weight",     "unscaled",     "optimizer"};
    return names[static_cast<int>(k)];
}

core::OptConsts optimizer_consts(const OptimizerStep& s) {
    core::OptConsts k;
    k.kind = s.kind;
    k.momentum = static_cast<float>(s.momentum);
    k.beta1 = static_cast<float>(s.beta1);
    k.beta2 = static_cast<float>(s.beta2);
    k.eps = static_cast<float>(s.eps);
    k.weight_decay = static_cast<float>(s.weight_decay);
    k.one_minus_beta1 = static_cast<float>(1.0 - s.beta1);
    k.one_minus_beta2 = static_cast<float>(1.0 - s.beta2);
    k.weight_decay_exact = s.weight_decay;
    core::set_learning_rate(k, static_cast<float>(s.lr));
    if (s.kind != OptimizerKind::sgd) core::apply_bias_correction(k, bias_correction(s.beta1, s.beta2, s.t));
    return k;
}

core::BiasCorrection bias_correction(double beta1, double beta2, long long t) {
    const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(t));
    return {bc1, static_cast<float>(std::sqrt(bc2))};
}

Tensor::~Tensor() {
    if (m_backend) m_backend->release(*this);
}

void Tensor::use_rows(int rows) {
    if (rows < 0 || rows > m_allocated_rows) throw std::logic_error("Tensor::use_rows: more rows than it was allocated with");
    m_rows = rows;
}

const StepStats& Backend::read_previous_stats() {
    throw std::logic_error(name() + " keeps one step record: its steps are read one at a time");
}

void Backend::unscale_all(std::span<const ParamRef> ps, ScaleBy inv_scale) {
    for (const ParamRef& p : ps) {
        set_site(p.layer, TensorKind::unscaled);
        unscale_and_check(*p.grad, inv_scale, *p.unscaled);
    }
}

void Backend::clip_all(std::span<const ParamRef> ps, double max_norm) {
    for (const ParamRef& p : ps) clip_to_norm(*p.unscaled, max_norm);
}

void Backend::optimizer_all(const OptimizerStep& s, std::span<const ParamRef> ps, OnInf on_inf) {
    for (const ParamRef& p : ps) {
        set_site(p.layer, TensorKind::optimizer);
        optimizer_update(s, *p.unscaled, p.master, *p.working, *p.state1, p.state2, on_inf, p.compensation, p.index);
    }
}

Tensor Backend::alloc(Format f, int rows, int cols, MemCategory c) {
    if (rows < 0 || cols < 0)
        throw ConfigError("", "negative tensor shape requested");
    Tensor t;
    t.m_backend = this;
    t.m_format = f;
    t.m_rows = rows;
    t.m_allocated_rows = rows;
    t.m_cols = cols;
    t.m_category = c;
    const std::size_t n = t.bytes();
    t.m_data = raw_alloc(n == 0 ? 1 : n);
    m_memory.bytes[static_cast<int>(c)] += static_cast<std::int64_t>(n);
    return t;
}

void Backend::release(Tensor& t) noexcept {
    if (!t.m_data) return;
    t.m_rows = t.m_allocated_rows;  // the bytes the totals counted
    m_memory.bytes[static_cast<int>(t.m_category)] -= static_cast<std::int64_t>(t.bytes());
    raw_free(t.m_data);
    t.m_data = nullptr;
    t.m_backend = nullptr;
}

}  // namespace mpx

namespace mpx {
namespace {
[[noreturn]] void no_gpt_ops(const std::string& backend) {
    throw ConfigError("device", backend + " has no GPT ops yet (attention, embeddings); train the GPT on the CPU "
                                          "backend (device = cpu)");
}
}  // namespace

void Backend::embedding_forward(std::span<const int>, int, const Tensor&, const Tensor&, Tensor&) { no_gpt_ops(name()); }
void Backend::embedding_backward(std::span<const int>, int, const Tensor&, Tensor&, Accumulate, Tensor&, Accumulate) {
    no_gpt_ops(name());
}
void Backend::add(const Tensor&, const Tensor&, Tensor&) { no_gpt_ops(name()); }
void Backend::dropout_from(const Tensor&, Tensor&, float, std::uint64_t) { no_gpt_ops(name()); }
void Backend::copy_columns(const Tensor&, int, Tensor&) { no_gpt_ops(name()); }
void Backend::set_columns(const Tensor&, int, Tensor&) { no_gpt_ops(name()); }
void Backend::softmax_cross_entropy_z(const Tensor& logits, std::span<const int> labels, float z_loss, ScaleBy scale,
                                      Tensor& dlogits) {
    if (z_loss != 0.0f)
        throw ConfigError("train.z_loss", name() + " has no z-loss yet; train on the CPU backend (device = cpu)");
    softmax_cross_entropy(logits, labels, scale, dlogits);
}
void Backend::layernorm_forward_stats_in(Format stats, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                         Tensor& mean, Tensor& rstd) {
    if (stats != Format::fp32) no_gpt_ops(name());
    layernorm_forward(x, gamma, beta, y, mean, rstd);
}
void Backend::attention_forward(const Tensor&, const AttentionShape&, const AttentionOptions&, Tensor&, Tensor&, Tensor&) {
    no_gpt_ops(name());
}
void Backend::attention_backward(const Tensor&, const Tensor&, const Tensor&, const AttentionShape&,
                                 const AttentionOptions&, Tensor&) {
    no_gpt_ops(name());
}

}  // namespace mpx
