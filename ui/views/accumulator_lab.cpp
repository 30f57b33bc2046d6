// The accumulator lab (see accumulator_lab.hpp).
#include "ui/views/accumulator_lab.hpp"

#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>
#include <system_error>

#include "ui/kit/line_key.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/run_style.hpp"

namespace mpx::ui {
namespace {

constexpr AccumulateModel k_models[] = {AccumulateModel::exact, AccumulateModel::fp8_fast, AccumulateModel::promote,
                                        AccumulateModel::bits};
// Every format but E2M1. The lab's operands are uniform in [0, 1) with no scale, so rounded to E2M1
// they collapse to 0, 0.5 and 1 (its 2, 3, 4, 6 unused), every product is one of four powers of two
// and every model sums them exactly: a flat zero that says nothing about FP4 GEMMs, which always
// carry a block scale (NVFP4, MXFP4; engine/precision/fp4_quant.hpp), not modelled here.
constexpr Format k_labFormats[] = {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2};
constexpr int k_kLo = 64, k_kHi = 16384;
constexpr int k_maxSize = 128;  // m = n: at K = 16384 a point takes about a second on one core

QString modelName(AccumulateModel m) { return QString::fromLatin1(to_string(m).data(), int(to_string(m).size())); }

// One colour per model (Okabe–Ito's, as ui/session/run_colours.cpp), one pen style per operand
// format: a reader can tell "the orange lines" (fast accumulation) from "the blue ones" (promoted) at a glance.
QColor modelColour(AccumulateModel m) {
    switch (m) {
        case AccumulateModel::exact: return QColor(0x55, 0x55, 0x55);  // grey: the yardstick
        case AccumulateModel::fp8_fast: return QColor(0xD5, 0x5E, 0x00);  // vermillion
        case AccumulateModel::promote: return QColor(0x00, 0x72, 0xB2);   // blue
        case AccumulateModel::bits: return QColor(0x00, 0x9E, 0x73);      // green
    }
    return QColor(0x88, 0x22, 0x55);
}

Qt::PenStyle formatPen(int order) {
    static const Qt::PenStyle k[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine, Qt::DashDotDotLine};
    return k[((order % 5) + 5) % 5];  // indexOf's -1 (never for a drawn line) stays in range
}
// The sixth format has no pen style left (the chart adapter takes Qt's five): a thick solid line.
double formatWidth(int order) { return order == 5 ? 3.6 : 2.0; }

QString modelTip(AccumulateModel m) {
    switch (m) {
        case AccumulateModel::exact:
            return AccumulatorLab::tr("Ordinary FP32 accumulation of the exact products, one rounding (to nearest) per "
                                      "addition: the yardstick.");
        case AccumulateModel::fp8_fast:
            return AccumulatorLab::tr("Groups of 32 products are aligned to the group's largest exponent and cut to B "
                                      "bits, then added to a register that also keeps only B bits (truncating). Never "
                                      "promoted. DeepSeek-V3 §3.5.2 reports B ≈ 14 on H800.");
        case AccumulateModel::promote:
            return AccumulatorLab::tr("As fp8-fast, but every N_C products the register is added into an FP32 "
                                      "accumulator and cleared: DeepSeek-V3's fix (N_C = 128).");
        case AccumulateModel::bits:
            return AccumulatorLab::tr("A B-bit register that truncates, fed one product at a time (no groups, no "
                                      "promotion). B = 24 is FP32 accumulation rounding toward zero.");
    }
    return {};
}

QString errorText(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (std::isinf(v)) return QStringLiteral("inf");
    if (v == 0) return AccumulatorLab::tr("0 (exact)");
    return QString::number(v, 'e', 2);
}

QTableWidgetItem* cell(const QString& text, const QVariant& value, Qt::Alignment align) {
    auto* item = new QTableWidgetItem(text);
    item->setData(Qt::UserRole, value);
    item->setTextAlignment(align | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    return item;
}

}  // namespace

AccumulatorLab::AccumulatorLab(QWidget* parent) : QWidget(parent) {
    setWindowTitle(tr("Accumulator lab"));
    // A window of its own: Esc and Ctrl+W close it, as they close a dialog.
    // (QKeySequence::Close is Ctrl+F4 under some platform themes: Ctrl+W is named too.)
    for (const QKeySequence& k : {QKeySequence(Qt::Key_Escape), QKeySequence(Qt::CTRL | Qt::Key_W)}) {
        auto* s = new QShortcut(k, this);
        s->setContext(Qt::WindowShortcut);
        connect(s, &QShortcut::activated, this, &QWidget::close);
    }
    // In a scroll area: the classroom's larger text may need more than a laptop's screen.
    auto* page = new QWidget;
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    (new QVBoxLayout(this))->addWidget(scroll);
    layout()->setContentsMargins(0, 0, 0, 0);
    auto* outer = new QVBoxLayout(page);
    outer->setContentsMargins(10, 8, 10, 8);
    outer->setSpacing(6);

    auto* caption = new QLabel(
        tr("<b>How much does a long sum lose?</b> Each point multiplies two random matrices, A (m × K) and B (K × m), "
           "with entries uniform in [0, 1) rounded to the operand format; it adds the K products of every output "
           "under an accumulation <b>model</b> and compares with the same sum done exactly (FP64). The models describe "
           "how an FP8 tensor core adds, after DeepSeek-V3 (§3.3.2, §3.5.2; REFERENCE.md, “Accumulation models”): "
           "they are <b>models, not measurements of a GPU</b>.<br>"
           "<b>What to look for:</b> under <i>fp8-fast</i> the running sum keeps only B bits (about 14 on H800), so its "
           "error grows as K grows; <i>promote</i> moves the partial sum into FP32 every N_C products (DeepSeek-V3 "
           "uses 128), so its line stays flat. <i>exact</i> is ordinary FP32 accumulation, for comparison."));
    caption->setWordWrap(true);
    caption->setTextFormat(Qt::RichText);
    outer->addWidget(caption);
    m_messages = new MessageBar;
    outer->addWidget(m_messages);

    // ---- the controls, in a column at the left ----
    auto* controls = m_controls = new QWidget;
    auto* cv = new QVBoxLayout(controls);
    cv->setContentsMargins(0, 0, 0, 0);
    auto* formats = new QGroupBox(tr("Operand formats"));
    formats->setToolTip(tr("A and B are rounded to this format before the product; the error shown is the "
                           "accumulation's alone (the FP64 sum uses the same rounded operands)."));
    auto* fg = new QGridLayout(formats);
    int i = 0;
    for (Format f : k_labFormats) {
        auto* box = new QCheckBox(formatName(f));
        box->setChecked(f == Format::e4m3);
        fg->addWidget(box, i % 3, i / 3);
        m_formatBoxes << box;
        ++i;
    }
    cv->addWidget(formats);
    auto* models = new QGroupBox(tr("Accumulation models"));
    auto* mv = new QVBoxLayout(models);
    for (AccumulateModel m : k_models) {
        auto* box = new QCheckBox(modelName(m));
        box->setToolTip(modelTip(m));
        box->setChecked(m == AccumulateModel::fp8_fast || m == AccumulateModel::promote);
        mv->addWidget(box);
        m_modelBoxes << box;
        connect(box, &QCheckBox::toggled, this, &AccumulatorLab::updateControls);
    }
    cv->addWidget(models);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
    m_bits = new QSpinBox;
    m_bits->setRange(1, k_max_accumulate_bits);
    m_bits->setValue(AccumulateParams{}.bits);
    m_bits->setToolTip(tr("B: the significant bits the register and the aligned products keep (DeepSeek-V3: about "
                          "14 on H800). Not used by exact."));
    form->addRow(tr("Bits B"), m_bits);
    m_promoteEvery = new QSpinBox;
    m_promoteEvery->setRange(1, k_kHi);
    m_promoteEvery->setValue(AccumulateParams{}.promote_every);
    m_promoteEvery->setToolTip(tr("N_C: products between promotions to FP32 under promote (DeepSeek-V3: 128, "
                                  "four WGMMA instructions)."));
    form->addRow(tr("Promote every N_C"), m_promoteEvery);
    m_seed = new QSpinBox;
    m_seed->setRange(0, INT_MAX);
    m_seed->setValue(1);
    m_seed->setToolTip(tr("Seed of the random matrices: the same seed gives the same numbers as "
                          "mpx-cli gemm-error --seed."));
    form->addRow(tr("Seed"), m_seed);
    m_size = new QSpinBox;
    m_size->setRange(1, k_maxSize);
    m_size->setValue(64);
    m_size->setToolTip(tr("Rows of A and columns of B (m = n): each point's maximum is over m × n outputs. "
                          "mpx-cli gemm-error uses 64 by default."));
    form->addRow(tr("m = n"), m_size);
    cv->addLayout(form);
    m_kText = new QLabel;
    m_kText->setWordWrap(true);
    cv->addWidget(m_kText);
    auto* buttons = new QHBoxLayout;
    m_run = new QPushButton(tr("Run"));
    m_run->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"));
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    cv->addLayout(buttons);
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("%v of %m points"));
    cv->addWidget(m_progress);
    cv->addStretch(1);

    // ---- the chart and, beside it, the table ----
    m_plot = new PlotWidget(tr("Largest relative error (of C = A·B, against FP64)"));
    m_plot->setYScale(PlotWidget::YScale::log10);
    m_plot->setYTitle(tr("max relative error (log₁₀)"));
    // The adapter's x axis is linear, so x is log₂ K, labelled 2^k.
    m_plot->setXLabelFormat(QStringLiteral("2^%.0f"));
    m_plot->setXTitle(tr("K, the length of each sum   (2^6 = 64, 2^10 = 1024, 2^12 = 4096, 2^14 = 16384)"));
    m_plot->setLegendVisible(false);  // the key under the chart wraps where Qt Charts' legend cuts names short
    m_plot->setMinimumSize(360, 360);  // with the classroom's controls and table, a 1240 px window holds it
    m_plot->setToolTip(tr("One line per operand format and model. Lower is more accurate. Points with zero error "
                          "cannot sit on a log axis; the line under the chart counts them."));
    m_note = new QLabel;
    m_note->setWordWrap(true);
    auto* chart = new QWidget;
    auto* chartV = new QVBoxLayout(chart);
    chartV->setContentsMargins(0, 0, 0, 0);
    chartV->addWidget(m_plot, 1);
    m_key = new LineKey;
    chartV->addWidget(m_key);
    chartV->addWidget(m_note);

    m_table = new QTableWidget(0, columnCount);
    m_table->setHorizontalHeaderLabels({tr("Format"), tr("Model"), tr("K"), tr("Max rel. error"), tr("Mean rel. error")});
    m_table->horizontalHeaderItem(maxColumn)->setToolTip(tr("Largest |C − C_FP64| / |C_FP64| over the m × n outputs"));
    m_table->horizontalHeaderItem(meanColumn)->setToolTip(tr("Mean relative error over the m × n outputs"));
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    fitToFont();

    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(chart);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setChildrenCollapsible(false);
    split->setSizes({600, 400});
    auto* body = new QHBoxLayout;
    body->addWidget(controls);
    body->addWidget(split, 1);
    outer->addLayout(body, 1);
    scroll->setWidget(page);

    m_timer.setInterval(50);
    connect(&m_timer, &QTimer::timeout, this, &AccumulatorLab::drain);
    connect(m_run, &QPushButton::clicked, this, &AccumulatorLab::run);
    connect(m_cancel, &QPushButton::clicked, this, &AccumulatorLab::cancel);
    setKRange(k_kLo, k_kHi);
    redraw();
    updateControls();
    resize(1240, 760);  // fits a 1280 × 800 screen with its frame
}

AccumulatorLab::~AccumulatorLab() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
}

// ---- settings ------------------------------------------------------------------------------------

AccumulatorLab::Settings AccumulatorLab::settings() const {
    Settings s;
    for (int i = 0; i < m_formatBoxes.size(); ++i)
        if (m_formatBoxes[i]->isChecked()) s.formats << k_labFormats[i];
    for (int i = 0; i < m_modelBoxes.size(); ++i)
        if (m_modelBoxes[i]->isChecked()) s.models << k_models[i];
    s.bits = m_bits->value();
    s.promoteEvery = m_promoteEvery->value();
    s.seed = m_seed->value();
    s.size = m_size->value();
    s.ks = m_ks;
    return s;
}

void AccumulatorLab::setOperandFormats(const QList<Format>& formats) {
    for (int i = 0; i < m_formatBoxes.size(); ++i) m_formatBoxes[i]->setChecked(formats.contains(k_labFormats[i]));
}

void AccumulatorLab::setModels(const QList<AccumulateModel>& models) {
    for (int i = 0; i < m_modelBoxes.size(); ++i) m_modelBoxes[i]->setChecked(models.contains(k_models[i]));
}

void AccumulatorLab::setBits(int bits) { m_bits->setValue(bits); }
void AccumulatorLab::setPromoteEvery(int n) { m_promoteEvery->setValue(n); }
void AccumulatorLab::setSeed(int seed) { m_seed->setValue(seed); }
void AccumulatorLab::setMatrixSize(int size) { m_size->setValue(size); }

void AccumulatorLab::setKRange(int lo, int hi) {
    m_ks.clear();
    for (int k = std::max(1, lo); k <= hi; k *= 2) m_ks << k;
    QStringList shown;
    for (int k : m_ks) shown << QString::number(k);
    if (shown.size() > 3) shown = QStringList{shown[0], shown[1], QStringLiteral("…"), shown.back()};
    m_kText->setText(tr("K: %1 (powers of two)").arg(shown.join(QStringLiteral(", "))));
    m_kText->setToolTip(tr("The inner dimension: how many products each output adds."));
    m_plot->setXRange(std::log2(double(m_ks.isEmpty() ? lo : m_ks.front())) - 0.25,
                      std::log2(double(m_ks.isEmpty() ? hi : m_ks.back())) + 0.25);
}

AccumulateParams AccumulatorLab::paramsFor(AccumulateModel m, int bits, int promoteEvery) {
    AccumulateParams p;
    p.model = m;
    p.bits = bits;
    p.promote_every = promoteEvery;
    return p;
}

QString AccumulatorLab::seriesName(Format f, const AccumulateParams& p) {
    const QString head = formatName(f) + QStringLiteral(" · ") + modelName(p.model);
    switch (p.model) {
        case AccumulateModel::exact: return head + tr(" (FP32 sum)");
        case AccumulateModel::fp8_fast: return head + tr(" (%1 bits)").arg(p.bits);
        case AccumulateModel::promote: return head + tr(" (%1 bits, FP32 every %2)").arg(p.bits).arg(p.promote_every);
        case AccumulateModel::bits: return head + tr(" (%1-bit register)").arg(p.bits);
    }
    return head;
}

void AccumulatorLab::updateControls() {
    const bool running = isRunning();
    bool usesBits = false, promotes = false;
    for (int i = 0; i < m_modelBoxes.size(); ++i) {
        if (!m_modelBoxes[i]->isChecked()) continue;
        usesBits = usesBits || k_models[i] != AccumulateModel::exact;
        promotes = promotes || k_models[i] == AccumulateModel::promote;
    }
    for (QCheckBox* b : m_formatBoxes + m_modelBoxes) b->setEnabled(!running);
    m_bits->setEnabled(!running && usesBits);
    m_promoteEvery->setEnabled(!running && promotes);
    m_seed->setEnabled(!running);
    m_size->setEnabled(!running);
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
}

// ---- the computation -----------------------------------------------------------------------------

bool AccumulatorLab::run() {
    if (isRunning()) return false;
    const Settings s = settings();
    if (s.formats.isEmpty() || s.models.isEmpty() || s.ks.isEmpty()) {
        m_messages->showMessage(MessageBar::Kind::warning, tr("Tick at least one operand format and one model."));
        return false;
    }
    QList<Series> series;
    try {
        for (Format f : s.formats)
            for (AccumulateModel m : s.models) {
                series << Series{f, paramsFor(m, s.bits, s.promoteEvery)};
                validate(series.back().params);
            }
    } catch (const std::exception& e) {
        m_messages->showMessage(MessageBar::Kind::error, QString::fromStdString(e.what()));
        return false;
    }
    m_messages->hide();
    m_series = series;
    m_points.clear();
    m_incoming.clear();
    m_error.clear();
    m_table->setRowCount(0);
    m_plot->removeAllSeries();
    for (const Series& line : m_series)
        m_plot->addLine(seriesName(line.format, line.params), modelColour(line.params.model),
                        formatWidth(int(s.formats.indexOf(line.format))), formatPen(int(s.formats.indexOf(line.format))));
    fillKey();
    m_planned = static_cast<std::size_t>(m_series.size()) * static_cast<std::size_t>(s.ks.size());
    m_progress->setRange(0, int(m_planned));
    m_progress->setValue(0);
    m_stop = false;
    m_done = false;
    const std::vector<int> ks(s.ks.begin(), s.ks.end());
    const std::uint64_t seed = static_cast<std::uint64_t>(s.seed);
    const int size = s.size;
    const std::vector<Series> lines(m_series.begin(), m_series.end());
    // The thread reads only its copies and writes only m_incoming and m_error, under m_lock. A
    // start the system refuses (a process or memory limit: std::system_error) is said in the
    // message bar, not std::terminate.
    auto work = [this, ks, seed, size, lines] {
        try {
            for (int k : ks) {
                RandomGemm point(seed, size, size, k);  // one operand pair and FP64 reference per K
                for (const Series& line : lines) {
                    if (m_stop) break;
                    const LabPoint p{line.format, line.params, k, point.error(line.format, line.params)};
                    std::lock_guard g(m_lock);
                    m_incoming.push_back(p);
                }
                if (m_stop) break;
            }
        } catch (const std::exception& e) {
            std::lock_guard g(m_lock);
            m_error = QString::fromStdString(e.what());
        }
        m_done = true;
    };
    try {
        m_thread = std::thread(std::move(work));
    } catch (const std::exception& e) {  // system_error, or bad_alloc under a memory limit
        const QString error = tr("The system refused to start the computation's thread (%1); close other programs "
                                 "and run it again.").arg(QString::fromLocal8Bit(e.what()));
        m_messages->showMessage(MessageBar::Kind::error, error);
        updateControls();
        emit runFailed(error);
        return false;
    }
    m_timer.start();
    redraw();
    updateControls();
    return true;
}

void AccumulatorLab::cancel() {
    if (isRunning()) m_stop = true;
}

void AccumulatorLab::setPresentationScale(double s) { m_plot->setFontScale(s); }

void AccumulatorLab::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange) fitToFont();
}

void AccumulatorLab::fitToFont() {
    // The controls' column: 220 px in the desktop's font, wider as the font grows (a little less
    // than it: its labels and boxes have room, and a 1240 px window keeps the chart's key and the table).
    m_controls->setFixedWidth(static_cast<int>(220 * std::pow(font().pointSizeF() / QApplication::font().pointSizeF(), 0.85)));
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    // Wide enough for its five columns and a scroll bar: no column cut off at the default size.
    m_table->setMinimumWidth(
        m_table->fontMetrics().horizontalAdvance(QStringLiteral("E4M3 · fp8-fast · 16384 · Max rel. error · 9.99e-05 · ")) + 60);
}

void AccumulatorLab::closeEvent(QCloseEvent* e) {
    cancel();  // a hidden window has no one to show the rest to; drain() still finishes the run
    QWidget::closeEvent(e);
}

void AccumulatorLab::drain() {
    const bool done = m_done.load();  // read before draining: no point can arrive after it is set
    std::vector<LabPoint> fresh;
    QString error;
    {
        std::lock_guard g(m_lock);
        fresh.swap(m_incoming);
        error = m_error;
    }
    for (const LabPoint& p : fresh) {
        int series = 0;
        while (series < m_series.size() &&
               !(m_series[series].format == p.format && m_series[series].params.model == p.params.model))
            ++series;
        m_points.push_back(p);
        addToTable(p, series);
    }
    if (!fresh.empty()) {
        m_progress->setValue(int(m_points.size()));
        redraw();
    }
    if (!done) return;
    m_timer.stop();
    m_thread.join();
    const bool cancelled = m_points.size() < m_planned;
    redraw();
    updateControls();
    if (!error.isEmpty()) {
        m_messages->showMessage(MessageBar::Kind::error, error);
        emit runFailed(error);
    }
    emit runFinished(cancelled);
}

// ---- the table and the chart ---------------------------------------------------------------------

void AccumulatorLab::addToTable(const LabPoint& p, int series) {
    // Rows grouped by line, K ascending within it: a line of the chart reads down the table.
    int row = 0;
    while (row < m_table->rowCount()) {
        const int s = m_table->item(row, formatColumn)->data(Qt::UserRole + 1).toInt();
        const int k = m_table->item(row, kColumn)->data(Qt::UserRole).toInt();
        if (s > series || (s == series && k > p.k)) break;
        ++row;
    }
    m_table->insertRow(row);
    const Qt::Alignment left = Qt::AlignLeft, right = Qt::AlignRight;
    auto* format = cell(formatName(p.format), int(p.format), left);
    format->setData(Qt::UserRole + 1, series);
    if (series < m_plot->seriesCount()) format->setIcon(swatch(modelColour(p.params.model)));
    format->setToolTip(series < m_series.size() ? seriesName(m_series[series].format, m_series[series].params) : QString());
    m_table->setItem(row, formatColumn, format);
    m_table->setItem(row, modelColumn, cell(modelName(p.params.model), int(p.params.model), left));
    m_table->setItem(row, kColumn, cell(QString::number(p.k), p.k, right));
    m_table->setItem(row, maxColumn, cell(errorText(p.error.max), p.error.max, right));
    m_table->setItem(row, meanColumn, cell(errorText(p.error.mean), p.error.mean, right));
}

void AccumulatorLab::setQuotedK(int k) {
    m_quotedK = k;
    redraw();
}

void AccumulatorLab::redraw() {
    QList<QList<QPointF>> lines(m_series.size());
    double lo = INFINITY, hi = 0;
    int zeros = 0, nonFinite = 0, largestK = 0;
    for (const LabPoint& p : m_points) {
        int s = 0;
        while (s < m_series.size() && !(m_series[s].format == p.format && m_series[s].params.model == p.params.model)) ++s;
        if (s == m_series.size()) continue;
        lines[s].append(QPointF(std::log2(double(p.k)), p.error.max));
        largestK = std::max(largestK, p.k);
        if (p.error.max == 0) ++zeros;
        else if (!std::isfinite(p.error.max)) ++nonFinite;
        else lo = std::min(lo, p.error.max), hi = std::max(hi, p.error.max);
    }
    for (int s = 0; s < lines.size() && s < m_plot->seriesCount(); ++s) m_plot->setPoints(s, lines[s]);
    if (hi > 0) m_plot->setYRange(lo, hi);
    else m_plot->setYRange(1e-8, 1e-1);

    QStringList note;
    if (m_points.empty() && !isRunning()) note << tr("Press Run: the default settings take about a second.");
    if (!isRunning() && m_points.size() < m_planned)
        note << tr("Cancelled after %1 of %2 points.").arg(m_points.size()).arg(m_planned);
    if (zeros > 0)
        note << (zeros == 1 ? tr("1 point had zero error") : tr("%1 points had zero error").arg(zeros)) +
                    tr(" (the model's sum equals the FP64 one): a log axis cannot show 0, so the chart leaves it out "
                       "and the table lists it as 0.");
    if (nonFinite > 0)
        note << (nonFinite == 1 ? tr("1 point gave inf or NaN") : tr("%1 points gave inf or NaN").arg(nonFinite)) +
                    tr(": not drawn, listed in the table.");
    // The largest error of the first four lines at K, each named; the lesson's K first where it has points.
    const auto errorsAt = [this](int k) {
        QStringList at;
        for (const LabPoint& p : m_points)
            if (p.k == k && at.size() < 4) at << formatName(p.format) + QLatin1Char(' ') + modelName(p.params.model) + QLatin1Char(' ') + errorText(p.error.max);
        return at.join(QStringLiteral(", ")) + (m_series.size() > 4 ? QStringLiteral(", … (all in the table)") : QString());
    };
    const bool quoted = m_quotedK > 0 && m_quotedK != largestK &&
                        std::any_of(m_points.begin(), m_points.end(), [this](const LabPoint& p) { return p.k == m_quotedK; });
    if (quoted) note << tr("At K = %1 the largest error is: %2; at K = %3: %4.").arg(m_quotedK).arg(errorsAt(m_quotedK)).arg(largestK).arg(errorsAt(largestK));
    else if (largestK > 0) note << tr("At K = %1 the largest error is: %2.").arg(largestK).arg(errorsAt(largestK));
    m_note->setText(note.join(QLatin1Char(' ')));
}

// Up to six lines: each named in full ("E4M3 · fp8-fast (14 bits)"). More: a key by colour (the
// model) and by line (the format), which stays two short rows however many lines there are.
void AccumulatorLab::fillKey() {
    auto pen = [](const QColor& c, int formatOrder) {
        QPen p(c, formatWidth(formatOrder), formatPen(formatOrder));
        p.setCapStyle(Qt::FlatCap);
        return p;
    };
    QList<Format> formats;  // in order of first use: a format's pen style is its place here (run())
    QList<AccumulateModel> models;
    for (const Series& line : m_series) {
        if (!formats.contains(line.format)) formats << line.format;
        if (!models.contains(line.params.model)) models << line.params.model;
    }
    QList<LineKey::Entry> entries;
    if (m_series.size() <= 6) {
        for (const Series& line : m_series)
            entries << LineKey::Entry{pen(modelColour(line.params.model), int(formats.indexOf(line.format))),
                                      seriesName(line.format, line.params)};
    } else {
        entries << LineKey::Entry{QPen(Qt::NoPen), tr("Colour = model:")};
        for (AccumulateModel m : models) {
            const Series* line = &*std::find_if(m_series.begin(), m_series.end(),
                                                [m](const Series& l) { return l.params.model == m; });
            const QString name = seriesName(line->format, line->params);
            entries << LineKey::Entry{pen(modelColour(m), 0), name.mid(name.indexOf(QStringLiteral(" · ")) + 3)};
        }
        entries << LineKey::Entry{QPen(Qt::NoPen), tr("Line = operand format:")};
        for (int i = 0; i < formats.size(); ++i)
            entries << LineKey::Entry{pen(palette().color(QPalette::WindowText), i), formatName(formats[i])};
    }
    m_key->setEntries(entries);
}

QStringList AccumulatorLab::keyTexts() const {
    QStringList out;
    for (const LineKey::Entry& e : m_key->entries()) out << e.text;
    return out;
}

QString AccumulatorLab::note() const { return m_note->text(); }

}  // namespace mpx::ui
