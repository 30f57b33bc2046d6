// The names of backend.hpp's setting enums (JSON, --set, the app's choices, messages), kept apart so
// that the backend interface stays free of configuration text. Rule: one row per value a user may
// choose; Activation::none (the output layer's) is not a choice.
#pragma once

#include <span>

#include "engine/base/enum_names.hpp"
#include "engine/core/op_math.hpp"

namespace mpx {

constexpr EnumName<Activation> activation_names[] = {
    {Activation::relu, "relu"}, {Activation::gelu, "gelu"}, {Activation::tanh, "tanh"}};
constexpr std::span<const EnumName<Activation>> names_of(Activation) { return activation_names; }
inline std::string_view to_string(Activation a) { return a == Activation::none ? "none" : enum_name(a); }

constexpr EnumName<OptimizerKind> optimizer_names[] = {
    {OptimizerKind::sgd, "sgd"}, {OptimizerKind::adam, "adam"}, {OptimizerKind::adamw, "adamw"}};
constexpr std::span<const EnumName<OptimizerKind>> names_of(OptimizerKind) { return optimizer_names; }

}  // namespace mpx
