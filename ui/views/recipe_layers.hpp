// The layers the FP8 and FP4 tabs list, as a student reads them. Rule: the names come from the
// engine (layer_label: "fc2", "block 1 · q, k, v", "LM head"); the views only show them.
#pragma once

#include <QString>

#include <vector>

#include "engine/config/model_config.hpp"

namespace mpx::gui {

// Before a recipe's first step: the layers its casts reach, the model's Linear layers (the GPT's
// embedding and attention have none).
std::vector<int> recipeLayers(const mpx::ModelConfig& m);
// "block 1 · q, k, v (block1.attn.qkv)" for the GPT, "fc2" for the MLP.
QString recipeLayerText(const mpx::ModelConfig& m, int layer);

}  // namespace mpx::gui
