// TrainConfig validation, LR schedules and JSON.
#include "engine/config/train_config.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/base/text.hpp"

namespace mpx {

std::span<const Field<TrainConfig>> train_fields() {
    using T = TrainConfig;
    constexpr Apply live = Apply::live;
    static const Field<T> fields[] = {
        field<&T::batch>({.name = "batch", .label = "Batch size", .min = 1, .max = 1'000'000,
                          .help = "Samples per micro-batch."}),
        field<&T::accumulation>({.name = "accumulation", .label = "Accumulation", .min = 1,
                                 .max = k_max_accumulation,
                                 .help = "Micro-batches whose gradients are added before one optimizer step."}),
        field<&T::clip_norm>({.name = "clip_norm", .label = "Clip grad norm", .min = 0, .apply = live,
                              .help = "Gradient-norm clipping, always applied after unscaling. 0 turns it off.",
                              .hint = "0 turns clipping off"}),
        field<&T::loss_weight>({.name = "loss_weight", .label = "Loss weight", .min = 0, .min_open = true,
                                .help = "Multiplies the loss, as auxiliary-loss weights do."}),
        field<&T::optimizer>({.name = "optimizer", .label = "Optimizer",
                              .help = "SGD with momentum, Adam, or AdamW (decoupled weight decay)."}),
        field<&T::lr>({.name = "lr", .label = "Learning rate", .min = 0, .max = 1e3, .apply = live,
                       .help = "The optimizer's step size; changes apply at the next step."}),
        field<&T::momentum>({.name = "momentum", .label = "Momentum (SGD)", .min = 0, .max = 1, .max_open = true,
                             .apply = live, .help = "SGD momentum."}),
        field<&T::beta1>({.name = "beta1", .label = "Beta1 (Adam)", .min = 0, .max = 1, .max_open = true,
                          .help = "Adam's decay of the gradient's running mean."}),
        field<&T::beta2>({.name = "beta2", .label = "Beta2 (Adam)", .min = 0, .max = 1, .max_open = true,
                          .help = "Adam's decay of the squared gradient's running mean."}),
        field<&T::eps>({.name = "eps", .label = "Epsilon (Adam)", .min = 0, .min_open = true,
                        .help = "Added to Adam's denominator."}),
        field<&T::weight_decay>({.name = "weight_decay", .label = "Weight decay", .min = 0, .apply = live,
                                 .help = "L2 penalty (SGD, Adam) or decoupled decay (AdamW)."}),
        field<&T::schedule>({.name = "schedule", .label = "Schedule", .apply = live,
                             .help = "How the learning rate changes over the run: constant, multiplied by "
                                     "gamma every step size steps, or linear warm-up then cosine decay."}),
        field<&T::step_size>({.name = "step_size", .label = "Step size", .min = 1, .apply = live,
                              .help = "step schedule: multiply the learning rate by gamma every this many "
                                      "steps."}),
        field<&T::gamma>({.name = "gamma", .label = "Gamma", .min = 0, .max = 1, .min_open = true, .apply = live,
                          .help = "step schedule: the factor applied every step size steps."}),
        field<&T::warmup_steps>({.name = "warmup_steps", .label = "Warm-up steps", .min = 0, .apply = live,
                                 .help = "warmup-cosine: steps of linear warm-up before the cosine decay."}),
        field<&T::total_steps>({.name = "total_steps", .label = "Decay steps", .min = 0, .apply = live,
                                .help = "warmup-cosine: where the decay ends; 0 = the session's step count."}),
        field<&T::min_lr>({.name = "min_lr", .label = "Minimum LR", .min = 0, .max = 1e3, .apply = live,
                           .help = "warmup-cosine: the learning rate at the end of the decay."}),
        field<&T::advance_on_skip>({.name = "advance_on_skip", .label = "Skipped steps advance the schedule",
                                    .apply = live,
                                    .help = "Whether a skipped step advances the learning-rate schedule "
                                            "(DeepSpeed's does not)."}),
        field<&T::z_loss>({.name = "z_loss", .label = "z-loss (GPT)", .min = 0, .max = 1,
                           .help = "PaLM's z-loss: adds this weight times the mean over positions of (log Z)², Z "
                                   "the softmax's normaliser of the logits, to the GPT's training loss (PaLM uses "
                                   "1e-4); the held-out loss stays the cross-entropy. 0 turns it off."}),
        field<&T::gradient_penalty>({.name = "gradient_penalty", .label = "Gradient penalty λ", .min = 0, .max = 1e6,
                                     .help = "PyTorch's gradient penalty (its AMP examples): adds λ times the norm "
                                             "of each micro-batch's loss gradient (train.penalty) to its loss; its "
                                             "gradient needs Hessian-vector products, about one more forward and "
                                             "backward pass. MLP, CPU backend, no FP8/FP4 runs. 0 turns it off."}),
        field<&T::penalty>({.name = "penalty", .label = "Penalty form",
                            .help = "norm: λ·‖g‖, as PyTorch's example; squared_norm: λ·‖g‖² (gradient 2·H·g)."}),
        field<&T::penalty_unscale>({.name = "penalty_unscale", .label = "Penalty unscales g",
                                    .help = "true: g = scaled gradients × 1/S, as PyTorch's example does by hand. "
                                            "false reproduces the mistake of forgetting it: the penalty is S "
                                            "times too heavy and moves whenever the scaler does."}),
        field<&T::penalty_scaled_grads>({.name = "penalty_scaled_grads", .label = "Penalty from scaled loss",
                                         .help = "true: g is taken from the scaled loss, as PyTorch's example does. "
                                                 "false reproduces the mistake of taking it from the unscaled loss: "
                                                 "FP16 gradients underflow and the penalty is underestimated."}),
        field<&T::write_back>({.name = "write_back", .label = "Write-back (pure runs)",
                               .help = "How runs with FP16/BF16 weights and no FP32 master (pure-fp16, "
                                       "pure-bf16) store each update: nearest (round to nearest even), "
                                       "stochastic (round up with probability equal to the distance, as "
                                       "torchao's bf16_stochastic_round) or kahan (a compensation buffer in "
                                       "the weights' format carries what rounding drops, as optimi's "
                                       "kahan_sum). A run label's +sr or +kahan sets it for one run."}),
    };
    return fields;
}

void validate(const TrainConfig& t) {
    check_ranges(train_fields(), t, "train");
    if (t.min_lr > t.lr) throw ConfigError("train.min_lr", "must be in [0, lr] (got " + format_number(t.min_lr) + ")");
    if (t.gradient_penalty == 0.0) {  // a penalty setting with no penalty reaches no run
        if (t.penalty != PenaltyKind::norm)
            throw ConfigError("train.penalty", "reaches no run: train.gradient_penalty is 0; set a λ, or drop it");
        if (!t.penalty_unscale)
            throw ConfigError("train.penalty_unscale", "reaches no run: train.gradient_penalty is 0; set a λ, or drop it");
        if (!t.penalty_scaled_grads)
            throw ConfigError("train.penalty_scaled_grads",
                              "reaches no run: train.gradient_penalty is 0; set a λ, or drop it");
    }
    if (!t.penalty_unscale && !t.penalty_scaled_grads)
        throw ConfigError("train.penalty_unscale", "= false reaches no run when train.penalty_scaled_grads = false "
                                                   "(gradients of the unscaled loss have no 1/S to forget); keep one "
                                                   "mistake at a time");
}

double lr_at(const TrainConfig& t, long long taken, long long session_steps) {
    switch (t.schedule) {
        case Schedule::constant: return t.lr;
        case Schedule::step: return t.lr * std::pow(t.gamma, static_cast<double>(taken / t.step_size));
        case Schedule::warmup_cosine: {
            if (taken < t.warmup_steps)
                return t.lr * static_cast<double>(taken + 1) / static_cast<double>(t.warmup_steps);
            const long long total = t.total_steps > 0 ? t.total_steps : session_steps;
            const long long span = std::max<long long>(1, total - t.warmup_steps);
            const double progress =
                std::min(1.0, static_cast<double>(taken - t.warmup_steps) / static_cast<double>(span));
            return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
        }
    }
    return t.lr;
}

void to_json(nlohmann::json& j, const TrainConfig& t) {
    j = nlohmann::json::object();
    write_fields(j, train_fields(), t);
}

TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig t) {
    if (!j.is_object()) throw ConfigError("train", "must be a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) read_field(train_fields(), t, it.key(), it.value(), "train");
    validate(t);
    return t;
}

}  // namespace mpx
