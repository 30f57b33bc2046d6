// The log-probability mismatch: the run's weights into each policy's own model, an uncounted
// forward pass over the held-out windows, every token's log p from the loss op's arithmetic.
#include "engine/run/logprob_mismatch.hpp"

#include <cmath>

#include "engine/base/error.hpp"
#include "engine/core/op_math.hpp"
#include "engine/run/run.hpp"

namespace mpx {

float token_logprob(std::span<const float> logits, int label) {
    // The loss op's row (inv_b = scale = 0: its gradient is thrown away), so a policy's log p is the
    // negative of the very loss the run trains on.
    return -core::softmax_xent_row([&](int c) { return logits[static_cast<std::size_t>(c)]; },
                                   static_cast<int>(logits.size()), label, 0.0f, 0.0f, [](int, float) {});
}

LogprobMismatch::Policy LogprobMismatch::make_policy(const std::string& label, const SessionConfig& cfg,
                                                     const InitialWeights& init, const BackendFactory& factory) const {
    Policy p;
    p.info = resolve_run(label, cfg);
    p.backend = factory();
    // The model as Run builds a run's (engine/run/run.cpp): the session's, with the label's GPT
    // switches; +qk-norm is refused by validate_mismatch, so the parameters are the session's.
    ModelConfig model = cfg.model;
    if (model.kind == ModelKind::gpt && p.info.model.kind == ModelKind::gpt) {
        model.attention = p.info.model.attention;
        model.norm_stats = p.info.model.norm_stats;
        model.autocast = p.info.model.autocast;
    }
    p.model = make_model(*p.backend, model, run_precisions(p.info, cfg, init), cfg.train.batch, init, cfg.train.optimizer);
    return p;
}

LogprobMismatch::LogprobMismatch(const SessionConfig& cfg, const InitialWeights& init, const BackendFactory& factory) {
    const MismatchConfig& m = cfg.mismatch;
    m_ref = make_policy(m.reference, cfg, init, factory);
    for (const std::string& label : m.policies) m_policies.push_back(make_policy(label, cfg, init, factory));
    m_logits.resize(static_cast<std::size_t>(cfg.train.batch) * static_cast<std::size_t>(cfg.model.gpt.block_size) *
                    static_cast<std::size_t>(cfg.model.gpt.vocab));
    m_delta.resize(m_policies.size());
    m_results.resize(m_policies.size());
    for (std::size_t i = 0; i < m_policies.size(); ++i) {
        // As the configuration writes them ("amp-fp16", not the scaler-suffixed run label): a scaler
        // plays no part in a forward pass.
        m_results[i].policy = m.policies[i];
        m_results[i].reference = m.reference;
    }
}

void LogprobMismatch::load_weights(Policy& p) {
    std::vector<Param>& params = p.model->params();
    if (params.size() != m_weights.size())
        throw ConfigError("mismatch.policies", "'" + p.info.label + "' has " + std::to_string(params.size()) +
                                                   " parameters, the run's weights " + std::to_string(m_weights.size()));
    Backend& be = *p.backend;
    for (std::size_t i = 0; i < params.size(); ++i) {
        Param& q = params[i];
        if (q.working.size() != m_weights[i].size())
            throw ConfigError("mismatch.policies", "'" + p.info.label + "': parameter " + std::to_string(i) +
                                                       " has another shape than the run's");
        be.upload(m_weights[i], q.working);  // rounded into the policy's working format (pure-*, half-*)
        if (q.has_master()) be.upload(m_weights[i], q.master);
    }
    be.begin_step();  // the uploads' counts belong to no step
}

void LogprobMismatch::logprobs(Policy& p, std::span<const EvalChunk> split, std::vector<float>& out) {
    Backend& be = *p.backend;
    Model& model = *p.model;
    std::size_t k = 0;
    for (const EvalChunk& chunk : split) {
        model.set_input(chunk.data.x);
        const Tensor& logits = model.forward(0, false, Pass::uncounted);  // (batch · T, V)
        be.download(logits, m_logits);
        be.begin_step();  // as Run::forward_text: what the pass left in the record belongs to no step
        const auto V = static_cast<std::size_t>(logits.cols());
        // A text chunk's labels are its real windows' positions (rows · T); padding rows have none.
        for (std::size_t r = 0; r < chunk.data.labels.size(); ++r)
            out[k++] = token_logprob({m_logits.data() + r * V, V}, chunk.data.labels[r]);
    }
}

const std::vector<MismatchResult>& LogprobMismatch::measure(Run& run, std::span<const EvalChunk> split, long long step) {
    run.read_weights(m_weights);
    std::size_t tokens = 0;
    for (const EvalChunk& chunk : split) tokens += chunk.data.labels.size();
    m_ref_lp.resize(tokens);  // the same size every call: allocated on the first
    m_lp.resize(tokens);
    load_weights(m_ref);
    logprobs(m_ref, split, m_ref_lp);
    for (std::size_t i = 0; i < m_policies.size(); ++i) {
        load_weights(m_policies[i]);
        logprobs(m_policies[i], split, m_lp);
        std::vector<float>& delta = m_delta[i];
        delta.resize(tokens);
        MismatchResult& res = m_results[i];
        res.step = step;
        res.weights = run.info().label;
        res.tokens = static_cast<long long>(tokens);
        res.bins = core::Bins{};
        double sum_abs = 0.0, sum = 0.0, max_abs = 0.0;
        bool nan = false;
        for (std::size_t t = 0; t < tokens; ++t) {
            const float d = m_lp[t] - m_ref_lp[t];  // both FP32, as the two engines hand them over
            delta[t] = d;
            ++res.bins.n[core::bin_slot(d)];
            const double a = std::fabs(static_cast<double>(d));
            nan = nan || std::isnan(a);
            sum_abs += a;
            sum += d;
            max_abs = a > max_abs ? a : max_abs;
        }
        const double n = tokens ? static_cast<double>(tokens) : 1.0;
        res.mean_abs = sum_abs / n;
        res.mean = sum / n;
        res.max_abs = nan ? std::nan("") : max_abs;
    }
    return m_results;
}

// ---- the run's weights -----------------------------------------------------------------------------

// Only downloads: nothing of the run is written, counted or begun.
void Run::read_weights(std::vector<std::vector<float>>& out) {
    require_idle("read_weights");
    std::vector<Param>& params = m_model->params();
    out.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Tensor& t = params[i].has_master() ? params[i].master : params[i].working;
        out[i].resize(t.size());
        m_backend->download(t, out[i]);
    }
}

}  // namespace mpx
