// The model's settings as plain data: the MLP's layer sizes, activation, LayerNorm, dropout,
// recomputation, and the GPT's shape and attention switches (docs/gpt.md).
// Rule: no Eigen and no Backend here; the models live in engine/model/ (model.hpp, gpt.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/attention.hpp"
#include "engine/core/op_math.hpp"

namespace mpx {

enum class ModelKind : std::uint8_t { mlp, gpt };
constexpr EnumName<ModelKind> model_kind_names[] = {{ModelKind::mlp, "mlp"}, {ModelKind::gpt, "gpt"}};
constexpr std::span<const EnumName<ModelKind>> names_of(ModelKind) { return model_kind_names; }
inline std::string_view to_string(ModelKind k) { return enum_name(k); }

constexpr EnumName<AttentionScale> attention_scale_names[] = {
    {AttentionScale::after, "after"}, {AttentionScale::before, "before"}, {AttentionScale::split, "split"}};
constexpr std::span<const EnumName<AttentionScale>> names_of(AttentionScale) { return attention_scale_names; }
inline std::string_view to_string(AttentionScale k) { return enum_name(k); }

// Which autocast the GPT's ops follow (REFERENCE.md, "Which operations run in which format"): cuda,
// the CUDA lists (softmax and layer_norm give FP32); cpu-1.13, torch 1.13's CPU BF16 autocast
// (softmax and layer_norm give the low format). attention.softmax = storage moves only the softmax.
enum class AutocastPolicy : std::uint8_t { cuda, cpu_1_13 };
constexpr EnumName<AutocastPolicy> autocast_policy_names[] = {{AutocastPolicy::cuda, "cuda"},
                                                              {AutocastPolicy::cpu_1_13, "cpu-1.13"}};
constexpr std::span<const EnumName<AutocastPolicy>> names_of(AutocastPolicy) { return autocast_policy_names; }
inline std::string_view to_string(AutocastPolicy k) { return enum_name(k); }

enum class SoftmaxFormat : std::uint8_t { fp32, storage };
constexpr EnumName<SoftmaxFormat> softmax_format_names[] = {{SoftmaxFormat::fp32, "fp32"},
                                                            {SoftmaxFormat::storage, "storage"}};
constexpr std::span<const EnumName<SoftmaxFormat>> names_of(SoftmaxFormat) { return softmax_format_names; }
inline std::string_view to_string(SoftmaxFormat k) { return enum_name(k); }

// Where LayerNorm's statistics (the mean's and the variance's sums, the mean, the variance and
// 1/√(var + ε)) are computed (session section "norm"): fp32, as every framework's kernel does; or
// storage, every one of those ops rounded into the layer's low format, as a kernel that accumulates in
// BF16 does (pytorch#92164: ones(5120) in BF16 sums to 256). Only the GPT's LayerNorms.
enum class NormStats : std::uint8_t { fp32, storage };
constexpr EnumName<NormStats> norm_stats_names[] = {{NormStats::fp32, "fp32"}, {NormStats::storage, "storage"}};
constexpr std::span<const EnumName<NormStats>> names_of(NormStats) { return norm_stats_names; }
inline std::string_view to_string(NormStats k) { return enum_name(k); }

// nanoGPT's shape (REFERENCE.md, "The smallest GPT that learns visibly"): pre-LN blocks, GELU MLP
// ×4, biases, LayerNorm eps 1e-5. vocab is the text's symbol count, set by the session when it
// reads the text (not a setting).
struct GptConfig {
    int n_layer = 4, n_head = 4, n_embd = 128, block_size = 64;
    bool tie_embeddings = true;
    int vocab = 0;
    // Multiplies the standard deviation of every random initial weight (nanoGPT's 0.02 and
    // 0.02/√(2·n_layer)): a teaching knob. q·kᵀ grows with its square, so 256 makes the scores of
    // gpt-nanogpt-cpu's first step pass 65504 (docs/gpt.md) while LayerNorm keeps the rest in range.
    float init_scale = 1.0f;
    // Multiplies, on top of init_scale, the standard deviation of the q and k rows of each block's
    // attn.c_attn.weight only: the scores (q·kᵀ) grow with its square while everything else keeps
    // nanoGPT's scale — attention-logit growth (Dehghani et al. 2023) set up at step 0, so a class
    // sees scores pass 65504 on a model that otherwise trains as usual (docs/gpt.md).
    float qk_init_scale = 1.0f;
    bool operator==(const GptConfig&) const = default;
};
// The GPT's attention and autocast switches (session sections "attention" and "autocast").
struct AttentionConfig {
    AttentionScale scale = AttentionScale::after;  // llm.c's order
    SoftmaxFormat softmax = SoftmaxFormat::fp32;
    float softcap = 0.0f;                           // Gemma's c·tanh(x/c) on the scores; 0 = off
    // QK-norm (ViT-22B, Dehghani et al. 2023): a LayerNorm over each head's q and over each head's k
    // (head_size channels), after the QKV Linear and before 1/√d and q·kᵀ, with a learnable γ of
    // head_size channels shared by the heads (attn.q_norm.weight, attn.k_norm.weight) and no β, as
    // ViT-22B's norms have none (a β on k would be a parameter softmax cannot see: its gradient is
    // rounding noise, which Adam's first step turns into a full step); statistics in FP32, eps 1e-5.
    bool qk_norm = false;
    bool operator==(const AttentionConfig&) const = default;
};
inline constexpr int k_max_gpt_layers = 12;  // 5 sites' layers a block + 2 fit k_max_layers

struct ModelConfig {
    ModelKind kind = ModelKind::mlp;
    std::vector<int> sizes{2, 64, 64, 2};  // input, hidden..., output
    Activation activation = Activation::relu;
    bool layernorm = false;
    float dropout = 0.0f;
    bool recompute = false;                // activation recomputation (gradient checkpointing)
    bool keep_output_fp32 = false;
    GptConfig gpt;
    AttentionConfig attention;
    AutocastPolicy autocast = AutocastPolicy::cuda;
    NormStats norm_stats = NormStats::fp32;  // the GPT's LayerNorm statistics (session "norm.stats")
    // The layers of the step record's sites: the MLP's linear layers, or the GPT's site layers
    // (gpt_layer_count).
    int layers() const;
};
// The GPT's site layers (engine/core/step_stats.hpp sites are (layer, kind)): 0 the embeddings;
// per block b five — attn.qkv (normalized: ln_1's output), attn (operand: the batched products'
// casts, output: the scores softmax reads, activation: the probabilities), attn.proj (input: the
// attention's output; activation: the residual after attention), mlp.fc (normalized: ln_2's
// output, activation: GELU), mlp.proj (activation: the residual after the block); last the LM head
// (normalized: ln_f's output, output: the logits).
int gpt_layer_count(const GptConfig& g);
enum class GptSite : std::uint8_t { embed, qkv, attn, attn_proj, mlp_fc, mlp_proj, lm_head };
int gpt_layer(GptSite s, int block);  // block ignored for embed, lm_head (needs n_layer: use lm_head_layer)
inline int gpt_lm_head_layer(const GptConfig& g) { return gpt_layer_count(g) - 1; }
// A layer's name as people read it and selective precision names it: "embed", "block2.attn.qkv",
// "block2.attn", "block2.attn.proj", "block2.mlp.fc", "block2.mlp.proj", "lm_head" (blocks count
// from 0, as nanoGPT's transformer.h.0); the MLP's "fc1".."fcN".
std::string layer_name(const ModelConfig& m, int layer);
// Whether a layer is a Linear layer (its GEMMs take the run's compute format and FP8/FP4 casts).
bool is_linear_layer(const ModelConfig& m, int layer);
// How many there are: the MLP's every layer; the GPT's 4 a block and the LM head (the embedding, a
// gather, and attention's batched products are not Linear layers).
int linear_layer_count(const ModelConfig& m);
// A Linear layer's weight as (in, out): the MLP's sizes[l] → sizes[l + 1]; the GPT's QKV C → 3C,
// attention projection C → C, MLP fc C → 4C and proj 4C → C, LM head C → vocab. Its input has
// rows_per_example rows an example (the GPT: block_size positions; the MLP: 1).
struct LinearShape {
    int in = 0, out = 0;
};
LinearShape linear_shape(const ModelConfig& m, int layer);
int rows_per_example(const ModelConfig& m);
void validate(const ModelConfig& m);
// "2-64-64-2" ↔ {2, 64, 64, 2}
std::vector<int> parse_model_sizes(std::string_view text, const std::string& field);
std::string model_sizes_text(const std::vector<int>& sizes);

// The linear layers' floating-point operations in one training step over `examples` examples, two
// per multiply-add: every layer's forward GEMM and weight-gradient GEMM, and the input-gradient GEMM
// of every layer but the first (nothing needs the data's gradient). Recomputation's second forward
// pass and the element-wise ops are not counted: this is the work a GEMM rate is measured against.
// For the GPT: every Linear layer's three GEMMs (the LM head's dx included) and attention's two
// batched products forward and their four backward, over examples × block_size positions.
double gemm_flops_per_step(const ModelConfig& m, long long examples);

}  // namespace mpx
