// SweepJob: run_sweep on a std::thread (it starts its own workers), points drained on a timer.
#include "ui/session/sweep_job.hpp"

#include "engine/sweep/sweep.hpp"
#include "engine/sweep/trace_sweep.hpp"

#ifdef __linux__
#include <sys/resource.h>
#include <unistd.h>
#endif

#include <QDateTime>

#include <algorithm>
#include <system_error>

#include "engine/base/error.hpp"

namespace mpx::gui {

SweepJob::SweepJob(QObject* parent) : QObject(parent) {
    m_timer.setInterval(100);
    connect(&m_timer, &QTimer::timeout, this, &SweepJob::drain);
}

SweepJob::~SweepJob() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
}

// How a sweep shares the cores with the session training in the main view: it starts one worker
// per core, each at nice 10, so the engine thread and the window (nice 0) take a core whenever they
// want one (Linux gives nice 0 about ten times the share of nice 10) and the sweep has the rest.
void SweepJob::lowerThreadPriority() {
#ifdef __linux__
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), k_workerNice);
#endif
}

QString SweepJob::start(const mpx::SessionConfig& base, const QStringList& grid, unsigned threads) {
    if (running()) return tr("A sweep is already running: cancel it first.");
    try {
        std::vector<mpx::GridAxis> axes;
        for (const auto& g : grid) axes.push_back(mpx::parse_grid_arg(g.toStdString()));
        m_grid = mpx::SweepGrid(std::move(axes), base);
        mpx::validate(base);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    m_base = base;
    m_points.clear();
    m_incoming.clear();
    m_error.clear();
    m_planned = m_grid.size();
    m_cancelled = false;
    m_stop = false;
    m_done = false;
    m_startMs = QDateTime::currentMSecsSinceEpoch();
    m_swept = m_trace;
    // A start the system refuses (a process or memory limit: std::system_error) is returned as
    // the message, not std::terminate; run_sweep's own workers say so through m_error.
    const auto refused = [](const std::exception& e) {  // system_error, or bad_alloc under a memory limit
        return tr("The system refused to start the sweep's thread (%1); close other programs and start it again.")
            .arg(QString::fromLocal8Bit(e.what()));
    };
    if (m_swept) {
        auto work = [this] {
            try {
                mpx::SweepResult r = mpx::sweep_trace(m_grid, m_base, *m_swept);
                std::lock_guard g(m_lock);
                for (auto& p : r.points) m_incoming.push_back(std::move(p));
            } catch (const std::exception& e) {
                std::lock_guard g(m_lock);
                m_error = QString::fromStdString(e.what());
            }
            m_done = true;
        };
        try {
            m_thread = std::thread(std::move(work));
        } catch (const std::exception& e) {
            return refused(e);
        }
        m_timer.start();
        return {};
    }
    auto work = [this, threads] {
        mpx::SweepOptions o;
        o.threads = threads;
        o.stop = &m_stop;
        o.on_worker_start = lowerThreadPriority;
        o.on_point = [this](const mpx::SweepPoint& p, std::size_t, std::size_t) {
            std::lock_guard g(m_lock);
            m_incoming.push_back(p);
        };
        try {
            mpx::run_sweep(m_grid, m_base, o);
        } catch (const std::exception& e) {
            std::lock_guard g(m_lock);
            m_error = QString::fromStdString(e.what());
        }
        m_done = true;
    };
    try {
        m_thread = std::thread(std::move(work));
    } catch (const std::exception& e) {
        return refused(e);
    }
    m_timer.start();
    return {};
}

void SweepJob::cancel() {
    if (running()) m_stop = true;
}

void SweepJob::drain() {
    const bool done = m_done.load();  // read before draining: no point can arrive after it is set
    std::vector<mpx::SweepPoint> fresh;
    QString error;
    {
        std::lock_guard g(m_lock);
        fresh.swap(m_incoming);
        error = m_error;
    }
    if (!fresh.empty()) {
        for (auto& p : fresh) m_points.push_back(std::move(p));
        std::sort(m_points.begin(), m_points.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
        const double s = static_cast<double>(QDateTime::currentMSecsSinceEpoch() - m_startMs) / 1000.0;
        const double eta = s / static_cast<double>(m_points.size()) * static_cast<double>(m_planned - m_points.size());
        emit progressed(static_cast<int>(m_points.size()), static_cast<int>(m_planned), eta);
    }
    if (!done) return;
    m_timer.stop();
    m_thread.join();
    m_cancelled = m_points.size() < m_planned;
    emit finished(m_cancelled, error);
}

QString SweepJob::exportCsv(const QString& path) const {
    try {
        mpx::SweepResult r;
        r.points = m_points;
        r.planned = m_planned;
        r.cancelled = m_cancelled;
        nlohmann::json sidecar = mpx::sweep_sidecar(m_grid, m_base, m_base.name, 0, 1);
        if (m_swept) sidecar["trace"] = m_swept->name;  // a replay: `mpx-cli sweep --trace` writes the same
        mpx::write_sweep(path.toStdString(), m_grid, r, sidecar);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace mpx::gui
