// The hand-over point between the engine worker and the window: the worker appends a slice of
// records under a short lock, the window's timer takes everything at once (~30 Hz).
// Rule: records, notes, decision-boundary grids and the SessionInfo they belong to travel together,
// so a drain can never mix results of an old session into a new one, whatever order queued signals
// arrive in.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/run/attention_maps.hpp"
#include "engine/run/boundary_grid.hpp"
#include "engine/run/mismatch_result.hpp"
#include "engine/run/record.hpp"
#include "engine/run/text_sample.hpp"
#include "ui/session/session_info.hpp"

namespace mpx::gui {

struct Drained {
    SessionInfoPtr session;           // null until the first session exists
    std::vector<mpx::StepRecord> records;  // in step order, runs interleaved as the session made them
    std::vector<Note> notes;
    std::vector<std::pair<int, mpx::HistogramSnapshot>> histograms;  // (run, snapshot) in step order
    std::shared_ptr<const mpx::Boundaries> boundaries;  // the newest grids since the last drain, or null
    std::vector<std::pair<int, mpx::Fp8ScaleRow>> fp8;  // (run, row) in step order: FP8 runs' scaled tensors
    std::vector<mpx::TextSample> samples;  // the GPT's text samples, in step and run order
    std::vector<mpx::MismatchResult> mismatches;  // the log-probability mismatch, in step and policy order
    std::vector<std::shared_ptr<const mpx::AttentionSnapshot>> attention;  // the GPT's attention maps, in step order
};

class RecordBuffer {
public:
    // A new session: pending records of the old one are dropped.
    void beginSession(SessionInfoPtr info);
    void append(std::vector<mpx::StepRecord>& records);  // moves the elements out
    void appendNote(Note note);
    void appendHistogram(int run, mpx::HistogramSnapshot snapshot);
    // One step's FP8 scale rows of every run (Run::fp8_scales() of that step); moves them out.
    void appendFp8(std::vector<std::pair<int, mpx::Fp8ScaleRow>>& rows);
    void appendSamples(std::vector<mpx::TextSample>& samples);  // moves the elements out
    void appendMismatches(std::vector<mpx::MismatchResult>& results);  // moves the elements out
    void appendAttention(std::shared_ptr<const mpx::AttentionSnapshot> a);
    // The newest grids replace any not yet drained: the window only ever draws the latest.
    void setBoundaries(std::shared_ptr<const mpx::Boundaries> b);
    // Everything pending, with the session it belongs to; leaves the buffer empty.
    Drained drain();
    std::size_t pending() const;

private:
    mutable std::mutex m_mutex;
    SessionInfoPtr m_session;
    std::vector<mpx::StepRecord> m_records;
    std::vector<Note> m_notes;
    std::vector<std::pair<int, mpx::HistogramSnapshot>> m_histograms;
    std::shared_ptr<const mpx::Boundaries> m_boundaries;
    std::vector<std::pair<int, mpx::Fp8ScaleRow>> m_fp8;
    std::vector<mpx::TextSample> m_samples;
    std::vector<mpx::MismatchResult> m_mismatches;
    std::vector<std::shared_ptr<const mpx::AttentionSnapshot>> m_attention;
};

}  // namespace mpx::gui
