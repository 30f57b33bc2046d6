// UpdatesView: update-to-ulp bins added over layers, drawn as one outline per run; the lost-updates
// chart row beneath.
#include "ui/views/updates_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "ui/kit/concepts.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/step_scrubber.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/kit/view_canvas.hpp"
#include "ui/views/chart_table.hpp"

namespace mpx::ui {
namespace {

constexpr int k_halfUlp = -1;  // log2(½): an update below half the spacing rounds to nothing


}  // namespace

class UpdatesView::Canvas : public ViewCanvas<UpdatesView> {
public:
    explicit Canvas(UpdatesView* view) : ViewCanvas(view, {500, 220}) { setMouseTracking(false); }
};

UpdatesView::UpdatesView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 2, 4, 2);
    v->setSpacing(4);
    auto* bar = new QHBoxLayout;
    m_layer = new QComboBox;
    m_layer->setToolTip(tr("Whose updates: one layer's weights and biases, or every layer's together."));
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(m_layer);
    m_scrub = new StepScrubber;
    bar->addWidget(m_scrub, 1);
    v->addLayout(bar);
    m_canvas = new Canvas(this);
    v->addWidget(m_canvas, 3);
    const ChartSpec& spec = chartSpec(ChartId::lostUpdates);
    m_plot = new PlotWidget(chartTitle(spec));
    m_plot->setXTitle(tr("step"));
    m_plot->setYTitle(chartYTitle(spec));
    m_plot->setYLabelFormat(QStringLiteral("%.3g%%"));
    m_plot->setMinimumHeight(180);
    m_plot->setToolTip(spec.explain());
    v->addWidget(m_plot, 2);
    setToolTip(tr("How big each weight's change is compared with the gap between the weight and the next number "
                  "its format can store. Right of the dashed line the change is at least half a gap, so the stored "
                  "weight moves; left of it rounding puts the weight back where it was, and the update is lost. "
                  "Below: the share of weights that did not change, step by step."));
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        m_plot->removeAllSeries();
        m_lines.clear();
        if (const auto s = m_store->session())
            for (int r = 0; r < static_cast<int>(s->runs.size()); ++r)
                {
                const gui::RunDescription& d = s->runs[static_cast<std::size_t>(r)];
                m_lines.push_back(m_plot->addLine(d.label, d.style.colour, 1.6, d.style.pen));
            }
        rebuildChoices();
        m_scrub->follow();
        stepsChanged();
    });
    connect(m_store, &gui::RecordStore::stepsRecorded, this, &UpdatesView::stepsChanged);
    connect(m_layer, &QComboBox::currentIndexChanged, this, [this] { m_canvas->update(); });
    connect(m_scrub, &StepScrubber::stepChanged, this, [this] {
        m_plot->setCursorStep(m_scrub->following() || step() < 0 ? std::nan("") : static_cast<double>(step()));
        m_canvas->update();
    });
    rebuildChoices();
    stepsChanged();
    connect(m_plot, &PlotWidget::plotResized, this, [this] { refresh(); });
}

void UpdatesView::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    refresh();
}

void UpdatesView::rebuildChoices() {
    const QSignalBlocker block(m_layer);
    m_layer->clear();
    m_layer->addItem(tr("all layers"), -1);
    // The layers an optimizer updates, by the names the other views use ("fc2"; "block 0 · q, k, v").
    if (const auto s = m_store->session())
        for (int l : gui::updatedLayers(*s)) m_layer->addItem(gui::layerName(*s, l), l);
    m_layer->setCurrentIndex(0);
}

// The first run's collected steps drive the slider; the other runs show their nearest.
void UpdatesView::stepsChanged() {
    const long long every = m_store->session() ? m_store->session()->config.instruments.every : 0;
    if (m_store->runCount() > 0)
        m_scrub->setSnapshots(&m_store->histograms(0).snapshots(), every * m_store->histograms(0).stride());
    else
        m_scrub->setSnapshots(nullptr, every);
    if (isVisible()) refresh();  // the chart only while shown (showEvent catches up)
}

void UpdatesView::setLayer(int layer) { m_layer->setCurrentIndex(std::max(0, m_layer->findData(layer))); }
int UpdatesView::layer() const { return m_layer->currentIndex() < 0 ? -1 : m_layer->currentData().toInt(); }
void UpdatesView::setStep(long long step) { m_scrub->setStep(step); }
long long UpdatesView::step() const { return m_scrub->step(); }
bool UpdatesView::following() const { return m_scrub->following(); }

void UpdatesView::refresh() {
    // The Training tab's lost-updates row: its metric, reduced per pixel column as it reduces it.
    const ChartSpec& spec = chartSpec(ChartId::lostUpdates);
    const double x1 = std::max<double>(10, static_cast<double>(m_store->steps()));
    const int columns = std::max(16, m_plot->plotWidth() / 2);
    double hi = 0;
    QList<QPointF> pts;
    for (int r = 0; r < static_cast<int>(m_lines.size()) && r < m_store->runCount(); ++r) {
        pts.clear();
        m_store->history(r).decimate(spec.metric, gui::Reduce::mean, 0, x1, columns, pts);
        for (QPointF& q : pts) {
            q.setY(q.y() * 100);
            hi = std::max(hi, q.y());
        }
        m_plot->setPoints(m_lines[static_cast<std::size_t>(r)], pts);
    }
    m_plot->setXRange(0, x1);
    m_plot->setYRange(0, hi > 0 ? std::min(100.0, hi * 1.1) : 1);
    m_canvas->update();
}

UpdatesView::Curve UpdatesView::curve(int run) const {
    Curve c;
    if (run < 0 || run >= m_store->runCount()) return c;
    const mpx::HistogramSnapshot* snap = nearestSnapshot(&m_store->histograms(run).snapshots(), step());
    if (!snap) return c;
    c.run = run;
    c.step = snap->step;
    const int layers = m_store->session() ? m_store->session()->config.model.layers() : 0;
    const int only = layer();
    for (int l = 0; l < layers; ++l)
        if (only < 0 || l == only)
            if (const mpx::Histogram* h = snap->find(l, mpx::HistTensor::update_ulp)) {
                for (int b = core::k_bin_min; b <= core::k_bin_max; ++b) {
                    const auto n = snap->count(*h, b);
                    c.n[static_cast<std::size_t>(b - core::k_bin_min)] += n;
                    c.nonzero += n;
                }
                c.zero += h->zero;
            }
    return c;
}

double UpdatesView::shareBelowHalfUlp(int run) const {
    const Curve c = curve(run);
    if (c.nonzero == 0) return 0.0;
    unsigned long long below = 0;
    for (int b = core::k_bin_min; b < k_halfUlp; ++b) below += c.n[static_cast<std::size_t>(b - core::k_bin_min)];
    return static_cast<double>(below) / static_cast<double>(c.nonzero);
}

QString UpdatesView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: press Run or Step.");
    if (session->config.instruments.every <= 0)
        return tr("Histograms are off for this session (instruments.every = 0): set it to 10 and reset.");
    for (int r = 0; r < m_store->runCount(); ++r)
        if (!m_store->histograms(r).snapshots().empty()) return {};
    return tr("No collected step yet (one every %1 steps). Press Run or Step.").arg(session->config.instruments.every);
}

void UpdatesView::setPresentationScale(double s) {
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * s);
    m_canvas->setFont(f);
    m_plot->setFontScale(s);
    m_canvas->update();
}

QWidget* UpdatesView::canvas() const { return m_canvas; }

QRect UpdatesView::histogramRect() const { return layout().plot.translated(m_canvas->geometry().topLeft()); }

// Per legend line its forms, longest first: each run's share left of the line, then what its cure
// (engine/core/write_back.hpp) did with those updates.
std::vector<QStringList> UpdatesView::legendForms() const {
    std::vector<QStringList> out;
    const auto session = m_store->session();
    if (!session) return out;
    for (int run = 0; run < m_store->runCount(); ++run) {
        const Curve c = curve(run);
        if (c.run < 0) continue;
        const QString& label = session->runs[static_cast<std::size_t>(run)].label;
        if (c.nonzero + c.zero == 0) {
            out.push_back({tr("%1: no update at step %2 (the step was skipped)").arg(label).arg(c.step),
                           tr("%1: step %2 skipped").arg(label).arg(c.step)});
            continue;
        }
        const QString share = percentText(shareBelowHalfUlp(run));
        const QString zero = QLocale().toString(c.zero);
        out.push_back(c.zero ? QStringList{tr("%1: %2 of the non-zero updates are left of the line (and %3 updates were "
                                              "exactly 0)").arg(label, share, zero),
                                           tr("%1: %2 of the non-zero updates left of the line; %3 exactly 0").arg(label, share, zero),
                                           tr("%1: %2 left of the line").arg(label, share)}
                             : QStringList{tr("%1: %2 of the non-zero updates are left of the line").arg(label, share),
                                           tr("%1: %2 left of the line").arg(label, share)});
        const mpx::WriteBack wb = session->runs[static_cast<std::size_t>(run)].writeBack;
        if (wb == mpx::WriteBack::nearest) continue;
        const gui::RunHistory& h = m_store->history(run);
        const QString kept = percentText(h.at(gui::Metric::smallKept, c.step).mean);
        if (wb == mpx::WriteBack::kahan) {
            const QString cmax = QString::number(h.at(gui::Metric::compensation, c.step).mean, 'g', 3);
            out.push_back({tr("Kahan kept %1 of them in its buffer (largest |c| %2); they land once they add up to half a "
                              "gap").arg(kept, cmax),
                           tr("Kahan kept %1 of them in its buffer; they land once they add up to half a gap").arg(kept),
                           tr("Kahan kept %1 of them in its buffer").arg(kept)});
        } else {
            out.push_back({tr("SR: %1 of them moved a whole gap this step, each with probability = its share: none lost "
                              "on average").arg(kept),
                           tr("SR: %1 of them moved a whole gap, each with probability = its share").arg(kept),
                           tr("SR: %1 of them moved a whole gap").arg(kept)});
        }
    }
    return out;
}

// The canvas's texts and histogram for `area`, each text at its form `shorter` steps shorter (or
// its shortest), fitted to its room; the histogram takes what is left.
UpdatesView::Layout UpdatesView::layoutAt(const QRect& area, int shorter) const {
    const QFontMetrics fm(m_canvas->font());
    QFont boldFont = m_canvas->font();
    boldFont.setBold(true);
    const QFontMetrics fmb(boldFont);
    const int line = fm.lineSpacing();
    const auto from = [shorter](const QStringList& forms) { return forms.mid(std::min<qsizetype>(shorter, forms.size() - 1)); };
    Layout l;
    const int pad = 8;
    const QString where = tr("%1, step %2").arg(m_layer->currentText()).arg(step());
    const fit::Paragraph title = fit::paragraph(
        from({tr("How big each weight update is, measured in gaps between neighbouring stored weights (%1)").arg(where),
              tr("Each update measured in gaps between neighbouring stored weights (%1)").arg(where),
              tr("Updates in gaps between stored weights (%1)").arg(where)}),
        fmb, area.width() - 2 * pad);
    l.title = {QRect(area.left() + pad, area.top() + 4, area.width() - 2 * pad, title.height), title.text, true};
    // Left: the upright title, then the tick labels ("12.5 %": digits share one width), then the plot.
    const int tickRoom = fm.horizontalAdvance(QStringLiteral("00.0 %")) + 6 + 4;
    const int left = area.left() + 2 + line + 4 + tickRoom;
    const int right = area.right() - std::max(18, fm.horizontalAdvance(QStringLiteral("2²⁰")) / 2 + 4);
    const auto [lo, hi] = axisRange();
    const Log2Axis ax{lo, hi, QRectF(left, 0, right - left, 1)};
    l.halfUlpX = ax.x(k_halfUlp);
    const int split = static_cast<int>(l.halfUlpX);
    const fit::Paragraph lost = fit::paragraph(
        from({tr("← left of this line: the update is less than half the weight's spacing — rounding throws it away"),
              tr("← less than half a spacing: rounding throws it away"), tr("← lost in rounding")}),
        fm, split - left - pad);
    const fit::Paragraph kept = fit::paragraph(
        from({tr("half a spacing (2⁻¹) or more → the stored weight changes"), tr("half a spacing or more → kept"),
              tr("kept →")}),
        fm, right - split - pad);
    const int wordsTop = l.title.rect.bottom() + 1 + 6;
    const int words = std::max(lost.height, kept.height);
    l.lost = {QRect(left, wordsTop, split - left - pad, lost.height), lost.text};
    l.kept = {QRect(split + pad, wordsTop, right - split - pad, kept.height), kept.text};
    const int plotTop = wordsTop + words + 4;
    const fit::Paragraph xTitle = fit::paragraph(
        from({tr("|update| ÷ gap between the weight and its neighbour (log₂ scale; 1 = one gap)"),
              tr("|update| ÷ gap to the neighbouring weight (log₂)"), tr("|update| ÷ gap (log₂)")}),
        fm, right - left);
    // The legend from the bottom up: each line beside its run's swatch, a cure's line indented.
    const std::vector<QStringList> forms = legendForms();
    std::vector<fit::Paragraph> legend;
    int legendHeight = 0;
    const auto session = m_store->session();
    const int swatch = 18, indent = fm.horizontalAdvance(QStringLiteral("    "));
    std::size_t i = 0;
    for (int run = 0; run < m_store->runCount() && i < forms.size(); ++run) {
        if (curve(run).run < 0) continue;
        const bool cure = session && curve(run).nonzero + curve(run).zero > 0 &&
                          session->runs[static_cast<std::size_t>(run)].writeBack != mpx::WriteBack::nearest;
        for (int k = 0; k < (cure ? 2 : 1) && i < forms.size(); ++k, ++i) {
            const int x = area.left() + pad + swatch + (k ? indent : 0);
            legend.push_back(fit::paragraph(from(forms[i]), fm, area.right() - pad - x));
            l.legend.push_back({QRect(x, 0, area.right() - pad - x, legend.back().height), legend.back().text});
            l.legendRun.push_back(k ? -1 - run : run);  // a cure's line: −1 − run
            legendHeight += legend.back().height;
        }
    }
    const int below = (line + 6) + xTitle.height + 6 + legendHeight + 4;
    const int plotHeight = std::max(1, area.bottom() - plotTop - below);
    l.plot = QRect(left, plotTop, right - left, plotHeight);
    l.xTitle = {QRect(left, l.plot.bottom() + 1 + line + 6, right - left, xTitle.height), xTitle.text};
    int y = l.xTitle.rect.bottom() + 1 + 6;
    for (Text& t : l.legend) {
        t.rect.moveTop(y);
        y += t.rect.height();
    }
    const QString yTitle = fit::paragraph(from({tr("share of updates"), tr("share")}), fm, l.plot.height()).text;
    l.yTitle = {QRect(area.left() + 2, l.plot.top(), line, l.plot.height()), yTitle};
    return l;
}

UpdatesView::Layout UpdatesView::layout() const {
    // The histogram keeps at least five lines of height: texts shorten before it goes below.
    const int least = 5 * QFontMetrics(m_canvas->font()).lineSpacing();
    Layout l;
    for (int shorter = 0; shorter < 3; ++shorter) {
        l = layoutAt(m_canvas->rect(), shorter);
        if (l.plot.height() >= least) break;
    }
    return l;
}

std::pair<double, double> UpdatesView::axisRange() const {
    double lo = -16, hi = 12;
    for (int r = 0; r < m_store->runCount(); ++r) {
        const Curve c = curve(r);
        for (int i = 0; i < core::k_log2_bins; ++i)
            if (c.n[static_cast<std::size_t>(i)]) {
                lo = std::min(lo, i + core::k_bin_min - 1.0);
                hi = std::max(hi, i + core::k_bin_min + 2.0);
            }
    }
    return {std::max<double>(lo, core::k_bin_min), std::min<double>(hi, core::k_bin_max + 1)};
}

void UpdatesView::paintCanvas(QPainter& p, const QRect& area) const {
    const QString msg = message();
    if (!msg.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(area.adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, msg);
        return;
    }
    const QFontMetrics fm(p.font());
    const QColor text = palette().color(QPalette::WindowText);
    const Layout l = layout();
    const QRect r = l.plot;
    const auto [lo, hi] = axisRange();
    const Log2Axis ax{lo, hi, QRectF(r)};
    const auto session = m_store->session();
    const int runs = m_store->runCount();
    std::vector<Curve> curves;
    double ymax = 0;
    for (int run = 0; run < runs; ++run) {
        curves.push_back(curve(run));
        const Curve& c = curves.back();
        for (auto n : c.n)
            if (c.nonzero) ymax = std::max(ymax, static_cast<double>(n) / static_cast<double>(c.nonzero));
    }
    ymax = shareAxisTop(ymax);

    QFont bold = p.font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    p.drawText(l.title.rect, fit::k_paragraphFlags, l.title.text);
    p.setFont(m_canvas->font());

    // Left of the half-ulp line: rounding throws the update away.
    const double xh = ax.x(k_halfUlp);
    p.fillRect(QRectF(r.left(), r.top(), xh - r.left(), r.height()), QColor(0xf8, 0xd7, 0xd3));
    p.fillRect(QRectF(xh, r.top(), r.right() - xh, r.height()), QColor(0xe3, 0xf2, 0xe6));
    p.setPen(QPen(text, 1.5, Qt::DashLine));
    p.drawLine(QPointF(xh, l.lost.rect.top()), QPointF(xh, r.bottom()));
    // The bands' words above the plot, each beside the line on its side.
    p.setPen(QColor(0x8e, 0x24, 0x1a));
    p.drawText(l.lost.rect, fit::k_paragraphFlags | Qt::AlignRight, l.lost.text);
    p.setPen(QColor(0x1e, 0x6b, 0x34));
    p.drawText(l.kept.rect, fit::k_paragraphFlags | Qt::AlignLeft, l.kept.text);
    // One outline per run (outlines stay readable where runs overlap), lightly filled.
    p.setRenderHint(QPainter::Antialiasing, true);
    for (const Curve& c : curves) {
        if (c.run < 0 || c.nonzero == 0) continue;
        // Earlier runs thicker, so a run drawn over an identical one (fp32 and amp-fp16 both keep
        // FP32 weights) still shows both colours.
        const double width = 1.8 + 1.6 * (runs - 1 - c.run);
        QPainterPath path;
        path.moveTo(ax.x(lo), r.bottom());
        for (int i = 0; i < core::k_log2_bins; ++i) {
            const double b = i + core::k_bin_min;
            if (b < lo || b + 1 > hi) continue;
            const double y = r.bottom() - static_cast<double>(c.n[static_cast<std::size_t>(i)]) / static_cast<double>(c.nonzero) / ymax * r.height();
            path.lineTo(ax.x(b), y);
            path.lineTo(ax.x(b + 1), y);
        }
        path.lineTo(ax.x(hi), r.bottom());
        QColor fill = runColour(session, c.run);
        fill.setAlpha(40);
        p.fillPath(path, fill);
        p.setPen(QPen(runColour(session, c.run), width, runStyle(session, c.run).pen));
        p.drawPath(path);
    }
    p.setRenderHint(QPainter::Antialiasing, false);
    drawShareAxis(p, QRectF(r), ymax, text, l.yTitle.text, l.yTitle.rect.left());
    ax.draw(p, text);
    p.drawText(l.xTitle.rect, fit::k_paragraphFlags | Qt::AlignHCenter, l.xTitle.text);
    // The legend: each run's lost share beside its colour, its cure's line (grey) beneath.
    const int swatch = l.legend.empty() ? 0 : l.legend.front().rect.left() - 18;
    for (std::size_t i = 0; i < l.legend.size(); ++i) {
        const Text& t = l.legend[i];
        const int run = l.legendRun[i];
        if (run >= 0) {
            p.fillRect(QRect(swatch, t.rect.top() + 3, 12, fm.height() - 6), runColour(session, run));
            p.setPen(text);
        } else {
            p.setPen(palette().color(QPalette::PlaceholderText));
        }
        p.drawText(t.rect, fit::k_paragraphFlags, t.text);
    }
}

QString UpdatesView::tooltipAt(QPoint pos) const {
    if (!message().isEmpty()) return {};
    const QRect r = histogramRect();
    const QPoint vp = pos + m_canvas->geometry().topLeft();
    if (!r.contains(vp)) return {};
    const auto [lo, hi] = axisRange();
    const Log2Axis ax{lo, hi, QRectF(r)};
    const int b = static_cast<int>(std::floor(ax.log2At(vp.x())));
    if (b < core::k_bin_min || b > core::k_bin_max) return {};
    QString t = tr("<b>Updates between %1 and %2 of the weight's gap</b> (%3)<br>")
                    .arg(pow2Text(b), pow2Text(b + 1),
                         b < k_halfUlp ? tr("lost: rounding puts the weight back") : tr("kept: the stored weight changes"));
    const auto session = m_store->session();
    for (int run = 0; run < m_store->runCount(); ++run) {
        const Curve c = curve(run);
        if (c.nonzero == 0) continue;
        t += QStringLiteral("<span style='color:%1'>■</span> %2: %3<br>")
                 .arg(runColour(session, run).name(), session->runs[static_cast<std::size_t>(run)].label.toHtmlEscaped(),
                      percentText(static_cast<double>(c.n[static_cast<std::size_t>(b - core::k_bin_min)]) / static_cast<double>(c.nonzero)));
    }
    return t + concepts::lostUpdates();
}

}  // namespace mpx::ui
