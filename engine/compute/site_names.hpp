// The names of the step's counting sites as people read them ("fc2.grad_input"), for records, logs
// and the app. Rule: text about core's site_index, kept out of core (which nvcc compiles: no strings).
#pragma once

#include <optional>
#include <string>

#include "engine/config/model_config.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {

// "fc2.grad_input" for a site_index (layers are named fc1, fc2, ... as in selective_layers).
std::string site_name(int index);
// The same for any model: the GPT's "block0.attn.output", "lm_head.grad_output" (layer_name).
std::string site_name(int index, const ModelConfig& m);
// "fc3.output, where 83456 overflowed": a step's first inf/NaN site (StepRecord::first_nonfinite)
// and, when a finite value overflowed there, its magnitude before rounding; empty for -1.
std::string first_nonfinite_text(int site, std::optional<double> magnitude);
std::string first_nonfinite_text(int site, std::optional<double> magnitude, const ModelConfig& m);

// As a student reads them, for the app's rows and messages: the MLP's layers keep their names
// ("fc2"); the GPT's say what each is ("block 2 · attention", "LM head"), and its sites what
// each holds ("block 2 · attention scores", "block 2 · softmax", "residual after block 2",
// "LM head logits"). The identifiers above stay what files, settings and the CSV use.
std::string layer_label(const ModelConfig& m, int layer);
std::string site_label(int index, const ModelConfig& m);
// "block 0 · attention scores (block0.attn.output), where 83456 overflowed"; the MLP's as
// first_nonfinite_text; empty for -1.
std::string first_nonfinite_label(int site, std::optional<double> magnitude, const ModelConfig& m);

}  // namespace mpx
