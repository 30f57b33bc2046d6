// RangeView: choices (runs, layer, tensor, step), shares from the snapshots, bands, bars, overlay.
#include "ui/views/range_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

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
};

RangeView::RangeView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(2);
    auto* bar = new QHBoxLayout;
    bar->setSpacing(6);
    m_runA = new QComboBox;
    m_runB = new QComboBox;
    m_layer = new QComboBox;
    m_tensor = new QComboBox;
    for (const auto& e : mpx::k_hist_tensor_names)
        if (e.value != mpx::HistTensor::update_ulp)
            m_tensor->addItem(tensorText(e.value), static_cast<int>(e.value));
    for (QComboBox* c : {m_runA, m_runB}) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(12);
    }
    m_tensor->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_tensor->setMinimumContentsLength(18);
    m_runA->setToolTip(tr("The run drawn on top."));
    m_runB->setToolTip(tr("A second run drawn underneath on the same axis, at the same step (e.g. FP16 next to BF16)."));
    m_layer->setToolTip(tr("The layer whose values are shown (fc1 reads the data, the last one gives the outputs)."));
    m_tensor->setToolTip(tr("Which values of the layer: forward activations, gradients (multiplied by the loss "
                            "scale while they are stored) or the weights."));
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_runA);
    bar->addWidget(new QLabel(tr("beside")));
    bar->addWidget(m_runB);
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(m_layer);
    bar->addWidget(new QLabel(tr("Values")));
    bar->addWidget(m_tensor);
    bar->addStretch(1);
    outer->addLayout(bar);
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
    const int layers = session->config.model.layers();
    for (int l = 0; l < layers; ++l) m_layer->addItem(QStringLiteral("fc%1").arg(l + 1), l);
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
    m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(fp8.empty() ? mpx::HistTensor::grad_weight : mpx::HistTensor::input)));
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

void RangeView::refresh() { m_canvas->update(); }

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

Geometry panelGeometry(const QRect& area, int sides, const QFontMetrics& fm) {
    Geometry g;
    g.sides = sides;
    const int line = fm.lineSpacing();
    // Per side: title, band labels, plot, axis labels, caption (up to five lines, small font).
    const int small = static_cast<int>(std::ceil(line * 0.85));  // the caption's font (paintCanvas)
    const int above = 2 * line + 8, below = 6 * small + 14, legend = line + 4;
    const int h = (area.height() - 8 - legend) / sides;
    for (int s = 0; s < sides; ++s) {
        const int top = area.top() + 4 + legend + s * h + above;
        g.plot[s] = QRect(area.left() + k_left, top, area.width() - k_left - k_right, std::max(40, h - above - below));
    }
    return g;
}

}  // namespace

QRect RangeView::plotRect(int side) const {
    if (!message().isEmpty() || side < 0 || side > 1 || (side == 1 && runB() < 0)) return {};
    const Geometry g = panelGeometry(m_canvas->rect(), runB() >= 0 ? 2 : 1, QFontMetrics(m_canvas->font()));
    return g.plot[side].translated(m_canvas->geometry().topLeft());
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
    const int sides = runB() >= 0 ? 2 : 1;
    const Geometry g = panelGeometry(area, sides, fm);
    const Panel panels[2] = {panel(0), sides > 1 ? panel(1) : Panel{}};
    {  // The legend first: what the colours mean, in words.
        int x = area.left() + 8;
        const int y = area.top() + 4;
        const int s = fm.height() - 4;
        auto item = [&](const QColor& c, const QString& what) {
            p.fillRect(QRect(x, y + 2, s, s), c);
            p.setPen(palette().color(QPalette::WindowText));
            p.drawText(x + s + 4, y + fm.ascent(), what);
            x += s + 4 + fm.horizontalAdvance(what) + 14;
        };
        item(bandColour(Band::flushed), tr("becomes 0"));
        item(bandColour(Band::subnormal), tr("keeps fewer digits"));
        item(bandColour(Band::normal), tr("stored normally"));
        const bool cast8 = (panels[0].fp8.active && panels[0].fp8.fp8Run) || (panels[1].fp8.active && panels[1].fp8.fp8Run);
        const bool cast4 = (panels[0].fp8.active && panels[0].fp8.fp4Run) || (panels[1].fp8.active && panels[1].fp8.fp4Run);
        item(bandColour(Band::overflow), cast8 && cast4 ? tr("becomes ±inf (FP8: saturates; FP4: clamped at ±6)")
                                         : cast8        ? tr("becomes ±inf (FP8: saturates)")
                                         : cast4        ? tr("becomes ±inf (FP4: clamped at ±6)")
                                                        : tr("becomes ±inf"));
        p.setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
        p.drawLine(x, y + 2, x, y + fm.height() - 2);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(x + 6, y + fm.ascent(), tr("where other formats stop"));
    }
    const auto [lo, hi] = axisRange();
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
    QFont small = p.font();
    small.setPointSizeF(p.font().pointSizeF() * 0.85);
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
        QString title = tr("%1 — fc%2 %3").arg(label).arg(layer() + 1).arg(tensorName);
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
        QStringList offAxis;
        for (mpx::Format f : k_lineFormats) {
            // An FP8 cast is always scaled: its unscaled limits would mislead.
            if (pn.fp8.active && (f == mpx::Format::e4m3 || f == mpx::Format::e5m2)) continue;
            const FormatInfo d = format_info(f);
            const double at[2] = {std::log2(static_cast<double>(d.min_subnormal)), std::log2(static_cast<double>(d.max_finite))};
            bool off = false;
            for (int k = 0; k < 2; ++k) {
                if (at[k] < lo || at[k] > hi) off = true;
                else limits.push_back({ax.x(at[k]), k == 0 ? tr("%1 smallest").arg(formatName(f)) : tr("%1 largest").arg(formatName(f)), k == 0});
            }
            if (off) offAxis << tr("%1 %2 … %3").arg(formatName(f), pow2Text(std::round(at[0] * 10) / 10), pow2Text(std::round(at[1] * 10) / 10));
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
        // Caption: the axis, zero/inf/NaN, the legend of the overlay, formats off the axis.
        QString caption = tr("|value| (log₂ scale)   ·   exactly 0 already before rounding: %1   ·   inf: %2   ·   NaN: %3   ·   %4 values")
                              .arg(percentText(pn.zero), percentText(pn.inf), percentText(pn.nan))
                              .arg(QLocale().toString(static_cast<qulonglong>(pn.total)));
        QStringList lines{caption};
        if (!pn.unscaled.empty())
            lines << tr("Solid bars: the gradients as stored (× loss scale %1). Faint dashed bars: the same gradients "
                        "÷ loss scale — where they would sit without scaling.").arg(pow2Text(pn.shift));
        if (!pn.fp8.note.isEmpty()) lines << pn.fp8.note.split(QLatin1Char('\n'));
        if (!offAxis.isEmpty()) lines << tr("Off this axis: %1.").arg(offAxis.join(QStringLiteral(", ")));
        const int cy = r.bottom() + 6 + fs.lineSpacing();
        for (int k = 0; k < std::min<int>(5, static_cast<int>(lines.size())); ++k)
            p.drawText(QRect(r.left(), cy + k * fs.lineSpacing(), r.width(), fs.lineSpacing()), Qt::AlignLeft,
                       fs.elidedText(lines[k], Qt::ElideRight, r.width()));
    }
}

QString RangeView::tooltipAt(QPoint pos) const {
    if (!message().isEmpty()) return {};
    const QPoint viewPos = pos + m_canvas->geometry().topLeft();
    for (int side = 0; side < (runB() >= 0 ? 2 : 1); ++side) {
        const QRect r = plotRect(side);
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
