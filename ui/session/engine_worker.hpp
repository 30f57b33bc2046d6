// The engine worker: owns the Session on its own QThread and trains in slices of ~10 ms, posting
// the next slice to its own event queue so that commands (pause, a live setting, export) land
// between steps. Rule: every engine exception is caught here and becomes runFailed; records and
// decision-boundary grids leave through the RecordBuffer only, never one signal per step.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "engine/run/boundary.hpp"
#include "engine/run/session.hpp"
#include "engine/run/step_pacer.hpp"
#include "ui/session/record_buffer.hpp"
#include "ui/session/record_spool.hpp"

class QTimer;

namespace mpx::gui {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    explicit EngineWorker(RecordBuffer* buffer);
    ~EngineWorker() override;

    // Called on the worker's thread (EngineController queues them).
    // Superseded calls are skipped, so a burst of preset changes, resets and steps (a hundred a
    // second from the stress test; a user clicking through the presets) builds and steps only what
    // the last of them asks for instead of each in turn: a configure when a newer configure was
    // requested (its session would be replaced before anyone saw it), a reset, step or start when
    // a newer configure or reset was (its work would be undone). Each carries the request number
    // or epoch EngineController read when it queued it.
    void configure(const mpx::SessionConfig& cfg, unsigned request);  // a new session at step 0; the old one stays if this fails
    // Run until paused, finished or stopAtStep (-1: none); Timing::paced keeps the pace (setPace).
    void start(long long stopAtStep, unsigned epoch, mpx::Timing timing = mpx::Timing::fastest);
    void pause();
    void stepOnce(unsigned epoch);
    void reset(unsigned epoch);                     // same configuration, step 0
    // From any thread, as a call is queued: configure's request number; the epoch a configure or
    // reset opens; the epoch now, for a step or start.
    unsigned requestConfigure() { return m_configureRequests.fetch_add(1, std::memory_order_relaxed) + 1; }
    unsigned requestEpoch() { return m_epoch.fetch_add(1, std::memory_order_relaxed) + 1; }
    unsigned epoch() const { return m_epoch.load(std::memory_order_relaxed); }
    void setScaler(const mpx::ScalerConfig& s);                           // the session scaler
    void setRunScaler(const QStringList& runs, const mpx::ScalerConfig& s);  // these runs' scalers
    void setTrain(const mpx::TrainConfig& t);
    // How fast a paced Run steps, from the next step on; configure takes the session's (cfg.pace).
    // A paced Run waits on a timer between slices, so every queued command still comes first.
    void setPace(const mpx::Pace& p);
    // The CSV and its sidecar; a GPT session's samples beside them (engine/io/samples_csv.hpp).
    void exportCsv(const QString& path);
    // Every run of a GPT session writes a sample now, from its current weights (Session::sample_now).
    void sampleNow();
    // While wanted, decision-boundary grids: during training as often as the BoundaryPacer allows
    // (≥ 250 ms apart, ≤ 10 % of the engine's time), and once whenever training stops on a step the
    // last grid did not show (pause, a single step, a new session, the view opened).
    void setBoundariesWanted(bool wanted);
    // While wanted (the Attention view is shown), every step of a GPT session keeps its attention
    // maps; the worker hands one to the buffer at most every 250 ms while training and the last
    // one whenever training stops.
    void setAttentionWanted(bool wanted);
    // From any thread, before queuing configure or reset or closing: the session's samples in
    // progress stop at their next character and are dropped (Session::set_interrupt), so the
    // queued call comes next instead of waiting for up to sample.length forward passes per run.
    void interruptSamples() { m_interrupt.store(true, std::memory_order_relaxed); }
    // On the worker's thread as it ends (QThread::finished): a paced Run's waiting timer stops
    // there, its own thread, so the worker can then be deleted from the window's.
    void threadEnding() { cancelPacedWait(); }

signals:
    void stateChanged(mpx::gui::EngineState state, qint64 step);
    void runFailed(const QString& message);
    void settingsApplied(qint64 step, const QString& what);
    void exported(const QString& path);
    void exportFailed(const QString& message);

private:
    static void releaseFreedMemory();  // freed session memory back to the system (glibc)
    void runSlice();
    void cancelPacedWait();  // a timer armed for the next paced step is dropped
    void stepInto(std::vector<mpx::StepRecord>& out);  // one lockstep step; throws engine errors
    void flush(std::vector<mpx::StepRecord>& out);
    void publishSession(const QString& device, const QString& note);
    void boundariesIfDue();    // training: when the pacer allows
    void boundariesIfStale(mpx::BoundaryTrigger why = mpx::BoundaryTrigger::on_request);  // when the last grid shows another step
    void computeBoundaries(mpx::BoundaryTrigger why);
    void emitState();
    LiveScalersPtr liveScalers() const;
    // The session's live changes since the last call become notes; returns them as one line each.
    QStringList noteLiveEffects();
    void applyLive(const std::function<void()>& change);
    enum class OnError { stop, carryOn };  // whether a failure pauses training
    bool guard(const QString& what, const std::function<void()>& f, OnError onError = OnError::stop);

    RecordBuffer* m_buffer;
    std::unique_ptr<mpx::Session> m_session;
    std::atomic<bool> m_interrupt{false};  // interruptSamples'; cleared when the queued call begins
    std::atomic<unsigned> m_configureRequests{0};  // requestConfigure's count
    std::atomic<unsigned> m_epoch{0};              // requestEpoch's count
    bool superseded(unsigned epoch) const { return epoch != this->epoch(); }
    RecordSpool m_spool;
    QString m_device;
    quint64 m_generation = 0;
    bool m_running = false;
    bool m_slicePosted = false;
    long long m_stopAt = -1;
    long long m_spooledSteps = 0;
    std::vector<bool> m_stopped;  // runs already reported as stopped
    std::vector<mpx::StepRecord> m_pending;
    std::vector<std::pair<int, mpx::Fp8ScaleRow>> m_fp8;  // FP8 scale rows not yet in the buffer
    std::vector<mpx::TextSample> m_samples;  // this session's, for the export (the buffer gets copies)
    std::vector<mpx::MismatchResult> m_mismatches;  // likewise its log-probability mismatch measurements
    void takeSamples();  // the session's new samples: kept for the export, copied to the buffer
    void takeAttention(bool stopping);  // the step's attention maps, to the buffer when due
    bool m_attentionWanted = false;
    std::shared_ptr<const mpx::AttentionSnapshot> m_attentionHeld;  // the newest, not handed over
    double m_attentionSent = 0.0;  // when the last was handed over (secondsNow)
    bool m_boundariesWanted = false;
    std::string m_boundaryRefusal;  // why this session's data set has no plane, or empty
    bool m_boundariesFailed = false;  // an evaluation threw: no more tries in this session
    long long m_boundaryStep = -1;    // steps done when the last grid was computed
    mpx::BoundaryPacer m_pacer;
    mpx::StepPacer m_stepPacer;
    bool m_paced = false;            // this Run keeps the pace (Timing::paced)
    QTimer* m_paceTimer = nullptr;   // single shot: the next paced slice (a child: moves with the worker)
};

}  // namespace mpx::gui
