// RangeView: choices (runs, layer, tensor, step), shares from the snapshots, bands, bars, overlay.
#include "ui/views/range_view.hpp"

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
#include <limits>
#include <tuple>

#include "ui/kit/log2_axis.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/step_scrubber.hpp"
#include "ui/kit/view_canvas.hpp"

namespace mpx::ui {
namespace {

// E2M1 is not drawn: it is only ever used with a block scale (NVFP4, MXFP4), so its unscaled
// 0.5 … 6 would mislead, as an FP8 cast's unscaled limits would.
constexpr mpx::Format k_lineFormats[] = {mpx::Format::fp32, mpx::Format::bf16, mpx::Format::fp16,
                                         mpx::Format::e4m3, mpx::Format::e5m2};



// What a tensor is, in words a student follows.
QString tensorText(mpx::HistTensor t) {
    using T = mpx::HistTensor;
    switch (t) {
        case T::input: return QObject::tr("input — what the layer reads");
        case T::preact: return QObject::tr("preact — x·wᵀ + b, before the activation");
        case T::normalized: return QObject::tr("normalized — LayerNorm's output");
        case T::output: return QObject::tr("output — the activation's result");
        case T::grad_output: return QObject::tr("grad_output — gradient reaching the layer (× loss scale)");
        case T::grad_weight: return QObject::tr("grad_weight — weight gradient (× loss scale)");
        case T::grad_weight_unscaled: return QObject::tr("grad_weight_unscaled — weight gradient ÷ loss scale");
        case T::weight: return QObject::tr("weight — the stored weights");
        case T::update_ulp: return QObject::tr("update_ulp — update ÷ weight spacing (Updates view)");
    }
    return {};
}

}  // namespace

class RangeView::Canvas : public ViewCanvas<RangeView> {
public:
    explicit Canvas(RangeView* view) : ViewCanvas(view, {500, 300}) {}

protected:
    void resizeEvent(QResizeEvent* e) override {
        ViewCanvas::resizeEvent(e);
        m_view->fitCanvasHeight();  // the captions wrap anew
    }
};

RangeView::RangeView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(2);
    // Two rows of choices, each combo as wide as its longest entry: in one row they were cut at
    // 1280 px, where the docks leave the view some 570 px.
    auto* bar = new QHBoxLayout;
    bar->setSpacing(6);
    auto* bar2 = new QHBoxLayout;
    bar2->setSpacing(6);
    m_runA = new QComboBox;
    m_runB = new QComboBox;
    m_layer = new QComboBox;
    m_tensor = new QComboBox;
    for (const auto& e : mpx::k_hist_tensor_names)
        if (e.value != mpx::HistTensor::update_ulp)
            m_tensor->addItem(tensorText(e.value), static_cast<int>(e.value));
    for (QComboBox* c : {m_runA, m_runB, m_layer, m_tensor}) c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_runA->setToolTip(tr("The run drawn on top."));
    m_runB->setToolTip(tr("A second run drawn underneath on the same axis, at the same step (e.g. FP16 next to BF16)."));
    m_layer->setToolTip(tr("The layer whose values are shown (fc1 reads the data, the last one gives the outputs)."));
    m_tensor->setToolTip(tr("Which values of the layer: forward activations, gradients (multiplied by the loss "
                            "scale while they are stored) or the weights."));
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_runA);
    bar->addWidget(new QLabel(tr("beside")));
    bar->addWidget(m_runB);
    bar->addStretch(1);
    bar2->addWidget(new QLabel(tr("Layer")));
    bar2->addWidget(m_layer);
    bar2->addWidget(new QLabel(tr("Values")));
    bar2->addWidget(m_tensor);
    bar2->addStretch(1);
    outer->addLayout(bar);
    outer->addLayout(bar2);
    m_scrub = new StepScrubber;  // on its own row: the window stays narrow enough for a laptop
    outer->addWidget(m_scrub);
    m_canvas = new Canvas(this);
    outer->addWidget(m_canvas, 1);
    setToolTip(tr("How big the values are, on a scale of powers of two: each bar is the share of this tensor's "
                  "values between one power of two and the next. The coloured bands are what the run's number "
                  "format can hold: grey values become 0, orange ones keep fewer digits, green ones are stored "
                  "normally, red ones become infinity. Thin lines mark where other formats stop. On an FP8 run, the "
                  "inputs of a matrix product (input, weight, grad_output) show the FP8 format's bands where the "
                  "product's scale puts them: each value is multiplied by the scale before it is rounded to FP8."));

    auto changed = [this] { refresh(); };
    connect(m_runA, &QComboBox::currentIndexChanged, this, &RangeView::stepsChanged);  // its own steps
    connect(m_runB, &QComboBox::currentIndexChanged, this, changed);
    connect(m_layer, &QComboBox::currentIndexChanged, this, changed);
    connect(m_tensor, &QComboBox::currentIndexChanged, this, changed);
    connect(m_scrub, &StepScrubber::stepChanged, this, changed);
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        rebuildChoices();
        m_scrub->follow();
        stepsChanged();
    });
    connect(m_store, &gui::RecordStore::stepsRecorded, this, &RangeView::stepsChanged);
    rebuildChoices();
    stepsChanged();
}

void RangeView::rebuildChoices() {
    const QSignalBlocker ba(m_runA), bb(m_runB), bl(m_layer);
    m_runA->clear();
    m_runB->clear();
    m_layer->clear();
    m_runB->addItem(tr("(none)"), -1);
    const auto session = m_store->session();
    if (!session) return;
    for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
        const QString label = session->runs[static_cast<std::size_t>(r)].label;
        m_runA->addItem(swatch(runStyle(session, r)), label, r);
        m_runB->addItem(swatch(runStyle(session, r)), label, r);
    }
    const int layers = gui::layerCount(*session);
    for (int l = 0; l < layers; ++l) m_layer->addItem(gui::layerName(*session, l), l);
    // The first low-precision run beside the next one (the underflow preset: amp-fp16+none beside
    // amp-fp16+pytorch), a middle layer's weight gradients: what a scaler changes.
    // A session with FP8 runs (the fp8 preset): its first FP8 run beside its last, a hidden layer's
    // input (the activations below it): where the cast's scale puts E4M3's range.
    const int runs = static_cast<int>(session->runs.size());
    std::vector<int> fp8;
    for (int r = 0; r < runs; ++r)
        if (const Fp8Cast c = fp8Cast(*m_store, r, 0, mpx::HistTensor::input, 0); c.fp8Run || c.fp4Run) fp8.push_back(r);
    int a = 0;
    while (a + 1 < runs && session->runs[static_cast<std::size_t>(a)].spec.precision() == "fp32") ++a;
    int b = runs < 2 ? -1 : a + 1 < runs ? a + 1 : (a == 0 ? 1 : 0);
    if (!fp8.empty()) a = fp8.front(), b = fp8.size() > 1 ? fp8.back() : -1;
    m_runA->setCurrentIndex(a);
    m_runB->setCurrentIndex(m_runB->findData(b));
    m_layer->setCurrentIndex(layers > 2 || !fp8.empty() ? layers / 2 : 0);
    const QSignalBlocker bt(m_tensor);
    // A trace records each module's output gradients only.
    const mpx::HistTensor first = !session->layerNames.isEmpty() ? mpx::HistTensor::grad_output
                                  : fp8.empty()                  ? mpx::HistTensor::grad_weight
                                                                 : mpx::HistTensor::input;
    m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(first)));
}

const std::vector<mpx::HistogramSnapshot>* RangeView::snapshots(int run) const {
    if (run < 0 || run >= m_store->runCount()) return nullptr;
    return &m_store->histograms(run).snapshots();
}

const mpx::HistogramSnapshot* RangeView::snapshotAt(int run, long long step) const {
    return nearestSnapshot(snapshots(run), step);
}

void RangeView::stepsChanged() {
    const long long every = m_store->session() ? m_store->session()->config.instruments.every : 0;
    const int a = runA();
    m_scrub->setSnapshots(snapshots(a), a < 0 || a >= m_store->runCount() ? every : every * m_store->histograms(a).stride());
    refresh();
}

void RangeView::refresh() {
    fitCanvasHeight();
    m_canvas->update();
}

void RangeView::fitCanvasHeight() {
    // Tall enough for the legend, each side's title, a plot of k_minPlot pixels and its whole
    // caption: below that the view scrolls rather than squeezing the bars flat.
    int want = 300;
    if (message().isEmpty()) want = std::max(want, layoutIn(QRect(0, 0, m_canvas->width(), 100000), m_canvas->font()).minHeight);
    if (m_canvas->minimumHeight() != want) m_canvas->setMinimumHeight(want);
}

void RangeView::setRuns(int a, int b) {
    const QSignalBlocker ba(m_runA), bb(m_runB);
    const long long keep = step();
    m_runA->setCurrentIndex(std::max(0, m_runA->findData(a)));
    m_runB->setCurrentIndex(std::max(0, m_runB->findData(b)));
    stepsChanged();
    if (!m_scrub->following()) setStep(keep);
}
int RangeView::runA() const { return m_runA->currentIndex() < 0 ? -1 : m_runA->currentData().toInt(); }
int RangeView::runB() const { return m_runB->currentIndex() < 0 ? -1 : m_runB->currentData().toInt(); }
void RangeView::setLayer(int layer) { m_layer->setCurrentIndex(m_layer->findData(layer)); }
int RangeView::layer() const { return m_layer->currentIndex() < 0 ? 0 : m_layer->currentData().toInt(); }
void RangeView::setTensor(mpx::HistTensor t) { m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(t))); }
mpx::HistTensor RangeView::tensor() const { return static_cast<mpx::HistTensor>(m_tensor->currentData().toInt()); }

void RangeView::setStep(long long step) { m_scrub->setStep(step); }
long long RangeView::step() const { return m_scrub->step(); }
bool RangeView::following() const { return m_scrub->following(); }

RangeView::Panel RangeView::panel(int side) const {
    Panel out;
    const int run = side == 0 ? runA() : runB();
    const long long st = step();
    const mpx::HistogramSnapshot* snap = snapshotAt(run, st);
    if (!snap) return out;
    out.run = run;
    out.step = snap->step;
    out.lossScale = snap->loss_scale;
    const mpx::HistTensor t = tensor();
    const mpx::Histogram* h = snap->find(layer(), t);
    if (!h) return out;
    out.found = true;
    out.format = h->format;
    out.fp8 = fp8Cast(*m_store, run, layer(), t, snap->step);
    out.shaded = out.fp8.active && !out.fp8.block ? out.fp8.bands : formatBands(h->format);
    out.total = snap->total(*h);
    if (out.total == 0) return out;
    const double n = static_cast<double>(out.total);
    for (int b = core::k_bin_min; b <= core::k_bin_max; ++b)
        out.share[static_cast<std::size_t>(b - core::k_bin_min)] = static_cast<double>(snap->count(*h, b)) / n;
    out.zero = static_cast<double>(h->zero) / n;
    out.inf = static_cast<double>(h->inf) / n;
    out.nan = static_cast<double>(h->nan) / n;
    out.shift = std::log2(snap->loss_scale);
    if (!mpx::is_scaled_gradient(t) || snap->loss_scale == 1.0 || !std::isfinite(out.shift)) return out;
    if (t == mpx::HistTensor::grad_weight) {
        if (const mpx::Histogram* u = snap->find(layer(), mpx::HistTensor::grad_weight_unscaled)) {
            const double un = static_cast<double>(snap->total(*u));
            for (int b = core::k_bin_min; b <= core::k_bin_max && un > 0; ++b)
                if (const auto c = snap->count(*u, b)) out.unscaled.emplace_back(b, static_cast<double>(c) / un);
        }
    } else {
        for (int b = core::k_bin_min; b <= core::k_bin_max; ++b)
            if (const double s = out.share[static_cast<std::size_t>(b - core::k_bin_min)]; s > 0)
                out.unscaled.emplace_back(b - out.shift, s);
    }
    return out;
}

void RangeView::setPresentationScale(double s) {
    m_scale = s;
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * s);
    m_canvas->setFont(f);
    m_canvas->update();
}

QString RangeView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: press Run or Step.");
    if (session->config.instruments.every <= 0)
        return tr("Histograms are off for this session (instruments.every = 0). Set it to 10 and reset to see "
                  "where the values sit.");
    const auto* s = snapshots(runA());
    if (!s || s->empty())
        return tr("No histogram yet: one is collected every %1 steps. Press Run or Step.").arg(session->config.instruments.every);
    return {};
}

namespace {

struct Geometry {
    QRect plot[2];
    int sides = 1;
};

constexpr int k_left = 64, k_right = 18;
constexpr int k_captionLines = 8;  // at most, per side; the rest is in the caption's tooltip
constexpr int k_minPlot = 90;      // px: a plot's least height before the view scrolls

QFont smallFont(const QFont& f) {  // the band labels', axis labels' and caption's font
    QFont s = f;
    s.setPointSizeF(f.pointSizeF() * 0.85);
    return s;
}

// `text` in lines no wider than `width`, broken between words (a word wider than that on its own).
QStringList wrapped(const QString& text, const QFontMetrics& fm, int width) {
    QStringList lines;
    QString line;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
            lines << line;
            line = word;
        } else {
            line = longer;
        }
    }
    if (!line.isEmpty()) lines << line;
    return lines;
}

// The caption's paragraphs as the lines drawn: wrapped to the plot's width, at most k_captionLines,
// the last one ending in "…" when more did not fit.
QStringList captionLayout(const QStringList& paragraphs, const QFontMetrics& fs, int width) {
    QStringList lines;
    for (const QString& para : paragraphs) lines << wrapped(para, fs, width);
    if (lines.size() > k_captionLines) {
        const QString rest = lines.mid(k_captionLines - 1).join(QLatin1Char(' '));
        lines = lines.mid(0, k_captionLines - 1);
        lines << fs.elidedText(rest, Qt::ElideRight, width);
    }
    return lines;
}

// The legend's rows on top, then per side: title, band labels, plot, axis labels and `lines[side]`
// caption lines (fs: the small font's metrics).
Geometry panelGeometry(const QRect& area, int sides, int legendRows, const QFontMetrics& fm, const QFontMetrics& fs,
                       const int lines[2]) {
    Geometry g;
    g.sides = sides;
    const int line = fm.lineSpacing(), small = fs.lineSpacing();
    const int above = 2 * line + 8, legend = legendRows * line + 4;
    const int h = (area.height() - 8 - legend) / sides;
    for (int s = 0; s < sides; ++s) {
        const int below = 6 + small + 4 + lines[s] * small + 6;
        const int top = area.top() + 4 + legend + s * h + above;
        g.plot[s] = QRect(area.left() + k_left, top, area.width() - k_left - k_right, std::max(40, h - above - below));
    }
    return g;
}

}  // namespace

RangeView::Layout RangeView::layoutIn(const QRect& area, const QFont& font) const {
    Layout out;
    out.sides = runB() >= 0 ? 2 : 1;
    out.panels[0] = panel(0);
    if (out.sides > 1) out.panels[1] = panel(1);
    std::tie(out.lo, out.hi) = axisRange();
    const QFontMetrics fm(font), fs(smallFont(font));
    const int width = area.width() - k_left - k_right;
    int lines[2] = {0, 0};
    for (int s = 0; s < out.sides; ++s) {
        out.caption[s] = captionLayout(captionOf(out.panels[s], out.lo, out.hi), fs, width);
        lines[s] = static_cast<int>(out.caption[s].size());
    }
    // The legend: the bands' colours in words, then the thin lines, wrapped to the width.
    const bool cast8 = (out.panels[0].fp8.active && out.panels[0].fp8.fp8Run) || (out.panels[1].fp8.active && out.panels[1].fp8.fp8Run);
    const bool cast4 = (out.panels[0].fp8.active && out.panels[0].fp8.fp4Run) || (out.panels[1].fp8.active && out.panels[1].fp8.fp4Run);
    std::vector<LegendItem> items = {
        {Band::flushed, false, tr("becomes 0")},
        {Band::subnormal, false, tr("subnormal: keeps fewer digits")},
        {Band::normal, false, tr("stored normally")},
        {Band::overflow, false, cast8 && cast4 ? tr("becomes ±inf (FP8: saturates; FP4: clamped at ±6)")
                                : cast8        ? tr("becomes ±inf (FP8: saturates)")
                                : cast4        ? tr("becomes ±inf (FP4: clamped at ±6)")
                                               : tr("becomes ±inf")}};
    if (!limitFormats().empty()) items.push_back({Band::normal, true, tr("where the session's formats stop")});
    const int swatch = fm.height() - 4;
    int x = area.left() + 8, row = 0;
    for (LegendItem& it : items) {
        const int w = swatch + 4 + fm.horizontalAdvance(it.text);
        if (x > area.left() + 8 && x + w > area.right() - 4) x = area.left() + 8, ++row;
        it.x = x;
        it.row = row;
        x += w + 14;
    }
    out.legend = std::move(items);
    const Geometry g = panelGeometry(area, out.sides, row + 1, fm, fs, lines);
    // The sides share the height evenly: each needs room for the longer caption.
    const int most = std::max(lines[0], lines[1]);
    out.minHeight = 8 + (row + 1) * fm.lineSpacing() + 4 +
                    out.sides * (2 * fm.lineSpacing() + 8 + k_minPlot + 6 + fs.lineSpacing() + 4 + most * fs.lineSpacing() + 6);
    out.plot[0] = g.plot[0];
    out.plot[1] = g.plot[1];
    return out;
}

QRect RangeView::plotRect(int side) const {
    if (!message().isEmpty() || side < 0 || side > 1 || (side == 1 && runB() < 0)) return {};
    return layoutIn(m_canvas->rect(), m_canvas->font()).plot[side].translated(m_canvas->geometry().topLeft());
}

QStringList RangeView::caption(int side) const {
    if (!message().isEmpty() || side < 0 || side > 1 || (side == 1 && runB() < 0)) return {};
    const auto [lo, hi] = axisRange();
    return captionOf(panel(side), lo, hi);
}

std::vector<mpx::Format> RangeView::limitFormats() const {
    // What the runs store their values in (the histograms' formats) and what they cast them to (the
    // FP8 rows' formats): an FP16 lesson shows FP16's and FP32's limits, not FP8's or BF16's.
    std::vector<mpx::Format> used;
    for (int r = 0; r < m_store->runCount(); ++r) {
        const auto& snaps = m_store->histograms(r).snapshots();
        if (!snaps.empty())
            for (const mpx::Histogram& h : snaps.back().tensors) used.push_back(h.format);
        const gui::Fp8History& fp8 = m_store->fp8(r);
        for (int l : fp8.layers())
            for (int t = 0; t < mpx::k_fp8_tensors; ++t)
                if (const gui::Fp8Series* s = fp8.series(l, static_cast<mpx::Fp8Tensor>(t))) used.push_back(s->format());
    }
    std::vector<mpx::Format> out;
    for (mpx::Format f : k_lineFormats)
        if (std::find(used.begin(), used.end(), f) != used.end()) out.push_back(f);
    return out;
}

QStringList RangeView::captionOf(const Panel& pn, double lo, double hi) const {
    if (pn.run < 0 || !pn.found) return {};
    QStringList out;
    // Exact zeros have no bar (0 has no power of two) and are not underflow: they are 0 in every
    // format. Say where they come from, or a student reads "87.9 %" as values lost.
    const mpx::HistTensor t = tensor();
    const auto session = m_store->session();
    const bool relu = session && session->config.model.activation == mpx::Activation::relu;
    QString why;
    switch (t) {
        case mpx::HistTensor::grad_output:
            if (relu) why = tr("a ReLU unit that was off passes no gradient back");
            break;
        case mpx::HistTensor::grad_weight:
        case mpx::HistTensor::grad_weight_unscaled:
            why = relu ? tr("a weight gets no gradient when its input was 0, or its ReLU unit off, for the whole batch")
                       : tr("a weight gets no gradient when its input was 0 for the whole batch");
            break;
        case mpx::HistTensor::output:
            if (relu) why = tr("a ReLU outputs 0 for every unit that is off");
            break;
        case mpx::HistTensor::input:
            why = layer() == 0 ? tr("the data's own zeros") : relu ? tr("the layer below is a ReLU: 0 for every unit that is off") : QString();
            break;
        default: break;
    }
    const QString count = QLocale().toString(static_cast<qulonglong>(pn.total));
    QString first = pn.zero > 0
        ? tr("Exactly 0 before rounding: %1 of the %2 values. They have no bar (0 has no power of two) and are not "
             "underflow: 0 stays 0 in every format%3. The bars are the other %4.")
              .arg(percentText(pn.zero), count, why.isEmpty() ? QString() : QStringLiteral(" (") + why + QLatin1Char(')'),
                   percentText(std::max(0.0, 1.0 - pn.zero - pn.inf - pn.nan)))
        : tr("%1 values, none exactly 0; each bar is the share of them between one power of two and the next.").arg(count);
    if (pn.inf > 0 || pn.nan > 0)
        first += tr(" Already inf before rounding: %1; NaN: %2 (no bar).").arg(percentText(pn.inf), percentText(pn.nan));
    out << first;
    if (!pn.unscaled.empty())
        out << tr("Solid bars: the gradients as stored (× loss scale %1). Faint dashed bars: the same gradients "
                  "÷ loss scale — where they would sit without scaling.").arg(pow2Text(pn.shift));
    if (!pn.fp8.note.isEmpty()) out << pn.fp8.note.split(QLatin1Char('\n'));
    QStringList offAxis;
    for (mpx::Format f : limitFormats()) {
        if (pn.fp8.active && (f == mpx::Format::e4m3 || f == mpx::Format::e5m2)) continue;
        const FormatInfo d = format_info(f);
        const double at[2] = {std::log2(static_cast<double>(d.min_subnormal)), std::log2(static_cast<double>(d.max_finite))};
        if (at[0] < lo || at[0] > hi || at[1] < lo || at[1] > hi)
            offAxis << tr("%1 %2 … %3").arg(formatName(f), pow2Text(std::round(at[0] * 10) / 10), pow2Text(std::round(at[1] * 10) / 10));
    }
    if (!offAxis.isEmpty()) out << tr("Off this axis: %1.").arg(offAxis.join(QStringLiteral(", ")));
    return out;
}

std::pair<double, double> RangeView::axisRange() const {
    // Wide enough for the run formats' bands and every value shown; at least 2⁻⁴⁰ … 2²⁰ so that
    // scrubbing does not rescale the axis at every step.
    double lo = -40, hi = 20;
    for (int side = 0; side < 2; ++side) {
        const Panel pn = panel(side);
        if (pn.run < 0 || !pn.found) continue;
        // MXFP8: the amax block's window decides the view, not the storage format (BF16's range
        // would squeeze every bar into a few pixels).
        const bool window = pn.fp8.active && pn.fp8.block;
        for (const BandSpan& b : window ? pn.fp8.bands : pn.shaded) {
            if (b.band == Band::subnormal) lo = std::min(lo, b.lo - 2);
            if (b.band == Band::overflow) hi = std::max(hi, b.lo + 2);
        }
        for (int i = 0; i < core::k_log2_bins; ++i)
            if (pn.share[static_cast<std::size_t>(i)] > 0) {
                lo = std::min(lo, i + core::k_bin_min - 2.0);
                hi = std::max(hi, i + core::k_bin_min + 3.0);
            }
        for (const auto& [x, s] : pn.unscaled) {
            lo = std::min(lo, x - 2);
            hi = std::max(hi, x + 3);
        }
    }
    return {std::max(lo, double(core::k_bin_min)), std::min(hi, double(core::k_bin_max + 1))};
}

void RangeView::paintCanvas(QPainter& p, const QRect& area) const {
    const QString msg = message();
    const QFontMetrics fm(p.font());
    if (!msg.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(area.adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, msg);
        return;
    }
    const auto session = m_store->session();
    const Layout g = layoutIn(area, p.font());
    const int sides = g.sides;
    const Panel(&panels)[2] = g.panels;
    const std::vector<mpx::Format> lineFormats = limitFormats();
    // The legend first: what the colours mean, in words, in as many rows as the width needs.
    const int swatch = fm.height() - 4;
    for (const LegendItem& it : g.legend) {
        const int y = area.top() + 4 + it.row * fm.lineSpacing();
        if (it.dashed) {
            p.setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
            p.drawLine(it.x + swatch / 2, y + 2, it.x + swatch / 2, y + fm.height() - 2);
        } else {
            p.fillRect(QRect(it.x, y + 2, swatch, swatch), bandColour(it.band));
        }
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(it.x + swatch + 4, y + fm.ascent(), it.text);
    }
    const double lo = g.lo, hi = g.hi;
    double ymax = 0;  // one y scale for both sides: the heights compare
    for (const Panel& pn : panels) {
        for (double s : pn.share) ymax = std::max(ymax, s);
        for (const auto& u : pn.unscaled) ymax = std::max(ymax, u.second);
    }
    ymax = shareAxisTop(ymax);
    const QColor text = palette().color(QPalette::WindowText);
    const int line = fm.lineSpacing();
    QFont bold = p.font();
    bold.setBold(true);
    const QFont small = smallFont(p.font());
    const QFontMetrics fs(small);
    const QString tensorName = QString::fromLatin1(mpx::to_string(tensor()).data(), static_cast<int>(mpx::to_string(tensor()).size()));

    for (int side = 0; side < sides; ++side) {
        const Panel& pn = panels[side];
        const QRect r = g.plot[side];
        Log2Axis ax{lo, hi, QRectF(r)};
        const QString label = pn.run >= 0 && session ? session->runs[static_cast<std::size_t>(pn.run)].label : QString();
        p.setFont(bold);
        p.setPen(runColour(session, pn.run));
        const int titleY = r.top() - line - 8;
        p.fillRect(QRect(area.left() + 8, titleY - fm.ascent() + 2, 4, line - 2), runColour(session, pn.run));
        QString title = tr("%1 — %2 %3").arg(label, gui::layerName(*m_store->session(), layer()), tensorName);
        if (pn.found) title += tr(", stored as %1").arg(formatName(pn.format));
        title += tr(", step %1").arg(pn.step);
        if (mpx::is_scaled_gradient(tensor())) title += tr(", loss scale %1").arg(pow2Text(pn.shift));
        if (!pn.fp8.title.isEmpty()) title += QStringLiteral(", ") + pn.fp8.title;
        p.drawText(area.left() + 16, titleY, fm.elidedText(title, Qt::ElideRight, area.width() - 24));
        p.setFont(small);
        if (pn.run < 0 || !pn.found) {
            p.setPen(palette().color(QPalette::PlaceholderText));
            p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap,
                       pn.run < 0 ? tr("No histogram at this step for this run.")
                       : !m_store->session()->layerNames.isEmpty()
                           ? tr("A trace records each module's output gradients (grad_output) only.")
                           : tr("This layer has no such values (normalized needs a model with LayerNorm)."));
            continue;
        }
        // The shaded bands (an FP8 cast's, placed by its scale, or the storage format's), labelled
        // above the plot; for MXFP8 that row holds the window of the block with the amax instead.
        const bool window = pn.fp8.active && pn.fp8.block;
        drawBands(p, ax, QRectF(r), pn.shaded, pn.format, pn.fp8.active && !window ? &pn.fp8 : nullptr,
                  window ? std::nan("") : r.top() - 4.0);
        if (window) drawBlockWindow(p, ax, QRectF(r.left(), r.top() - fs.lineSpacing() - 3, r.width(), fs.lineSpacing() + 1), pn.fp8);
        // Other formats' limits: thin dashed lines, labelled inside the plot, each label on the
        // first row where it does not run into another.
        struct Limit {
            double x;
            QString text;
            bool smallest;
        };
        std::vector<Limit> limits;
        for (mpx::Format f : lineFormats) {
            // An FP8 cast is always scaled: its unscaled limits would mislead.
            if (pn.fp8.active && (f == mpx::Format::e4m3 || f == mpx::Format::e5m2)) continue;
            const FormatInfo d = format_info(f);
            const double at[2] = {std::log2(static_cast<double>(d.min_subnormal)), std::log2(static_cast<double>(d.max_finite))};
            for (int k = 0; k < 2; ++k)
                if (at[k] >= lo && at[k] <= hi)
                    limits.push_back({ax.x(at[k]), k == 0 ? tr("%1 smallest").arg(formatName(f)) : tr("%1 largest").arg(formatName(f)), k == 0});
        }
        std::sort(limits.begin(), limits.end(), [](const Limit& a, const Limit& b) { return a.x < b.x; });
        std::vector<double> rowEnd;
        for (const Limit& l : limits) {
            p.setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
            p.drawLine(QPointF(l.x, r.top()), QPointF(l.x, r.bottom()));
            const double w = fs.horizontalAdvance(l.text);
            const double tx = l.smallest ? l.x + 2 : l.x - 2 - w;
            std::size_t row = 0;
            while (row < rowEnd.size() && rowEnd[row] > tx - 4) ++row;
            if (row == rowEnd.size()) rowEnd.push_back(0);
            rowEnd[row] = tx + w;
            p.setPen(QColor(70, 70, 70));
            p.drawText(QPointF(tx, r.top() + fs.ascent() + 2 + static_cast<double>(row) * fs.lineSpacing()), l.text);
        }
        drawShareAxis(p, QRectF(r), ymax, text, tr("share of values"), area.left() + 2);
        // Unscaled overlay first (faint, dashed), then the values as stored.
        const QColor c = runColour(session, pn.run);
        auto barRect = [&](double x0, double s) {
            const double h = s / ymax * r.height();
            return QRectF(ax.x(x0) + 0.5, r.bottom() - h, std::max(1.0, ax.x(x0 + 1) - ax.x(x0) - 1), h);
        };
        QColor faint = c;
        faint.setAlpha(45);
        for (const auto& [x0, s] : pn.unscaled) {
            if (x0 < lo || x0 + 1 > hi) continue;
            p.fillRect(barRect(x0, s), faint);
            p.setPen(QPen(c.lighter(130), 1, Qt::DashLine));
            p.drawRect(barRect(x0, s));
        }
        for (int i = 0; i < core::k_log2_bins; ++i) {
            const double s = pn.share[static_cast<std::size_t>(i)];
            if (s <= 0) continue;
            p.fillRect(barRect(i + core::k_bin_min, s), c);
        }
        // The shift, as an arrow from the unscaled values' middle to the scaled values' middle.
        if (!pn.unscaled.empty()) {
            double mu = 0, mw = 0, ms = 0, sw = 0;
            for (const auto& [x0, s] : pn.unscaled) mu += (x0 + 0.5) * s, mw += s;
            for (int i = 0; i < core::k_log2_bins; ++i) {
                const double s = pn.share[static_cast<std::size_t>(i)];
                ms += (i + core::k_bin_min + 0.5) * s, sw += s;
            }
            if (mw > 0 && sw > 0) {
                const double xa = ax.x(mu / mw), xb = ax.x(ms / sw), y = r.top() + r.height() * 0.42;
                p.setRenderHint(QPainter::Antialiasing, true);
                p.setPen(QPen(text, 1.6));
                p.drawLine(QPointF(xa, y), QPointF(xb, y));
                const double dir = xb > xa ? -1 : 1;
                QPainterPath head;
                head.moveTo(xb, y);
                head.lineTo(xb + dir * 8, y - 4);
                head.lineTo(xb + dir * 8, y + 4);
                head.closeSubpath();
                p.fillPath(head, text);
                p.setRenderHint(QPainter::Antialiasing, false);
                p.setFont(bold);
                const QString t = tr("×%1 loss scale").arg(pow2Text(pn.shift));
                p.drawText(QPointF((xa + xb) / 2 - QFontMetrics(bold).horizontalAdvance(t) / 2.0, y - 6), t);
                p.setFont(small);
            }
        }
        p.setPen(text);
        ax.draw(p, text);
        // The axis' name in the margin, clear of the first tick's label.
        p.drawText(QPointF(area.left() + 2, r.bottom() + 5 + fs.ascent()), tr("|value|"));
        // Caption: zero/inf/NaN, the legend of the overlay, the FP8 cast, formats off the axis.
        const int cy = r.bottom() + 6 + fs.lineSpacing() + 4;
        for (int k = 0; k < static_cast<int>(g.caption[side].size()); ++k)
            p.drawText(QRect(r.left(), cy + k * fs.lineSpacing(), r.width(), fs.lineSpacing()), Qt::AlignLeft, g.caption[side][k]);
    }
}

QString RangeView::tooltipAt(QPoint pos) const {
    if (!message().isEmpty()) return {};
    const QPoint viewPos = pos + m_canvas->geometry().topLeft();
    for (int side = 0; side < (runB() >= 0 ? 2 : 1); ++side) {
        const QRect r = plotRect(side);
        // Below the axis: the whole caption, in case its last line was cut.
        if (viewPos.x() >= r.left() && viewPos.x() <= r.right() && viewPos.y() > r.bottom() + 20 &&
            viewPos.y() < r.bottom() + 20 + (k_captionLines + 1) * QFontMetrics(smallFont(m_canvas->font())).lineSpacing())
            return caption(side).join(QStringLiteral("<br>"));
        if (!r.contains(viewPos)) continue;
        const Panel pn = panel(side);
        if (pn.run < 0 || !pn.found) return {};
        const auto [lo, hi] = axisRange();
        const Log2Axis ax{lo, hi, QRectF(r)};
        const int b = static_cast<int>(std::floor(ax.log2At(viewPos.x())));
        if (b < core::k_bin_min || b > core::k_bin_max) return {};
        const double s = pn.share[static_cast<std::size_t>(b - core::k_bin_min)];
        // The band at the bin's middle: an FP8 cast's edges need not be whole powers of two.
        const bool cast = pn.fp8.active && !pn.fp8.block;
        Band band = Band::normal;
        for (const BandSpan& sp : pn.shaded)
            if (b + 0.5 >= sp.lo && b + 0.5 < sp.hi) band = sp.band;
        const QString what = bandFate(band, pn.format, cast ? &pn.fp8 : nullptr).arg(formatName(cast ? pn.fp8.format : pn.format));
        const auto session = m_store->session();
        QString t = tr("<b>%1</b>, step %2<br>%3 of the values have |value| between %4 and %5:<br>%6.")
                        .arg(session->runs[static_cast<std::size_t>(pn.run)].label.toHtmlEscaped())
                        .arg(pn.step)
                        .arg(percentText(s), pow2Text(b), pow2Text(b + 1), what);
        if (cast)
            t += tr("<br>(Stored as %1; the matrix product multiplies them by the scale and rounds to %2 — the shaded bands.)")
                     .arg(formatName(pn.format), formatName(pn.fp8.format));
        if (pn.fp8.active && tensor() == mpx::HistTensor::weight)
            t += tr("<br>The bars are the weights and biases written back at the end of this step; this step's matrix "
                    "products cast the weights (not the biases) one update earlier.");
        if (pn.fp8.active && pn.fp8.block) t += pn.fp8.blockHelp;
        if (!pn.unscaled.empty())
            t += tr("<br>Faint bars: the same gradients without the loss scale (÷%1), where they would sit without scaling.")
                     .arg(pow2Text(pn.shift));
        return t;
    }
    return {};
}

}  // namespace mpx::ui
