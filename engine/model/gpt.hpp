// The character-level GPT a run trains when model.kind = gpt: nanoGPT's shape, pre-LN — token and
// position embeddings; n_layer blocks of LayerNorm → causal self-attention (packed QKV, scores,
// mask, softmax, probabilities × V, projection) → residual, LayerNorm → MLP (4×, GELU) →
// residual; a final LayerNorm and the LM head (tied to the token embedding or not).
// Rule: each op stores its result in the format autocast's lists give it (docs/gpt.md): Linear
// layers and attention's two products in the compute format, softmax and LayerNorm in FP32 (or the
// storage format under the switches), the residual stream in the embeddings' format; every buffer
// is allocated once, so a step allocates nothing and the memory totals are the real footprint.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace mpx {

// The parameters in the model's order (nanoGPT's named_parameters order): transformer.wte,
// transformer.wpe, per block ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (weight then
// bias each), ln_f, and lm_head.weight when untied.
// With QK-norm (attention.qk_norm), each block's attn.c_proj is followed by attn.q_norm.weight and
// attn.k_norm.weight (γ, head_size each, shared by the heads; the attention's layer; no β).
std::vector<std::string> gpt_param_names(const GptConfig& g, bool qk_norm = false);
// Their initial values (nanoGPT's _init_weights): N(0, 0.02) for embeddings and Linear weights,
// N(0, 0.02/√(2·n_layer)) for the two residual projections (both standard deviations times
// model.init_scale), zero biases, LayerNorm γ = 1, β = 0.
InitialWeights init_gpt_weights(const ModelConfig& m, std::uint64_t seed);
// A run whose label adds QK-norm (+qk-norm) to a session without it starts from the session's
// weights, QK-norm's γ (ones) inserted where gpt_param_names(g, true) puts them: the same start as
// the runs beside it, not a new draw.
InitialWeights gpt_weights_with_qk_norm(const GptConfig& g, const InitialWeights& without);
// The site layer each of gpt_param_names' parameters belongs to (its precision's layer; a
// LayerNorm's γ and β belong to the Linear layer it feeds, and stay FP32 in every mode).
std::vector<int> gpt_param_layers(const GptConfig& g, bool qk_norm = false);
bool is_gpt_norm_param(const std::string& name);

// The formats of the stream between ops (docs/gpt.md), from a run's precision at a site layer:
// a LayerNorm's output before the Linear layer `p` belongs to, and the attention's probabilities
// at an attention layer `p`. The residual stream and embeddings are stored as the embedding's
// weights are (layer 0's weight format).
Format gpt_norm_format(const ModelConfig& m, const LayerPrecision& p);
Format gpt_probs_format(const ModelConfig& m, const LayerPrecision& p);
// The format LayerNorm's statistics are computed in before the Linear layer of p: FP32, or under
// norm.stats = storage the layer's low format (its compute format where that is FP16 or BF16; a
// layer kept in FP32 or TF32 keeps FP32 statistics).
Format gpt_norm_stats_format(const ModelConfig& m, const LayerPrecision& p);

// FP8 and FP4 runs (docs/gpt.md, "FP8 and FP4"): layer_precisions gives every site layer the
// recipe; this keeps its scaled casts on the Linear layers only. The embedding (a gather) and
// attention (its two batched products) take the recipe's base, amp-bf16, as Transformer Engine
// leaves everything but te.Linear. FP4's bf16_first / bf16_last count the Linear layers in forward
// order — block0.attn.qkv first, the LM head last — and keep those in amp-bf16 too.
void gpt_recipe_layers(const ModelConfig& m, int bf16_first, int bf16_last, std::vector<LayerPrecision>& prec);

class Gpt final : public Model {
public:
    // prec: one entry per site layer (ModelConfig::layers()).
    Gpt(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> prec, int batch, const InitialWeights& init,
        OptimizerKind opt);
    Gpt(const Gpt&) = delete;  // m_forward_buffers points into it
    Gpt& operator=(const Gpt&) = delete;

    // (B, block_size) token ids; fewer rows than B (a sample's one sequence) for an uncounted
    // forward pass only, over those sequences alone: the buffers read as their first rows until a
    // whole batch comes again (backward refuses the shorter pass).
    void set_input(const RowMatrix& x) override;
    const Tensor& forward(std::uint64_t dropout_seed, bool train, Pass pass = Pass::forward) override;
    void backward(const Tensor& dlogits, std::uint64_t dropout_seed, Accumulate acc) override;
    Tensor& dlogits() override { return m_dlogits; }
    Tensor& target() override { return m_target; }
    std::vector<Param>& params() override { return m_params; }
    const std::vector<LayerPrecision>& precisions() const override { return m_prec; }
    std::vector<Fp8Gemm>& fp8_gemms() override { return m_fp8; }
    Format stored_format(int layer, HistTensor t) const override;
    int batch() const override { return m_batch; }
    std::vector<std::vector<float>> export_state() const override { return export_params_state(m_be, m_params); }
    void import_state(const std::vector<std::vector<float>>& v) override { import_params_state(m_be, m_params, v); }
    bool has_compensation() const override { return params_have_compensation(m_params); }
    std::vector<std::vector<float>> export_compensation() const override {
        return export_params_compensation(m_be, m_params);
    }
    void import_compensation(const std::vector<std::vector<float>>& v) override {
        import_params_compensation(m_be, m_params, v);
    }

    // The formats of the stream between ops (docs/gpt.md): the residual stream and embeddings,
    // a LayerNorm's output before `linear_layer`, the attention's probabilities at `attn_layer`.
    Format residual_format() const { return m_resid; }
    Format norm_format(int linear_layer) const;
    Format probs_format(int attn_layer) const;
    Format norm_stats_format(int linear_layer) const { return gpt_norm_stats_format(m_cfg, prec(linear_layer)); }
    // The attention buffers of block b as the last forward pass left them (the views' attention map):
    // scores and probabilities (B·H·T, T).
    const Tensor& scores(int block) const { return m_blocks[static_cast<std::size_t>(block)].scores; }
    const Tensor& probs(int block) const { return m_blocks[static_cast<std::size_t>(block)].probs; }
    // The input of Linear layer `layer` (is_linear_layer) as the last forward pass left it: ln_1's
    // output (QKV), the attention's (projection), ln_2's (MLP fc), GELU's (MLP proj), ln_f's (LM head).
    const Tensor& linear_input(int layer) const;

private:
    struct Grads;
    struct Block {
        Param *ln1_g = nullptr, *ln1_b = nullptr, *qkv_w = nullptr, *qkv_b = nullptr, *proj_w = nullptr,
              *proj_b = nullptr, *ln2_g = nullptr, *ln2_b = nullptr, *fc_w = nullptr, *fc_b = nullptr,
              *mp_w = nullptr, *mp_b = nullptr;
        Param *qn_g = nullptr, *kn_g = nullptr;  // QK-norm's γ (1, head_size)
        // forward (N = B·T rows)
        Tensor ln1, ln1_mean, ln1_rstd;  // (N, C), (N, 1) ×2
        Tensor qkv;                      // (N, 3C)
        // QK-norm (attention.qk_norm): q, k as (N·H, head_size) rows, their statistics (N·H, 1) ×2
        // each, the norm's output (N·H, head_size), and q, k, v packed for attention (N, 3C).
        Tensor q_in, k_in, q_mean, q_rstd, k_mean, k_rstd, qk_out, qkv_n;
        Tensor scores, probs;            // (B·H·T, T)
        Tensor atty;                     // (N, C) the attention's output
        Tensor proj, mid;                // (N, C) projection; residual after attention
        Tensor ln2, ln2_mean, ln2_rstd;  // (N, C), (N, 1) ×2
        Tensor fc, gelu;                 // (N, 4C)
        Tensor mp, out;                  // (N, C) MLP projection; residual after the block
        Grads* g = nullptr;              // backward's buffers, shared by blocks of the same formats
    };
    // A block's backward buffers: used only while its backward runs, so blocks whose formats agree
    // share one set (as a framework frees them block by block).
    struct Grads {
        Tensor d_gelu, d_fc;             // (N, 4C)
        Tensor d_ln2, d_mid_branch, d_mid;  // (N, C)
        Tensor d_atty, d_qkv;            // (N, C), (N, 3C)
        Tensor d_ln1, d_in_branch;       // (N, C)
        Tensor d_qk_out, d_qk_in;        // (N·H, head_size): QK-norm's backward
        Tensor d_proj, d_mp;             // (N, C): dropout's backward at each c_proj's output
        std::vector<Format> formats;     // what it was allocated for
    };
    const LayerPrecision& prec(int layer) const { return m_prec[static_cast<std::size_t>(layer)]; }
    void at(int layer, TensorKind kind);
    void linear(int layer, const Tensor& x, const Param& w, const Param* b, Tensor& y);
    void linear_back(int layer, const Tensor& dy, const Tensor& x, Param& w, Param* b, Accumulate acc, Tensor* dx);
    AttentionShape attention_shape() const;
    const Tensor& attention_input(const Block& k) const { return m_cfg.attention.qk_norm ? k.qkv_n : k.qkv; }
    void qk_norm_forward(Block& k, int att);
    void qk_norm_backward(Block& k, int att, Accumulate acc);
    AttentionOptions attention_options(int block) const;
    const Tensor& block_input(int b) const { return b == 0 ? m_x0 : m_blocks[static_cast<std::size_t>(b) - 1].out; }
    const Fp8Gemm* fp8_of(int layer) const {
        return prec(layer).fp8 ? &m_fp8[static_cast<std::size_t>(layer)] : nullptr;
    }
    // Dropout at `layer`'s placement (nanoGPT's: the embeddings' sum, the probabilities, after each
    // c_proj), in place, with the layer's stream of the step's seed; only while training.
    bool dropping() const { return m_train && m_cfg.dropout > 0.0f; }
    void drop(int layer, Tensor& t);
    // Backward of a residual branch's dropout: dst = the branch's gradient (src, rounded into dst's
    // format as the add's backward casts it) times the same mask and 1/(1 − p); else src itself.
    const Tensor& drop_back(int layer, const Tensor& src, Tensor& dst);

    Backend& m_be;
    ModelConfig m_cfg;
    std::vector<LayerPrecision> m_prec;
    int m_batch;
    int m_sequences = 0;                  // the sequences set_input gave (≤ m_batch)
    std::vector<Tensor*> m_forward_buffers;  // what forward writes, m_sequences' rows of each
    Format m_resid = Format::fp32;
    std::vector<Param> m_params;
    Param *m_wte = nullptr, *m_wpe = nullptr, *m_lnf_g = nullptr, *m_lnf_b = nullptr, *m_head = nullptr;
    std::vector<Block> m_blocks;
    std::vector<std::unique_ptr<Grads>> m_grads;
    Tensor m_d_in[2];                     // (N, C): the gradient at a block's input, blocks alternating
    std::vector<int> m_tokens;            // (B·T) the batch's token ids
    Tensor m_x0;                          // (N, C) embeddings
    Tensor m_lnf, m_lnf_mean, m_lnf_rstd; // (N, C), (N, 1) ×2
    Tensor m_logits, m_dlogits;           // (N, V)
    Tensor m_dlnf, m_dx_last;             // (N, C): at ln_f's output and input
    Tensor m_target;                      // unused (cross-entropy on labels); (1, 1)
    std::vector<Fp8Gemm> m_fp8;           // by layer: the Linear layers' FP8/FP4 casts
    bool m_counting = true;
    bool m_train = false;                 // this forward pass trains (dropout applies)
    std::uint64_t m_seed = 0;             // the step's dropout seed (also FP4's gradient SR stream)
    Tensor m_qk_beta, m_qk_dbeta;         // (1, head_size): QK-norm's absent β (zeros) and its unused gradient
};

}  // namespace mpx
