// RecordBuffer: a mutex, two vectors and a swap.
#include "ui/session/record_buffer.hpp"

namespace mpx::gui {

QString toText(EngineState s) {
    switch (s) {
        case EngineState::empty: return QStringLiteral("no session");
        case EngineState::ready: return QStringLiteral("ready");
        case EngineState::running: return QStringLiteral("running");
        case EngineState::paused: return QStringLiteral("paused");
        case EngineState::finished: return QStringLiteral("finished");
    }
    return {};
}

void RecordBuffer::beginSession(SessionInfoPtr info) {
    std::lock_guard lock(m_mutex);
    m_session = std::move(info);
    m_records.clear();
    m_notes.clear();
    m_histograms.clear();
    m_boundaries.reset();
    m_fp8.clear();
    m_samples.clear();
    m_mismatches.clear();
    m_attention.clear();
}

void RecordBuffer::append(std::vector<mpx::StepRecord>& records) {
    std::lock_guard lock(m_mutex);
    if (m_records.empty()) {
        m_records.swap(records);
    } else {
        m_records.insert(m_records.end(), records.begin(), records.end());
    }
    records.clear();
}

void RecordBuffer::appendNote(Note note) {
    std::lock_guard lock(m_mutex);
    m_notes.push_back(std::move(note));
}

void RecordBuffer::appendHistogram(int run, mpx::HistogramSnapshot snapshot) {
    std::lock_guard lock(m_mutex);
    m_histograms.emplace_back(run, std::move(snapshot));
}

void RecordBuffer::appendFp8(std::vector<std::pair<int, mpx::Fp8ScaleRow>>& rows) {
    std::lock_guard lock(m_mutex);
    if (m_fp8.empty()) m_fp8.swap(rows);
    else m_fp8.insert(m_fp8.end(), rows.begin(), rows.end());
    rows.clear();
}

void RecordBuffer::appendSamples(std::vector<mpx::TextSample>& samples) {
    std::lock_guard lock(m_mutex);
    for (mpx::TextSample& s : samples) m_samples.push_back(std::move(s));
    samples.clear();
}

void RecordBuffer::appendMismatches(std::vector<mpx::MismatchResult>& results) {
    std::lock_guard lock(m_mutex);
    for (mpx::MismatchResult& r : results) m_mismatches.push_back(std::move(r));
    results.clear();
}

void RecordBuffer::appendAttention(std::shared_ptr<const mpx::AttentionSnapshot> a) {
    std::lock_guard lock(m_mutex);
    m_attention.push_back(std::move(a));
}

void RecordBuffer::setBoundaries(std::shared_ptr<const mpx::Boundaries> b) {
    std::lock_guard lock(m_mutex);
    m_boundaries = std::move(b);
}

Drained RecordBuffer::drain() {
    Drained d;
    std::lock_guard lock(m_mutex);
    d.session = m_session;
    d.records.swap(m_records);
    d.notes.swap(m_notes);
    d.histograms.swap(m_histograms);
    d.boundaries.swap(m_boundaries);
    d.fp8.swap(m_fp8);
    d.samples.swap(m_samples);
    d.mismatches.swap(m_mismatches);
    d.attention.swap(m_attention);
    return d;
}

std::size_t RecordBuffer::pending() const {
    std::lock_guard lock(m_mutex);
    return m_records.size();
}

}  // namespace mpx::gui
