// The window's copy of the session's history: drains the RecordBuffer on a ~30 Hz timer into one
// RunHistory per run, the event log (every scale event, skip, live change and stopped run) and the
// chart markers, keeps the newest decision-boundary grids, then says so once with stepsRecorded
// (and boundariesUpdated). Rule: lives on the UI thread; bounded
// memory whatever the run length (histories decimate, the log and markers stop at a cap and count
// what they dropped — the CSV export still has every step).
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "ui/session/fp8_history.hpp"
#include "ui/session/record_buffer.hpp"
#include "ui/session/run_history.hpp"

namespace mpx::gui {

enum class LogKind : quint8 { grow, backoff, hysteresis, skip, setting, scalerEdited, runStopped, verdict };

struct LogRow {
    long long step = 0;
    double oldScale = 0, newScale = 0;
    int run = -1;  // -1: every run
    LogKind kind = LogKind::skip;
    bool skipped = false;
    int note = -1;  // index into notes() for setting, scalerEdited and runStopped rows
    int firstNonfinite = -1;  // StepRecord::first_nonfinite: where the step's first inf/NaN was stored
    std::optional<double> firstNonfiniteMagnitude;  // StepRecord::first_nonfinite_magnitude
};

struct MarkerPoint {
    long long step = 0;
    double y = 0;  // the loss scale where the marker sits
};

class RecordStore : public QObject {
    Q_OBJECT
public:
    static constexpr std::size_t k_log_cap = 1'000'000;
    static constexpr std::size_t k_marker_cap = 1'000'000;  // per run and kind

    explicit RecordStore(RecordBuffer* buffer, QObject* parent = nullptr);

    void setDrainInterval(int ms);
    void drainNow();  // what the timer does; tests and benchmarks call it directly

    SessionInfoPtr session() const { return m_session; }
    int runCount() const { return static_cast<int>(m_histories.size()); }
    const RunHistory& history(int run) const { return m_histories[static_cast<std::size_t>(run)]; }
    qint64 steps() const { return m_steps; }  // steps recorded for every run
    const mpx::MemoryTotals& memory(int run) const { return m_memory[static_cast<std::size_t>(run)]; }
    const std::vector<LogRow>& log() const { return m_log; }
    const QString& noteText(int i) const { return m_notes[static_cast<std::size_t>(i)]; }
    qint64 droppedLogRows() const { return m_droppedLog; }
    const std::vector<MarkerPoint>& skips(int run) const { return m_skips[static_cast<std::size_t>(run)]; }
    const std::vector<MarkerPoint>& grows(int run) const { return m_grows[static_cast<std::size_t>(run)]; }
    qint64 skippedSteps(int run) const { return m_skipCount[static_cast<std::size_t>(run)]; }
    double stepsPerSecond() const { return m_stepsPerSecond; }
    // The run's exponent histograms so far (bounded as the engine's log: thinned, whole run).
    const mpx::HistogramLog& histograms(int run) const { return m_histogramLogs[static_cast<std::size_t>(run)]; }
    // FP8 runs: every scaled tensor's amax, scale and cast counts so far (bounded: Fp8History).
    const Fp8History& fp8(int run) const { return m_fp8[static_cast<std::size_t>(run)]; }
    // Every scaler in force (as the session started, then after each live edit), and the live scaler
    // edits that reached a run ("step 412: scaler edited: hysteresis 2 → 4"), oldest first.
    LiveScalersPtr liveScalers() const { return m_scalers; }
    bool editedLive(int run) const { return !m_edits[static_cast<std::size_t>(run)].isEmpty(); }
    const QStringList& liveEdits(int run) const { return m_edits[static_cast<std::size_t>(run)]; }
    // The newest decision-boundary grids of this session, or null (none asked for or none yet).
    const std::shared_ptr<const mpx::Boundaries>& boundaries() const { return m_boundaries; }
    // The GPT's text samples of this session, in step and run order (the newest k_sample_cap).
    static constexpr std::size_t k_sample_cap = 10'000;
    const std::deque<mpx::TextSample>& samples() const { return m_samples; }
    // Each run's newest sample, or null.
    const mpx::TextSample* latestSample(int run) const;
    // The log-probability mismatch of this session (mismatch.policies), in step and policy order.
    const std::vector<mpx::MismatchResult>& mismatches() const { return m_mismatches; }
    // The GPT's attention maps kept at some steps while the Attention view was shown, oldest first,
    // at most k_attention_bytes (the oldest dropped first).
    static constexpr std::size_t k_attention_bytes = std::size_t{64} << 20;
    const std::deque<std::shared_ptr<const mpx::AttentionSnapshot>>& attention() const { return m_attention; }
    // Appends records as if drained (benchmarks fill a history without an engine).
    void appendRecords(std::span<const mpx::StepRecord> records);
    // A session that does not come from the engine (a replayed trace, ui/session/trace_session.hpp),
    // shown whole at once: sessionStarted, then stepsRecorded. Its generation must differ from the
    // engine's. What the engine's buffer brings is dropped until followEngine() and then a session
    // newer than the last one dropped, so a paused engine's late records cannot mix into it.
    void showSession(SessionInfoPtr info, std::span<const mpx::StepRecord> records, const std::vector<Note>& notes,
                     std::vector<std::pair<int, mpx::HistogramSnapshot>> histograms = {});
    // The engine's next new session replaces the outside one (call it before configure or reset).
    void followEngine() { m_leaving = m_outside; }
    // Whether the session shown came from showSession (and not the engine).
    bool showsOutsideSession() const { return m_outside; }

signals:
    void sessionStarted();            // a new session: every history, the log and markers are empty
    void stepsRecorded(qint64 steps); // once per drain that brought records or notes
    void scalersEdited();             // once per drain that brought a live scaler edit
    void boundariesUpdated();         // a drain brought newer grids
    void samplesUpdated();            // a drain brought text samples
    void mismatchUpdated();           // a drain brought log-probability mismatch results
    void attentionUpdated();          // a drain brought attention maps

private:
    void startSession(SessionInfoPtr info);
    void addLog(const LogRow& row);
    void addNote(const Note& n);
    void measureRate();

    RecordBuffer* m_buffer;
    QTimer m_timer;
    SessionInfoPtr m_session;
    std::vector<RunHistory> m_histories;
    std::vector<mpx::HistogramLog> m_histogramLogs;
    std::vector<Fp8History> m_fp8;
    std::vector<mpx::MemoryTotals> m_memory;
    std::vector<std::vector<MarkerPoint>> m_skips, m_grows;
    std::vector<qint64> m_skipCount;
    std::vector<LogRow> m_log;
    std::vector<QString> m_notes;
    LiveScalersPtr m_scalers;
    std::vector<QStringList> m_edits;  // per run
    bool m_scalersEdited = false;      // in this drain
    qint64 m_droppedLog = 0;
    qint64 m_steps = 0;
    QElapsedTimer m_clock;
    std::deque<std::pair<qint64, qint64>> m_rateWindow;  // (ms, steps) of recent drains
    double m_stepsPerSecond = 0;
    std::shared_ptr<const mpx::Boundaries> m_boundaries;
    std::deque<mpx::TextSample> m_samples;
    std::vector<mpx::MismatchResult> m_mismatches;
    std::deque<std::shared_ptr<const mpx::AttentionSnapshot>> m_attention;
    std::size_t m_attentionBytes = 0;
    bool m_outside = false;                  // showSession's session is shown
    bool m_leaving = false;                  // followEngine() was called since
    quint64 m_engineGeneration = 0;          // the engine's session last dropped
};

// At most one marker per pixel column over steps [x0, x1] (the first in the column).
void decimateMarkers(const std::vector<MarkerPoint>& markers, double x0, double x1, int columns,
                     QList<QPointF>& out);

}  // namespace mpx::gui
