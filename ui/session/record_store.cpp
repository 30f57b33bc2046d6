// RecordStore: drain, split by run, log the events, measure steps/s.
#include "ui/session/record_store.hpp"

#include <algorithm>
#include <utility>

#include "engine/scaler/scaler.hpp"

namespace mpx::gui {

RecordStore::RecordStore(RecordBuffer* buffer, QObject* parent) : QObject(parent), m_buffer(buffer) {
    m_timer.setInterval(33);
    m_timer.setTimerType(Qt::PreciseTimer);
    connect(&m_timer, &QTimer::timeout, this, &RecordStore::drainNow);
    if (m_buffer) m_timer.start();
    m_clock.start();
}

void RecordStore::setDrainInterval(int ms) { m_timer.setInterval(ms); }

void RecordStore::startSession(SessionInfoPtr info) {
    m_session = std::move(info);
    const std::size_t runs = m_session ? m_session->runs.size() : 0;
    // Fewer steps at full resolution when many runs are compared, to keep memory flat.
    const int capacity = runs <= 4 ? RunHistory::k_default_capacity
                                   : runs <= 8 ? RunHistory::k_default_capacity / 2
                                               : RunHistory::k_default_capacity / 4;
    m_histories.assign(runs, RunHistory(capacity));
    m_memory.assign(runs, mpx::MemoryTotals{});
    m_histogramLogs.assign(runs, mpx::HistogramLog{});
    m_fp8.assign(runs, Fp8History{});
    m_skips.assign(runs, {});
    m_grows.assign(runs, {});
    m_skipCount.assign(runs, 0);
    m_log.clear();
    m_notes.clear();
    m_scalers = m_session ? m_session->scalers : nullptr;
    m_edits.assign(runs, {});
    m_droppedLog = 0;
    m_steps = 0;
    m_rateWindow.clear();
    m_stepsPerSecond = 0;
    m_boundaries.reset();
    m_samples.clear();
    m_mismatches.clear();
    m_attention.clear();
    m_attentionBytes = 0;
    emit sessionStarted();
}

void RecordStore::addLog(const LogRow& row) {
    if (m_log.size() >= k_log_cap) {
        ++m_droppedLog;
        return;
    }
    m_log.push_back(row);
}

void RecordStore::addNote(const Note& n) {
    m_notes.push_back(n.text);
    LogRow row;
    row.step = n.step;
    row.run = n.run;
    row.kind = n.kind == NoteKind::runStopped    ? LogKind::runStopped
               : n.kind == NoteKind::scalerEdited ? LogKind::scalerEdited
               : n.kind == NoteKind::verdict      ? LogKind::verdict
                                                  : LogKind::setting;
    row.note = static_cast<int>(m_notes.size()) - 1;
    addLog(row);
    if (n.kind != NoteKind::scalerEdited) return;
    if (n.scalers) m_scalers = n.scalers;
    for (int r : n.runs)
        if (r >= 0 && static_cast<std::size_t>(r) < m_edits.size())
            m_edits[static_cast<std::size_t>(r)] << QStringLiteral("step %1: %2").arg(n.step).arg(n.text);
    m_scalersEdited = true;
}

void RecordStore::appendRecords(std::span<const mpx::StepRecord> records) {
    const auto runs = m_histories.size();
    for (const mpx::StepRecord& r : records) {
        const auto i = static_cast<std::size_t>(r.run);
        if (i >= runs) continue;
        m_histories[i].append(r);
        m_memory[i] = r.mem;
        m_steps = std::max(m_steps, r.step + 1);
        const auto ev = static_cast<mpx::ScaleEvent>(r.scale_event);
        if (ev == mpx::ScaleEvent::none && !r.skipped) continue;
        LogRow row;
        row.step = r.step;
        row.oldScale = r.loss_scale;
        row.newScale = r.new_scale;
        row.run = r.run;
        row.skipped = r.skipped;
        row.firstNonfinite = r.first_nonfinite;
        row.firstNonfiniteMagnitude = r.first_nonfinite_magnitude;
        switch (ev) {
            case mpx::ScaleEvent::grow: row.kind = LogKind::grow; break;
            case mpx::ScaleEvent::backoff: row.kind = LogKind::backoff; break;
            case mpx::ScaleEvent::hysteresis: row.kind = LogKind::hysteresis; break;
            case mpx::ScaleEvent::none: row.kind = LogKind::skip; break;
        }
        addLog(row);
        if (r.skipped) {
            ++m_skipCount[i];
            if (m_skips[i].size() < k_marker_cap) m_skips[i].push_back({r.step, r.loss_scale});
        }
        if (ev == mpx::ScaleEvent::grow && m_grows[i].size() < k_marker_cap)
            m_grows[i].push_back({r.step, r.new_scale});
    }
}

void RecordStore::measureRate() {
    const qint64 now = m_clock.elapsed();
    m_rateWindow.emplace_back(now, m_steps);
    while (m_rateWindow.size() > 2 && now - m_rateWindow[1].first >= 1000) m_rateWindow.pop_front();
    const auto& [t0, s0] = m_rateWindow.front();
    m_stepsPerSecond = now > t0 ? 1000.0 * static_cast<double>(m_steps - s0) / static_cast<double>(now - t0) : 0.0;
}

void RecordStore::showSession(SessionInfoPtr info, std::span<const mpx::StepRecord> records,
                              const std::vector<Note>& notes,
                              std::vector<std::pair<int, mpx::HistogramSnapshot>> histograms) {
    if (m_buffer) {
        const Drained d = m_buffer->drain();  // the engine's pending records: not this session's
        m_engineGeneration = d.session ? d.session->generation : 0;
    }
    m_outside = true;
    m_leaving = false;
    startSession(std::move(info));
    std::size_t next = 0;
    for (const mpx::StepRecord& r : records) {
        while (next < notes.size() && notes[next].step <= r.step) addNote(notes[next++]);
        appendRecords(std::span<const mpx::StepRecord>(&r, 1));
    }
    while (next < notes.size()) addNote(notes[next++]);
    for (auto& [run, snap] : histograms)
        if (run >= 0 && run < static_cast<int>(m_histogramLogs.size()))
            m_histogramLogs[static_cast<std::size_t>(run)].add(std::move(snap), m_session->config.instruments.every);
    m_rateWindow.clear();
    m_stepsPerSecond = 0;
    emit stepsRecorded(m_steps);
}

void RecordStore::drainNow() {
    if (!m_buffer) return;
    Drained d = m_buffer->drain();
    if (m_outside) {
        const quint64 generation = d.session ? d.session->generation : 0;
        if (!m_leaving || generation == m_engineGeneration) {
            m_engineGeneration = generation;
            return;
        }
        m_outside = m_leaving = false;  // the session asked for: shown from here on
    }
    if (d.session && (!m_session || d.session->generation != m_session->generation))
        startSession(d.session);
    if (!m_session) return;
    // Notes first when they are due before these records: a live change at step k precedes step k.
    std::size_t next = 0;
    auto notesUpTo = [&](long long step) {
        while (next < d.notes.size() && d.notes[next].step <= step) addNote(d.notes[next++]);
    };
    if (!d.records.empty()) {
        std::size_t begin = 0;
        while (begin < d.records.size()) {
            const long long step = d.records[begin].step;
            std::size_t end = begin;
            while (end < d.records.size() && d.records[end].step == step) ++end;
            notesUpTo(step);
            appendRecords(std::span<const mpx::StepRecord>(d.records).subspan(begin, end - begin));
            begin = end;
        }
    }
    while (next < d.notes.size()) addNote(d.notes[next++]);
    for (auto& [run, snap] : d.histograms)
        if (run >= 0 && run < static_cast<int>(m_histogramLogs.size()))
            m_histogramLogs[static_cast<std::size_t>(run)].add(std::move(snap), m_session->config.instruments.every);
    for (const auto& [run, row] : d.fp8)
        if (run >= 0 && run < static_cast<int>(m_fp8.size())) m_fp8[static_cast<std::size_t>(run)].add(row);
    measureRate();
    if (std::exchange(m_scalersEdited, false)) emit scalersEdited();
    if (!d.records.empty() || !d.notes.empty() || !d.histograms.empty() || !d.fp8.empty()) emit stepsRecorded(m_steps);
    if (d.boundaries) {
        m_boundaries = std::move(d.boundaries);
        emit boundariesUpdated();
    }
    if (!d.samples.empty()) {
        for (mpx::TextSample& s : d.samples) m_samples.push_back(std::move(s));
        while (m_samples.size() > k_sample_cap) m_samples.pop_front();
        emit samplesUpdated();
    }
    if (!d.mismatches.empty()) {
        for (mpx::MismatchResult& r : d.mismatches) m_mismatches.push_back(std::move(r));
        emit mismatchUpdated();
    }
    if (!d.attention.empty()) {
        for (auto& a : d.attention) {
            m_attentionBytes += a->bytes();
            m_attention.push_back(std::move(a));
        }
        while (m_attention.size() > 1 && m_attentionBytes > k_attention_bytes) {
            m_attentionBytes -= m_attention.front()->bytes();
            m_attention.pop_front();
        }
        emit attentionUpdated();
    }
}

const mpx::TextSample* RecordStore::latestSample(int run) const {
    for (auto it = m_samples.rbegin(); it != m_samples.rend(); ++it)
        if (it->run == run) return &*it;
    return nullptr;
}

void decimateMarkers(const std::vector<MarkerPoint>& markers, double x0, double x1, int columns,
                     QList<QPointF>& out) {
    if (markers.empty() || columns < 1 || !(x1 >= x0)) return;
    const double width = std::max(1e-9, (x1 - x0) / columns);
    auto it = std::lower_bound(markers.begin(), markers.end(), x0,
                               [](const MarkerPoint& m, double x) { return static_cast<double>(m.step) < x; });
    while (it != markers.end() && static_cast<double>(it->step) <= x1) {
        out.append(QPointF(static_cast<double>(it->step), it->y));
        // Jump to the first marker of the next pixel column.
        const double column_end = x0 + (std::floor((static_cast<double>(it->step) - x0) / width) + 1) * width;
        it = std::lower_bound(it + 1, markers.end(), column_end,
                              [](const MarkerPoint& m, double x) { return static_cast<double>(m.step) < x; });
    }
}

}  // namespace mpx::gui
