// What a GPT session writes as it trains (engine/run/sample.hpp): every `every` steps, and at the
// end, each run continues `prompt` by `length` characters. Rule: the section belongs to the GPT; an
// MLP session that changes it is refused, naming the field, since it would write nothing.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace mpx {

struct SessionConfig;

inline constexpr int k_max_sample_length = 4096;

struct SampleConfig {
    // A sample on every n-th step from step 0 (as eval_every counts) and on the last step; 0: none
    // while training (the app's "sample now" still writes one).
    int every = 250;
    int length = 160;            // characters written after the prompt, 1 … k_max_sample_length
    std::string prompt = "The "; // UTF-8; every character must be one of the text's symbols
    bool operator==(const SampleConfig&) const = default;
};

nlohmann::json to_json(const SampleConfig& s);
// Fields absent from j keep those of `base`; a wrong type or an unknown key is refused naming it.
SampleConfig sample_config_from_json(const nlohmann::json& j, SampleConfig base = {});
// sample.every, sample.length and sample.prompt (not empty, UTF-8) each checked, and the section
// refused on an MLP. Whether the prompt's characters are the text's is checked where the text is
// read (engine/run/sample.hpp, prompt_ids).
void validate_sample(const SessionConfig& c);

}  // namespace mpx
