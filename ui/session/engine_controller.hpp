// The window's handle on the engine: starts the worker's QThread, queues commands to it and
// re-emits its signals on the UI thread. Rule: every call returns at once; results come back as
// signals (stateChanged, runFailed, settingsApplied, exported) and records through buffer().
#pragma once

#include <QObject>
#include <QThread>

#include "engine/run/step_pacer.hpp"
#include "ui/session/record_buffer.hpp"
#include "ui/session/session_info.hpp"

namespace mpx::gui {

class EngineWorker;

class EngineController : public QObject {
    Q_OBJECT
public:
    explicit EngineController(QObject* parent = nullptr);
    ~EngineController() override;

    RecordBuffer& buffer() { return m_buffer; }
    EngineState state() const { return m_state; }
    qint64 step() const { return m_step; }  // steps done, as last reported by the worker

    void configure(const mpx::SessionConfig& cfg);  // a new session (replaces the current one); its pace too
    // Timing::paced keeps pace() (the Run button); fastest ignores it (a run to a step for a
    // picture or a test). Either way every later call is served at once: a paced Run waits on a
    // timer in the worker's event loop, never in a sleep.
    void start(qint64 stopAtStep = -1, mpx::Timing timing = mpx::Timing::fastest);
    void pause();
    void stepOnce();
    void reset();
    void setScaler(const mpx::ScalerConfig& s);  // the session scaler (runs without "+preset")
    // The scaler of the runs named (RunDescription::label), whatever their label says; a bad value
    // comes back as runFailed with the field named, and the session carries on.
    void setRunScaler(const QStringList& runs, const mpx::ScalerConfig& s);
    void setTrain(const mpx::TrainConfig& t);
    // How fast a paced Run steps (engine/config/pace.hpp), from its next step on.
    void setPace(const mpx::Pace& p);
    const mpx::Pace& pace() const { return m_pace; }  // the last configured or set
    void exportCsv(const QString& path);
    void sampleNow();  // a GPT session's runs write a sample now; it arrives through buffer()
    // Whether the window shows the decision boundaries: the worker computes grids only while it
    // does (paced, see EngineWorker::setBoundariesWanted); they arrive through buffer().
    void setBoundariesWanted(bool wanted);
    // Whether the window shows the Attention view: GPT steps keep their attention maps only then.
    void setAttentionWanted(bool wanted);
    // The engine's threads (0: one per core), applied between steps: the runs of a CPU session step
    // side by side and large GEMMs split across them, to the same bits for any count. The pool's
    // threads start from the engine thread, so they share its lower priority and the window stays
    // responsive.
    void setThreads(unsigned n);
    unsigned threads() const { return m_threads; }  // the count in force (0 resolved to the cores)
    static unsigned cores();

signals:
    void stateChanged(mpx::gui::EngineState state, qint64 step);
    void runFailed(const QString& message);
    void settingsApplied(qint64 step, const QString& what);
    void exported(const QString& path);
    void exportFailed(const QString& message);
    void threadsChanged(unsigned threads);

private:
    template <class F>
    void post(F&& f);

    RecordBuffer m_buffer;
    QThread m_thread;
    EngineWorker* m_worker = nullptr;
    EngineState m_state = EngineState::empty;
    qint64 m_step = 0;
    unsigned m_threads = 1;
    mpx::Pace m_pace;
};

}  // namespace mpx::gui
