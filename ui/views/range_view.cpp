// RangeView: choices (runs, layer, tensor, step) and what each side shows, the shares from the
// snapshots and the axis they need; range_paint.cpp lays them out, paints them and explains them.
// Rule: panel() computes shares only, from RecordStore::histograms() as it is now; nothing is cached.
#include "ui/views/range_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/kit/run_style.hpp"
#include "ui/kit/step_scrubber.hpp"
#include "ui/views/range_canvas.hpp"

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

}  // namespace mpx::ui
