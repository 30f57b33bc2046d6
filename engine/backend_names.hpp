// The names of backend.hpp's setting enums (JSON, --set, the app's choices, messages), kept apart so
// that the backend interface stays free of configuration text. Rule: one row per value a user may
// choose; Activation::none (the output layer's) is not a choice.
#pragma once

#include <span>

#include "engine/backend.hpp"
#include "engine/enum_names.hpp"

namespace mpx {

constexpr EnumName<Activation> activation_names[] = {
    {Activation::relu, "relu"}, {Activation::gelu, "gelu"}, {Activation::tanh, "tanh"}};
constexpr std::span<const EnumName<Activation>> names_of(Activation) { return activation_names; }

constexpr EnumName<OptimizerKind> optimizer_names[] = {
    {OptimizerKind::sgd, "sgd"}, {OptimizerKind::adam, "adam"}, {OptimizerKind::adamw, "adamw"}};
constexpr std::span<const EnumName<OptimizerKind>> names_of(OptimizerKind) { return optimizer_names; }

}  // namespace mpx
