// The GPT's samples: the prompt's ids, one forward pass a character on the model's own buffers,
// and the draw from the run's softmax with the session's counter-based uniforms.
#include "engine/run/sample.hpp"

#include <algorithm>
#include <cmath>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/core/rng.hpp"
#include "engine/run/run.hpp"

namespace mpx {

namespace {
// The length in bytes of the UTF-8 sequence that starts with byte b (the prompt is checked UTF-8).
std::size_t utf8_length(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }
// A stream of its own (engine/core/rng.hpp's derive): no draw of training is shared or shifted.
constexpr std::uint64_t k_sample_stream = 0x73616d706c65ull;  // "sample"
}  // namespace

std::vector<std::uint16_t> prompt_ids(const TextCorpus& text, const std::string& prompt) {
    std::vector<std::uint16_t> ids;
    for (std::size_t at = 0; at < prompt.size();) {
        const std::size_t n = utf8_length(static_cast<unsigned char>(prompt[at]));
        const std::string symbol = prompt.substr(at, n);
        std::size_t id = 0;
        while (id < text.vocab.size() && text.vocab[id] != symbol) ++id;
        if (id == text.vocab.size())
            throw ConfigError("sample.prompt", quoted_text(symbol) + " is not one of the " + std::to_string(text.vocab.size()) +
                                                   " symbols of " + text.source + "; use characters the text holds");
        ids.push_back(static_cast<std::uint16_t>(id));
        at += n;
    }
    return ids;
}

std::uint64_t sample_key(std::uint64_t seed, long long step) {
    return Rng::derive(seed, k_sample_stream).next_u64() ^ (static_cast<std::uint64_t>(step + 1) * 0xd1b54a32d192ed03ull);
}

int draw_character(std::span<const float> logits, double u, std::span<float> probs) {
    const int V = static_cast<int>(logits.size());
    float mx = logits[0];
    for (int c = 0; c < V; ++c) {
        if (!std::isfinite(logits[c])) return -1;
        mx = mx < logits[c] ? logits[c] : mx;
    }
    float sum = 0.0f;
    for (int c = 0; c < V; ++c) sum += expf(logits[c] - mx);
    const float lse = mx + logf(sum);
    for (int c = 0; c < V; ++c) probs[c] = expf(logits[c] - lse);
    double running = 0.0;
    int last = 0;  // the last id with a non-zero probability: where the sum falls short of u by rounding
    for (int c = 0; c < V; ++c) {
        if (probs[c] <= 0.0f) continue;
        running += probs[c];
        last = c;
        if (u < running) return c;
    }
    return last;
}

TextSampler::TextSampler(const TextCorpus& text, const SampleConfig& cfg, int block_size)
    : m_text(&text), m_length(cfg.length), m_block(block_size) {
    m_ids = prompt_ids(text, cfg.prompt);
    m_prompt = m_ids.size();
    m_ids.reserve(m_prompt + static_cast<std::size_t>(m_length));
    m_input = RowMatrix::Zero(1, block_size);
    m_logits.resize(static_cast<std::size_t>(block_size) * text.vocab.size());
    m_probs.resize(text.vocab.size());
    m_out.reserve(cfg.prompt.size() + static_cast<std::size_t>(m_length) * 4);  // a symbol is ≤ 4 bytes
}

bool TextSampler::write(Run& run, std::uint64_t seed, long long step, const std::atomic<bool>* interrupt) {
    const std::size_t V = m_probs.size(), T = static_cast<std::size_t>(m_block);
    m_ids.resize(m_prompt);
    m_out.clear();
    const std::uint64_t key = sample_key(seed, step);
    m_nonfinite = false;
    for (int k = 0; k < m_length; ++k) {
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return false;
        // The one sequence holds the last block_size ids, from position 0; causal attention keeps
        // the later positions (left as they were) out of the logits at the last one.
        const std::size_t n = std::min(m_ids.size(), T), first = m_ids.size() - n;
        for (std::size_t t = 0; t < n; ++t) m_input(0, static_cast<Eigen::Index>(t)) = m_ids[first + t];
        run.forward_text(m_input, m_logits);
        const std::span<const float> row(m_logits.data() + (n - 1) * V, V);
        const int id = draw_character(row, hash_uniform(key, static_cast<std::uint64_t>(k)), m_probs);
        if (id < 0) {
            m_nonfinite = true;
            break;
        }
        m_ids.push_back(static_cast<std::uint16_t>(id));
    }
    for (std::uint16_t id : m_ids) m_out += m_text->vocab[id];
    return true;
}

// ---- the run's forward pass on text ----------------------------------------------------------------

// Same rule as Run::evaluate (engine/run/evaluate.cpp): only buffers the next step overwrites before
// reading them are written (input, activations, logits), nothing is counted into a step.
void Run::forward_text(const RowMatrix& x, std::span<float> logits) {
    require_idle("forward_text");
    m_model->set_input(x);
    m_backend->download(m_model->forward(0, false, Pass::uncounted), logits);
    m_backend->begin_step();  // as predict: whatever the pass left in the record belongs to no step
}

}  // namespace mpx
