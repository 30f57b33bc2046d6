// The compute interface a run trains through: the CPU backend (Eigen) and the CUDA backend implement
// it. Rule: every op computes in FP32 from the operands' stored values and rounds its result into the
// destination's format, returning what that rounding did (RoundStats), so both backends count
// underflow and overflow at the same storage boundaries.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "engine/tensor.hpp"

namespace mpx {

enum class Activation : std::uint8_t { relu, gelu, tanh, none };
std::string_view to_string(Activation a);

enum class Accumulate : std::uint8_t { overwrite, add };

struct LossResult {
    double loss = 0.0;     // mean loss over the batch, FP32 arithmetic
    RoundStats rounding;   // rounding of the scaled gradient into the logits' format
};

struct GradCheck {
    bool found_inf = false;
    double sum_squares = 0.0;  // of the unscaled gradients (for the global norm)
};

struct UpdateStats {
    std::size_t changed = 0;    // weights whose computed update was non-zero
    std::size_t lost = 0;       // ... but whose stored working copy did not change
    RoundStats rounding;        // write-back of the working copy
};

enum class OptimizerKind : std::uint8_t { sgd, adam, adamw };

struct OptimizerStep {
    OptimizerKind kind = OptimizerKind::adam;
    float lr = 1e-3f;
    float momentum = 0.9f;       // SGD
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    float weight_decay = 0.0f;   // SGD/Adam: L2 added to the gradient; AdamW: decoupled
    long long t = 1;             // Adam step number (bias correction), counts applied steps only
};

class Backend {
public:
    virtual ~Backend() = default;
    Backend() = default;
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    virtual std::string name() const = 0;     // "CPU (Eigen)" or the GPU's name
    virtual bool is_gpu() const = 0;

    Tensor alloc(Format f, int rows, int cols, MemCategory c);
    const MemoryTotals& memory() const { return m_memory; }

    // Host transfers. upload rounds floats into dst's format.
    virtual RoundStats upload(std::span<const float> src, Tensor& dst) = 0;
    virtual void download(const Tensor& src, std::span<float> dst) = 0;
    virtual void copy(const Tensor& src, Tensor& dst) = 0;           // same shape, any formats
    virtual void fill(Tensor& dst, float value) = 0;

    // y (B, out) = x (B, in) · wᵀ (in, out) + b (out); GEMM operands rounded to `compute`, FP32
    // accumulation (cuBLAS compute type 32F), bias added in FP32 before rounding into y.
    virtual RoundStats linear_forward(const Tensor& x, const Tensor& w, const Tensor* b,
                                      Format compute, Tensor& y) = 0;
    // dx (B, in) = dy (B, out) · w (out, in)
    virtual RoundStats linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                                             Tensor& dx) = 0;
    // dw (out, in) (+)= round_through(dyᵀ · x); db (out) (+)= round_through(column sums of dy).
    // round_through is the format the GEMM writes (autocast: the low format) before dw's format.
    virtual RoundStats linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                              Format round_through, Tensor& dw, Tensor* db,
                                              Accumulate acc) = 0;
    // Both backward GEMMs of one layer: dw, db as linear_backward_weight, and dx (when given) as
    // linear_backward_input. Backends may share work between the two (the CPU decodes dy once).
    virtual RoundStats linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                       Format compute, Format round_through, Tensor& dw, Tensor* db,
                                       Accumulate acc, Tensor* dx) {
        RoundStats s = linear_backward_weight(dy, x, compute, round_through, dw, db, acc);
        if (dx) s += linear_backward_input(dy, w, compute, *dx);
        return s;
    }
    virtual RoundStats activation_forward(Activation a, const Tensor& z, Tensor& h) = 0;
    // dz = dh ⊙ act'(z)
    virtual RoundStats activation_backward(Activation a, const Tensor& z, const Tensor& dh,
                                           Tensor& dz) = 0;
    // y = γ ⊙ (x − μ)/√(σ² + ε) + β per row, statistics in FP32; mean/rstd (B, 1) FP32 kept for
    // backward.
    virtual RoundStats layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         Tensor& y, Tensor& mean, Tensor& rstd) = 0;
    virtual RoundStats layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& rstd, const Tensor& dy, Tensor& dx,
                                          Tensor& dgamma, Tensor& dbeta, Accumulate acc) = 0;
    // h *= mask / (1 − p) with a mask drawn from (seed); the same seed gives the same mask.
    virtual RoundStats dropout(Tensor& h, float p, std::uint64_t seed) = 0;
    // Mean softmax cross-entropy of logits (B, C) against labels, in FP32; dlogits = scale ·
    // ∂loss/∂logits / accum, rounded into dlogits' format.
    virtual LossResult softmax_cross_entropy(const Tensor& logits, std::span<const int> labels,
                                             float scale, Tensor& dlogits) = 0;
    // Mean over all elements of (pred − target)², target in FP32.
    virtual LossResult mse(const Tensor& pred, const Tensor& target, float scale,
                           Tensor& dpred) = 0;
    // Classification accuracy of logits against labels (evaluation only).
    virtual double accuracy(const Tensor& logits, std::span<const int> labels) = 0;

    // master (FP32) = grad · inv_scale, multiplied in FP32; checks every value for inf/NaN and sums
    // squares. grad and master may be the same tensor (in-place unscale).
    virtual GradCheck unscale_and_check(const Tensor& grad, float inv_scale, Tensor& master_grad) = 0;
    virtual void scale(Tensor& t, float factor) = 0;
    // One optimizer step on FP32 master weights (or, without a master, on the working copy in its
    // own format), then write-back into the working copy; counts updates the working copy lost.
    virtual UpdateStats optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                                         Tensor& working, Tensor& state1, Tensor* state2) = 0;

protected:
    virtual void* raw_alloc(std::size_t bytes) = 0;
    virtual void raw_free(void* p) noexcept = 0;

private:
    friend class Tensor;
    void release(Tensor& t) noexcept;
    MemoryTotals m_memory;
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace mpx
