#include "ui/views/trace_view.hpp"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

#include "engine/base/error.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/session/config_bridge.hpp"

namespace mpx::ui {
namespace {

constexpr double k_fp16_max = 65504.0;
constexpr int k_maxLinePoints = 5000;  // longer traces are drawn every n-th step (markers: all)

QString text(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

TraceView::TraceView(QWidget* parent) : QWidget(parent) {
    setWindowTitle(tr("Trace replay"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("A step overflows when its loss scale (orange) is above the frontier (grey): the "
                                "largest scale its gradients could take without passing FP16's 65504. Change the "
                                "rule and watch which steps it would have skipped."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* controls = new QHBoxLayout;
    auto* form = new QFormLayout;
    m_preset = new QComboBox(this);
    m_preset->addItems(gui::scalerPresetNames());
    m_preset->setToolTip(tr("The framework rule replayed over the trace"));
    form->addRow(tr("Scaler rule"), m_preset);
    controls->addLayout(form);
    auto* form2 = new QFormLayout;
    m_initLog2 = new QSpinBox(this);
    m_initLog2->setRange(0, 40);
    m_initLog2->setPrefix(QStringLiteral("2^"));
    m_initLog2->setToolTip(tr("The scale the rule starts from"));
    form2->addRow(tr("Initial scale"), m_initLog2);
    controls->addLayout(form2);
    auto* form3 = new QFormLayout;
    m_interval = new QSpinBox(this);
    m_interval->setRange(1, 1000000);
    m_interval->setToolTip(tr("Clean steps before the scale grows"));
    form3->addRow(tr("Growth interval"), m_interval);
    controls->addLayout(form3);
    auto* form4 = new QFormLayout;
    m_hysteresis = new QSpinBox(this);
    m_hysteresis->setRange(1, 1000);
    m_hysteresis->setToolTip(tr("Overflows absorbed before the scale backs off (1: none)"));
    form4->addRow(tr("Hysteresis"), m_hysteresis);
    controls->addLayout(form4);
    controls->addStretch(1);
    layout->addLayout(controls);

    m_plot = new PlotWidget(tr("Loss scale per step (log₂): replayed, recorded, and the overflow frontier"), this);
    m_plot->setYScale(PlotWidget::YScale::log2);
    m_plot->setXTitle(tr("step"));
    m_plot->setYTitle(tr("loss scale"));
    m_frontier = m_plot->addLine(tr("frontier 65504 / amax (no overflow below)"), QColor(0x99, 0x99, 0x99), 1.2);
    m_recorded = m_plot->addLine(tr("recorded scale"), QColor(0x00, 0x72, 0xB2), 1.6, Qt::DashLine);
    m_replayed = m_plot->addLine(tr("replayed scale"), QColor(0xD5, 0x5E, 0x00), 2.0);
    m_recordedSkips = m_plot->addMarkers(tr("recorded skip"), QColor(0x00, 0x72, 0xB2), QColor(0x00, 0x72, 0xB2),
                                         PlotWidget::Marker::triangle, 7);
    m_predictedSkips = m_plot->addMarkers(tr("predicted skip"), QColor(0xD5, 0x5E, 0x00), QColor(0x60, 0x20, 0x00),
                                          PlotWidget::Marker::diamond, 9);
    m_plot->setLegendVisible(true);
    m_plot->setMinimumHeight(320);
    layout->addWidget(m_plot, 1);

    m_verdict = new QLabel(this);
    m_verdict->setWordWrap(true);
    m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = m_verdict->font();
    bold.setBold(true);
    m_verdict->setFont(bold);
    layout->addWidget(m_verdict);
    m_counts = new QLabel(this);
    m_counts->setWordWrap(true);
    layout->addWidget(m_counts);

    presetChanged();
    connect(m_preset, &QComboBox::currentTextChanged, this, [this] { presetChanged(); });
    for (QSpinBox* box : {m_initLog2, m_interval, m_hysteresis})
        connect(box, &QSpinBox::valueChanged, this, [this] { replay(); });
    resize(1000, 640);
}

bool TraceView::openFile(const QString& path, QString* error) {
    try {
        setTrace(mpx::read_trace(path.toStdString()));
    } catch (const std::exception& e) {
        if (error) *error = text(e.what());
        return false;
    }
    setWindowTitle(tr("Trace replay — %1").arg(QFileInfo(path).fileName()));
    return true;
}

void TraceView::setTrace(mpx::Trace trace) {
    m_trace = std::move(trace);
    // The frontier and the recording do not depend on the rule.
    const std::size_t n = m_trace.steps.size();
    const std::size_t stride = std::max<std::size_t>(1, n / k_maxLinePoints);
    QList<QPointF> frontier, recorded, recordedSkips;
    for (std::size_t i = 0; i < n; ++i) {
        const mpx::TraceStep& s = m_trace.steps[i];
        if (s.skipped) recordedSkips.append({double(s.step), s.scale});
        if (i % stride) continue;
        recorded.append({double(s.step), s.scale});
        if (m_trace.amax_known && !s.censored && s.forward_nonfinite == 0 && s.amax > 0.0)
            frontier.append({double(s.step), k_fp16_max / s.amax});
    }
    m_plot->setPoints(m_frontier, frontier);
    m_plot->setPoints(m_recorded, recorded);
    m_plot->setPoints(m_recordedSkips, recordedSkips);
    m_plot->setSeriesVisible(m_frontier, m_trace.amax_known);
    if (n) m_plot->setXRange(double(m_trace.steps.front().step), double(m_trace.steps.back().step));
    replay();
}

void TraceView::presetChanged() {
    mpx::ScalerConfig c;
    try {
        c = mpx::scaler_preset(m_preset->currentText().toStdString());
    } catch (const std::exception&) {
        return;
    }
    for (QSpinBox* box : {m_initLog2, m_interval, m_hysteresis}) box->blockSignals(true);
    m_initLog2->setValue(int(std::lround(std::log2(std::max(1.0, c.init_scale)))));
    m_interval->setValue(c.growth_interval);
    m_hysteresis->setValue(c.hysteresis);
    for (QSpinBox* box : {m_initLog2, m_interval, m_hysteresis}) box->blockSignals(false);
    const bool dynamic = c.kind == mpx::ScalerKind::dynamic;
    m_interval->setEnabled(dynamic);
    m_hysteresis->setEnabled(dynamic);
    m_initLog2->setEnabled(c.kind != mpx::ScalerKind::none);
    replay();
}

mpx::ScalerConfig TraceView::scaler() const {
    mpx::ScalerConfig c = mpx::scaler_preset(m_preset->currentText().toStdString());
    if (c.kind != mpx::ScalerKind::none) c.init_scale = std::ldexp(1.0, m_initLog2->value());
    if (c.kind == mpx::ScalerKind::dynamic) {
        c.growth_interval = m_interval->value();
        c.hysteresis = m_hysteresis->value();
    }
    return c;
}

QString TraceView::verdictText() const { return m_verdict->text(); }

void TraceView::replay() {
    if (m_trace.steps.empty()) return;
    mpx::ScalerConfig c;
    try {
        c = scaler();
        mpx::validate(c);
        m_result = mpx::replay_trace(m_trace, c);
    } catch (const std::exception& e) {
        m_verdict->setText(tr("These settings are not a valid rule: %1").arg(text(e.what())));
        return;
    }
    const std::size_t n = m_result.steps.size();
    const std::size_t stride = std::max<std::size_t>(1, n / k_maxLinePoints);
    QList<QPointF> replayed, skips;
    for (std::size_t i = 0; i < n; ++i) {
        const mpx::ReplayStep& s = m_result.steps[i];
        if (s.skipped) skips.append({double(s.step), s.scale});
        if (i % stride == 0 || i + 1 == n) replayed.append({double(s.step), s.scale});
    }
    m_plot->setPoints(m_replayed, replayed);
    m_plot->setPoints(m_predictedSkips, skips);
    // The y range: every scale drawn, and the frontier where it is within 2^20 of them (a step with a
    // tiny amax would otherwise squash the picture), one power of two of margin.
    double lo = HUGE_VAL, hi = 0.0;
    for (int id : {m_recorded, m_replayed})
        for (const QPointF& p : m_plot->points(id))
            if (p.y() > 0.0 && std::isfinite(p.y())) lo = std::min(lo, p.y()), hi = std::max(hi, p.y());
    if (hi > 0.0) {
        const double scalesLo = lo, scalesHi = hi;
        for (const QPointF& p : m_plot->points(m_frontier))
            if (p.y() > 0.0 && p.y() < scalesHi * 0x1p20 && p.y() > scalesLo * 0x1p-20)
                lo = std::min(lo, p.y()), hi = std::max(hi, p.y());
        m_plot->setYRange(lo / 2.0, hi * 2.0);
    }
    m_verdict->setText(tr("Verdict (%1 rule): %2").arg(text(c.preset), text(m_result.verdict)));
    QString counts = tr("Skipped: %1 in the replay, %2 in the recording. The same overflow decision as recorded on "
                        "%3 of %4 steps. A replay is exact per step for the recorded weights; once a skip differs "
                        "from the recording, later weights differ, so over a run it is an estimate.")
                         .arg(m_result.skipped)
                         .arg(m_result.recorded_skipped)
                         .arg(m_result.identical)
                         .arg(n);
    if (!m_trace.amax_known)
        counts += tr(" This trace came from a log: it holds decisions, not gradient sizes, so there is no frontier, "
                     "and steps replayed above the recorded scale are uncertain.");
    m_counts->setText(counts);
}

}  // namespace mpx::ui
