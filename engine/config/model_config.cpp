// The model's settings: validation and the "2-64-64-2" text of its sizes.
#include "engine/config/model_config.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {

namespace {
void validate_gpt(const ModelConfig& m) {
    const GptConfig& g = m.gpt;
    const auto range = [](const char* field, int v, int lo, int hi, const char* why) {
        if (v < lo || v > hi)
            throw ConfigError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                                         std::to_string(v) + ")" + why);
    };
    range("model.n_layer", g.n_layer, 1, k_max_gpt_layers, ": the step record names 5 sites' layers a block");
    range("model.n_head", g.n_head, 1, 64, "");
    range("model.n_embd", g.n_embd, 1, 4096, "");
    range("model.block_size", g.block_size, 2, 1024, "");
    if (g.n_embd % g.n_head != 0)
        throw ConfigError("model.n_embd", std::to_string(g.n_embd) + " is not divisible by model.n_head = " +
                                              std::to_string(g.n_head) + "; each head takes n_embd / n_head channels");
    if (!(m.gpt.init_scale > 0.0f) || !std::isfinite(m.gpt.init_scale) || m.gpt.init_scale > 1e6f)
        throw ConfigError("model.init_scale", "must be a positive factor up to 1e6 (1: nanoGPT's initial weights)");
    if (!(m.gpt.qk_init_scale > 0.0f) || !std::isfinite(m.gpt.qk_init_scale) || m.gpt.qk_init_scale > 1e6f)
        throw ConfigError("model.qk_init_scale", "must be a positive factor up to 1e6 (1: nanoGPT's q and k weights)");
    if (!(m.dropout >= 0.0f && m.dropout < 1.0f))
        throw ConfigError("model.dropout", "must be in [0, 1) (nanoGPT: 0 for its CPU recipe, 0.2 for Shakespeare)");
    if (m.recompute) throw ConfigError("model.recompute", "is an MLP setting; the GPT keeps its activations");
    if (m.layernorm) throw ConfigError("model.layernorm", "is an MLP setting; the GPT always has its LayerNorms");
    if (!(m.attention.softcap >= 0.0f) || !std::isfinite(m.attention.softcap))
        throw ConfigError("attention.softcap", "must be 0 (off) or a positive cap such as 50 (Gemma 2)");
}
void refuse_gpt_settings_on_mlp(const ModelConfig& m) {
    const ModelConfig defaults;
    if (!(m.gpt == defaults.gpt))
        throw ConfigError("model.n_layer", "GPT settings (n_layer, n_head, n_embd, block_size, tie_embeddings, init_scale, qk_init_scale) reach no "
                                           "run of an MLP; set model.kind = gpt");
    if (!(m.attention == defaults.attention))
        throw ConfigError("attention", "is set but the model is an MLP, which has no attention; set model.kind = gpt");
    if (m.autocast != defaults.autocast)
        throw ConfigError("autocast", "is set but the MLP's ops follow one policy; it changes the GPT's softmax and "
                                      "LayerNorm (model.kind = gpt)");
    if (m.norm_stats != defaults.norm_stats)
        throw ConfigError("norm.stats", "is set but the MLP's LayerNorm keeps FP32 statistics; the switch is the GPT's "
                                        "(model.kind = gpt)");
}
}  // namespace

void validate(const ModelConfig& m) {
    if (m.kind == ModelKind::gpt) return validate_gpt(m);
    refuse_gpt_settings_on_mlp(m);
    if (m.sizes.size() < 2)
        throw ConfigError("model.sizes", "needs at least an input and an output size, e.g. 2-64-2");
    if (m.layers() > k_max_layers)
        throw ConfigError("model.sizes", "at most " + std::to_string(k_max_layers) + " layers (got " +
                                             std::to_string(m.layers()) + ")");
    std::int64_t params = 0;
    for (std::size_t i = 0; i < m.sizes.size(); ++i) {
        if (m.sizes[i] < 1 || m.sizes[i] > 65536)
            throw ConfigError("model.sizes", "every layer size must be between 1 and 65536 (got " +
                                                 std::to_string(m.sizes[i]) + ")");
        if (i > 0) params += static_cast<std::int64_t>(m.sizes[i - 1]) * m.sizes[i];
    }
    if (params > 400'000'000)
        throw ConfigError("model.sizes", "the model has " + std::to_string(params) +
                                             " weights; keep it under 400 million");
    if (!(m.dropout >= 0.0f && m.dropout < 1.0f))
        throw ConfigError("model.dropout", "must be in [0, 1)");
}

std::vector<int> parse_model_sizes(std::string_view text, const std::string& field) {
    std::vector<int> out;
    // getline drops a trailing empty part: "2-64-2-" must not read as 2-64-2.
    if (text.empty() || text.back() == '-')
        throw ConfigError(field, "'" + std::string(text) + "' is not a list of layer sizes like 2-64-64-2");
    std::stringstream ss{std::string(text)};
    std::string part;
    while (std::getline(ss, part, '-')) {
        try {
            std::size_t used = 0;
            const int v = std::stoi(part, &used);
            if (used != part.size()) throw std::invalid_argument(part);
            out.push_back(v);
        } catch (const std::exception&) {
            throw ConfigError(field, "'" + std::string(text) +
                                         "' is not a list of layer sizes like 2-64-64-2");
        }
    }
    return out;
}

std::string model_sizes_text(const std::vector<int>& sizes) {
    std::string s;
    for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? "-" : "") + std::to_string(sizes[i]);
    return s;
}

int ModelConfig::layers() const {
    return kind == ModelKind::gpt ? gpt_layer_count(gpt) : static_cast<int>(sizes.size()) - 1;
}

int gpt_layer_count(const GptConfig& g) { return 5 * g.n_layer + 2; }

int gpt_layer(GptSite s, int block) {
    switch (s) {
        case GptSite::embed: return 0;
        case GptSite::lm_head: break;  // needs n_layer: gpt_lm_head_layer
        default: return 1 + 5 * block + (static_cast<int>(s) - static_cast<int>(GptSite::qkv));
    }
    return -1;
}

std::string layer_name(const ModelConfig& m, int layer) {
    if (m.kind != ModelKind::gpt) return "fc" + std::to_string(layer + 1);
    if (layer == 0) return "embed";
    if (layer == gpt_lm_head_layer(m.gpt)) return "lm_head";
    static const char* const part[] = {"attn.qkv", "attn", "attn.proj", "mlp.fc", "mlp.proj"};
    return "block" + std::to_string((layer - 1) / 5) + "." + part[(layer - 1) % 5];
}

bool is_linear_layer(const ModelConfig& m, int layer) {
    if (m.kind != ModelKind::gpt) return true;
    return layer != 0 && (layer == gpt_lm_head_layer(m.gpt) || (layer - 1) % 5 != 1);
}

int linear_layer_count(const ModelConfig& m) {
    return m.kind == ModelKind::gpt ? 4 * m.gpt.n_layer + 1 : m.layers();
}

LinearShape linear_shape(const ModelConfig& m, int layer) {
    if (m.kind != ModelKind::gpt) return {m.sizes[static_cast<std::size_t>(layer)], m.sizes[static_cast<std::size_t>(layer) + 1]};
    const int C = m.gpt.n_embd;
    if (layer == gpt_lm_head_layer(m.gpt)) return {C, m.gpt.vocab};
    switch ((layer - 1) % 5) {
        case 0: return {C, 3 * C};
        case 2: return {C, C};
        case 3: return {C, 4 * C};
        case 4: return {4 * C, C};
        default: return {};  // the embedding and attention: no Linear
    }
}

int rows_per_example(const ModelConfig& m) { return m.kind == ModelKind::gpt ? m.gpt.block_size : 1; }

double gemm_flops_per_step(const ModelConfig& m, long long examples) {
    if (m.kind == ModelKind::gpt) {
        const double n = static_cast<double>(examples) * m.gpt.block_size, C = m.gpt.n_embd, T = m.gpt.block_size;
        // per block: qkv 3C², proj C², fc 4C², mlp.proj 4C² multiply-adds a position; attention's
        // two products T·C each (the full square, as the batched products compute it); the head V·C.
        const double linear = m.gpt.n_layer * 12.0 * C * C + static_cast<double>(m.gpt.vocab) * C;
        const double attention = m.gpt.n_layer * 2.0 * T * C;
        return 3.0 * 2.0 * n * (linear + attention);
    }
    double flops = 0.0;
    for (std::size_t i = 0; i + 1 < m.sizes.size(); ++i) {
        const double one_gemm = 2.0 * static_cast<double>(examples) * m.sizes[i] * m.sizes[i + 1];
        flops += (i == 0 ? 2.0 : 3.0) * one_gemm;
    }
    return flops;
}

}  // namespace mpx
