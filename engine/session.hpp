// A comparison: several runs from the same seed, initial weights and batch order, advanced in
// lockstep. Rule: the session gathers each micro-batch once and hands the same batch to every run;
// live changes (scaler, LR, clipping) land between steps. It keeps no history: callers keep records.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/dataset.hpp"
#include "engine/run.hpp"
#include "engine/session_config.hpp"

namespace mpx {

// Makes the backend for one run; the default gives CPU backends. The app and CLI pass one that
// picks the GPU where the configuration asks for it.
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// A ConfigError (data.n_train) when the data set could not fit in the memory this process may
// use; checked before the examples are generated.
void check_dataset_fits(const DatasetConfig& d);

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
    // Whether step `step` (0-based) evaluates: every eval_every-th step from step 0, and the last
    // step, as record_every keeps them; never with eval_every 0 or an empty held-out split.
    bool evaluates(long long step) const;
    // Raises the step count (a resumed session trained further); never lowers it.
    void extend_to(long long steps) { m_cfg.steps = std::max(m_cfg.steps, steps); }
    // Back to step 0 with the same seed: same weights, same batches.
    void reset();

    // Live-tunable settings; anything else needs a new Session (the UI says which is which).
    void set_scaler(const ScalerConfig& s);
    void set_lr(double lr);
    void set_clip_norm(double clip);
    void set_train(const TrainConfig& t);  // applies the live fields: lr, schedule, clipping

    // Everything needed to resume bit-identically: configuration, step, sampler and every run.
    nlohmann::json save_state() const;
    static std::unique_ptr<Session> load_state(const nlohmann::json& j, BackendFactory factory = {});

private:
    void build();       // build_runs, with out-of-memory turned into a ConfigError naming the fix
    void build_runs();
    void gather_eval_split();

    SessionConfig m_cfg;
    BackendFactory m_factory;
    Dataset m_data;
    InitialWeights m_init;
    std::unique_ptr<BatchSampler> m_sampler;
    std::vector<std::unique_ptr<Run>> m_runs;
    std::vector<Batch> m_micro;
    std::vector<EvalChunk> m_eval;  // the held-out split in batch-sized chunks
    long long m_step = 0;
    std::chrono::steady_clock::time_point m_start;
};

}  // namespace mpx
