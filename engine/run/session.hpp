// A comparison: several runs from the same seed, initial weights and batch order, advanced in
// lockstep. Rule: the session gathers each micro-batch once and hands the same batch to every run;
// live changes (scaler, LR, clipping) land between steps, and every one is an entry of
// config().live_changes: a change made live is appended there, one the configuration lists is applied
// at the start of its step, so config() replays the session. It keeps no history: callers keep records.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/compute/backend_factory.hpp"
#include "engine/config/session_config.hpp"
#include "engine/model/dataset.hpp"
#include "engine/run/logprob_mismatch.hpp"
#include "engine/run/run.hpp"
#include "engine/run/sample.hpp"

namespace mpx {

// Makes the backend for one run; the default gives CPU backends. The app and CLI pass one that
// picks the GPU where the configuration asks for it.

// A ConfigError (data.n_train) when the data set could not fit in the memory this process may
// use; checked before the examples are generated.
void check_dataset_fits(const DatasetConfig& d);

// The GPT's text (data.kind = text): Debian's fortunes or data.text_file, checked against
// model.block_size (each split must hold a window of block_size + 1 characters: inputs and their
// next characters); its symbols fix the model's vocabulary, written into cfg.model.gpt.vocab.
std::shared_ptr<const TextCorpus> read_session_text(SessionConfig& cfg);
// The held-out windows an evaluation reads: data.n_test window starts spread evenly over the
// held-out 10 %, in whole batches (an evaluation averages every position of every window).
std::vector<std::size_t> eval_window_starts(const TextCorpus& text, int block_size, int batch, int n_test);

// A live change as it landed, for the event log and the CLI: one per run whose scaler a run_scalers
// change set, one for a session-scaler or training change (runs: every run it reached).
struct LiveEffect {
    long long step = 0;
    LiveTarget target = LiveTarget::session_scaler;
    std::vector<int> runs;
    std::string changes;  // "hysteresis 2 → 4" (live_change.hpp, scaler_changes)
};

class Session {
public:
    explicit Session(SessionConfig cfg, BackendFactory factory = {});
    // Runs keep a pointer to m_cfg: a Session stays where it was built (hold it by unique_ptr).
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const SessionConfig& config() const { return m_cfg; }
    const Dataset& dataset() const { return m_data; }
    std::size_t run_count() const { return m_runs.size(); }
    const Run& run(std::size_t i) const { return *m_runs[i]; }
    Run& run(std::size_t i) { return *m_runs[i]; }  // for reads that use its buffers (boundary.hpp)
    long long steps_done() const { return m_step; }
    bool finished() const { return m_step >= m_cfg.steps; }

    // One lockstep step: one record per run, in run order; on evaluation steps each record also
    // carries its run's loss and accuracy on the held-out split after the step's update.
    std::vector<StepRecord> step();
    // Records one step late: queues step N behind step N−1, which stays pending, and only then
    // finishes N−1, so on a GPU the host reads N−1's records while N runs. Returns the steps this
    // call finished, oldest first, each as step() returns it, bit for bit: N−1's (if pending) and
    // N's where N cannot stay pending: it evaluates, writes samples, measures the mismatch, keeps
    // attention maps or is the last step, a change is due at N+1, a run's scaler may stop it
    // (AtMin::error), or a backend keeps one step record (Run::can_queue_next). On the CPU's
    // threads (several runs, several threads) the steps overlap instead: each run trains on a
    // thread of the pool, and one done with N−1 starts N while another still trains N−1 (no
    // barrier between the two); N stays pending, training in the background, whenever nothing of
    // the list above needs it finished. While a step is pending nothing else may be asked of the
    // session (step, live changes, save_state throw std::logic_error; its runs are not to be read):
    // finish_pending() first.
    std::vector<std::vector<StepRecord>> step_ahead();
    bool pending() const { return m_pending.has_value() || !m_late.empty(); }
    // The pending step's records (empty when none is). After step_ahead threw (a run's step failed
    // to queue), the step that was pending was finished: its records come from here.
    std::vector<StepRecord> finish_pending();
    // Whether step `step` (0-based) evaluates: every eval_every-th step from step 0, and the last
    // step, as record_every keeps them; never with eval_every 0 or an empty held-out split.
    bool evaluates(long long step) const;
    // The GPT's samples (engine/run/sample.hpp) written since the last call, in step and run order:
    // each run's on every sample.every-th step from step 0 and on the last step, after the step's
    // evaluation, and those of sample_now. A stopped run writes none.
    std::vector<TextSample> take_samples() { return std::exchange(m_samples, {}); }
    bool samples(long long step) const;  // whether step `step` (0-based) writes samples
    // Every run writes a sample from its current weights (the app's "sample now"), as the last step
    // taken (−1 before the first) would, with the held-out loss of those weights. ConfigError on an
    // MLP session (its model writes no text).
    void sample_now();
    // A flag another thread raises to cut short the samples being written: the app raises it when
    // this session is about to be replaced, reset or closed, so a long sample (sample.length up to
    // 4096 forward passes) does not hold the engine thread. A run's interrupted sample is dropped,
    // not recorded; training is unchanged. Null (the default): never interrupted.
    void set_interrupt(const std::atomic<bool>* flag) { m_interrupt = flag; }
    // The next step keeps every GPT run's attention maps (engine/run/attention_maps.hpp), read after
    // its update and before its evaluation and samples; take_attention() hands them over once.
    void keep_attention() { m_keep_attention = true; }
    std::shared_ptr<AttentionSnapshot> take_attention() { return std::exchange(m_attention, nullptr); }
    // The log-probability mismatch (engine/run/logprob_mismatch.hpp) measured since the last call, in
    // step and policy order: on every mismatch.every-th step from step 0 and on the last step, after
    // the step's evaluation and samples, on the mismatch run's weights (none while it has stopped).
    std::vector<MismatchResult> take_mismatches() { return std::exchange(m_mismatches, {}); }
    bool measures_mismatch(long long step) const;  // whether step `step` (0-based) measures it
    // The last measurement's per-token Δ of policy i (LogprobMismatch::deltas); empty before one.
    std::span<const float> mismatch_deltas(std::size_t i) const {
        return m_mismatch && m_mismatch_measured ? m_mismatch->deltas(i) : std::span<const float>{};
    }
    // Raises the step count (a resumed session trained further); never lowers it.
    void extend_to(long long steps) { m_cfg.steps = std::max(m_cfg.steps, steps); }
    // Back to step 0 with the same seed: same weights, same batches, the same live changes replayed.
    void reset();

    // Live-tunable settings; anything else needs a new Session (the UI says which is which). Each
    // is validated (ConfigError naming the field, nothing changed), applied before the next step and
    // appended to config().live_changes at the current step; one that changes nothing is not.
    void set_scaler(const ScalerConfig& s);  // the session scaler: runs whose label names no scaler
    // The scaler of the runs named by label (as RunInfo::label, the CSV's run column), as given.
    void set_scaler(const std::vector<std::string>& runs, const ScalerConfig& s);
    void set_lr(double lr);
    void set_clip_norm(double clip);
    void set_train(const TrainConfig& t);  // applies the live fields: lr, schedule, clipping
    // The settings in force now: config().scaler and config().train with the live changes applied.
    const ScalerConfig& session_scaler() const { return m_session_scaler; }
    const TrainConfig& train() const { return m_train; }
    // The live changes applied since the last call, in order (the app's event log, the CLI's notes).
    std::vector<LiveEffect> take_live_effects() { return std::exchange(m_effects, {}); }

    // Everything needed to resume bit-identically (configuration, step, sampler and every run) is
    // written and read by the checkpoint format, engine/io/checkpoint.hpp.
    friend nlohmann::json save_state(const Session& session);
    friend std::unique_ptr<Session> load_session_state(const nlohmann::json& j, BackendFactory factory);

private:
    void gather_batches(std::vector<Batch>& micro);  // the step's micro-batches, the same for every run
    void queue_runs();      // the batches, then every run's step; on a throw the step is not taken
    // Whether runs step (and evaluate) on the pool's threads (engine/base/parallel.hpp): CPU runs,
    // more than one, more than one thread. Each run then takes its whole step and reads its record
    // on a thread (step_runs_in_parallel), and step_ahead leaves nothing pending. A run that throws
    // there does not keep the others from their step, as a serial loop does; the step is dropped
    // all the same.
    bool steps_in_parallel() const;
    std::vector<StepRecord> step_runs_in_parallel(double wall);  // the records, in run order
    // step_ahead with the runs' steps overlapping (Chains, engine/base/parallel.hpp): a chain a run,
    // a piece a step; where steps run in parallel and this thread may hand work to the pool.
    bool pipelines() const;
    std::vector<std::vector<StepRecord>> step_pipelined(double wall);
    void pipeline_step(std::size_t run, long long step);  // on a pool thread: the run's step, its record kept
    std::vector<StepRecord> take_pipelined(long long step, double wall);  // a finished step's records
    void drop_pipelined(long long failed);  // a step failed: it and every later one are not taken
    // Step s's micro-batches and records: two slots, so step s + 1 is gathered while s trains.
    std::vector<Batch>& micro_for(long long s) { return s % 2 ? m_micro_odd : m_micro; }
    void order_longest_first();  // m_order by m_last_us, longest first
    std::vector<StepRecord> finish_runs(double wall);
    std::vector<StepRecord> complete_step(std::vector<StepRecord> out);  // evaluation, next step, changes
    bool can_leave_pending() const;
    double wall_now() const;
    void require_nothing_pending(const char* what) const;
    void build();       // build_runs, with out-of-memory turned into a ConfigError naming the fix
    void build_runs();
    void gather_eval_split();
    // Every run's sample for `step`; `evaluated`: that step's records where it evaluated, else null.
    void write_samples(long long step, const std::vector<StepRecord>* evaluated);
    void apply_due();  // every change of the configuration whose step has come
    void apply(const LiveChange& c);
    void change_live(LiveChange c);
    void fold_applied();  // session scaler and training settings after the applied changes

    SessionConfig m_cfg;
    BackendFactory m_factory;
    Dataset m_data;
    void read_text();  // data.kind = text: the corpus, the model's vocabulary
    std::vector<std::size_t> m_starts;  // text: the batch's window starts (kept: no allocation a step)
    InitialWeights m_init;
    std::unique_ptr<BatchSampler> m_sampler;
    std::vector<std::unique_ptr<Run>> m_runs;
    std::vector<Batch> m_micro;
    std::vector<std::size_t> m_order;  // the order runs are handed to threads: longest last step first
    std::vector<double> m_last_us;     // each run's last step time
    std::vector<EvalChunk> m_eval;  // the held-out split in batch-sized chunks
    std::vector<std::unique_ptr<TextSampler>> m_samplers;  // the GPT: one per run, buffers made once
    std::vector<TextSample> m_samples;                      // written, not yet taken
    const std::atomic<bool>* m_interrupt = nullptr;         // set_interrupt's
    bool m_keep_attention = false;
    std::shared_ptr<AttentionSnapshot> m_attention;         // kept, not yet taken
    std::unique_ptr<LogprobMismatch> m_mismatch;            // mismatch.policies' models, built once
    std::size_t m_mismatch_run = 0;                         // the run whose weights it reads
    bool m_mismatch_measured = false;
    std::vector<MismatchResult> m_mismatches;               // measured, not yet taken
    void measure_mismatch(long long step);
    long long m_step = 0;
    // Live changes: m_cfg.live_changes[0, m_applied) are in force, every one whose step is <= m_step.
    std::size_t m_applied = 0;
    ScalerConfig m_session_scaler;
    TrainConfig m_train;
    std::vector<LiveEffect> m_effects;
    std::chrono::steady_clock::time_point m_start;
    std::optional<double> m_pending;  // step_ahead left step m_step − 1 queued: its wall time
    std::vector<StepRecord> m_late;   // a pending step finished when the next failed to queue
    std::vector<Batch> m_micro_odd;   // odd steps' micro-batches while steps overlap (micro_for)
    std::vector<StepRecord> m_ahead[2];         // steps' records by run, as the chains left them (slot s % 2)
    BatchSampler::State m_drawn[2];             // the sampler before each slot's batches were drawn
    bool m_pipelined = false;                   // the pending step trains on m_chains
    // Last: destroyed first, waiting for the steps still training, while everything they use remains.
    std::unique_ptr<Chains> m_chains;
};

}  // namespace mpx
