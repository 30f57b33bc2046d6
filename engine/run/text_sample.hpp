// A GPT run's sample as a value (engine/run/sample.hpp writes them): what the records, the CSV and the
// app carry. Rule: plain data, so the app reaches it without the sampler's model headers.
#pragma once

#include <optional>
#include <string>

namespace mpx {

// One run's text at one step: the prompt and what followed it.
struct TextSample {
    int run = 0;
    long long step = 0;  // the step whose update the weights come from; -1: before training
    // The held-out loss of those same weights (the evaluation of that step, or one made for it);
    // empty where the session has no held-out split.
    std::optional<double> eval_loss;
    std::string text;    // the prompt, then up to sample.length characters
    // The run's logits held inf or NaN: no character could be drawn, and the text ends there.
    bool nonfinite = false;
};

}  // namespace mpx
