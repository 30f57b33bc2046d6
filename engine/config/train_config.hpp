// Optimizer, learning-rate schedule and step settings shared by every run of a session.
// Rule: the LR schedule is a pure function of the count of schedule steps taken, so a saved count
// restores it exactly.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/base/fields.hpp"
#include "engine/config/backend_names.hpp"
#include "engine/core/op_math.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

enum class Schedule : std::uint8_t { constant, step, warmup_cosine };
constexpr EnumName<Schedule> schedule_names[] = {
    {Schedule::constant, "constant"}, {Schedule::step, "step"}, {Schedule::warmup_cosine, "warmup-cosine"}};
constexpr std::span<const EnumName<Schedule>> names_of(Schedule) { return schedule_names; }
inline std::string_view to_string(Schedule s) { return enum_name(s); }
inline std::string_view to_string(OptimizerKind k) { return enum_name(k); }
constexpr EnumName<PenaltyKind> penalty_names[] = {{PenaltyKind::norm, "norm"}, {PenaltyKind::squared_norm, "squared_norm"}};
constexpr std::span<const EnumName<PenaltyKind>> names_of(PenaltyKind) { return penalty_names; }

// Limits the engine's arithmetic relies on: the dropout streams of a step are numbered
// step × max_accumulation + micro-batch (Run::step).
inline constexpr int k_max_accumulation = 1024;

struct TrainConfig {
    int batch = 256;
    int accumulation = 1;          // micro-batches per optimizer step
    double clip_norm = 0.0;        // global-norm clipping after unscaling; 0 = off
    double loss_weight = 1.0;      // multiplies the loss (as auxiliary-loss weights do)
    OptimizerKind optimizer = OptimizerKind::adam;
    double lr = 1e-2;
    double momentum = 0.9;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double weight_decay = 0.0;
    Schedule schedule = Schedule::constant;
    int step_size = 1000;          // step schedule: lr × gamma every step_size steps
    double gamma = 0.5;
    int warmup_steps = 0;          // warm-up + cosine: linear warm-up, then cosine to min_lr
    long long total_steps = 0;     // cosine length; 0 = the session's step count
    double min_lr = 0.0;
    bool advance_on_skip = true;   // false: skipped steps do not advance the schedule (DeepSpeed)
    // How runs with FP16/BF16 weights and no FP32 master (pure-*) write their updates back; a run
    // label's suffix (+sr, +kahan, +nearest) overrides it for that run (engine/core/write_back.hpp).
    WriteBack write_back = WriteBack::nearest;
    // PaLM's z-loss weight λ: λ·mean over positions of (log Z)² added to the GPT's cross-entropy
    // (core::softmax_xent_z_row); 0 = off. The held-out loss stays the cross-entropy alone.
    double z_loss = 0.0;
    // PyTorch's gradient penalty (its AMP examples; docs/penalty.md): λ·‖g‖ (or λ·‖g‖²) of each
    // micro-batch's loss gradient g added to its loss; 0 = off. The two switches reproduce the
    // recipe's classic mistakes: penalty_unscale = false forgets the explicit × 1/S (the penalty is
    // taken of S·g), penalty_scaled_grads = false takes g from the unscaled loss.
    double gradient_penalty = 0.0;
    PenaltyKind penalty = PenaltyKind::norm;
    bool penalty_unscale = true;
    bool penalty_scaled_grads = true;
    bool operator==(const TrainConfig&) const = default;
};
// Every setting, with its range, help text and whether a change applies live (Session::set_train).
std::span<const Field<TrainConfig>> train_fields();
void validate(const TrainConfig& t);
// LR after `taken` schedule steps, for a session of `session_steps` steps.
double lr_at(const TrainConfig& t, long long taken, long long session_steps);

void to_json(nlohmann::json& j, const TrainConfig& t);
TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig base);

}  // namespace mpx
