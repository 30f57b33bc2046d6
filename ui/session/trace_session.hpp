// A recorded trace (File ▸ Open trace…) shown as the window's session: its runs are the recording
// itself, a scaler rule replayed over it, and the overflow frontier, as StepRecords the RecordStore
// draws like a training run's, so the Training charts, the event log, the Scaler tab and the Sweep
// tab read a real model's trace unchanged. Rule: every number is replay_trace's (engine/io/trace.hpp),
// the computation `mpx-cli replay` prints; this file only puts them into records.
//
// The runs, in order:
//   recorded   the trace as it was recorded: its loss, scale, overflows and skips, the scale's changes
//              read from consecutive steps (down: backed off; up: grew; an overflow that kept it:
//              absorbed by hysteresis), the headroom at the recorded scale.
//   replay     the rule over the trace (the Scaler tab's session scaler): the scale, the predicted
//              overflows, skips and events, the headroom and the underflow share at that scale. It
//              has no loss of its own: a replay predicts decisions, not the losses of another run.
//   frontier   FP16's largest value over the step's unscaled amax, 65504 / amax: the largest scale
//              the step's gradients take without overflowing (a step overflows where its scale is
//              above it). Only in a trace that holds amaxes (not one rebuilt from a log).
#pragma once

#include <QList>
#include <QString>

#include <utility>

#include <memory>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "engine/io/trace.hpp"
#include "engine/run/record.hpp"
#include "ui/session/session_info.hpp"

namespace mpx::gui {

struct TraceSession {
    std::shared_ptr<const mpx::Trace> trace;
    mpx::ScalerConfig rule;        // the replayed rule, as the Scaler tab shows it
    mpx::ReplayResult replay;      // replay_trace(*trace, rule)
    SessionInfoPtr info;           // the three runs (two for a log-derived trace)
    std::vector<mpx::StepRecord> records;  // in step order, runs interleaved
    std::vector<Note> notes;       // the verdict, at the step it concerns
    QString verdict;               // "Verdict (pytorch rule): ..."
    // The recorded histograms (<trace>.histograms.csv), one layer per module (SessionInfo::layerNames),
    // for the Range and Where views:
    //   recorded  each module's output gradients as stored at the recorded scale; the Where view's
    //             overflow count is what was stored as inf/NaN (a recording cannot see what flushed
    //             to zero: those values are among its zeros, so its underflow share reads 0).
    //   replay    the same values moved to the replayed scale (a whole power of two away; steps
    //             where it is not are left out): the Where view's underflow share is the share the
    //             replay predicts flushes (whole bins at or below 2^-25, as ReplayStep::underflow_share),
    //             its overflow count the values in whole bins at or above 2^16 plus those stored as inf/NaN.
    std::vector<std::pair<int, mpx::HistogramSnapshot>> histograms;
};

inline constexpr int k_trace_recorded = 0, k_trace_replay = 1, k_trace_frontier = 2;
// The modules a trace session shows as layers: those the trace keeps one by one.
inline constexpr int k_trace_max_layers = mpx::k_trace_max_sites;

// The trace with `rule` replayed over it, as a session of `generation` (the caller keeps it apart
// from the engine's). Throws ConfigError when the rule is not valid (mpx::validate).
TraceSession traceSession(std::shared_ptr<const mpx::Trace> trace, const mpx::ScalerConfig& rule, quint64 generation);
// What the trace holds, as "name: value" rows for the Setup tab (the file, its steps, the recorded
// scale and skips, its modules and how often their histograms were recorded, the rule replayed):
// a trace has no model, data or training settings of mpx's own.
QList<std::pair<QString, QString>> traceSummary(const TraceSession& t);
// The replay as `mpx-cli replay --csv` writes it (replay_csv), atomically; the reason, or empty.
QString exportReplayCsv(const TraceSession& t, const QString& path);

}  // namespace mpx::gui
