// ChartsPanel's drawing (charts_panel.hpp): from the RecordStore to the plots. Each run's lines
// decimated to the plot's pixels, the scale events in lanes, the Memory chart's bars, and the hover
// readout of every run at one step.
// Rule: each series is set once per refresh, from the store's history as it is now; nothing here
// keeps a copy of a run's values between refreshes.
#include "ui/panels/charts_panel.hpp"

#include <QSet>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "engine/compute/memory.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/session/config_bridge.hpp"

namespace mpx::ui {
namespace {

QString number(double v) { return QString::number(v, 'g', 6); }

// How each kind of scale event is marked in its run's lane (ChartsPanel::ScaleMark order, which is
// also the key's: the last entries go first where the key does not fit). A skipped step whose scale
// halved is the red diamond the lessons name (hysteresis, overflow-storm); one that hysteresis absorbed
// is the same diamond hollow, in the event log's amber; growth is the quiet rhythm between them,
// small and pale, in the log's green (event_log_panel.cpp).
struct MarkStyle {
    const char* name;
    QColor fill, border;  // a transparent fill draws the mark hollow
    PlotWidget::Marker shape;
    double size;  // pixels, × the presentation scale
};
const MarkStyle k_marks[] = {
    {QT_TRANSLATE_NOOP("ChartsPanel", "halved"), QColor(0xc0, 0x39, 0x2b), QColor(0x7b, 0x24, 0x1c),
     PlotWidget::Marker::diamond, 10},
    {QT_TRANSLATE_NOOP("ChartsPanel", "kept"), Qt::transparent, QColor(0xb3, 0x6b, 0x00), PlotWidget::Marker::diamond, 10},
    {QT_TRANSLATE_NOOP("ChartsPanel", "skipped"), QColor(0x6c, 0x1f, 0x80), QColor(0x40, 0x12, 0x4c),
     PlotWidget::Marker::square, 7},
    {QT_TRANSLATE_NOOP("ChartsPanel", "grew"), QColor(0x1e, 0x7d, 0x32, 150), QColor(0x1e, 0x7d, 0x32, 150),
     PlotWidget::Marker::triangle, 5},
};

}  // namespace

void ChartsPanel::drawTimeCharts() {
    if (static_cast<int>(m_series.size()) != m_store->runCount()) return;
    // One tick interval for every chart: their step axes are one axis, so they read alike (each
    // chose its own from its width, "0 500" beside "0 200 400 600"), as many as the narrowest fits.
    int narrowest = std::numeric_limits<int>::max();
    for (const ChartSpec& c : chartTable())
        if (c.draw != Draw::stacked) narrowest = std::min(narrowest, plot(c.id)->plotWidth());
    const double tick = PlotWidget::xTickFor(m_x1 - m_x0, narrowest);
    for (const ChartSpec& c : chartTable())
        if (c.draw != Draw::stacked) {
            plot(c.id)->setXRange(m_x0, m_x1, tick);
            plot(c.id)->setCursorStep(m_cursor);
            drawLines(c, m_x0, m_x1);
        }
}

void ChartsPanel::drawLines(const ChartSpec& c, double x0, double x1) {
    PlotWidget* p = plot(c.id);
    const bool logAxis = c.axis == AxisKind::loss && lossLogScale();
    const double smooth = smoothing();
    const double k = c.axis == AxisKind::percent ? 100 : 1;
    // One pixel column per two pixels: a min/max pair per column is still a point per pixel, and
    // Qt Charts' cost grows with every point it strokes.
    const int columns = std::max(16, p->plotWidth() / 2);
    // The y range comes from the points drawn, so an axis always fits what is on screen.
    double lo = INFINITY, hi = -INFINITY;
    QList<QPointF> pts;
    auto put = [&](int id, bool visible, bool ranged) {
        if (id < 0) return;
        for (QPointF& q : pts) q.setY(q.y() * k);
        p->setSeriesVisible(id, visible);
        if (visible && ranged)
            for (const QPointF& q : pts)
                if (!logAxis || q.y() > 0) lo = std::min(lo, q.y()), hi = std::max(hi, q.y());
        p->setPoints(id, visible ? pts : QList<QPointF>{});
        pts.clear();
    };
    for (int r = 0; r < static_cast<int>(m_series.size()); ++r) {
        const gui::RunHistory& h = m_store->history(r);
        const Series& s = m_series[static_cast<std::size_t>(r)][static_cast<int>(c.id)];
        const bool vis = runVisible(r);
        switch (c.draw) {
            case Draw::rawAndSmoothed:
                h.decimate(c.metric, gui::Reduce::envelope, x0, x1, columns, pts);
                put(s.raw, vis, true);
                if (smooth > 0) h.smoothed(c.metric, smooth, x0, x1, columns, pts);
                put(s.line, vis && smooth > 0, false);
                break;
            case Draw::dots: {
                h.decimate(c.metric, gui::Reduce::mean, x0, x1, columns, pts);
                const QList<QPointF> line = pts;
                put(s.line, vis, true);
                // Dots only while they stand apart: one per evaluation, not a smear.
                if (line.size() <= p->plotWidth() / 8) pts = line;
                put(s.dots, vis, false);
                break;
            }
            case Draw::envelope:
            case Draw::mean:
            case Draw::max:
                h.decimate(c.metric, c.draw == Draw::envelope ? gui::Reduce::envelope
                                     : c.draw == Draw::mean   ? gui::Reduce::mean
                                                              : gui::Reduce::max,
                           x0, x1, columns, pts);
                put(s.line, vis, true);
                break;
            case Draw::average:  // step times are noisy (other processes share the cores)
                h.smoothed(c.metric, 0.9, x0, x1, columns, pts);
                put(s.line, vis, true);
                break;
            case Draw::stacked: return;
        }
    }
    if (c.scaleEvents) drawLanes(c, x0, x1);
    const bool valid = lo <= hi;
    switch (c.axis) {
        case AxisKind::loss:
            if (valid) {
                const double pad = logAxis ? 0 : (hi - lo) * 0.05;
                p->setYRange(logAxis ? lo : std::max(0.0, lo - pad), hi + pad);
            }
            break;
        case AxisKind::log2:
            if (valid) p->setYRange(lo / 2, hi * 2);
            break;
        // A share in percent: headroom above the highest value, but never past 100 %; before any
        // value the whole 0–100 % (a share of exactly 0 all along gets 0–1 %, its line on the floor).
        case AxisKind::percent:
            p->setYRange(0, !valid ? 100.0 : hi > 0 ? std::min(100.0, hi * 1.1) : 1);
            break;
        case AxisKind::count: p->setYRange(0, std::max(5.0, valid ? hi * 1.1 : 0.0)); break;
    }
}

void ChartsPanel::readEvents() {
    const std::vector<gui::LogRow>& log = m_store->log();
    if (log.size() < m_logSeen) m_logSeen = 0, m_events.clear();  // the store began a new session
    m_events.resize(static_cast<std::size_t>(m_store->runCount()));
    for (; m_logSeen < log.size(); ++m_logSeen) {
        const gui::LogRow& row = log[m_logSeen];
        if (row.run < 0 || row.run >= static_cast<int>(m_events.size())) continue;
        ScaleMark kind;
        switch (row.kind) {
            case gui::LogKind::backoff: kind = ScaleMark::halved; break;
            case gui::LogKind::hysteresis: kind = ScaleMark::kept; break;
            case gui::LogKind::grow: kind = ScaleMark::grew; break;
            case gui::LogKind::skip:
                if (!row.skipped) continue;
                kind = ScaleMark::skipped;
                break;
            default: continue;
        }
        m_events[static_cast<std::size_t>(row.run)][static_cast<std::size_t>(kind)].push_back({row.step, row.oldScale});
    }
}

QString ChartsPanel::shortName(int run) const {
    const auto session = m_store->session();
    if (!session || run < 0 || run >= static_cast<int>(session->runs.size())) return {};
    // The longest start up to a '+' that every label shares: "amp-fp16+pytorch" is "pytorch" beside
    // "amp-fp16+deepspeed", and stays whole beside "fp32".
    const QString label = session->runs[static_cast<std::size_t>(run)].label;
    qsizetype cut = label.lastIndexOf(QLatin1Char('+'));
    for (; cut > 0; cut = label.lastIndexOf(QLatin1Char('+'), cut - 1)) {
        const QString start = label.left(cut + 1);
        bool shared = session->runs.size() > 1;
        for (const auto& r : session->runs) shared = shared && r.label.startsWith(start) && r.label.size() > start.size();
        if (shared) return label.mid(cut + 1);
    }
    return label;
}

// A lane for each shown run that has had a scale event, in the legend's order; each lane's marks
// decimated to one per few pixels, as the lines are.
void ChartsPanel::drawLanes(const ChartSpec& c, double x0, double x1) {
    static_assert(std::size(k_marks) == k_mark_kinds, "one style per ScaleMark, in its order");
    PlotWidget* p = plot(c.id);
    Lanes& lanes = m_lanes[static_cast<int>(c.id)];
    const auto session = m_store->session();
    QList<int> runs;
    for (int r = 0; r < static_cast<int>(m_events.size()); ++r) {
        const RunEvents& e = m_events[static_cast<std::size_t>(r)];
        if (runVisible(r) && std::any_of(e.begin(), e.end(), [](const auto& v) { return !v.empty(); })) runs << r;
    }
    // std::equal, not QList's ==: Qt 6.4's passes an empty list's null data to memcmp (UBSan).
    if (runs.size() != lanes.runs.size() || !std::equal(runs.begin(), runs.end(), lanes.runs.begin()) || !session) {
        QList<PlotWidget::Lane> rows;
        for (int r : runs) {
            const gui::RunStyle style = runStyle(session, r);
            rows << PlotWidget::Lane{shortName(r), style.colour, style.pen};
        }
        const int room = p->laneRoom();
        p->setLanes(rows);
        lanes.runs = runs;
        lanes.marks.assign(static_cast<std::size_t>(runs.size()), {});
        for (int lane = 0; lane < runs.size(); ++lane)
            for (int k = 0; k < k_mark_kinds; ++k)
                lanes.marks[static_cast<std::size_t>(lane)][static_cast<std::size_t>(k)] =
                    p->addLaneMarks(lane, tr(k_marks[k].name), k_marks[k].fill, k_marks[k].border, k_marks[k].shape,
                                    k_marks[k].size * m_scale);
        if (p->laneRoom() != room && m_highlighted[static_cast<int>(c.id)]) layoutCharts();  // the lesson's tiles refit
    }
    QList<QPointF> pts;
    QList<double> steps;
    for (int lane = 0; lane < runs.size(); ++lane)
        for (int k = 0; k < k_mark_kinds; ++k) {
            pts.clear();  // decimateMarkers appends
            // A column per half a mark: events close together overlap as a stack, not one on another.
            gui::decimateMarkers(m_events[static_cast<std::size_t>(runs[lane])][static_cast<std::size_t>(k)], x0, x1,
                                 static_cast<int>(p->plotWidth() / (k_marks[k].size * m_scale / 2)), pts);
            steps.clear();
            for (const QPointF& q : pts) steps << q.x();
            p->setLaneSteps(lanes.marks[static_cast<std::size_t>(lane)][static_cast<std::size_t>(k)], steps);
        }
}

void ChartsPanel::drawMemory() {
    const auto session = m_store->session();
    if (!session || m_store->steps() == 0) return;
    QStringList categories;
    double largest = 0;
    // Each run by what tells it apart ("pytorch" beside "deepspeed"): its whole label, elided to the
    // classroom's tile, read "amp-fp…" three times. The bars' names get about a quarter of the
    // chart's width (Qt Charts cuts the rest), so a cure or preset after '+' is said once: a run whose
    // base is a run too is "+kahan", under "pure-fp16" ("pure-fp16…" twice told +kahan and +sr
    // apart no more); a base no other run has stands alone ("amp-fp16": the legend says +pytorch).
    QStringList names;
    for (int r = 0; r < m_store->runCount(); ++r) names << shortName(r);
    for (int r = 0; r < names.size(); ++r) {
        const qsizetype cut = names[r].indexOf(QLatin1Char('+'));
        if (cut <= 0) {
            categories << names[r];
            continue;
        }
        const QString base = names[r].left(cut);
        bool baseIsRun = false, shared = false;
        for (int o = 0; o < names.size(); ++o)
            if (o != r) {
                baseIsRun = baseIsRun || names[o] == base;
                shared = shared || names[o].startsWith(base + QLatin1Char('+'));
            }
        categories << (baseIsRun ? names[r].mid(cut) : shared ? names[r] : base);
    }
    if (QSet<QString>(categories.begin(), categories.end()).size() != categories.size()) categories = names;
    for (int r = 0; r < m_store->runCount(); ++r)
        largest = std::max(largest, static_cast<double>(m_store->memory(r).total()));
    const bool mib = largest >= 1024.0 * 1024.0;
    const double unit = mib ? 1024.0 * 1024.0 : 1024.0;
    QList<PlotWidget::BarSet> sets;
    for (int c = 0; c < mpx::k_mem_categories; ++c) {
        PlotWidget::BarSet s{gui::memoryCategoryName(c), memoryColour(c), {}};
        bool any = false;
        for (int r = 0; r < m_store->runCount(); ++r) {
            s.values << static_cast<double>(m_store->memory(r).bytes[static_cast<std::size_t>(c)]) / unit;
            any = any || m_store->memory(r).bytes[static_cast<std::size_t>(c)] > 0;
        }
        // Kahan buffers only where a run keeps them: no empty legend entry in other sessions.
        if (any || c != static_cast<int>(mpx::MemCategory::compensation)) sets << s;
    }
    const int least = plot(ChartId::memory)->barsLeastHeight();
    plot(ChartId::memory)->setBars(categories, sets, mib ? tr("MiB") : tr("KiB"));
    if (plot(ChartId::memory)->barsLeastHeight() != least) layoutCharts();  // its bars and legend keep their rows
    plot(ChartId::memory)->setPlaceholder({});
}

QString ChartsPanel::memoryPlaceholder() {
    return tr("Press Run to see each run's memory.");
}

QString ChartsPanel::hoverText(ChartId id, long long step) const {
    const auto session = m_store->session();
    const ChartSpec& c = chartSpec(id);
    if (!session || c.draw == Draw::stacked) return {};
    const gui::Metric m = c.metric;
    // Values recorded only every few steps: the latest at or before the step, and where it was taken.
    const bool sparse = c.draw == Draw::dots;
    const double k = c.axis == AxisKind::percent ? 100 : 1;
    const QString unit = c.axis == AxisKind::percent ? QStringLiteral("%") : QString();
    // On a log₂ axis (the loss scale) a power of two reads as the axis labels it: 2²², not 4.1943e+06.
    const auto text = [&](double v) {
        if (c.axis == AxisKind::log2 && v > 0 && std::isfinite(v)) {
            const double e = std::log2(v);
            if (e == std::round(e)) return pow2Text(e);
        }
        return number(v * k) + unit;
    };
    QString rows;
    for (int r = 0; r < m_store->runCount(); ++r) {
        const gui::RunHistory& h = m_store->history(r);
        const gui::BucketStat st = sparse ? h.latest(m, step) : h.at(m, step);
        QString value;
        if (st.last < st.first && !st.valid) value = tr("—");
        else if (!st.valid) value = m == gui::Metric::loss ? tr("NaN/inf") : tr("—");
        else if (st.first == st.last || st.min == st.max) value = text(st.min);
        else value = tr("%1 … %2").arg(text(st.min), text(st.max));
        if (sparse && st.valid && !(st.first <= step && step <= st.last))  // taken earlier: say when
            value += st.first == st.last ? tr(" (step %1)").arg(st.last) : tr(" (steps %1–%2)").arg(st.first).arg(st.last);
        rows += QStringLiteral("<tr><td><span style='color:%1'>■</span> %2</td><td align=right>&nbsp;%3</td></tr>")
                    .arg(runColour(session, r).name(), session->runs[static_cast<std::size_t>(r)].label.toHtmlEscaped(), value);
    }
    const gui::BucketStat any = m_store->runCount() ? m_store->history(0).at(m, step) : gui::BucketStat{};
    const QString where = any.last > any.first ? tr("steps %1–%2").arg(any.first).arg(any.last) : tr("step %1").arg(step);
    QString html = QStringLiteral("<b>%1</b><table>%2</table>").arg(where, rows);
    html += QStringLiteral("<p style='color:#666; white-space:normal'>%1</p>").arg(c.explain());
    return html;
}

void ChartsPanel::showHover(ChartId c, double x, const QPoint& globalPos) {
    if (!std::isfinite(x) || x < 0 || x >= static_cast<double>(m_store->steps())) {
        QToolTip::hideText();
        for (int i = 0; i < k_chart_count; ++i) m_plots[i]->setCursorStep(m_cursor);
        return;
    }
    const long long step = std::llround(x);
    for (int i = 0; i < k_chart_count; ++i) m_plots[i]->setCursorStep(static_cast<double>(step));
    // Up for a minute while the mouse rests (a teacher talks over it); moving on or leaving the
    // chart replaces or hides it. Qt's default, 10 s and more for long texts, is a guess from length.
    constexpr int k_readout_ms = 60'000;
    QToolTip::showText(globalPos + QPoint(14, 10), hoverText(c, step), plot(c), {}, k_readout_ms);
}

}  // namespace mpx::ui
