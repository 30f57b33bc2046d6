// EngineWorker: slices of lockstep steps, commands in between, errors caught at this boundary.
#include "app/gui/engine_worker.hpp"

#include <QMetaObject>
#include <chrono>
#include <nlohmann/json.hpp>

#include "app/gui/config_bridge.hpp"
#include "engine/error.hpp"
#include "engine/export.hpp"

namespace mpx::gui {
namespace {

constexpr auto k_slice = std::chrono::milliseconds(10);

double secondsNow() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "growth_interval 2000 → 50, backoff_factor 0.5 → 0.25" for the fields that differ.
QString describeChange(const nlohmann::json& before, const nlohmann::json& after) {
    QStringList parts;
    for (auto it = after.begin(); it != after.end(); ++it) {
        const auto old = before.find(it.key());
        if (old != before.end() && *old == it.value()) continue;
        const std::string was = old == before.end() ? "?" : old->dump();
        parts << QStringLiteral("%1 %2 → %3")
                     .arg(QString::fromStdString(it.key()), QString::fromStdString(was),
                          QString::fromStdString(it.value().dump()));
    }
    return parts.join(QStringLiteral(", "));
}

}  // namespace

EngineWorker::EngineWorker(RecordBuffer* buffer) : m_buffer(buffer) {}
EngineWorker::~EngineWorker() = default;

bool EngineWorker::guard(const QString& what, const std::function<void()>& f, OnError onError) {
    QString message;
    try {
        f();
        return true;
    } catch (const std::exception& e) {
        message = what + QString::fromStdString(e.what());
    } catch (...) {
        message = what + QStringLiteral("unknown error");
    }
    if (onError == OnError::stop) m_running = false;
    emit runFailed(message);
    emitState();
    return false;
}

void EngineWorker::emitState() {
    EngineState s = EngineState::empty;
    long long step = 0;
    if (m_session) {
        step = m_session->steps_done();
        if (m_session->finished()) s = EngineState::finished;
        else if (m_running) s = EngineState::running;
        else s = step == 0 ? EngineState::ready : EngineState::paused;
    }
    emit stateChanged(s, step);
}

void EngineWorker::publishSession(const QString& device, const QString& note) {
    auto info = std::make_shared<SessionInfo>();
    info->generation = ++m_generation;
    info->totalSteps = m_session->config().steps;
    info->device = device;
    info->deviceNote = note;
    info->config = m_session->config();
    for (std::size_t i = 0; i < m_session->run_count(); ++i) {
        const mpx::Run& run = m_session->run(i);
        const mpx::RunInfo& ri = run.info();
        RunDescription d;
        d.label = QString::fromStdString(ri.label);
        d.precision = QString::fromStdString(ri.precision);
        d.mode = QString::fromStdString(ri.mode);
        d.followsLiveScaler = ri.follows_session_scaler;
        d.hasScaler = run.scaler().config().kind != mpx::ScalerKind::none;
        info->runs.push_back(d);
    }
    m_stopped.assign(m_session->run_count(), false);
    m_initial = m_session->config();
    m_liveChanges = nlohmann::json::array();
    m_spool.clear();
    m_spooledSteps = 0;
    m_pending.clear();
    m_boundaryRefusal = mpx::boundary_refusal(m_session->config().data);
    m_boundariesFailed = false;
    m_boundaryStep = -1;
    m_buffer->beginSession(std::move(info));
}

void EngineWorker::configure(const mpx::SessionConfig& cfg) {
    m_running = false;
    guard(QStringLiteral("Cannot start this configuration: "), [&] {
        QString device, note;
        mpx::BackendFactory factory = backendFor(cfg.device, device, note);
        auto session = std::make_unique<mpx::Session>(cfg, std::move(factory));
        m_session = std::move(session);  // only now: a bad configuration keeps the old session
        m_device = device;
        publishSession(device, note);
        emitState();
    });
    boundariesIfStale();  // the grids at step 0, when the view is open
}

void EngineWorker::reset() {
    if (!m_session) return;
    m_running = false;
    guard(QStringLiteral("Reset failed: "), [&] {
        m_session->reset();
        const SessionInfoPtr old = m_buffer->drain().session;  // pending records of the old run go
        publishSession(m_device, old ? old->deviceNote : QString());
        emitState();
    });
    boundariesIfStale();
}

void EngineWorker::start(long long stopAtStep) {
    if (!m_session || m_session->finished()) {
        emitState();
        return;
    }
    m_stopAt = stopAtStep;
    m_running = true;
    emitState();
    if (!m_slicePosted) {
        m_slicePosted = true;
        QMetaObject::invokeMethod(this, &EngineWorker::runSlice, Qt::QueuedConnection);
    }
}

void EngineWorker::pause() {
    if (!m_running) return;
    m_running = false;
    emitState();
}

void EngineWorker::stepOnce() {
    if (!m_session || m_session->finished()) return;
    m_running = false;
    guard(QStringLiteral("Training stopped: "), [&] {
        std::vector<mpx::StepRecord> out;
        stepInto(out);
        flush(out);
        emitState();
    });
    boundariesIfStale();
}

void EngineWorker::stepInto(std::vector<mpx::StepRecord>& out) {
    std::vector<mpx::StepRecord> recs = m_session->step();
    const long long step = recs.empty() ? 0 : recs.front().step;
    const auto& cfg = m_session->config();
    if (step % cfg.record_every == 0 || step + 1 == cfg.steps) {
        m_spool.append(recs);
        ++m_spooledSteps;
    }
    for (std::size_t i = 0; i < m_session->run_count(); ++i) {
        const mpx::Run& run = m_session->run(i);
        if (m_stopped[i] || !run.failed()) continue;
        m_stopped[i] = true;
        m_buffer->appendNote({step, static_cast<int>(i), NoteKind::runStopped,
                              QString::fromStdString(run.failure())});
    }
    out.insert(out.end(), recs.begin(), recs.end());
}

void EngineWorker::flush(std::vector<mpx::StepRecord>& out) {
    if (!out.empty()) m_buffer->append(out);
}

void EngineWorker::runSlice() {
    m_slicePosted = false;
    if (!m_running || !m_session) return;
    const auto deadline = std::chrono::steady_clock::now() + k_slice;
    const bool ok = guard(QStringLiteral("Training stopped: "), [&] {
        do {
            if (m_session->finished() || (m_stopAt >= 0 && m_session->steps_done() >= m_stopAt)) {
                m_running = false;
                break;
            }
            stepInto(m_pending);
            boundariesIfDue();
        } while (std::chrono::steady_clock::now() < deadline);
    });
    flush(m_pending);
    if (!ok) return;
    if (m_running && !m_session->finished() &&
        !(m_stopAt >= 0 && m_session->steps_done() >= m_stopAt)) {
        m_slicePosted = true;
        QMetaObject::invokeMethod(this, &EngineWorker::runSlice, Qt::QueuedConnection);
    } else {
        m_running = false;
        emitState();
        boundariesIfStale();
    }
}

void EngineWorker::setBoundariesWanted(bool wanted) {
    m_boundariesWanted = wanted;
    boundariesIfStale();
}

void EngineWorker::boundariesIfDue() {
    if (m_pacer.due(secondsNow())) boundariesIfStale(mpx::BoundaryTrigger::paced);
}

void EngineWorker::boundariesIfStale(mpx::BoundaryTrigger why) {
    if (!m_boundariesWanted || !m_session || !m_boundaryRefusal.empty() || m_boundariesFailed) return;
    if (m_boundaryStep == m_session->steps_done()) return;
    computeBoundaries(why);
}

void EngineWorker::computeBoundaries(mpx::BoundaryTrigger why) {
    flush(m_pending);  // the records up to the grid's step go first
    const bool ok = guard(QStringLiteral("Decision boundaries stopped: "), [&] {
        const double start = secondsNow();
        auto b = std::make_shared<mpx::Boundaries>(mpx::evaluate_boundaries(*m_session, m_pacer.resolution()));
        m_pacer.record(start, b->seconds, why);
        b->share = m_pacer.measured_share();
        m_boundaryStep = b->step;
        m_buffer->setBoundaries(std::move(b));
    }, OnError::carryOn);
    if (!ok) m_boundariesFailed = true;
}

void EngineWorker::setScaler(const mpx::ScalerConfig& s) {
    if (!m_session) return;
    guard(QStringLiteral("Cannot apply the scaler settings: "), [&] {
        nlohmann::json before, after;
        mpx::to_json(before, m_session->config().scaler);
        m_session->set_scaler(s);
        mpx::to_json(after, m_session->config().scaler);
        const QString what = describeChange(before, after);
        if (what.isEmpty()) return;
        const long long step = m_session->steps_done();
        m_buffer->appendNote({step, -1, NoteKind::settingChanged, QStringLiteral("scaler: ") + what});
        m_liveChanges.push_back({{"step", step}, {"change", "scaler: " + what.toStdString()}});
        emit settingsApplied(step, QStringLiteral("scaler: ") + what);
    }, OnError::carryOn);
}

void EngineWorker::setTrain(const mpx::TrainConfig& t) {
    if (!m_session) return;
    guard(QStringLiteral("Cannot apply the training settings: "), [&] {
        nlohmann::json before, after;
        mpx::to_json(before, m_session->config().train);
        m_session->set_train(t);
        mpx::to_json(after, m_session->config().train);
        const QString what = describeChange(before, after);
        if (what.isEmpty()) return;
        const long long step = m_session->steps_done();
        m_buffer->appendNote({step, -1, NoteKind::settingChanged, QStringLiteral("training: ") + what});
        m_liveChanges.push_back({{"step", step}, {"change", "training: " + what.toStdString()}});
        emit settingsApplied(step, QStringLiteral("training: ") + what);
    }, OnError::carryOn);
}

void EngineWorker::exportCsv(const QString& path) {
    if (!m_session) {
        emit exportFailed(QStringLiteral("Nothing to export: no session yet."));
        return;
    }
    try {
        std::vector<mpx::RunInfo> infos;
        for (std::size_t i = 0; i < m_session->run_count(); ++i) infos.push_back(m_session->run(i).info());
        // The configuration the session started from; live changes are listed beside it, since
        // loading the sidecar reproduces the start, not the changes made while it ran.
        nlohmann::json sidecar = mpx::sidecar_json(m_initial, infos, m_device.toStdString(), m_spooledSteps);
        sidecar["live_changes"] = m_liveChanges;
        m_spool.exportCsv(path.toStdString(), sidecar, infos);
        emit exported(path);
    } catch (const std::exception& e) {
        emit exportFailed(QString::fromStdString(e.what()));
    }
}

}  // namespace mpx::gui
