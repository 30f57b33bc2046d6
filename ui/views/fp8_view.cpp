// Fp8View: the engine's FP8 scale rows of one tensor, reduced per pixel column into two PlotWidgets.
#include "ui/views/fp8_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QStackedWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "engine/core/format_core.hpp"
#include "engine/precision/policy.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/views/pixel_lines.hpp"
#include "ui/views/recipe_layers.hpp"

namespace mpx::ui {
namespace {

// The charts' least heights in lines of text: about eight for title, ticks, x title and legend, the
// rest the plot's (Qt Charts cuts every tick label to "…" below about five lines of plot).
constexpr double k_scaleLines = 14, k_shareLines = 16;

QString tensorWords(mpx::Fp8Tensor t) {
    switch (t) {
        case mpx::Fp8Tensor::x: return QObject::tr("activations");
        case mpx::Fp8Tensor::w: return QObject::tr("weights");
        case mpx::Fp8Tensor::dy: return QObject::tr("gradients");
    }
    return {};
}

QString tensorName(mpx::Fp8Tensor t) {
    const std::string_view n = mpx::enum_name(t);
    return QString::fromLatin1(n.data(), static_cast<qsizetype>(n.size()));
}



// Plain numbers where they are readable (57344, 3.25, 0.0123), powers of ten only for tiny or huge ones.
QString number(double v) {
    if (!std::isfinite(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("not a number");
    const double a = std::fabs(v);
    if (a >= 1000 && a < 1e7) return QLocale().toString(v, 'f', 0);
    return QLocale().toString(v, 'g', a >= 0.001 && a < 1e7 ? 4 : 3);
}

// The largest |value| a per-tensor scale lets through without saturating: format max ÷ scale.
double limitOf(const gui::Fp8Point& p, double fmax) {
    return p.scale > 0.0f ? fmax / static_cast<double>(p.scale) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

Fp8View::Fp8View(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    m_stack = new QStackedWidget;
    outer->addWidget(m_stack);
    m_message = new QLabel;
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_message->setForegroundRole(QPalette::PlaceholderText);
    m_stack->addWidget(m_message);

    auto* page = new QWidget;
    auto* v = new QVBoxLayout(page);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(4);
    auto* bar = new QHBoxLayout;
    m_run = new QComboBox;
    m_layer = new QComboBox;
    m_tensor = new QComboBox;
    m_run->setToolTip(tr("The FP8 run to show (runs in other precisions have no FP8 scales)."));
    m_layer->setToolTip(tr("The layer whose matrix product is shown: fc1 reads the data, the last one gives the output."));
    m_tensor->setToolTip(tr("Which of the layer's FP8 inputs: x, the activations it reads; w, its weights; dy, the "
                            "gradient that comes back during training. Each is scaled and rounded into FP8 on "
                            "its own, in the format shown."));
    m_run->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_tensor->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    for (auto t : {mpx::Fp8Tensor::x, mpx::Fp8Tensor::w, mpx::Fp8Tensor::dy})
        m_tensor->addItem(QString(), static_cast<int>(t));
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_run);
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(m_layer);
    bar->addWidget(new QLabel(tr("Tensor")));
    bar->addWidget(m_tensor);
    bar->addStretch(1);
    v->addLayout(bar);
    m_explain = new QLabel;
    m_explain->setWordWrap(true);
    m_explain->setTextFormat(Qt::RichText);
    v->addWidget(m_explain);

    m_scale = new PlotWidget(QString());
    m_scale->setYScale(PlotWidget::YScale::log2);
    m_scale->setXTitle(tr("step"));
    m_scale->setYTitle(tr("|value| (log₂ scale)"));
    // Short names: Qt Charts keeps its legend on one row and cuts longer ones mid-word on a laptop;
    // the tooltip and the words above the chart say the rest.
    m_scale->addLine(tr("amax (largest |value|)"), QColor(0x1f, 0x77, 0xb4), 1.8);
    // Solid, not dashed: a dashed pen over thousands of points costs most of a redraw (measured with
    // bench_redraw --synthetic: 27 ms of paint per redraw dashed).
    m_scale->addLine(tr("limit (max ÷ scale)"), QColor(0xff, 0x7f, 0x0e), 1.4);
    m_scale->addMarkers(tr("a step that saturated"), QColor(0xd6, 0x27, 0x28), QColor(0x80, 0x10, 0x10),
                        PlotWidget::Marker::circle, 7);
    m_scale->setLegendVisible(true);
    m_scale->setMinimumHeight(fit::chartMinimumHeight(k_scaleLines, 1.0));
    m_scale->setToolTip(tr("Blue: the largest |value| in the tensor on each step (its amax). Orange: the largest "
                           "|value| the step's scale lets through. Where blue goes above orange, values are too big for "
                           "FP8 and are clipped to its largest number (they saturate)."));
    v->addWidget(m_scale, 3);
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setToolTip(tr("Over the steps shown: how many steps clipped values, and the largest shares."));
    v->addWidget(m_summary);
    m_share = new PlotWidget(QString());
    m_share->setXTitle(tr("step"));
    m_share->setYTitle(tr("% of values"));
    m_share->setYLabelFormat(QStringLiteral("%.3g%%"));
    m_share->addLine(tr("saturated (of all)"), QColor(0xd6, 0x27, 0x28), 1.8);
    m_share->addLine(tr("flushed to 0 (of the non-zero)"), QColor(0x94, 0x67, 0xbd), 1.8);
    m_share->setLegendVisible(true);
    m_share->setMinimumHeight(fit::chartMinimumHeight(k_shareLines, 1.0));
    m_share->setToolTip(tr("Red: of the tensor's values on a step, the share too big for FP8 (clipped to its largest "
                           "number). Purple: of its non-zero values, the share too small for FP8 (rounded to 0)."));
    v->addWidget(m_share, 2);
    // Below the charts' minimum heights (a laptop, classroom text) the page scrolls instead of
    // squeezing the charts until Qt Charts shortens their tick labels to "…".
    m_stack->addWidget(fit::scrollingPage(page));

    connect(m_run, &QComboBox::currentIndexChanged, this, [this] {
        if (m_filling) return;
        fillLayers();
        refresh();
    });
    connect(m_layer, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_filling) refresh();
    });
    connect(m_tensor, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_filling) refresh();
    });
    for (PlotWidget* p : {m_scale, m_share}) {
        connect(p, &PlotWidget::hovered, this, [this, p](double x, const QPoint& global) {
            const gui::Fp8Series* s = series();
            if (!std::isfinite(x) || !s || s->points().empty() || x < -0.5 ||
                x > static_cast<double>(s->points().back().step) + 0.5) {
                setHoverStep(-1);
                QToolTip::hideText();
                return;
            }
            const long long step = std::llround(std::max(0.0, x));
            setHoverStep(step);
            QToolTip::showText(global + QPoint(14, 10), hoverText(step), p);
        });
        connect(p, &PlotWidget::xRangeRequested, this, [this](double a, double b) {
            m_x0 = std::max(0.0, a);
            m_x1 = std::max(m_x0 + 4, b);
            refresh();
        });
        connect(p, &PlotWidget::resetRequested, this, [this] {
            m_x1 = -1;
            refresh();
        });
        connect(p, &PlotWidget::plotResized, this, [this] { refresh(); });
    }
    connect(m_store, &gui::RecordStore::sessionStarted, this, &Fp8View::sessionStarted);
    connect(m_store, &gui::RecordStore::stepsRecorded, this, [this] {
        if (isVisible()) refresh();
    });
    sessionStarted();
}

void Fp8View::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    refresh();
}

void Fp8View::sessionStarted() {
    m_filling = true;
    m_runs.clear();
    m_run->clear();
    if (const auto s = m_store->session())
        for (int r = 0; r < static_cast<int>(s->runs.size()); ++r) {
            const QString& label = s->runs[static_cast<std::size_t>(r)].label;
            if (!mpx::is_fp8(s->runs[static_cast<std::size_t>(r)].spec.mode)) continue;
            m_runs.push_back(r);
            m_run->addItem(label, r);
        }
    m_filling = false;
    m_hover = -1;
    m_x1 = -1;
    fillLayers();
    // fc2 where there is one: fc1's x is the data set itself (the same amax every step); fc2 reads
    // activations the network computes, which grow while it trains and show the scale following.
    if (m_layer->count() > 1) m_layer->setCurrentIndex(1);
    refresh();
}

// "fc2", or the GPT's "block 1 · q, k, v (block1.attn.qkv)".
QString Fp8View::layerText(int layer) const {
    const auto s = m_store->session();
    return s ? gui::recipeLayerText(s->config.model, layer) : QStringLiteral("fc%1").arg(layer + 1);
}

// The layers the engine sent rows for (FP8 layers), or the Linear layers of the model before any step.
void Fp8View::fillLayers() {
    std::vector<int> want;
    const int r = run();
    if (r >= 0 && r < m_store->runCount()) want = m_store->fp8(r).layers();
    if (want.empty() && m_store->session()) want = gui::recipeLayers(m_store->session()->config.model);
    std::vector<int> have;
    for (int i = 0; i < m_layer->count(); ++i) have.push_back(m_layer->itemData(i).toInt());
    if (want == have) return;
    const int keep = layer();
    m_filling = true;
    m_layer->clear();
    for (int l : want) m_layer->addItem(layerText(l), l);
    const int at = m_layer->findData(keep);
    m_layer->setCurrentIndex(at >= 0 ? at : 0);
    m_filling = false;
}

void Fp8View::fillTensors() {
    const int r = run();
    for (int i = 0; i < m_tensor->count(); ++i) {
        const auto t = static_cast<mpx::Fp8Tensor>(m_tensor->itemData(i).toInt());
        const gui::Fp8Series* s = r >= 0 && r < m_store->runCount() ? m_store->fp8(r).series(layer(), t) : nullptr;
        const QString name = QStringLiteral("%1 — %2").arg(tensorName(t), tensorWords(t));
        const QString text = s ? QStringLiteral("%1 (%2)").arg(name, s->block() ? tr("MXFP8: E4M3 + block scales")
                                                                                 : formatName(s->format()))
                               : name;
        if (m_tensor->itemText(i) != text) m_tensor->setItemText(i, text);  // unchanged: no relayout
    }
}

int Fp8View::run() const { return m_run->currentIndex() >= 0 ? m_run->currentData().toInt() : -1; }
int Fp8View::layer() const { return m_layer->currentIndex() >= 0 ? m_layer->currentData().toInt() : -1; }
mpx::Fp8Tensor Fp8View::tensor() const {
    return static_cast<mpx::Fp8Tensor>(std::max(0, m_tensor->currentData().toInt()));
}
void Fp8View::setRun(int run) {
    const int i = m_run->findData(run);
    if (i >= 0) m_run->setCurrentIndex(i);
}
void Fp8View::setLayer(int layer) {
    const int i = m_layer->findData(layer);
    if (i >= 0) m_layer->setCurrentIndex(i);
}
void Fp8View::setTensor(mpx::Fp8Tensor t) { m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(t))); }

mpx::Fp8Recipe Fp8View::recipe() const {
    const auto s = m_store->session();
    const int r = run();
    if (!s || r < 0) return mpx::Fp8Recipe::delayed;
    return mpx::fp8_recipe_of(s->runs[static_cast<std::size_t>(r)].spec, s->config.fp8);
}

const gui::Fp8Series* Fp8View::series() const {
    const int r = run();
    return r >= 0 && r < m_store->runCount() ? m_store->fp8(r).series(layer(), tensor()) : nullptr;
}

QString Fp8View::message() const {
    const auto s = m_store->session();
    if (!s) return tr("No session yet: press Run or Step.");
    if (m_runs.empty())
        return tr("No FP8 run in this session: add fp8-hybrid, fp8-e4m3 or mxfp8 to the precisions "
                  "(or open the fp8 preset) and reset.");
    return {};
}

std::pair<long long, long long> Fp8View::historyWindow(long long step) const {
    const auto s = m_store->session();
    if (!s || run() < 0 || recipe() != mpx::Fp8Recipe::delayed || step <= 0) return {-1, -1};
    if (s->config.fp8.amax_compute_algo == mpx::AmaxAlgo::most_recent) return {step - 1, step - 1};
    return {std::max(0LL, step - s->config.fp8.amax_history_len), step - 1};
}

long long Fp8View::windowStep() const {
    if (m_hover >= 0) return m_hover;
    const gui::Fp8Series* s = series();
    return s && !s->points().empty() ? s->points().back().step : -1;
}

void Fp8View::setHoverStep(long long step) {
    m_hover = step;
    const double x = step >= 0 ? static_cast<double>(step) : std::nan("");
    m_scale->setCursorStep(x);
    m_share->setCursorStep(x);
    updateWindow();
}

void Fp8View::updateWindow() {
    const long long at = windowStep();
    const auto [a, b] = historyWindow(at);
    if (a < 0) {
        m_scale->setXBand(std::nan(""), std::nan(""));
        return;
    }
    // Short: the chart writes it beside the band, over the lines (the words above the chart explain).
    const QString label = a == b ? tr("step %1's amax → step %2's scale").arg(a).arg(at)
                                 : tr("amax of steps %1–%2 → step %3's scale").arg(a).arg(b).arg(at);
    m_scale->setXBand(static_cast<double>(a) - 0.5, static_cast<double>(b) + 0.5, label);
}

void Fp8View::updateTexts() {
    const gui::Fp8Series* s = series();
    const auto session = m_store->session();
    const mpx::Fp8Tensor t = tensor();
    const QString where = QStringLiteral("%1 · %2 (%3%4)")
                              .arg(layerText(layer()), tensorName(t), tensorWords(t),
                                   s ? QStringLiteral(", ") + (s->block() ? QStringLiteral("MXFP8") : formatName(s->format()))
                                     : QString());
    const double fmax = s ? static_cast<double>(mpx::format_info(s->format()).max_finite) : 448.0;
    const QString fname = s ? formatName(s->format()) : QStringLiteral("FP8");
    QString text;
    switch (recipe()) {
        case mpx::Fp8Recipe::delayed: {
            const int len = session ? session->config.fp8.amax_history_len : 0;
            const bool recent = session && session->config.fp8.amax_compute_algo == mpx::AmaxAlgo::most_recent;
            text = tr("<b>Delayed scaling.</b> Before a value is rounded into %1 it is multiplied by a scale, chosen so "
                      "that the largest |value| (the <i>amax</i>) of %2 lands on %1's largest number, %3. "
                      "The orange limit line is the largest |value| that scale lets through. When the amax line "
                      "climbs above it, the values above the line saturate (are clipped to %3). The shaded span marks "
                      "the steps the scale was taken from (point at a step to move it).")
                       .arg(fname,
                            recent ? tr("the step before") : tr("the previous %1 steps (the amax history)").arg(len),
                            number(fmax));
            break;
        }
        case mpx::Fp8Recipe::current:
            text = tr("<b>Current scaling.</b> Each step's scale is computed from that step's own amax, so the "
                      "orange limit line lies on the amax line and nothing saturates; the price is an extra pass "
                      "over the tensor before it is cast. The limit is %1's largest number, %2, ÷ the scale.")
                       .arg(fname, number(fmax));
            break;
        case mpx::Fp8Recipe::block:
            text = tr("<b>MXFP8 (block scaling).</b> Every block of 32 values has its own power-of-two scale, so "
                      "there is no single per-tensor scale or limit line: the chart shows the tensor's amax only. "
                      "A block's scale puts its largest value between 256 and 512, and E4M3 stops at 448, so a few "
                      "values near the top of a block saturate (OCP MX v1.0); values far below their block's "
                      "largest flush to zero. Both are counted below.");
            break;
    }
    if (s == nullptr || s->points().empty()) text += tr("<br><i>No step yet: press Run or Step.</i>");
    m_explain->setText(text);
    m_where = where;
    // The chart's name first: a title too wide for a laptop drops its trailing parts (title_fit.hpp),
    // so the tensor it is of goes before the name would.
    m_scale->setTitle(s && s->block() ? tr("Largest |value| of each step · %1").arg(where)
                                      : tr("Largest |value| and the scale's limit · %1").arg(where));
    m_scale->setSeriesVisible(limitLine, !(s && s->block()));
}

void Fp8View::refresh() {
    const QString msg = message();
    m_message->setText(msg);
    m_stack->setCurrentIndex(msg.isEmpty() ? 1 : 0);
    if (!msg.isEmpty()) return;
    fillLayers();
    fillTensors();
    updateTexts();
    const gui::Fp8Series* s = series();
    const long long last = s && !s->points().empty() ? s->points().back().step : 0;
    const bool zoomed = m_x1 > m_x0;
    const double x0 = zoomed ? m_x0 : 0;
    const double x1 = zoomed ? m_x1 : std::max<double>(10, static_cast<double>(std::max<qint64>(m_store->steps(), last + 1)));
    const int columns = std::max(16, m_scale->plotWidth() / 2);  // as the Training charts: two pixels a column
    QList<QPointF> amax, limit, marks, sat, flushed;
    double limit0 = std::nan(""), satMax = 0, flushMax = 0;
    long long satSteps = 0, satAt = -1, flushAt = -1;
    double ylo = std::numeric_limits<double>::infinity(), yhi = 0, shareHi = 0;
    if (s && !s->points().empty()) {
        const double fmax = mpx::format_info(s->format()).max_finite;
        const bool perTensor = !s->block();
        const auto& pts = s->points();
        const double width = (x1 - x0) / columns;
        auto it = std::lower_bound(pts.begin(), pts.end(), x0,
                                   [](const gui::Fp8Point& p, double x) { return static_cast<double>(p.step) < x; });
        // Delayed scaling's step 0 casts with the starting scale 1 (limit = format max): drawn, but
        // left out of both axes' ranges, which would otherwise squeeze every later step into a sliver.
        const bool skipFirstLimit = recipe() == mpx::Fp8Recipe::delayed && pts.size() > 1;
        Envelope ea, el;
        Peak ps, pf, pm;  // pm: the column's most saturated step, marked on the amax line
        double markAmax = 0;
        long long column = -1;
        auto flush = [&] {
            ea.flush(amax, ylo, yhi);
            el.flush(limit, ylo, yhi);
            if (pm.at >= 0 && pm.v > 0) marks.append(QPointF(static_cast<double>(pm.at), markAmax));
            pm = Peak{};
            double unusedHi = 0;  // the axis follows shareHi, which may leave step 0 out
            ps.flush(sat, unusedHi);
            pf.flush(flushed, unusedHi);
        };
        for (; it != pts.end() && static_cast<double>(it->step) <= x1; ++it) {
            const long long c = static_cast<long long>(std::floor((static_cast<double>(it->step) - x0) / width));
            if (c != column) {
                flush();
                column = c;
            }
            ea.add(it->step, it->amax);
            if (perTensor) {
                if (skipFirstLimit && it->step == 0) limit0 = limitOf(*it, fmax);
                else el.add(it->step, limitOf(*it, fmax));
            }
            const double share = it->saturatedShare();
            const double under = it->underflowShare();
            if (share > 0) ++satSteps;
            if (share > satMax) satMax = share, satAt = it->step;
            if (under > flushMax) flushMax = under, flushAt = it->step;
            if (!(skipFirstLimit && it->step == 0)) shareHi = std::max(shareHi, 100.0 * std::max(share, under));
            if (share > pm.v) {
                pm.add(it->step, share);
                markAmax = it->amax;
            }
            ps.add(it->step, share);
            pf.add(it->step, it->underflowShare());
        }
        flush();
        if (std::isfinite(limit0)) limit.prepend(QPointF(0, limit0));
    }
    m_share->setTitle(tr("Share saturated or flushed to zero · %1").arg(m_where));
    QString summary = satSteps == 0 ? tr("No value saturated")
                                    : tr("%1 saturated values; the most: %2 of the values of step %3")
                                          .arg(satSteps == 1 ? tr("1 step") : tr("%1 steps").arg(satSteps),
                                               percentText(satMax))
                                          .arg(satAt);
    summary += flushAt < 0 ? tr(". No value was flushed to zero.")
                           : tr(". The most flushed to zero: %1 of the non-zero values of step %2%3.")
                                 .arg(percentText(flushMax))
                                 .arg(flushAt)
                                 .arg(flushAt == 0 && !zoomed && s && s->points().size() > 1 &&
                                              recipe() == mpx::Fp8Recipe::delayed
                                          ? tr(" (scale 1, no history yet: off the top of the chart)")
                                          : QString());
    m_summary->setText(summary);
    m_scale->setPoints(amaxLine, amax);
    m_scale->setPoints(limitLine, limit);
    m_scale->setPoints(saturatedMarkers, marks);
    m_share->setPoints(saturatedLine, sat);
    m_share->setPoints(flushedLine, flushed);
    for (PlotWidget* p : {m_scale, m_share}) p->setXRange(x0, x1);
    if (yhi > 0) m_scale->setYRange(ylo / 2, yhi * 2);
    else m_scale->setYRange(1.0 / 16, 16);
    m_share->setYRange(0, shareHi > 0 ? std::min(100.0, shareHi * 1.15) : 1.0);
    updateWindow();
}

QString Fp8View::hoverText(long long step) const {
    const gui::Fp8Series* s = series();
    const gui::Fp8Point* p = s ? s->at(step) : nullptr;
    const auto session = m_store->session();
    if (!p || !session) return {};
    const mpx::Fp8Tensor t = tensor();
    const double fmax = mpx::format_info(s->format()).max_finite;
    QString text = tr("<b>Step %1</b> · %2 · %3 %4 (%5)<br>")
                       .arg(p->step)
                       .arg(session->runs[static_cast<std::size_t>(run())].label.toHtmlEscaped(), layerText(layer()).toHtmlEscaped(),
                            tensorWords(t), s->block() ? QStringLiteral("MXFP8") : formatName(s->format()));
    text += tr("Largest |value| on this step (amax): %1 (2^%2)<br>")
                .arg(number(p->amax), QString::number(std::log2(static_cast<double>(p->amax)), 'f', 1));
    if (s->block()) {
        text += tr("Each block of 32 values had its own power-of-two scale: no single limit.<br>");
    } else {
        text += tr("Scale used: ×%1, so values up to %2 (= %3 ÷ scale) fit; bigger ones saturate.<br>")
                    .arg(number(p->scale), number(limitOf(*p, fmax)), number(fmax));
    }
    text += tr("Saturated (clipped to the largest FP8 number): %1 of %2 values (%3)<br>")
                .arg(QLocale().toString(p->saturated), QLocale().toString(p->count), percentText(p->saturatedShare()));
    text += tr("Flushed to zero (too small for FP8): %1 of %2 non-zero values (%3)")
                .arg(QLocale().toString(p->underflow), QLocale().toString(p->nonzero), percentText(p->underflowShare()));
    const auto [a, b] = historyWindow(p->step);
    switch (recipe()) {
        case mpx::Fp8Recipe::delayed:
            if (a < 0) text += tr("<br>Step 0 uses the starting scale 1: no history yet.");
            else if (a == b) text += tr("<br>Its scale came from the amax of step %1.").arg(a);
            else text += tr("<br>Its scale came from the largest amax of steps %1–%2 (the amax history).").arg(a).arg(b);
            break;
        case mpx::Fp8Recipe::current: text += tr("<br>Its scale came from this step's own amax."); break;
        case mpx::Fp8Recipe::block: break;
    }
    if (s->bucketWidth() > 1)
        text += tr("<br><i>A long run: one step in %1 is kept, the one that saturated most.</i>").arg(s->bucketWidth());
    return text;
}

QString Fp8View::summary() const { return m_summary->text(); }

void Fp8View::setPresentationScale(double s) {
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * s);
    m_explain->setFont(f);
    m_summary->setFont(f);
    m_message->setFont(f);
    m_scale->setFontScale(s);
    m_share->setFontScale(s);
    m_scale->setMinimumHeight(fit::chartMinimumHeight(k_scaleLines, s));
    m_share->setMinimumHeight(fit::chartMinimumHeight(k_shareLines, s));
}

}  // namespace mpx::ui
