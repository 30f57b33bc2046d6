// A sweep for the app: engine/sweep's run_sweep on a background thread, its finished points handed
// to the UI thread. Rule: the worker threads only append points to a buffer under a short lock; a
// 10 Hz timer on the UI thread drains it and emits one signal per tick, never one per point.
#pragma once

#include <QObject>
#include <QStringList>
#include <QTimer>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/io/trace.hpp"
#include "engine/sweep/sweep_grid.hpp"
#include "engine/sweep/sweep_outcome.hpp"

namespace mpx::gui {

class SweepJob : public QObject {
    Q_OBJECT
public:
    explicit SweepJob(QObject* parent = nullptr);
    ~SweepJob() override;  // cancels and waits for the workers

    // Parses the grid ("FIELD=VALUES" each) against base and starts; returns the error that stopped
    // it (naming the field), or an empty string. `threads` 0: one per core.
    QString start(const mpx::SessionConfig& base, const QStringList& grid, unsigned threads = 0);
    // Sweeps that start from now on replay each point's scaler over this trace (sweep_trace: scaler
    // settings only, thousands of points a second) instead of training; null: they train again.
    void setTrace(std::shared_ptr<const mpx::Trace> trace) { m_trace = std::move(trace); }
    const std::shared_ptr<const mpx::Trace>& trace() const { return m_trace; }
    void cancel();
    bool running() const { return m_thread.joinable(); }

    const mpx::SessionConfig& base() const { return m_base; }
    const mpx::SweepGrid& grid() const { return m_grid; }
    // The finished points so far, by point index (on the UI thread).
    const std::vector<mpx::SweepPoint>& points() const { return m_points; }
    std::size_t planned() const { return m_planned; }
    // The configuration of one point, as the sweep trained it.
    mpx::SessionConfig pointConfig(std::size_t point) const { return m_grid.point_config(m_base, point); }
    // CSV + sidecar of the finished points (engine/sweep's writer); an error message or empty.
    QString exportCsv(const QString& path) const;
    // The niceness of the threads that train a sweep's points (see lowerThreadPriority).
    static constexpr int k_workerNice = 10;
    static void lowerThreadPriority();  // the calling thread's, to k_workerNice (Linux)

signals:
    void progressed(int done, int planned, double etaSeconds);
    void finished(bool cancelled, const QString& error);

private:
    void drain();

    mpx::SessionConfig m_base;
    mpx::SweepGrid m_grid;
    std::vector<mpx::SweepPoint> m_points;
    std::size_t m_planned = 0;
    bool m_cancelled = false;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_done{false};
    std::mutex m_lock;                    // guards m_incoming and m_error
    std::vector<mpx::SweepPoint> m_incoming;
    QString m_error;
    QTimer m_timer;
    qint64 m_startMs = 0;
    std::shared_ptr<const mpx::Trace> m_trace;  // setTrace's
    std::shared_ptr<const mpx::Trace> m_swept;  // the trace the sweep shown replayed (its export names it)
};

}  // namespace mpx::gui
