// Fp4View: the engine's FP4 cast records of one tensor: the step shown as two bar charts and a
// consistency line, every step as two PlotWidgets (shares, NVFP4's tensor scale).
#include "ui/views/fp4_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSlider>
#include <QStackedWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "engine/core/fp4.hpp"
#include "engine/precision/policy.hpp"
#include "ui/kit/column_chart.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/views/fp4_words.hpp"
#include "ui/views/pixel_lines.hpp"
#include "ui/views/recipe_layers.hpp"

namespace mpx::ui {
namespace {

constexpr std::size_t k_none = static_cast<std::size_t>(-1);
// The time charts' least height in lines of text: about eight for title, ticks, x title and legend,
// the rest the plot's (Qt Charts cuts every tick label to "…" below about five lines of plot).
constexpr double k_chartLines = 14;



QString count(unsigned long long n) { return QLocale().toString(n); }

double share(unsigned long long part, unsigned long long whole) {
    return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// 2688 ÷ amax spans many powers of ten: plain where readable, else a power of two.
QString scaleNumber(double v) {
    if (!std::isfinite(v) || v <= 0) return QStringLiteral("—");
    if (v >= 0.01 && v < 1e6) return QLocale().toString(v, 'g', 4);
    return QStringLiteral("2^%1").arg(std::log2(v), 0, 'f', 1);
}

// E2M1's magnitudes by code (engine/core/fp4.hpp: e2m1_value), as the bars' labels.
QString magnitudeText(int code) { return QLocale().toString(static_cast<double>(mpx::core::e2m1_value(static_cast<std::uint32_t>(code))), 'g', 3); }

// The bars' colours: 0 grey (the value is gone), 6 red (the top, where clamped values land too),
// 4 orange (the binade MXFP4 may leave unused beside 6), the rest the blue of a value kept.
QColor codeColour(int code) {
    if (code == 0) return QColor(0x9e, 0x9e, 0x9e);
    if (code == 7) return QColor(0xd6, 0x27, 0x28);
    if (code == 6) return QColor(0xff, 0x7f, 0x0e);
    return QColor(0x1f, 0x77, 0xb4);
}

QLabel* titleLabel() {
    auto* l = new QLabel;
    QFont f = l->font();
    f.setBold(true);
    l->setFont(f);
    l->setWordWrap(true);
    return l;
}

QLabel* captionLabel(const QString& text = {}) {
    auto* l = new QLabel(text);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    l->setForegroundRole(QPalette::PlaceholderText);
    return l;
}

}  // namespace

Fp4View::Fp4View(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
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
    m_run->setToolTip(tr("The FP4 run to show (nvfp4 or mxfp4; runs in other precisions cast nothing to FP4)."));
    m_layer->setToolTip(tr("The layer whose matrix product is shown: fc1 reads the data, the last one gives the output."));
    m_tensor->setToolTip(tr("Which of the layer's inputs to its matrix products: x, the activations it reads; w, its "
                            "weights; dy, the gradient that comes back during training. Each is cut into blocks, "
                            "scaled and rounded to FP4 on its own."));
    m_run->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    // Long names ("dy — gradients (1×16 blocks, rounded at random)") must not widen the window past
    // a laptop's screen (tests/ui/test_window_fit.cpp): the popup shows them whole.
    m_tensor->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_tensor->setMinimumContentsLength(22);
    for (auto t : {mpx::Fp8Tensor::x, mpx::Fp8Tensor::w, mpx::Fp8Tensor::dy})
        m_tensor->addItem(QStringLiteral("%1 — %2").arg(fp4words::tensorName(t), fp4words::tensorWords(t)), static_cast<int>(t));
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setMinimumWidth(90);
    m_slider->setToolTip(tr("The step the bar charts show. All the way right: follow the newest step. Pointing at a "
                            "step in the charts below shows that step while the pointer stays."));
    m_stepLabel = new QLabel;
    m_stepLabel->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("step 00000 (pointed at)")));
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_run);
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(m_layer);
    bar->addWidget(new QLabel(tr("Tensor")));
    bar->addWidget(m_tensor);
    bar->addStretch(1);
    v->addLayout(bar);
    // The step on a row of its own: beside the pickers it would widen the window past a laptop's.
    auto* stepRow = new QHBoxLayout;
    stepRow->addWidget(new QLabel(tr("Step shown in the bars")));
    stepRow->addWidget(m_slider, 1);
    stepRow->addWidget(m_stepLabel);
    v->addLayout(stepRow);
    m_explain = new QLabel;
    m_explain->setWordWrap(true);
    m_explain->setTextFormat(Qt::RichText);
    v->addWidget(m_explain);

    auto* bars = new QHBoxLayout;
    bars->setSpacing(12);
    auto* left = new QVBoxLayout;
    m_codesTitle = titleLabel();
    m_codesCaption = captionLabel();
    m_codes = new ColumnChart;
    m_codes->setToolTip(tr("Every value is divided by its block's scale and rounded to one of FP4's 8 sizes. Each bar: "
                           "the share of the tensor's values that landed on that size (the sign is kept apart). Grey: "
                           "became 0. Orange: 4, unused in a block whose largest value lands on 3 or below (a lost "
                           "binade). Red: the top, 6 (values above it are clamped to it)."));
    left->addWidget(m_codesTitle);
    left->addWidget(m_codesCaption);
    left->addWidget(m_codes, 1);
    auto* right = new QVBoxLayout;
    m_topsTitle = titleLabel();
    m_topsCaption = captionLabel();
    m_tops = new ColumnChart;
    m_tops->setToolTip(tr("Each block's scale is chosen from its largest value. Where that largest value lands decides "
                          "how much of FP4's range the block uses: on 6, all of it; on 3 or below, 4 and 6 stay unused "
                          "in that block (a lost binade)."));
    right->addWidget(m_topsTitle);
    right->addWidget(m_topsCaption);
    right->addWidget(m_tops, 1);
    bars->addLayout(left, 3);  // the values short enough for eight bars (fp4words::barText), the
    bars->addLayout(right, 2);  // three bars' two-line names whole
    v->addLayout(bars, 3);
    m_consistency = new QLabel;
    m_consistency->setWordWrap(true);
    m_consistency->setTextFormat(Qt::RichText);
    m_consistency->setToolTip(tr("The forward pass reads the weights in blocks along rows, the backward pass (the "
                                 "gradient for the layer below) along columns, so each has its own FP4 copy. With 16×16 "
                                 "tiles both copies share every block and are the same; with 1×16 blocks an element can "
                                 "round differently in each. Counted on the steps that collect histograms."));
    v->addWidget(m_consistency);

    auto* charts = new QHBoxLayout;
    charts->setSpacing(12);
    auto* shareBox = new QVBoxLayout;
    m_share = new PlotWidget(QString());
    m_share->setXTitle(tr("step"));
    m_share->setYTitle(tr("% of values"));
    m_share->setYLabelFormat(QStringLiteral("%.3g%%"));
    // Short names: Qt Charts keeps the legend on one row and cuts longer ones on a laptop; the
    // caption beneath says of which values each share is.
    m_share->addLine(tr("clamped at ±6"), QColor(0xd6, 0x27, 0x28), 1.8);
    m_share->addLine(tr("flushed to 0"), QColor(0x94, 0x67, 0xbd), 1.8);
    m_share->setLegendVisible(true);
    m_share->setMinimumHeight(fit::chartMinimumHeight(k_chartLines, 1.0));
    m_shareCaption = captionLabel();
    shareBox->addWidget(m_share, 1);
    shareBox->addWidget(m_shareCaption);
    m_scaleBox = new QWidget;
    auto* scaleBox = new QVBoxLayout(m_scaleBox);
    scaleBox->setContentsMargins(0, 0, 0, 0);
    m_scale = new PlotWidget(QString());
    m_scale->setYScale(PlotWidget::YScale::log2);
    m_scale->setXTitle(tr("step"));
    m_scale->setYTitle(tr("S_enc (log₂ scale)"));
    m_scale->addLine(tr("S_enc = 2688 ÷ amax"), QColor(0x33, 0x22, 0x88), 1.8);
    m_scale->setLegendVisible(true);
    m_scale->setMinimumHeight(fit::chartMinimumHeight(k_chartLines, 1.0));
    m_scaleCaption = captionLabel(tr("2688 ÷ the tensor's largest |value|, one number for the whole tensor: it falls "
                                     "as the values grow."));
    m_scale->setToolTip(tr("NVFP4's second level of scaling: one FP32 number for the whole tensor, 2688 ÷ its largest "
                           "|value| (2688 = 448 × 6: the largest block scale E4M3 holds times FP4's largest value). "
                           "It lets the 8-bit block scales fit tensors of any size."));
    scaleBox->addWidget(m_scale, 1);
    scaleBox->addWidget(m_scaleCaption);
    charts->addLayout(shareBox, 1);
    charts->addWidget(m_scaleBox, 1);
    v->addLayout(charts, 3);
    // Below its minimum height (a laptop with the event log open) the page scrolls instead of
    // squeezing its word-wrapped captions over the charts.
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
    connect(m_slider, &QSlider::valueChanged, this, [this](int i) {
        if (m_filling) return;
        const gui::Fp8Series* s = series();
        if (!s || s->points().empty()) return;
        const auto n = static_cast<int>(s->points().size());
        m_step = i >= n - 1 ? -1 : s->points()[static_cast<std::size_t>(std::max(0, i))].step;
        updateBars();
    });
    for (PlotWidget* p : {m_share, m_scale}) {
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
    connect(m_store, &gui::RecordStore::sessionStarted, this, &Fp4View::sessionStarted);
    connect(m_store, &gui::RecordStore::stepsRecorded, this, [this] {
        if (isVisible()) refresh();
    });
    sessionStarted();
}

void Fp4View::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    refresh();
}

void Fp4View::sessionStarted() {
    m_filling = true;
    m_runs.clear();
    m_run->clear();
    if (const auto s = m_store->session())
        for (int r = 0; r < static_cast<int>(s->runs.size()); ++r) {
            if (!mpx::is_fp4(s->runs[static_cast<std::size_t>(r)].spec.mode)) continue;
            m_runs.push_back(r);
            m_run->addItem(s->runs[static_cast<std::size_t>(r)].label, r);
        }
    m_filling = false;
    m_hover = -1;
    m_step = -1;
    m_x1 = -1;
    fillLayers();
    // fc2 where there is one: fc1's x is the data set itself; fc2 reads activations the network computes.
    if (m_layer->count() > 1) m_layer->setCurrentIndex(1);
    refresh();
}

// The layers the engine sent rows for (FP4 layers: +bf16-first/last keep some in BF16), or every
// layer of the model before any step.
// "fc2", or the GPT's "block 1 · q, k, v (block1.attn.qkv)".
QString Fp4View::layerText(int layer) const {
    const auto s = m_store->session();
    return s ? gui::recipeLayerText(s->config.model, layer) : QStringLiteral("fc%1").arg(layer + 1);
}

void Fp4View::fillLayers() {
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

void Fp4View::fillTensors() {
    fp4words::Shown shown = this->shown();
    for (int i = 0; i < m_tensor->count(); ++i) {
        shown.tensor = static_cast<mpx::Fp8Tensor>(m_tensor->itemData(i).toInt());
        const QString text = QStringLiteral("%1 — %2 (%3)")
                                 .arg(fp4words::tensorName(shown.tensor), fp4words::tensorWords(shown.tensor),
                                      fp4words::blocks(shown));
        if (m_tensor->itemText(i) != text) m_tensor->setItemText(i, text);
    }
}

fp4words::Shown Fp4View::shown() const { return {kind(), recipe(), tensor(), layer()}; }

QString Fp4View::consistencyText() const {
    const auto session = m_store->session();
    return fp4words::consistency(shown(), session ? session->config.instruments.every : 0, consistency(), shownStep());
}

int Fp4View::run() const { return m_run->currentIndex() >= 0 ? m_run->currentData().toInt() : -1; }
int Fp4View::layer() const { return m_layer->currentIndex() >= 0 ? m_layer->currentData().toInt() : -1; }
mpx::Fp8Tensor Fp4View::tensor() const { return static_cast<mpx::Fp8Tensor>(std::max(0, m_tensor->currentData().toInt())); }
void Fp4View::setRun(int run) {
    const int i = m_run->findData(run);
    if (i >= 0) m_run->setCurrentIndex(i);
}
void Fp4View::setLayer(int layer) {
    const int i = m_layer->findData(layer);
    if (i >= 0) m_layer->setCurrentIndex(i);
}
void Fp4View::setTensor(mpx::Fp8Tensor t) { m_tensor->setCurrentIndex(m_tensor->findData(static_cast<int>(t))); }

mpx::Fp4Kind Fp4View::kind() const {
    const auto s = m_store->session();
    const int r = run();
    if (!s || r < 0) return mpx::Fp4Kind::nvfp4;
    return mpx::fp4_kind(s->runs[static_cast<std::size_t>(r)].spec.mode);
}

mpx::Fp4Config Fp4View::recipe() const {
    const auto s = m_store->session();
    const int r = run();
    if (!s || r < 0) return {};
    return mpx::resolve_fp4(kind(), s->config.fp4, s->runs[static_cast<std::size_t>(r)].spec.fp4);
}

const gui::Fp8Series* Fp4View::series() const {
    const int r = run();
    const gui::Fp8Series* s = r >= 0 && r < m_store->runCount() ? m_store->fp8(r).series(layer(), tensor()) : nullptr;
    return s && s->format() == mpx::Format::e2m1 ? s : nullptr;
}

QString Fp4View::message() const {
    const auto s = m_store->session();
    if (!s) return tr("No session yet: press Run or Step.");
    if (m_runs.empty())
        return tr("No FP4 run in this session: type nvfp4, nvfp4+1d or mxfp4 into “other run” under Precisions to "
                  "compare, press Add, then Reset (Ctrl+R). This tab then shows how each tensor is rounded to 4 bits.");
    return {};
}

long long Fp4View::shownStep() const {
    if (m_hover >= 0) return m_hover;
    if (m_step >= 0) return m_step;
    const gui::Fp8Series* s = series();
    return s && !s->points().empty() ? s->points().back().step : -1;
}

void Fp4View::setStep(long long step) {
    m_step = step;
    updateSlider();
    updateBars();
}

void Fp4View::setHoverStep(long long step) {
    m_hover = step;
    updateBars();
}

std::size_t Fp4View::shownIndex() const {
    const gui::Fp8Series* s = series();
    const long long step = shownStep();
    if (!s || step < 0) return k_none;
    const gui::Fp8Point* p = s->at(step);
    return p ? static_cast<std::size_t>(p - s->points().data()) : k_none;
}

const gui::Fp8Point* Fp4View::point() const {
    const std::size_t i = shownIndex();
    return i == k_none ? nullptr : &series()->points()[i];
}

const mpx::core::Fp4Record* Fp4View::record() const {
    const std::size_t i = shownIndex();
    return i == k_none ? nullptr : series()->fp4(i);
}

std::optional<gui::Fp4Consistency> Fp4View::consistency() const {
    const gui::Fp8Series* s = series();
    const long long step = shownStep();
    if (!s || step < 0) return std::nullopt;
    const auto& c = s->consistency();
    auto it = std::upper_bound(c.begin(), c.end(), step, [](long long v, const gui::Fp4Consistency& x) { return v < x.step; });
    if (it == c.begin()) return std::nullopt;
    return *std::prev(it);
}


void Fp4View::updateTexts() {
    const fp4words::Shown shown = this->shown();
    const bool nv = shown.kind == mpx::Fp4Kind::nvfp4;
    m_where = QStringLiteral("%1 · %2 (%3)")
                  .arg(layerText(layer()), fp4words::tensorName(shown.tensor), fp4words::tensorWords(shown.tensor));
    QString text = fp4words::explain(shown);
    const gui::Fp8Series* s = series();
    if (s == nullptr || s->points().empty()) text += tr("<br><i>No step yet: press Run or Step.</i>");
    m_explain->setText(text);
    m_topsTitle->setText(tr("Where each block's largest value lands"));
    m_topsCaption->setText(fp4words::topsCaption(shown.kind));
    // The chart's name first: a title too wide drops its trailing parts (title_fit.hpp), not its name.
    m_share->setTitle(tr("Clamped at ±6 or flushed to 0 · %1").arg(m_where));
    m_shareCaption->setText(fp4words::shareCaption(shown.kind, shown.recipe.mx_scale_rule));
    m_scaleBox->setVisible(nv);
    m_scale->setTitle(tr("NVFP4's tensor scale S_enc · %1").arg(m_where));
}

void Fp4View::updateSlider() {
    const gui::Fp8Series* s = series();
    const int n = s ? static_cast<int>(s->points().size()) : 0;
    m_filling = true;
    m_slider->setEnabled(n > 1);
    m_slider->setRange(0, std::max(0, n - 1));
    int at = n - 1;
    if (m_step >= 0 && s) {
        const gui::Fp8Point* p = s->at(m_step);
        at = p ? static_cast<int>(p - s->points().data()) : 0;
    }
    m_slider->setValue(std::max(0, at));
    m_filling = false;
}

void Fp4View::updateBars() {
    const gui::Fp8Point* p = point();
    const mpx::core::Fp4Record* r = record();
    const long long step = p ? p->step : -1;
    // The time charts mark the step the bars show, unless they follow the newest (the right edge).
    const double x = step >= 0 && (m_hover >= 0 || m_step >= 0) ? static_cast<double>(step) : std::nan("");
    m_share->setCursorStep(x);
    m_scale->setCursorStep(x);
    m_stepLabel->setText(step < 0 ? tr("no step yet")
                         : m_hover >= 0 ? tr("step %1 (pointed at)").arg(step)
                         : m_step < 0   ? tr("step %1 (newest)").arg(step)
                                        : tr("step %1").arg(step));
    m_codesTitle->setText(step < 0 ? tr("%1: where the values land on FP4's 8 sizes").arg(m_where)
                                   : tr("%1: where the values land on FP4's 8 sizes, step %2").arg(m_where).arg(step));
    QList<ColumnChart::Column> codes, tops;
    if (r) {
        unsigned long long total = 0;
        for (unsigned long long c : r->codes) total += c;
        for (int k = 0; k < 8; ++k) {
            const double sh = share(r->codes[k], total);
            codes.append({magnitudeText(k), sh, fp4words::barText(sh), codeColour(k)});
        }
        const unsigned long long rest = r->blocks - std::min(r->blocks, r->top6 + r->top4);
        const double s6 = share(r->top6, r->blocks), s4 = share(r->top4, r->blocks), s3 = share(rest, r->blocks);
        // Names short enough for a laptop's third of the view; the caption says what a lost binade is.
        tops.append({tr("on 6"), s6, fp4words::barText(s6), codeColour(7)});
        tops.append({tr("on 4"), s4, fp4words::barText(s4), codeColour(6)});
        tops.append({tr("3 or less"), s3, fp4words::barText(s3), QColor(0x77, 0x77, 0x77)});
        m_codesCaption->setText(
            tr("Share of the %1 values on each size. Grey: 0 (zeros, plus %2 of the non-zero values flushed); "
               "orange: 4, the size a block leaves unused when its largest value lands below it (right); "
               "red: 6, the top (%3 of all values clamped there from above).")
                .arg(count(p->count), percentText(p->underflowShare()), percentText(p->saturatedShare())));
    } else {
        m_codesCaption->setText(tr("Share of the values on each size after their block's scale."));
    }
    m_codes->setPlaceholder(tr("No step yet: press Run or Step."));
    m_tops->setPlaceholder(tr("No step yet: press Run or Step."));
    m_codes->setColumns(codes);
    m_tops->setColumns(tops);
    m_consistency->setText(consistencyText());
}

void Fp4View::refresh() {
    const QString msg = message();
    m_message->setText(msg);
    m_stack->setCurrentIndex(msg.isEmpty() ? 1 : 0);
    if (!msg.isEmpty()) return;
    fillLayers();
    fillTensors();
    updateTexts();
    updateSlider();
    updateBars();
    const gui::Fp8Series* s = series();
    const long long last = s && !s->points().empty() ? s->points().back().step : 0;
    const bool zoomed = m_x1 > m_x0;
    const double x0 = zoomed ? m_x0 : 0;
    const double x1 = zoomed ? m_x1 : std::max<double>(10, static_cast<double>(std::max<qint64>(m_store->steps(), last + 1)));
    const int columns = std::max(16, m_share->plotWidth() / 2);  // as the Training charts: two pixels a column
    QList<QPointF> sat, flushed, scale;
    double shareHi = 0, ylo = std::numeric_limits<double>::infinity(), yhi = 0;
    if (s && !s->points().empty()) {
        const auto& pts = s->points();
        const double width = (x1 - x0) / columns;
        auto it = std::lower_bound(pts.begin(), pts.end(), x0,
                                   [](const gui::Fp8Point& p, double x) { return static_cast<double>(p.step) < x; });
        Peak ps, pf;
        Envelope es;
        long long column = -1;
        auto flush = [&] {
            ps.flush(sat, shareHi);
            pf.flush(flushed, shareHi);
            es.flush(scale, ylo, yhi);
        };
        for (; it != pts.end() && static_cast<double>(it->step) <= x1; ++it) {
            const long long c = static_cast<long long>(std::floor((static_cast<double>(it->step) - x0) / width));
            if (c != column) {
                flush();
                column = c;
            }
            ps.add(it->step, it->saturatedShare());
            pf.add(it->step, it->underflowShare());
            es.add(it->step, it->scale);
        }
        flush();
    }
    m_share->setPoints(saturatedLine, sat);
    m_share->setPoints(flushedLine, flushed);
    m_scale->setPoints(scaleLine, scale);
    for (PlotWidget* p : {m_share, m_scale}) p->setXRange(x0, x1);
    m_share->setYRange(0, shareHi > 0 ? std::min(100.0, shareHi * 1.15) : 1.0);
    if (yhi > 0) m_scale->setYRange(ylo / 2, yhi * 2);
    else m_scale->setYRange(1, 1 << 12);
}

QString Fp4View::hoverText(long long step) const {
    const gui::Fp8Series* s = series();
    const gui::Fp8Point* p = s ? s->at(step) : nullptr;
    const auto session = m_store->session();
    if (!p || !session) return {};
    const mpx::Fp8Tensor t = tensor();
    QString text = tr("<b>Step %1</b> · %2 · %3 %4<br>")
                       .arg(p->step)
                       .arg(session->runs[static_cast<std::size_t>(run())].label.toHtmlEscaped(), layerText(layer()).toHtmlEscaped(),
                            fp4words::tensorWords(t));
    text += tr("Largest |value| (amax): %1<br>").arg(scaleNumber(p->amax));
    if (kind() == mpx::Fp4Kind::nvfp4) text += tr("Tensor scale S_enc = 2688 ÷ amax: %1<br>").arg(scaleNumber(p->scale));
    text += tr("Clamped at ±6: %1 of %2 values (%3)<br>")
                .arg(count(p->saturated), count(p->count), percentText(p->saturatedShare()));
    text += tr("Flushed to 0: %1 of %2 non-zero values (%3)")
                .arg(count(p->underflow), count(p->nonzero), percentText(p->underflowShare()));
    if (s->bucketWidth() > 1)
        text += tr("<br><i>A long run: one step in %1 is kept, the one that clamped most.</i>").arg(s->bucketWidth());
    return text;
}

void Fp4View::setPresentationScale(double s) {
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * s);
    for (QLabel* l : {m_explain, m_message, m_consistency, m_codesCaption, m_topsCaption, m_shareCaption, m_scaleCaption})
        l->setFont(f);
    QFont b = f;
    b.setBold(true);
    m_codesTitle->setFont(b);
    m_topsTitle->setFont(b);
    m_codes->setFontScale(s);
    m_tops->setFontScale(s);
    m_share->setFontScale(s);
    m_scale->setFontScale(s);
    for (PlotWidget* p : {m_share, m_scale}) p->setMinimumHeight(fit::chartMinimumHeight(k_chartLines, s));
}

}  // namespace mpx::ui
