// The attention maps of a step: the GPT's kept scores and probabilities, downloaded, with the
// counts the step's record holds at each block's scores site.
#include "engine/run/attention_maps.hpp"

#include <bit>
#include <stdexcept>

#include "engine/model/gpt.hpp"
#include "engine/run/run.hpp"

namespace mpx {

std::size_t AttentionMaps::bytes() const {
    std::size_t n = sizeof *this;
    for (const AttentionBlock& b : blocks) n += (b.scores.size() + b.probs.size()) * sizeof(float) + sizeof b;
    return n;
}

std::size_t AttentionSnapshot::bytes() const {
    std::size_t n = sizeof *this;
    for (const AttentionMaps& m : runs) n += m.bytes();
    return n;
}

AttentionMaps Run::attention_maps(long long step) {
    require_idle("attention_maps");
    const auto* gpt = dynamic_cast<const Gpt*>(m_model.get());
    if (!gpt) throw std::logic_error("Run::attention_maps: the model is not a GPT");
    const GptConfig& g = m_cfg->model.gpt;
    AttentionMaps m;
    m.run = m_index;
    m.step = step;
    m.batch = m_model->batch();
    m.heads = g.n_head;
    m.T = g.block_size;
    m.accumulation = m_train.accumulation;
    // The step's record: nothing has begun another step on the backend since its finish_step.
    const StepStats& st = m_backend->read_stats();
    for (int b = 0; b < g.n_layer; ++b) {
        AttentionBlock k;
        const Tensor& s = gpt->scores(b);
        const Tensor& p = gpt->probs(b);
        k.scores.resize(s.size());
        k.probs.resize(p.size());
        m_backend->download(s, k.scores);
        m_backend->download(p, k.probs);
        k.scores_format = s.format();
        k.probs_format = p.format();
        const core::Counts& c = st.site[site_index(gpt_layer(GptSite::attn, b), TensorKind::output)];
        k.overflow = c.overflow;
        k.overflow_max = std::bit_cast<float>(static_cast<std::uint32_t>(c.overflow_max));
        m.blocks.push_back(std::move(k));
    }
    return m;
}

}  // namespace mpx
