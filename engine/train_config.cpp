// TrainConfig validation, LR schedules and JSON.
#include "engine/train_config.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "engine/error.hpp"
#include "engine/json_util.hpp"

namespace mpx {

std::string_view to_string(Schedule s) {
    switch (s) {
        case Schedule::constant: return "constant";
        case Schedule::step: return "step";
        case Schedule::warmup_cosine: return "warmup-cosine";
    }
    return "?";
}

std::string_view to_string(OptimizerKind k) {
    switch (k) {
        case OptimizerKind::sgd: return "sgd";
        case OptimizerKind::adam: return "adam";
        case OptimizerKind::adamw: return "adamw";
    }
    return "?";
}

void validate(const TrainConfig& t) {
    if (t.batch < 1 || t.batch > 1'000'000) throw ConfigError("train.batch", "must be between 1 and 1,000,000");
    if (t.accumulation < 1 || t.accumulation > 1024)
        throw ConfigError("train.accumulation", "must be between 1 and 1024 micro-batches");
    if (!(t.clip_norm >= 0.0) || !std::isfinite(t.clip_norm))
        throw ConfigError("train.clip_norm", "must be 0 (off) or a positive finite norm");
    if (!(t.loss_weight > 0.0) || !std::isfinite(t.loss_weight))
        throw ConfigError("train.loss_weight", "must be a positive finite factor");
    if (!(t.lr >= 0.0) || !std::isfinite(t.lr) || t.lr > 1e3)
        throw ConfigError("train.lr", "must be a non-negative finite learning rate (got " +
                                          std::to_string(t.lr) + ")");
    if (!(t.momentum >= 0.0 && t.momentum < 1.0)) throw ConfigError("train.momentum", "must be in [0, 1)");
    if (!(t.beta1 >= 0.0 && t.beta1 < 1.0)) throw ConfigError("train.beta1", "must be in [0, 1)");
    if (!(t.beta2 >= 0.0 && t.beta2 < 1.0)) throw ConfigError("train.beta2", "must be in [0, 1)");
    if (!(t.eps > 0.0) || !std::isfinite(t.eps)) throw ConfigError("train.eps", "must be positive");
    if (!(t.weight_decay >= 0.0) || !std::isfinite(t.weight_decay))
        throw ConfigError("train.weight_decay", "must be non-negative");
    if (t.step_size < 1) throw ConfigError("train.step_size", "must be at least 1");
    if (!(t.gamma > 0.0 && t.gamma <= 1.0)) throw ConfigError("train.gamma", "must be in (0, 1]");
    if (t.warmup_steps < 0) throw ConfigError("train.warmup_steps", "must be non-negative");
    if (t.total_steps < 0) throw ConfigError("train.total_steps", "must be non-negative");
    if (!(t.min_lr >= 0.0) || t.min_lr > t.lr) throw ConfigError("train.min_lr", "must be in [0, lr]");
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
    j = nlohmann::json{{"batch", t.batch},
                       {"accumulation", t.accumulation},
                       {"clip_norm", t.clip_norm},
                       {"loss_weight", t.loss_weight},
                       {"optimizer", std::string(to_string(t.optimizer))},
                       {"lr", t.lr},
                       {"momentum", t.momentum},
                       {"beta1", t.beta1},
                       {"beta2", t.beta2},
                       {"eps", t.eps},
                       {"weight_decay", t.weight_decay},
                       {"schedule", std::string(to_string(t.schedule))},
                       {"step_size", t.step_size},
                       {"gamma", t.gamma},
                       {"warmup_steps", t.warmup_steps},
                       {"total_steps", t.total_steps},
                       {"min_lr", t.min_lr},
                       {"advance_on_skip", t.advance_on_skip}};
}

TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig t) {
    JsonReader r(j, "train");
    r.get("batch", t.batch);
    r.get("accumulation", t.accumulation);
    r.get("clip_norm", t.clip_norm);
    r.get("loss_weight", t.loss_weight);
    r.get_enum("optimizer", t.optimizer,
               {{"sgd", OptimizerKind::sgd}, {"adam", OptimizerKind::adam}, {"adamw", OptimizerKind::adamw}});
    r.get("lr", t.lr);
    r.get("momentum", t.momentum);
    r.get("beta1", t.beta1);
    r.get("beta2", t.beta2);
    r.get("eps", t.eps);
    r.get("weight_decay", t.weight_decay);
    r.get_enum("schedule", t.schedule,
               {{"constant", Schedule::constant}, {"step", Schedule::step},
                {"warmup-cosine", Schedule::warmup_cosine}});
    r.get("step_size", t.step_size);
    r.get("gamma", t.gamma);
    r.get("warmup_steps", t.warmup_steps);
    r.get("total_steps", t.total_steps);
    r.get("min_lr", t.min_lr);
    r.get("advance_on_skip", t.advance_on_skip);
    r.finish();
    validate(t);
    return t;
}

}  // namespace mpx
