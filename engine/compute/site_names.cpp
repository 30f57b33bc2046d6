// Site names: the layer's name ("fc2", "block0.attn") + "." + the tensor kind's name.
#include "engine/compute/site_names.hpp"

#include <cstdio>

namespace mpx {

std::string site_name(int index) {
    return "fc" + std::to_string(index / k_tensor_kinds + 1) + "." +
           to_string(static_cast<TensorKind>(index % k_tensor_kinds));
}

std::string site_name(int index, const ModelConfig& m) {
    return layer_name(m, index / k_tensor_kinds) + "." + to_string(static_cast<TensorKind>(index % k_tensor_kinds));
}

std::string first_nonfinite_text(int site, std::optional<double> magnitude) {
    return first_nonfinite_text(site, magnitude, ModelConfig{});
}

std::string first_nonfinite_text(int site, std::optional<double> magnitude, const ModelConfig& m) {
    if (site < 0) return {};
    std::string t = site_name(site, m);
    if (magnitude) {
        char buf[48];
        std::snprintf(buf, sizeof buf, ", where %.6g overflowed", *magnitude);
        t += buf;
    }
    return t;
}

namespace {
enum class GptRole { embed, qkv, attn, proj, fc, mlp_proj, head };
GptRole gpt_role(const ModelConfig& m, int layer) {
    if (layer == 0) return GptRole::embed;
    if (layer == gpt_lm_head_layer(m.gpt)) return GptRole::head;
    static constexpr GptRole roles[] = {GptRole::qkv, GptRole::attn, GptRole::proj, GptRole::fc, GptRole::mlp_proj};
    return roles[(layer - 1) % 5];
}
// "grad_input" → "grad input"
std::string kind_words(TensorKind k) {
    std::string s = to_string(k);
    for (char& c : s)
        if (c == '_') c = ' ';
    return s;
}
}  // namespace

std::string layer_label(const ModelConfig& m, int layer) {
    if (m.kind != ModelKind::gpt) return layer_name(m, layer);
    const std::string block = "block " + std::to_string((layer - 1) / 5) + " · ";
    switch (gpt_role(m, layer)) {
        case GptRole::embed: return "embeddings";
        case GptRole::qkv: return block + "q, k, v";
        case GptRole::attn: return block + "attention";
        case GptRole::proj: return block + "attention out";
        case GptRole::fc: return block + "MLP up";
        case GptRole::mlp_proj: return block + "MLP down";
        case GptRole::head: return "LM head";
    }
    return layer_name(m, layer);
}

std::string site_label(int index, const ModelConfig& m) {
    if (m.kind != ModelKind::gpt) return site_name(index, m);
    const int layer = index / k_tensor_kinds;
    const auto k = static_cast<TensorKind>(index % k_tensor_kinds);
    const int b = (layer - 1) / 5;
    const std::string block = "block " + std::to_string(b) + " · ";
    using K = TensorKind;
    switch (gpt_role(m, layer)) {
        case GptRole::embed:
            if (k == K::output) return "embeddings (token + position)";
            if (k == K::grad_weight) return "embedding gradients";
            break;
        case GptRole::qkv:
            if (k == K::normalized) return block + "LayerNorm 1";
            if (k == K::output) return block + "q, k, v";
            if (k == K::grad_output) return block + "gradient at the block's input";
            if (k == K::grad_activation) return block + "LayerNorm 1 backward";
            break;
        case GptRole::attn:
            if (k == K::operand) return block + "q, k, v cast for q·kᵀ";
            if (k == K::output) return block + "attention scores";
            if (k == K::activation) return block + "softmax";
            if (k == K::grad_output) return block + "gradient at the attention output";
            if (k == K::grad_activation) return block + "softmax gradient";
            if (k == K::grad_input) return block + "gradient into q, k, v";
            break;
        case GptRole::proj:
            if (k == K::input) return block + "attention output";
            if (k == K::output) return block + "attention projection";
            if (k == K::activation) return "residual after block " + std::to_string(b) + "'s attention";
            if (k == K::grad_output) return block + "gradient at the attention residual";
            break;
        case GptRole::fc:
            if (k == K::normalized) return block + "LayerNorm 2";
            if (k == K::output) return block + "MLP up";
            if (k == K::activation) return block + "GELU";
            if (k == K::grad_activation) return block + "GELU and LayerNorm 2 backward";
            break;
        case GptRole::mlp_proj:
            if (k == K::output) return block + "MLP down";
            if (k == K::activation) return "residual after block " + std::to_string(b);
            break;
        case GptRole::head:
            if (k == K::normalized) return "final LayerNorm";
            if (k == K::output) return "LM head logits";
            if (k == K::grad_output) return "logits gradient";
            break;
    }
    return layer_label(m, layer) + " · " + kind_words(k);
}

std::string first_nonfinite_label(int site, std::optional<double> magnitude, const ModelConfig& m) {
    if (site < 0) return {};
    if (m.kind != ModelKind::gpt) return first_nonfinite_text(site, magnitude, m);
    std::string t = site_label(site, m) + " (" + site_name(site, m) + ")";
    if (magnitude) {
        char buf[48];
        std::snprintf(buf, sizeof buf, ", where %.6g overflowed", *magnitude);
        t += buf;
    }
    return t;
}

}  // namespace mpx
