// EngineWorker: slices of lockstep steps, commands in between, errors caught at this boundary.
#include "ui/session/engine_worker.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <QMetaObject>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/io/export.hpp"
#include "engine/io/mismatch_csv.hpp"
#include "engine/io/samples_csv.hpp"
#include "ui/session/config_bridge.hpp"

namespace mpx::gui {
namespace {

constexpr auto k_slice = std::chrono::milliseconds(10);

double secondsNow() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

EngineWorker::EngineWorker(RecordBuffer* buffer) : m_buffer(buffer) {
    m_paceTimer = new QTimer(this);
    m_paceTimer->setSingleShot(true);
    m_paceTimer->setTimerType(Qt::PreciseTimer);
    connect(m_paceTimer, &QTimer::timeout, this, &EngineWorker::runSlice);
}
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
        d.spec = ri.spec;
        d.followsLiveScaler = ri.follows_session_scaler;
        d.writeBack = ri.write_back;
        d.hasScaler = run.scaler().config().kind != mpx::ScalerKind::none;
        if (ri.spec.scaler_preset) d.scalerPreset = QString::fromStdString(*ri.spec.scaler_preset);
        info->runs.push_back(d);
    }
    std::vector<mpx::RunSpec> specs;
    for (const RunDescription& d : info->runs) specs.push_back(d.spec);
    const std::vector<RunStyle> styles = runStyles(specs);
    for (std::size_t i = 0; i < styles.size(); ++i) info->runs[i].style = styles[i];
    info->scalers = liveScalers();
    m_stopped.assign(m_session->run_count(), false);
    m_spool.clear();
    m_spooledSteps = 0;
    m_pending.clear();
    m_fp8.clear();
    m_samples.clear();
    m_mismatches.clear();
    m_attentionHeld.reset();
    m_boundaryRefusal = mpx::boundary_refusal(m_session->config().data);
    m_boundariesFailed = false;
    m_boundaryStep = -1;
    m_buffer->beginSession(std::move(info));
    noteLiveEffects();  // changes the configuration lists for step 0
}

LiveScalersPtr EngineWorker::liveScalers() const {
    auto s = std::make_shared<LiveScalers>();
    for (std::size_t i = 0; i < m_session->run_count(); ++i) s->runs.push_back(m_session->run(i).scaler().config());
    s->session = m_session->session_scaler();
    return s;
}

QStringList EngineWorker::noteLiveEffects() {
    QStringList lines;
    const std::vector<mpx::LiveEffect> effects = m_session->take_live_effects();
    if (effects.empty()) return lines;
    const LiveScalersPtr scalers = liveScalers();  // after every change of this step
    const auto label = [this](int run) { return QString::fromStdString(m_session->run(static_cast<std::size_t>(run)).info().label); };
    for (const mpx::LiveEffect& e : effects) {
        const QString changes = QString::fromStdString(e.changes);
        Note n;
        n.step = e.step;
        switch (e.target) {
            case mpx::LiveTarget::run_scalers:
                n.kind = NoteKind::scalerEdited;
                n.run = e.runs.front();
                n.text = QStringLiteral("scaler edited: %1").arg(changes);
                lines << QStringLiteral("%1 %2").arg(label(n.run), n.text);
                break;
            case mpx::LiveTarget::session_scaler: {
                QStringList reached;
                for (int r : e.runs) reached << label(r);
                n.kind = NoteKind::scalerEdited;
                n.text = QStringLiteral("scaler edited: %1").arg(changes);
                if (!reached.isEmpty()) n.text += QStringLiteral(" (runs %1)").arg(reached.join(QStringLiteral(", ")));
                lines << QStringLiteral("session %1").arg(n.text);
                break;
            }
            case mpx::LiveTarget::train:
                n.kind = NoteKind::settingChanged;
                n.text = QStringLiteral("training edited: %1").arg(changes);
                lines << n.text;
                break;
        }
        if (n.kind == NoteKind::scalerEdited) {
            n.runs = e.runs;
            n.scalers = scalers;
        }
        m_buffer->appendNote(std::move(n));
    }
    return lines;
}

// A session's tensors are large blocks (the GPT's runs hold about 100 MB); once freed, glibc keeps
// blocks it took from its heaps rather than from mmap (its mmap threshold grows as blocks are freed),
// so the app would keep the old session's size resident beside the next one. Hands them back.
void EngineWorker::releaseFreedMemory() {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
}

void EngineWorker::configure(const mpx::SessionConfig& cfg, unsigned request) {
    if (request != m_configureRequests.load(std::memory_order_relaxed)) return;  // a newer one is queued
    m_running = false;
    cancelPacedWait();
    m_stepPacer.set_pace(cfg.pace);
    m_interrupt = false;
    guard(QStringLiteral("Cannot start this configuration: "), [&] {
        QString device, note;
        mpx::BackendFactory factory = backendFor(cfg.device, device, note);
        auto session = std::make_unique<mpx::Session>(cfg, std::move(factory));
        session->set_interrupt(&m_interrupt);
        m_session = std::move(session);  // only now: a bad configuration keeps the old session
        releaseFreedMemory();
        m_device = device;
        publishSession(device, note);
        emitState();
    });
    boundariesIfStale();  // the grids at step 0, when the view is open
}

void EngineWorker::reset(unsigned epoch) {
    if (superseded(epoch)) return;
    m_interrupt = false;
    if (!m_session) return;
    m_running = false;
    cancelPacedWait();
    guard(QStringLiteral("Reset failed: "), [&] {
        m_session->reset();
        releaseFreedMemory();
        const SessionInfoPtr old = m_buffer->drain().session;  // pending records of the old run go
        publishSession(m_device, old ? old->deviceNote : QString());
        emitState();
    });
    boundariesIfStale();
}

void EngineWorker::start(long long stopAtStep, unsigned epoch, mpx::Timing timing) {
    if (superseded(epoch)) return;
    if (!m_session || m_session->finished()) {
        emitState();
        return;
    }
    m_stopAt = stopAtStep;
    m_paced = timing == mpx::Timing::paced;
    if (!m_running) m_stepPacer.restart();  // a new Run: its first step at once
    cancelPacedWait();                      // and not after an earlier Run's wait
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
    cancelPacedWait();
    takeAttention(true);  // the maps of the step training paused at
    emitState();
}

void EngineWorker::stepOnce(unsigned epoch) {
    if (superseded(epoch) || !m_session || m_session->finished()) return;
    m_running = false;
    cancelPacedWait();
    guard(QStringLiteral("Training stopped: "), [&] {
        std::vector<mpx::StepRecord> out;
        stepInto(out);
        takeAttention(true);
        flush(out);
        emitState();
    });
    boundariesIfStale();
}

void EngineWorker::stepInto(std::vector<mpx::StepRecord>& out) {
    if (m_attentionWanted) m_session->keep_attention();
    std::vector<mpx::StepRecord> recs = m_session->step();
    noteLiveEffects();  // changes the configuration lists for the next step
    takeSamples();
    takeAttention(false);
    const long long step = recs.empty() ? 0 : recs.front().step;
    const auto& cfg = m_session->config();
    if (step % cfg.record_every == 0 || step + 1 == cfg.steps) {
        m_spool.append(recs);
        ++m_spooledSteps;
    }
    for (std::size_t i = 0; i < m_session->run_count(); ++i) {
        const mpx::Run& run = m_session->run(i);
        // A histogram collected on this step travels with its records.
        const auto& snaps = run.histograms().snapshots();
        if (!snaps.empty() && snaps.back().step == step)
            m_buffer->appendHistogram(static_cast<int>(i), snaps.back());
        // So do this step's FP8 scale rows (the newest at the log's end, one per scaled tensor).
        const auto& scales = run.fp8_scales();
        auto first = scales.end();
        while (first != scales.begin() && std::prev(first)->step == step) --first;
        for (auto it = first; it != scales.end(); ++it) m_fp8.emplace_back(static_cast<int>(i), *it);
        if (m_stopped[i] || !run.failed()) continue;
        m_stopped[i] = true;
        Note n;
        n.step = step;
        n.run = static_cast<int>(i);
        n.kind = NoteKind::runStopped;
        n.text = QString::fromStdString(run.failure());
        m_buffer->appendNote(std::move(n));
    }
    out.insert(out.end(), recs.begin(), recs.end());
}

void EngineWorker::takeSamples() {
    std::vector<mpx::MismatchResult> measured = m_session->take_mismatches();  // measured as samples are: after a step
    if (!measured.empty()) {
        m_mismatches.insert(m_mismatches.end(), measured.begin(), measured.end());
        m_buffer->appendMismatches(measured);
    }
    std::vector<mpx::TextSample> fresh = m_session->take_samples();
    if (fresh.empty()) return;
    m_samples.insert(m_samples.end(), fresh.begin(), fresh.end());
    m_buffer->appendSamples(fresh);
}

void EngineWorker::takeAttention(bool stopping) {
    if (auto a = m_session ? m_session->take_attention() : nullptr) m_attentionHeld = std::move(a);
    if (!m_attentionHeld) return;
    const double now = secondsNow();
    if (!stopping && now - m_attentionSent < 0.25) return;
    m_attentionSent = now;
    m_buffer->appendAttention(std::move(m_attentionHeld));
    m_attentionHeld.reset();
}

void EngineWorker::setAttentionWanted(bool wanted) {
    m_attentionWanted = wanted;
    if (!wanted) m_attentionHeld.reset();
}

void EngineWorker::sampleNow() {
    if (!m_session) return;
    guard(QStringLiteral("Cannot write samples: "), [&] {
        m_session->sample_now();
        takeSamples();
    }, OnError::carryOn);
}

void EngineWorker::flush(std::vector<mpx::StepRecord>& out) {
    if (!m_fp8.empty()) m_buffer->appendFp8(m_fp8);
    if (!out.empty()) m_buffer->append(out);
}

void EngineWorker::cancelPacedWait() {
    if (!m_paceTimer->isActive()) return;
    m_paceTimer->stop();
    m_slicePosted = false;
}

void EngineWorker::setPace(const mpx::Pace& p) {
    m_stepPacer.set_pace(p);
    if (!m_paceTimer->isActive()) return;
    cancelPacedWait();  // the wait the old pace set: the new one decides at once
    m_slicePosted = true;
    QMetaObject::invokeMethod(this, &EngineWorker::runSlice, Qt::QueuedConnection);
}

void EngineWorker::runSlice() {
    m_slicePosted = false;
    if (!m_running || !m_session) return;
    const auto deadline = std::chrono::steady_clock::now() + k_slice;
    const bool paced = m_paced && m_stepPacer.pace().throttles();
    double wait = 0.0;  // > 0: the next step is due in this many seconds
    const bool ok = guard(QStringLiteral("Training stopped: "), [&] {
        do {
            if (m_session->finished() || (m_stopAt >= 0 && m_session->steps_done() >= m_stopAt)) {
                m_running = false;
                break;
            }
            if (paced && (wait = m_stepPacer.wait(secondsNow())) > 0.0) break;
            const double began = secondsNow();
            const std::size_t first = m_pending.size();
            stepInto(m_pending);
            if (paced) m_stepPacer.stepped(began, {m_pending.begin() + static_cast<std::ptrdiff_t>(first), m_pending.end()});
            boundariesIfDue();
        } while (std::chrono::steady_clock::now() < deadline);
    });
    if (!m_running || (m_session && m_session->finished())) takeAttention(true);  // the step training stopped at
    flush(m_pending);
    if (!ok) return;
    if (m_running && !m_session->finished() &&
        !(m_stopAt >= 0 && m_session->steps_done() >= m_stopAt)) {
        m_slicePosted = true;
        // Paced: the event loop idles until the step is due, serving every command meanwhile.
        if (wait > 0.0) m_paceTimer->start(std::max(1, static_cast<int>(wait * 1000.0 + 0.5)));
        else QMetaObject::invokeMethod(this, &EngineWorker::runSlice, Qt::QueuedConnection);
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

void EngineWorker::applyLive(const std::function<void()>& change) {
    if (!m_session) return;
    guard(QStringLiteral("Cannot apply this live change: "), [&] {
        change();  // validated first: a refused value changes nothing
        const QStringList lines = noteLiveEffects();
        if (!lines.isEmpty()) emit settingsApplied(m_session->steps_done(), lines.join(QStringLiteral("; ")));
    }, OnError::carryOn);
}

void EngineWorker::setScaler(const mpx::ScalerConfig& s) {
    applyLive([&] { m_session->set_scaler(s); });
}

void EngineWorker::setRunScaler(const QStringList& runs, const mpx::ScalerConfig& s) {
    std::vector<std::string> labels;
    for (const QString& r : runs) labels.push_back(r.toStdString());
    applyLive([&] { m_session->set_scaler(labels, s); });
}

void EngineWorker::setTrain(const mpx::TrainConfig& t) {
    applyLive([&] { m_session->set_train(t); });
}

void EngineWorker::exportCsv(const QString& path) {
    if (!m_session) {
        emit exportFailed(QStringLiteral("Nothing to export: no session yet."));
        return;
    }
    try {
        std::vector<mpx::RunInfo> infos;
        for (std::size_t i = 0; i < m_session->run_count(); ++i) infos.push_back(m_session->run(i).info());
        // The configuration lists every live change with its step: loading the sidecar replays them.
        nlohmann::json sidecar = mpx::sidecar_json(m_session->config(), infos, m_device.toStdString(), m_spooledSteps);
        if (m_session->config().model.kind == mpx::ModelKind::gpt) {  // first: the sidecar names them
            // Every output checked before any is written: a folder or a name without a file part
            // given as the CSV would otherwise put the samples beside it ("/tmp/dir" → "/tmp/dir.samples.csv").
            const std::filesystem::path csv = path.toStdString(), samples = mpx::samples_path(csv),
                                        mismatch = mpx::mismatch_path(csv);
            if (!csv.has_filename() || std::filesystem::is_directory(csv))
                throw mpx::IoError("'" + csv.string() + "' is a folder; name the CSV file to write");
            const bool measures = m_session->config().mismatch.enabled();
            if (measures) mpx::check_outputs({{"the CSV", csv}, {"the samples", samples}, {"the mismatch", mismatch}});
            else mpx::check_outputs({{"the CSV", csv}, {"the samples", samples}});
            mpx::write_samples_csv(samples, m_samples, infos, sidecar);
            if (measures) mpx::write_mismatch_csv(mismatch, m_mismatches, sidecar);
        }
        m_spool.exportCsv(path.toStdString(), sidecar, infos);
        emit exported(path);
    } catch (const std::exception& e) {
        emit exportFailed(QString::fromStdString(e.what()));
    }
}

}  // namespace mpx::gui
