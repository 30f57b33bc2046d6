// The log-probability mismatch (arXiv 2510.26788): one run's current weights read by other precision
// policies, as an RL trainer and its inference engine read the same weights with different kernels;
// every held-out token's log p under each policy against the reference policy's (FP32).
// Rule: measuring never changes training. The run is only read (its weights downloaded, nothing of
// it written or counted); each policy is a model of its own on a backend of its own, built once with
// every buffer, so a measurement allocates nothing and the runs' bits are the same with or without it.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/compute/backend_factory.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "engine/model/model.hpp"
#include "engine/run/mismatch_result.hpp"

namespace mpx {

class Run;
struct EvalChunk;

// The log-probability of `label` from one row of logits (vocab values): −(the loss op's row loss),
// core::softmax_xent_row's arithmetic in FP32 (max, Σ exp(l − max), lse − l[label]).
float token_logprob(std::span<const float> logits, int label);

class LogprobMismatch {
public:
    // The reference and cfg.mismatch.policies, each a model of cfg's shape (its label's GPT switches
    // applied, as Run builds its own) at batch cfg.train.batch, on a backend from `factory`.
    LogprobMismatch(const SessionConfig& cfg, const InitialWeights& init, const BackendFactory& factory);

    // Every policy on `run`'s current weights (each parameter's FP32 master where it has one, else
    // its working copy, rounded into each policy's stored formats) over the held-out split, for step
    // `step`: one result a policy, in cfg.mismatch.policies' order, valid until the next call.
    // ConfigError (mismatch.policies) when a policy's parameters do not match the run's.
    const std::vector<MismatchResult>& measure(Run& run, std::span<const EvalChunk> split, long long step);
    // The last measurement's per-token Δ of policy i (tokens, in window and position order).
    std::span<const float> deltas(std::size_t i) const { return m_delta[i]; }
    // The last measurement's reference log-probabilities (tokens).
    std::span<const float> reference_logprobs() const { return m_ref_lp; }

private:
    struct Policy {
        RunInfo info;
        std::unique_ptr<Backend> backend;
        std::unique_ptr<Model> model;
    };
    Policy make_policy(const std::string& label, const SessionConfig& cfg, const InitialWeights& init,
                       const BackendFactory& factory) const;
    void load_weights(Policy& p);
    // The policy's log p of every real token of the split into `out` (tokens).
    void logprobs(Policy& p, std::span<const EvalChunk> split, std::vector<float>& out);

    Policy m_ref;
    std::vector<Policy> m_policies;
    std::vector<std::vector<float>> m_weights;  // by parameter: the run's weights as exact floats
    std::vector<float> m_logits;                // (batch · block_size, vocab)
    std::vector<float> m_ref_lp;                // (tokens)
    std::vector<float> m_lp;                    // (tokens) one policy's
    std::vector<std::vector<float>> m_delta;    // by policy, (tokens)
    std::vector<MismatchResult> m_results;
};

}  // namespace mpx
