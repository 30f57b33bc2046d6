// What each precision writes: a GPT run continues the session's prompt from its current weights,
// temperature-1 sampling from its own softmax, one character at a time.
// Rule: sampling never changes training and never differs between runs by chance: the forward pass
// is the uncounted one evaluation uses (no dropout, no counters, no amax history), and the k-th
// character's uniform is hash_uniform(sample_key(seed, step), k) — the same for every run, thread
// count and resume — so two runs part only where their own probabilities do.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/compute/row_matrix.hpp"
#include "engine/config/sample_config.hpp"
#include "engine/model/text_corpus.hpp"
#include "engine/run/text_sample.hpp"

namespace mpx {

class Run;

// The prompt as ids of the text's vocabulary. ConfigError naming sample.prompt for a character the
// text does not hold.
std::vector<std::uint16_t> prompt_ids(const TextCorpus& text, const std::string& prompt);

// The key of step `step`'s uniforms: a pure function of the session seed and the step.
std::uint64_t sample_key(std::uint64_t seed, long long step);

// The character drawn from one row of logits (vocab values) with uniform u in [0, 1): softmax in
// FP32 with the loss op's arithmetic (core::softmax_xent_row: max, Σ exp(l − max), exp(l − lse)),
// into `probs`, then the first id whose running sum (in double) passes u. −1 when a logit is inf
// or NaN.
int draw_character(std::span<const float> logits, double u, std::span<float> probs);

// One run's sampler: every buffer it needs is allocated once, here, so writing a sample allocates
// nothing (the text's capacity holds the longest sample).
class TextSampler {
public:
    TextSampler(const TextCorpus& text, const SampleConfig& cfg, int block_size);
    // The run's text from its current weights, for step `step` of a session seeded `seed`: read it
    // with text() and nonfinite() until the next write. False, and no text, when `interrupt` was
    // raised before the last character (Session::set_interrupt).
    bool write(Run& run, std::uint64_t seed, long long step, const std::atomic<bool>* interrupt = nullptr);
    const std::string& text() const { return m_out; }
    bool nonfinite() const { return m_nonfinite; }

private:
    const TextCorpus* m_text;
    int m_length, m_block;
    std::vector<std::uint16_t> m_ids;  // (prompt + length) the context so far
    std::size_t m_prompt = 0;          // the prompt's ids at its front
    RowMatrix m_input;                 // (1, block_size) the context's last window: one sequence, not a batch
    std::vector<float> m_logits;       // (block_size, vocab)
    std::vector<float> m_probs;        // (vocab)
    std::string m_out;
    bool m_nonfinite = false;
};

}  // namespace mpx
