// What one training step counted, gathered where the ops run: every op adds its rounding counts to
// the backend's record (on the GPU it stays on the device), and the run reads the record once per
// step. Rule: plain data compiled for CPU and GPU alike. An op adds to the site the run or model
// has set — a layer and the kind of tensor it writes there — so the record says where each count
// arose; a site's kind decides its pass (forward, backward, update).
#pragma once

#include <cstdint>
#include <optional>

#include "engine/core/format_core.hpp"
#include "engine/core/fp4.hpp"
#include "engine/core/fp8_math.hpp"
#include "engine/core/host_device.hpp"
#include "engine/core/scaler_rule.hpp"

namespace mpx {

// The passes of a step. forward: activations and GEMM operand casts of the forward pass (their
// overflows count); backward: gradient roundings (the underflow fraction is backward's underflow
// over its non-zero inputs); update: unscaling, clipping and the optimizer (lost updates, overflow
// of the write-back); uncounted: work whose counts the step does not report (recomputation,
// uploads of targets, evaluation).
enum class Pass : std::uint8_t { forward, backward, update, uncounted };

// What an op writes at a layer, in the order a step visits them.
enum class TensorKind : std::uint8_t {
    input,            // forward: the batch uploaded into the model's input format (layer 0)
    operand,          // forward: x and w cast to the GEMM's compute format
    output,           // forward: the linear layer's output z = x·wᵀ + b
    normalized,       // forward: LayerNorm's output
    activation,       // forward: the activation's output (dropout included)
    grad_output,      // backward: the gradient arriving at the layer's output (the loss's, dropout)
    grad_operand,     // backward: that gradient cast to the GEMM's compute format
    grad_activation,  // backward: through the activation, and LayerNorm's backward (dγ, dβ too)
    grad_input,       // backward: the gradient passed to the layer below
    grad_weight,      // backward: weight and bias gradients
    unscaled,         // update: the unscaled gradients
    optimizer,        // update: optimizer state and the working copy's write-back
};
inline constexpr int k_tensor_kinds = 12;
MPX_HOST_DEVICE constexpr Pass pass_of(TensorKind k) {
    return k <= TensorKind::activation  ? Pass::forward
           : k <= TensorKind::grad_weight ? Pass::backward
                                          : Pass::update;
}
const char* to_string(TensorKind k);  // "grad_input"

// Sites are (layer, kind); a model has at most k_max_layers layers (ModelConfig's validate).
inline constexpr int k_max_layers = 64;
inline constexpr int k_sites = k_max_layers * k_tensor_kinds;
MPX_HOST_DEVICE constexpr int site_index(int layer, TensorKind k) {
    return layer * k_tensor_kinds + static_cast<int>(k);
}
// The sites of a model of `layers` layers in the order a step writes them: forward (layer by
// layer: input, operand casts, output, normalized, activation), then backward from the last layer
// (grad_output, grad_activation, grad_operand, grad_weight, grad_input), then the update (per
// layer: unscaled, optimizer). Calls f(layer, kind) for each.
template <class F>
void for_each_site_in_step_order(int layers, F&& f) {
    using K = TensorKind;
    for (int l = 0; l < layers; ++l)
        for (K k : {K::input, K::operand, K::output, K::normalized, K::activation}) f(l, k);
    for (int l = layers - 1; l >= 0; --l)
        for (K k : {K::grad_output, K::grad_activation, K::grad_operand, K::grad_weight, K::grad_input})
            f(l, k);
    for (int l = 0; l < layers; ++l)
        for (K k : {K::unscaled, K::optimizer}) f(l, k);
}

MPX_HOST_DEVICE constexpr int fp8_index(int layer, Fp8Tensor t) {
    return layer * k_fp8_tensors + static_cast<int>(t);
}


// What optimizer_update does on a step whose gradients held inf/NaN (read from the step record):
// skip (every loss scaler) or apply the NaN update anyway (no scaler, as plain PyTorch does).
enum class OnInf : std::uint8_t { skip, apply };

// What the step's Backend::scaler_update did to the backend's loss scaler. updated: an update ran
// this step (else the rest is as begin_step left it); at_minimum: the rule refused to back off a
// scale already at min_scale (at_min = error), `after` equals `before` and event is none.
struct ScalerStep {
    ScalerState before, after;
    ScaleEvent event = ScaleEvent::none;
    std::uint8_t updated = 0, at_minimum = 0;
};
namespace core {
// The body of Backend::scaler_update, one thread on the GPU: `state` updated in place, `out` written.
MPX_HOST_DEVICE inline void scaler_step(const ScalerRule& rule, ScalerState& state, bool found_inf, ScalerStep& out) {
    out.before = state;
    const ScalerOutcome o = update_scaler(rule, state, found_inf);
    out.after = state;
    out.event = o.event;
    out.updated = 1;
    out.at_minimum = o.at_minimum ? 1 : 0;
}
}  // namespace core

// Whether a step's optimizer update was applied: not when a skipping run found inf/NaN.
MPX_HOST_DEVICE inline bool step_applied(OnInf on_inf, bool found_inf) { return !(on_inf == OnInf::skip && found_inf); }

struct StepStats {
    core::Counts site[k_sites];  // site_index(layer, kind)
    unsigned long long found_bad = 0;  // inf/NaN unscaled gradients (also in their sites' `bad`)
    double loss_sum = 0.0;     // Σ of each loss op's mean loss (core::mean_loss), in call order
    double sum_squares = 0.0;  // of the unscaled gradients, in core::k_sum_chunk order
    double penalty_sum = 0.0;  // Σ of each micro-batch's λ·P (Backend::gradient_penalty), in call order
    // FP8 runs: what each layer's scaled casts did, fp8_index(layer, tensor); zero elsewhere.
    core::Fp8Record fp8[k_max_layers * k_fp8_tensors];
    // FP4 runs: where those casts' elements and blocks landed on the E2M1 grid, by the same index.
    core::Fp4Record fp4[k_max_layers * k_fp8_tensors];
    ScalerStep scaler;  // Backend::scaler_update
    long long applied_steps = 0;  // Backend::count_applied_step: the optimizer steps taken so far
    long long schedule_steps = 0;  // Backend::count_schedule_step: the LR schedule's steps so far

    // A pass's counts: its sites in the first `layers` layers added up.
    MPX_HOST_DEVICE core::Counts of(Pass p, int layers = k_max_layers) const {
        core::Counts t;
        for (int i = 0; i < layers * k_tensor_kinds; ++i)
            if (pass_of(static_cast<TensorKind>(i % k_tensor_kinds)) == p) t += site[i];
        return t;
    }
    // Any unscaled gradient was inf or NaN.
    MPX_HOST_DEVICE bool found_inf() const { return found_bad != 0; }
    // Every site's counts added up (an op checked in isolation).
    MPX_HOST_DEVICE core::Counts total() const {
        core::Counts t;
        for (const core::Counts& c : site) t += c;
        return t;
    }
};

}  // namespace mpx
