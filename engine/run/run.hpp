// One training run of a session: a precision policy, its loss scaler, optimizer and model, trained one
// step at a time on batches the session hands it. Rule: NaN, inf and skipped steps are recorded,
// never thrown; only DeepSpeed's "already at minimum" error stops a run (as it stops DeepSpeed).
#pragma once

#include <stdexcept>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "engine/model/model.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/run/attention_maps.hpp"
#include "engine/run/record.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {

// A micro-batch as the session gathered it, identical for every run.
struct Batch {
    RowMatrix x;              // (B, features)
    std::vector<int> labels;  // classification
    RowMatrix targets;        // (B, outputs) regression
};

// A chunk of the held-out split, gathered once by the session: x is (batch, features) with zero
// rows past `rows` (the model's buffers hold a whole batch); labels (rows) or targets (rows, outputs).
struct EvalChunk {
    Batch data;
    int rows = 0;
};

// What an evaluation measured; accuracy is empty for regression.
struct Evaluation {
    std::optional<double> loss, accuracy;
};

// Whether an adaptive run trains in amp: its FP32 footprint is over adaptive_threshold × the memory
// budget (true for every other mode). Decided once, as the run starts.
bool adaptive_low(const RunInfo& info, const SessionConfig& cfg, const InitialWeights& init);
// The per-layer precisions a run of session cfg trains with (engine/precision/policy.hpp).
std::vector<LayerPrecision> run_precisions(const RunInfo& info, const SessionConfig& cfg, const InitialWeights& init);

inline constexpr std::size_t k_max_fp8_scale_rows = 4'000'000;  // then the oldest half is dropped

class Run {
public:
    // `info` from resolve_run (run_plan.hpp): the run trains with info.scaler.
    Run(int index, RunInfo info, const SessionConfig& cfg, const InitialWeights& init,
        std::unique_ptr<Backend> backend);

    StepRecord step(long long step_index, const std::vector<Batch>& micro, LossKind loss);
    // step() in two halves: queue_step hands the backend the whole step (on the GPU it returns as
    // soon as the work is queued: the batches are copied), finish_step waits for its record, the
    // step's one wait, and returns what step() returns. The session queues every run's step before
    // it finishes any, so one run's work runs on the GPU while the next is queued. Between the two
    // nothing else may be asked of the run.
    // Records one step late: where can_queue_next(), a second step may be queued before the first
    // is finished (finish_step then reads the older one while the newer runs on the GPU).
    void queue_step(long long step_index, const std::vector<Batch>& micro, LossKind loss);
    StepRecord finish_step();  // the oldest queued step's record
    std::size_t queued() const { return m_queued.size(); }
    // Whether the next step may be queued now: nothing is queued, or one step is and the backend
    // holds two step records, that step collects no histograms (their bins are kept once), and no
    // step of this run can stop it (a scaler that refuses at its minimum, AtMin::error: the step
    // after it must never have run).
    bool can_queue_next() const;
    // The queued steps' records dropped (another run's step failed to queue); nothing when none is.
    void abandon_step() noexcept;
    // The current weights on the held-out split (engine/run/evaluate.cpp): forward only, no dropout,
    // in this run's own precisions. Leaves nothing behind that the next step reads. Empty for a
    // stopped run or an empty split.
    Evaluation evaluate(std::span<const EvalChunk> split, LossKind loss);
    // The current weights' outputs (logits, or regression values) on any inputs x (n, features):
    // the same forward pass as evaluate, in batch-sized chunks (the last zero-padded), values
    // exactly as stored in the output's format. Same rule as evaluate (engine/run/boundary.cpp).
    RowMatrix predict(const RowMatrix& x);  // (n, outputs)
    // The GPT's forward pass on token ids x (batch, block_size), without dropout, counted nowhere,
    // its logits (batch · block_size, vocab) downloaded into `logits`, as stored. Same rule as
    // evaluate (engine/run/sample.cpp); allocates nothing.
    void forward_text(const RowMatrix& x, std::span<float> logits);
    // The GPT's attention buffers and this step's counts at each block's scores, as step `step` left
    // them (engine/run/attention_maps.cpp): call after its finish_step, before anything else.
    AttentionMaps attention_maps(long long step);
    // The current weights as exact floats, one vector a parameter in the model's order: each one's
    // FP32 master where it has one, else its working copy (engine/run/logprob_mismatch.cpp). Only
    // downloads; sized on the first call, so later ones allocate nothing.
    void read_weights(std::vector<std::vector<float>>& out);

    const RunInfo& info() const { return m_info; }
    bool failed() const { return !m_failure.empty(); }
    const std::string& failure() const { return m_failure; }
    // The loss scaler lives in the backend (Backend::set_scaler, scaler_update); this is the host's
    // mirror of it, as of the last step's read_stats.
    const LossScaler& scaler() const { return m_scaler; }
    const Backend& backend() const { return *m_backend; }
    bool adaptive_low() const { return m_adaptive_low; }
    // The exponent histograms collected so far (every instruments.every-th step, bounded).
    const HistogramLog& histograms() const { return m_histograms; }
    // FP8 runs: every step's scaled tensors (bounded by k_max_fp8_scale_rows), in step order.
    const std::vector<Fp8ScaleRow>& fp8_scales() const { return m_fp8_scales; }
    // The format a histogram tensor's values are stored in at `layer` (Mlp::stored_format).
    Format stored_format(int layer, HistTensor t) const { return m_model->stored_format(layer, t); }

    // Live changes, applied before the next step. The session hands a scaler change only to runs
    // that follow its scaler (info().follows_session_scaler), resolved as resolve_run does.
    void set_scaler(const ScalerConfig& c);
    void set_train(const TrainConfig& t) { m_train = t; }

    // The checkpoint format (engine/io/checkpoint.hpp) reads and writes a run's state.
    friend nlohmann::json save_state(const Run& run);
    friend void load_run_state(Run& run, const nlohmann::json& j);

private:
    int m_index;
    RunInfo m_info;
    const SessionConfig* m_cfg;
    TrainConfig m_train;
    std::unique_ptr<Backend> m_backend;
    std::unique_ptr<Model> m_model;
    LossScaler m_scaler;  // the mirror: config, and the state the backend's last update left
    long long m_applied_steps = 0;   // optimizer steps taken (Adam's t): the backend's, mirrored
    std::uint32_t m_compensation_max = 0;  // Kahan runs: the last applied step's largest |c|, FP32 bits
    std::vector<core::BiasCorrection> m_bias;  // Adam's bias corrections for t = 1..size, on the backend
    double m_bias_betas[2] = {0.0, 0.0};    // the betas m_bias was computed with
    long long m_schedule_steps = 0;  // schedule steps taken: the backend's, mirrored
    std::vector<float> m_lrs;        // the learning rate by schedule steps, on the backend
    std::optional<std::pair<long long, TrainConfig>> m_lrs_for;  // the session steps and settings of m_lrs
    std::vector<ParamRef> m_param_refs;  // the model's parameters for the ops over all of them
    // What finish_step needs of the step queue_step queued.
    struct Queued {
        StepRecord rec;          // what is known before the record: run, step, lr, scale
        bool stopped = false;    // a stopped run: rec is the whole record
        bool collect = false;    // histograms collected
        int accum = 1;           // micro-batches
        OnInf on_inf = OnInf::skip;
        double queue_us = 0.0;   // time spent queueing (part of the step's time)
        long long begun = 0;     // its Backend::begin_step, counted in m_begun
    };
    // The queued steps, oldest first, at most two, held in place: a std::deque would allocate a
    // block on each push, and a step allocates nothing (DESIGN).
    class QueuedSteps {
    public:
        bool empty() const { return m_count == 0; }
        std::size_t size() const { return m_count; }
        Queued& front() { return m_slot[m_head]; }
        Queued& back() { return m_slot[(m_head + m_count - 1) % 2]; }
        const Queued& back() const { return m_slot[(m_head + m_count - 1) % 2]; }
        void push_back(Queued q) {
            if (m_count == 2) throw std::logic_error("Run: a third step queued");
            m_slot[(m_head + m_count) % 2] = std::move(q);
            ++m_count;
        }
        void pop_front() {
            m_head = (m_head + 1) % 2;
            --m_count;
        }
        void clear() { m_count = 0; }

    private:
        Queued m_slot[2];
        std::size_t m_head = 0, m_count = 0;
    };
    QueuedSteps m_queued;
    long long m_begun = 0;        // steps begun on the backend (a step that failed to queue too)
    std::string m_failure;
    bool m_adaptive_low = true;
    HistogramLog m_histograms;
    int m_fp8_tensors = 0;  // FP8 runs: the amax histories the backend keeps (layers × tensors)
    std::vector<Fp8ScaleRow> m_fp8_scales;
    // Work outside a step (evaluation, predictions) would begin a step on the backend, clearing
    // the record of a step still queued: refused while one is (std::logic_error).
    void require_idle(const char* what) const;
    void cover_adam_steps(long long t);  // m_bias reaches step t (on the backend too)
    void cover_schedule(long long n);    // m_lrs holds n schedule steps, for these settings
    void fp8_after_step(long long step_index, const StepStats& st, StepRecord& rec);
    // The loss op of one micro-batch on `logits` into the model's dlogits, gradient × `factor`.
    void loss_op(const Batch& b, LossKind loss, const Tensor& logits, ScaleBy factor);
    // The gradient penalty (train.gradient_penalty; run_penalty.cpp): each parameter's FP32
    // direction and a gradient tensor for one micro-batch alone, allocated once (setup_penalty, which
    // also refuses what a penalty cannot reach); penalty_micro_batch queues one micro-batch's
    // forward, gradients, penalty and H·v.
    struct PenaltyBuffers {
        std::vector<Tensor> direction, grad;
        std::vector<Tensor*> v;
        std::vector<PenaltyRef> alone, in_place;
        bool unscale = true, scaled_grads = true;  // the recipe's steps this run takes (a mistake skips one)
    };
    PenaltyBuffers m_penalty;
    void setup_penalty();
    void penalty_micro_batch(int k, int accum, const Batch& b, LossKind loss, std::uint64_t drop_seed);
};

}  // namespace mpx
