// traceSession: a trace and its replay as the records of three runs.
#include "ui/session/trace_session.hpp"

#include <QCoreApplication>
#include <QFileInfo>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <limits>

#include "engine/io/export.hpp"
#include "engine/scaler/scaler.hpp"
#include "ui/session/run_colours.hpp"

namespace mpx::gui {
namespace {

constexpr double k_fp16_max = 65504.0;
constexpr double k_none = std::numeric_limits<double>::quiet_NaN();  // a metric this run does not have

QString tr(const char* s) { return QCoreApplication::translate("mpx::gui::TraceSession", s); }

// A record that carries nothing yet: every metric a trace does not hold is NaN, which the charts
// leave out (RunHistory keeps finite values only).
mpx::StepRecord emptyRecord(int run, long long step) {
    mpx::StepRecord r;
    r.run = run;
    r.step = step;
    r.loss = k_none;
    r.loss_scale = k_none;
    r.new_scale = k_none;
    r.grad_norm = k_none;
    r.underflow_frac = k_none;
    r.lost_update_frac = k_none;
    r.small_update_frac = k_none;
    r.small_kept_frac = k_none;
    r.lr = k_none;
    r.step_time_us = k_none;
    r.overflow_count = -1;  // a trace records whether a step overflowed, not how many values did
    return r;
}

std::optional<double> headroom(const mpx::TraceStep& s, double scale) {
    if (s.amax > 0.0 && !s.censored && !mpx::forward_overflow_poisoned(s)) return std::log2(k_fp16_max / (s.amax * scale));
    return std::nullopt;
}

RunDescription run(const QString& label, const QColor& colour, Qt::PenStyle pen) {
    RunDescription d;
    d.label = label;
    d.spec.mode = mpx::Mode::amp;
    d.spec.low = mpx::Format::fp16;
    d.style = {colour, pen};
    return d;
}

// The recorded values of one module moved by 2^shift (the replayed scale over the recorded one):
// those moved past the lowest bin stay in it (far below FP16's range, flushed either way), those
// past the highest count as inf.
mpx::core::Bins shifted(const mpx::core::Bins& b, int shift) {
    using namespace mpx::core;
    Bins out;
    for (int i = 0; i < k_log2_bins; ++i) {
        const int j = i + shift;
        if (j >= k_log2_bins) out.n[k_slot_inf] += b.n[i];
        else out.n[std::max(j, 0)] += b.n[i];
    }
    for (int slot : {k_slot_zero, k_slot_inf, k_slot_nan}) out.n[slot] += b.n[slot];
    return out;
}

// A snapshot of the module histograms `sites` at `scale`, with the Where view's backward counts:
// non-zero values, those in whole bins that flush in FP16 (at or below 2^-25), those in whole bins
// that overflow it (at or above 2^16) plus those stored as inf/NaN.
mpx::HistogramSnapshot snapshot(long long step, double scale, int layers,
                                const std::vector<std::pair<int, mpx::core::Bins>>& sites) {
    using namespace mpx::core;
    mpx::HistogramSnapshot s;
    s.step = step;
    s.loss_scale = scale;
    s.layer_counts.resize(static_cast<std::size_t>(layers) * 3);
    for (const auto& [site, b] : sites) {
        if (site >= layers) continue;
        s.add(site, mpx::HistTensor::grad_output, mpx::Format::fp16, b);
        Counts& c = s.layer_counts[static_cast<std::size_t>(site) * 3 + static_cast<std::size_t>(mpx::Pass::backward)];
        for (int i = 0; i < k_log2_bins; ++i) {
            const int bin = i + k_bin_min;
            c.nonzero += b.n[i];
            if (bin + 1 <= -25) c.underflow += b.n[i];
            if (bin < -14) c.subnormal += b.n[i];
            if (bin >= 16) c.overflow += b.n[i];
        }
        c.overflow += b.n[k_slot_inf] + b.n[k_slot_nan];
        c.nonfinite += b.n[k_slot_inf] + b.n[k_slot_nan];
    }
    return s;
}

}  // namespace

TraceSession traceSession(std::shared_ptr<const mpx::Trace> trace, const mpx::ScalerConfig& rule, quint64 generation) {
    mpx::validate(rule);
    TraceSession t;
    t.trace = std::move(trace);
    t.rule = rule;
    const mpx::Trace& tr_ = *t.trace;
    t.replay = mpx::replay_trace(tr_, rule);

    auto info = std::make_shared<SessionInfo>();
    info->generation = generation;
    info->totalSteps = tr_.steps.empty() ? 0 : tr_.steps.back().step + 1;
    info->device = tr("a recorded trace (no training)");
    info->config.name = QFileInfo(QString::fromStdString(tr_.name)).fileName().toStdString();
    info->config.steps = info->totalSteps;
    info->config.scaler = rule;
    info->config.runs = {"amp-fp16", "amp-fp16"};
    mpx::RunSpec fp16;
    fp16.mode = mpx::Mode::amp;
    const QColor colour = precisionColour(fp16);
    info->runs.push_back(run(tr("recorded"), colour.lighter(135), Qt::DashLine));
    RunDescription replay = run(tr("replay (%1)").arg(QString::fromStdString(rule.preset.empty() ? "custom" : rule.preset)),
                                colour, Qt::SolidLine);
    replay.followsLiveScaler = true;
    replay.hasScaler = rule.kind != mpx::ScalerKind::none;
    info->runs.push_back(replay);
    if (tr_.amax_known) {
        info->runs.push_back(run(tr("frontier 65504 / amax"), QColor(0x88, 0x88, 0x88), Qt::SolidLine));
        info->config.runs.push_back("amp-fp16");
    }
    const int layers = std::min<int>(static_cast<int>(tr_.sites.size()), k_trace_max_layers);
    for (int l = 0; l < layers; ++l) info->layerNames << QString::fromStdString(tr_.sites[static_cast<std::size_t>(l)]);
    // Histograms on every n-th step: n the common divisor of the recorded steps (the recorder's `every`).
    long long every = 0;
    for (const mpx::TraceHistogram& h : tr_.histograms) every = std::gcd(every, h.step);
    info->config.instruments.every = static_cast<int>(std::clamp<long long>(every, 1, 1 << 30));
    auto scalers = std::make_shared<LiveScalers>();
    scalers->runs.assign(info->runs.size(), mpx::scaler_preset("none"));
    scalers->runs[k_trace_replay] = rule;
    scalers->session = rule;
    info->scalers = scalers;
    t.info = info;

    const std::size_t n = t.replay.steps.size();  // shorter than the trace where the rule stopped
    std::size_t next_hist = 0;
    t.records.reserve(tr_.steps.size() * info->runs.size());
    for (std::size_t i = 0; i < tr_.steps.size(); ++i) {
        const mpx::TraceStep& s = tr_.steps[i];
        const mpx::TraceHistogram* hist = nullptr;
        while (next_hist < tr_.histograms.size() && tr_.histograms[next_hist].step < s.step) ++next_hist;
        if (next_hist < tr_.histograms.size() && tr_.histograms[next_hist].step == s.step) hist = &tr_.histograms[next_hist];

        mpx::StepRecord rec = emptyRecord(k_trace_recorded, s.step);
        rec.loss = s.loss;
        rec.loss_scale = s.scale;
        rec.found_inf = s.found_inf;
        rec.skipped = s.skipped;
        rec.new_scale = i + 1 < tr_.steps.size() ? tr_.steps[i + 1].scale : s.scale;
        rec.scale_event = static_cast<std::uint8_t>(
            rec.new_scale < s.scale   ? mpx::ScaleEvent::backoff
            : rec.new_scale > s.scale ? mpx::ScaleEvent::grow
            : s.found_inf             ? mpx::ScaleEvent::hysteresis
                                      : mpx::ScaleEvent::none);
        rec.grad_norm = s.grad_norm.value_or(k_none);
        rec.lr = s.lr.value_or(k_none);
        if (tr_.amax_known) rec.headroom_log2 = headroom(s, s.scale);
        if (hist) {
            rec.underflow_frac = hist->flushed_share(s.scale).value_or(k_none);
            t.histograms.emplace_back(k_trace_recorded, snapshot(s.step, s.scale, layers, hist->sites));
        }
        t.records.push_back(rec);

        mpx::StepRecord rep = emptyRecord(k_trace_replay, s.step);
        if (i < n) {
            const mpx::ReplayStep& r = t.replay.steps[i];
            rep.loss_scale = r.scale;
            rep.found_inf = r.found_inf;
            rep.skipped = r.skipped;
            rep.scale_event = static_cast<std::uint8_t>(r.event);
            rep.new_scale = i + 1 < n ? t.replay.steps[i + 1].scale : t.replay.final_scale;
            rep.headroom_log2 = r.headroom_log2;
            rep.underflow_frac = r.underflow_share.value_or(k_none);
            const double shift = hist ? std::log2(r.scale / hist->scale) : 0.5;
            if (hist && shift == std::floor(shift) && std::fabs(shift) < 256) {
                std::vector<std::pair<int, mpx::core::Bins>> moved;
                for (const auto& [site, b] : hist->sites) moved.emplace_back(site, shifted(b, static_cast<int>(shift)));
                t.histograms.emplace_back(k_trace_replay, snapshot(s.step, r.scale, layers, moved));
            }
        }
        t.records.push_back(rep);

        if (tr_.amax_known) {
            mpx::StepRecord f = emptyRecord(k_trace_frontier, s.step);
            if (s.amax > 0.0 && !s.censored && !mpx::forward_overflow_poisoned(s)) f.loss_scale = k_fp16_max / s.amax;
            t.records.push_back(f);
        }
    }

    t.verdict = tr("Verdict (%1 rule): %2")
                    .arg(QString::fromStdString(rule.preset.empty() ? "custom" : rule.preset),
                         QString::fromStdString(t.replay.verdict));
    Note verdict;
    verdict.step = tr_.steps.empty() ? 0 : tr_.steps.front().step;
    for (const mpx::TraceStep& s : tr_.steps)
        if (mpx::forward_overflow_poisoned(s)) {  // where the verdict's forward overflow begins
            verdict.step = s.step;
            break;
        }
    if (t.replay.stopped_at && verdict.step == (tr_.steps.empty() ? 0 : tr_.steps.front().step)) verdict.step = *t.replay.stopped_at;
    verdict.run = k_trace_replay;
    verdict.kind = NoteKind::verdict;
    verdict.text = t.verdict;
    t.notes.push_back(verdict);
    return t;
}

QList<std::pair<QString, QString>> traceSummary(const TraceSession& t) {
    QList<std::pair<QString, QString>> rows;
    if (!t.trace) return rows;
    const mpx::Trace& tr_ = *t.trace;
    const QLocale loc;
    rows.append({tr("File"), QFileInfo(QString::fromStdString(tr_.name)).fileName()});
    if (!tr_.steps.empty()) {
        long long overflows = 0, skips = 0;
        for (const mpx::TraceStep& s : tr_.steps) {
            overflows += s.found_inf;
            skips += s.skipped;
        }
        rows.append({tr("Steps"), tr("%1 recorded (steps %2 to %3)")
                                      .arg(loc.toString(static_cast<qlonglong>(tr_.steps.size())))
                                      .arg(tr_.steps.front().step)
                                      .arg(tr_.steps.back().step)});
        rows.append({tr("Recorded scale"), tr("%1 to %2; %3 overflowed, %4 skipped")
                                               .arg(tr_.steps.front().scale, 0, 'g', 6)
                                               .arg(tr_.steps.back().scale, 0, 'g', 6)
                                               .arg(overflows)
                                               .arg(skips)});
    }
    rows.append({tr("Amax"), tr_.amax_known ? tr("recorded every step (the frontier 65504 / amax)")
                                            : tr("not known: rebuilt from a log (overflow decisions only)")});
    if (tr_.sites.empty()) {
        rows.append({tr("Modules"), tr("no histograms (no %1 beside the trace): the Range and Where views stay empty")
                                        .arg(QString::fromStdString(mpx::trace_histograms_path(tr_.name).filename().string()))});
    } else {
        const qsizetype kept = t.info ? t.info->layerNames.size() : 0;
        rows.append({tr("Modules"), kept < static_cast<qsizetype>(tr_.sites.size())
                                        ? tr("%1 recorded, the first %2 one by one").arg(tr_.sites.size()).arg(kept)
                                        : tr("%1 recorded").arg(tr_.sites.size())});
        rows.append({tr("Histograms"), tr("every %1 steps (the recorder's every=), %2 steps")
                                           .arg(t.info ? t.info->config.instruments.every : 0)
                                           .arg(tr_.histograms.size())});
    }
    rows.append({tr("Replayed rule"), tr("%1, from a scale of %2 (the Scaler tab)")
                                          .arg(QString::fromStdString(t.rule.preset.empty() ? "custom" : t.rule.preset))
                                          .arg(t.rule.init_scale, 0, 'g', 6)});
    return rows;
}

QString exportReplayCsv(const TraceSession& t, const QString& path) {
    try {
        mpx::write_file_atomic(path.toStdString(), mpx::replay_csv(*t.trace, t.replay));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace mpx::gui
