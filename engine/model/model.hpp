// The models a run trains: the interface every model gives a run (Model), and the MLP: layers
// fc1..fcN with activation, optional LayerNorm and Dropout, a loss in FP32 (the GPT: gpt.hpp).
// Rule: buffers are allocated once per (batch, policy) and reused every step, so the memory
// totals are the real footprint; with `recompute`, pre-activations are rebuilt in backward.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/compute/backend.hpp"
#include "engine/config/model_config.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

// FP32 initial values shared by every run of a session: PyTorch Linear's default
// U(−1/√fan_in, 1/√fan_in) for weights (out, in) and biases (out).
struct InitialWeights {
    std::vector<RowMatrix> w, b;
    std::vector<RowMatrix> tensors;  // the GPT: every parameter in the model's order (gpt.hpp)
};
// (The GPT's: init_gpt_weights, gpt.hpp; this gives it for model.kind = gpt too.)
InitialWeights init_weights(const ModelConfig& m, std::uint64_t seed);
// The site layers whose parameters an optimizer updates, ascending: every MLP layer; the GPT's
// (gpt_param_layers: its attention layers only under QK-norm, whose γ they hold).
std::vector<int> updated_layers(const ModelConfig& m);

// One trainable parameter: working copy, optional FP32 master, gradient, unscaled gradient (a
// separate FP32 copy where the gradient is stored narrower and the policy keeps one; else the
// gradient itself, unscaled in place) and optimizer state in the policy's state format.
struct Param {
    Tensor working, master, grad, grad32, state1, state2;
    Tensor compensation;  // Kahan write-back: what rounding dropped, in the working copy's format
    int layer = 0;  // fc1 is 0
    int index = 0;  // in the model's parameter order (fc1.weight 0, fc1.bias 1, ...): its SR stream
    bool has_master() const { return !master.empty(); }
    Tensor& unscaled() { return grad32.empty() ? grad : grad32; }
};

// The dropout streams: one per (step, micro-batch) of a session's seed, and within it one per layer
// (element i of layer l's mask: core::dropout_keeps(p, dropout_layer_seed(..., l), i)).
std::uint64_t dropout_step_seed(std::uint64_t session_seed, long long step, int micro);
std::uint64_t dropout_layer_seed(std::uint64_t step_seed, int layer);

// A parameter's buffers in the formats its layer's policy gives, filled with `init`.
Param make_param(Backend& be, const RowMatrix& init, const LayerPrecision& lp, OptimizerKind opt);

// Every parameter's stored state as exact floats (working, master, state1, state2 each, empty where
// absent) and Kahan compensation buffers, for Model's export/import; import checks the shapes.
std::vector<std::vector<float>> export_params_state(Backend& be, const std::vector<Param>& params);
void import_params_state(Backend& be, std::vector<Param>& params, const std::vector<std::vector<float>>& values);
bool params_have_compensation(const std::vector<Param>& params);
std::vector<std::vector<float>> export_params_compensation(Backend& be, const std::vector<Param>& params);
void import_params_compensation(Backend& be, std::vector<Param>& params, const std::vector<std::vector<float>>& values);

// What a run asks of its model, whichever kind (Mlp, Gpt). Sites are (layer, kind) as the
// step record numbers them (ModelConfig::layers()).
class Model {
public:
    virtual ~Model() = default;
    // Uploads a batch into the input buffer: the MLP's features (B, features); the GPT's token ids
    // (B, block_size), as exact floats.
    virtual void set_input(const RowMatrix& x) = 0;
    // Forward over the stored input; returns the logits (rows, outputs): the MLP's (B, outputs),
    // the GPT's (B·block_size, vocab), one row per position, whose labels are the next tokens.
    virtual const Tensor& forward(std::uint64_t dropout_seed, bool train, Pass pass = Pass::forward) = 0;
    virtual void backward(const Tensor& dlogits, std::uint64_t dropout_seed, Accumulate acc) = 0;
    virtual Tensor& dlogits() = 0;
    virtual Tensor& target() = 0;
    virtual std::vector<Param>& params() = 0;
    virtual const std::vector<LayerPrecision>& precisions() const = 0;
    virtual std::vector<Fp8Gemm>& fp8_gemms() = 0;
    virtual Format stored_format(int layer, HistTensor t) const = 0;
    virtual int batch() const = 0;
    virtual std::vector<std::vector<float>> export_state() const = 0;
    virtual void import_state(const std::vector<std::vector<float>>& values) = 0;
    virtual bool has_compensation() const = 0;
    virtual std::vector<std::vector<float>> export_compensation() const = 0;
    virtual void import_compensation(const std::vector<std::vector<float>>& values) = 0;
    // Hessian-vector products (Pearlmutter's R-operator, engine/core/r_op.hpp; model_hvp.cpp), the
    // MLP's: enable_hessian_vector allocates the R-pass buffers once, before the first step.
    // r_forward runs the R-forward pass along v (one direction per parameter, by Param::index) over
    // the values the last forward pass left and returns R{logits}; the run puts the loss's R{dlogits}
    // into r_dlogits(); r_backward then writes or adds (acc) H·v into each parameter's grad, over the
    // gradients the last backward pass left. The GPT refuses (its attention has no R-rules yet).
    virtual void enable_hessian_vector();
    virtual const Tensor& r_forward(std::span<Tensor* const> v, std::uint64_t dropout_seed);
    virtual Tensor& r_dlogits();
    virtual void r_backward(std::span<Tensor* const> v, std::uint64_t dropout_seed, Accumulate acc);
};

// The model of cfg.kind (Mlp or Gpt) with per-layer precisions `prec` (one per site layer).
std::unique_ptr<Model> make_model(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> prec, int batch,
                                  const InitialWeights& init, OptimizerKind opt);

class Mlp final : public Model {
public:
    Mlp(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> prec, int batch,
        const InitialWeights& init, OptimizerKind opt);

    // Uploads a batch (B, features) into the input buffer; its rounding counts at fc1's input.
    void set_input(const RowMatrix& x) override;
    // Forward over the stored input, counted at each layer's sites (Pass::uncounted: nowhere);
    // returns the logits (B, outputs). `dropout_seed` fixes masks; dropout only when training.
    const Tensor& forward(std::uint64_t dropout_seed, bool train, Pass pass = Pass::forward) override;
    // Backward from dlogits, counted at each layer's gradient sites (recomputation uncounted: the
    // forward pass counted it); weight gradients written (acc overwrite) or added (acc add).
    void backward(const Tensor& dlogits, std::uint64_t dropout_seed, Accumulate acc) override;

    Tensor& dlogits() override { return m_layers.back().dh; }
    Tensor& target() override { return m_target; }
    std::vector<Param>& params() override { return m_params; }
    const std::vector<LayerPrecision>& precisions() const override { return m_prec; }
    // Per layer, the FP8 scaling its linear ops use (read only where precisions()[i].fp8): the run
    // sets recipe and, for delayed scaling, each step's scales.
    std::vector<Fp8Gemm>& fp8_gemms() override { return m_fp8; }
    // The format a histogram tensor's values are rounded into at `layer`, the first narrow one where
    // they pass through two (grad_weight: the GEMM's write format); update_ulp: the format of the
    // weight its updates are applied to, the FP32 master where there is one.
    Format stored_format(int layer, HistTensor t) const override;
    int batch() const override { return m_batch; }
    // Every parameter's stored state as exact floats: per parameter working, master, state1,
    // state2 (empty where absent). Import restores it bit for bit.
    std::vector<std::vector<float>> export_state() const override;
    void import_state(const std::vector<std::vector<float>>& values) override;
    // Kahan write-back runs: every parameter's compensation buffer (empty where it has none, e.g.
    // LayerNorm's FP32 parameters), saved apart from export_state's four tensors a parameter.
    bool has_compensation() const override;
    std::vector<std::vector<float>> export_compensation() const override;
    void import_compensation(const std::vector<std::vector<float>>& values) override;
    void enable_hessian_vector() override;
    const Tensor& r_forward(std::span<Tensor* const> v, std::uint64_t dropout_seed) override;
    Tensor& r_dlogits() override { return m_layers.back().rdh; }
    void r_backward(std::span<Tensor* const> v, std::uint64_t dropout_seed, Accumulate acc) override;

private:
    struct Layer {
        Param* w = nullptr;
        Param* b = nullptr;
        Param* gamma = nullptr;
        Param* beta = nullptr;
        Tensor z, y, h;          // pre-activation, post-LayerNorm (if any), output (B, out)
        Tensor ln_mean, ln_rstd; // (B, 1) FP32
        Tensor dh, dy, dz;       // gradients (B, out), workspace
        bool hidden = true;
        Tensor rz, ry, rh;       // R-forward: R{z}, R{y}, R{h}, each in its twin's format
        Tensor rdh, rdy, rdz;    // R-backward: R{dh} (the output layer's: R{dlogits}), R{dy}, R{dz}
    };
    void forward_layer(int i, const Tensor& x, std::uint64_t seed, bool train, bool recomputing);
    const Tensor& layer_input(int i) const { return i == 0 ? m_input : m_layers[i - 1].h; }
    // The following ops count at (layer, kind), or nowhere while recomputing or evaluating.
    void at(int layer, TensorKind kind);

    Backend& m_be;
    ModelConfig m_cfg;
    std::vector<LayerPrecision> m_prec;
    int m_batch;
    std::vector<Param> m_params;
    std::vector<Layer> m_layers;
    Tensor m_input, m_target;
    Tensor m_recompute_z, m_recompute_y;  // shared workspace when recomputing
    bool m_counting = true;               // false while recomputing or evaluating
    std::vector<Fp8Gemm> m_fp8;           // by layer
    const Fp8Gemm* fp8_of(int i) const {
        return m_prec[static_cast<std::size_t>(i)].fp8 ? &m_fp8[static_cast<std::size_t>(i)] : nullptr;
    }
};

}  // namespace mpx
