// EngineController: one QThread, one worker, queued lambdas.
#include "ui/session/engine_controller.hpp"

#include <algorithm>

#include "engine/base/parallel.hpp"
#include "ui/session/engine_worker.hpp"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace mpx::gui {

EngineController::EngineController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<mpx::gui::EngineState>();
    m_thread.setObjectName(QStringLiteral("mpx-engine"));
    m_worker = new EngineWorker(&m_buffer);
    m_worker->moveToThread(&m_thread);
    connect(m_worker, &EngineWorker::stateChanged, this, [this](EngineState s, qint64 step) {
        m_state = s;
        m_step = step;
        emit stateChanged(s, step);
    });
    connect(m_worker, &EngineWorker::runFailed, this, &EngineController::runFailed);
    connect(m_worker, &EngineWorker::settingsApplied, this, &EngineController::settingsApplied);
    connect(m_worker, &EngineWorker::exported, this, &EngineController::exported);
    connect(m_worker, &EngineWorker::exportFailed, this, &EngineController::exportFailed);
    // The engine yields to the window: on a busy machine the UI thread is scheduled first, so the
    // window answers at once while the engine runs flat out. (QThread priorities are no-ops for
    // Linux's default policy; a thread's nice value is not.)
    connect(&m_thread, &QThread::started, m_worker, [] {
#ifdef __linux__
        setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
#endif
    }, Qt::DirectConnection);
    connect(&m_thread, &QThread::finished, m_worker, [w = m_worker] { w->threadEnding(); }, Qt::DirectConnection);
    m_thread.start(QThread::LowPriority);
}

EngineController::~EngineController() {
    // The worker's event loop ends after the slice in progress (≤ 10 ms plus one step; a sample
    // in progress stops at its next character).
    m_worker->interruptSamples();
    m_thread.quit();
    m_thread.wait();
    delete m_worker;
}

template <class F>
void EngineController::post(F&& f) {
    QMetaObject::invokeMethod(m_worker, std::forward<F>(f), Qt::QueuedConnection);
}

void EngineController::setThreads(unsigned n) {
    m_threads = std::min(n ? n : cores(), mpx::k_max_thread_count);
    post([n] { mpx::set_thread_count(n); });
    emit threadsChanged(m_threads);
}

unsigned EngineController::cores() { return mpx::core_count(); }

void EngineController::configure(const mpx::SessionConfig& cfg) {
    m_worker->interruptSamples();  // the old session's samples would only delay the new one
    const unsigned request = m_worker->requestConfigure();
    m_worker->requestEpoch();
    m_pace = cfg.pace;
    post([w = m_worker, cfg, request] { w->configure(cfg, request); });
}
void EngineController::start(qint64 stopAtStep, mpx::Timing timing) {
    post([w = m_worker, stopAtStep, timing, e = m_worker->epoch()] { w->start(stopAtStep, e, timing); });
}
void EngineController::setPace(const mpx::Pace& p) {
    m_pace = p;
    post([w = m_worker, p] { w->setPace(p); });
}
void EngineController::pause() {
    post([w = m_worker] { w->pause(); });
}
void EngineController::stepOnce() {
    post([w = m_worker, e = m_worker->epoch()] { w->stepOnce(e); });
}
void EngineController::reset() {
    m_worker->interruptSamples();
    post([w = m_worker, e = m_worker->requestEpoch()] { w->reset(e); });
}
void EngineController::setScaler(const mpx::ScalerConfig& s) {
    post([w = m_worker, s] { w->setScaler(s); });
}
void EngineController::setRunScaler(const QStringList& runs, const mpx::ScalerConfig& s) {
    post([w = m_worker, runs, s] { w->setRunScaler(runs, s); });
}
void EngineController::setTrain(const mpx::TrainConfig& t) {
    post([w = m_worker, t] { w->setTrain(t); });
}
void EngineController::exportCsv(const QString& path) {
    post([w = m_worker, path] { w->exportCsv(path); });
}
void EngineController::sampleNow() {
    post([w = m_worker] { w->sampleNow(); });
}
void EngineController::setAttentionWanted(bool wanted) {
    post([w = m_worker, wanted] { w->setAttentionWanted(wanted); });
}
void EngineController::setBoundariesWanted(bool wanted) {
    post([w = m_worker, wanted] { w->setBoundariesWanted(wanted); });
}

}  // namespace mpx::gui
