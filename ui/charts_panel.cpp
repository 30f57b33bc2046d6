// ChartsPanel: six PlotWidgets over one RecordStore, one shared step range.
#include <algorithm>
#include "ui/charts_panel.hpp"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSlider>
#include <QToolTip>
#include <cmath>

#include "app/gui/config_bridge.hpp"
#include "ui/concepts.hpp"
#include "ui/run_style.hpp"

namespace mpx::ui {
namespace {

using gui::Metric;

double niceCeil(double v) {
    if (v <= 10) return 10;
    const double mag = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (m * mag >= v) return m * mag;
    return 10 * mag;
}

QString number(double v) { return QString::number(v, 'g', 6); }

constexpr double k_min_span = 10;  // steps: the closest zoom

}  // namespace

QIcon swatch(const QColor& c, int size) {
    QPixmap pm(size, size);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setBrush(c);
    p.setPen(c.darker(120));
    p.drawRoundedRect(QRectF(0.5, 0.5, size - 1, size - 1), 2, 2);
    return QIcon(pm);
}

ChartsPanel::ChartsPanel(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(2);

    auto* bar = new QHBoxLayout;
    bar->setSpacing(10);
    m_legendLayout = new QGridLayout;
    m_legendLayout->setHorizontalSpacing(14);
    m_legendLayout->setVerticalSpacing(0);
    bar->addLayout(m_legendLayout);
    bar->addStretch(1);
    m_logLoss = new QCheckBox(tr("Log loss"));
    m_logLoss->setToolTip(tr("Show the loss on a logarithmic axis."));
    bar->addWidget(m_logLoss);
    auto* smoothLabel = new QLabel(tr("Smoothing"));
    smoothLabel->setToolTip(concepts::smoothing());
    bar->addWidget(smoothLabel);
    m_smoothing = new QSlider(Qt::Horizontal);
    m_smoothing->setRange(0, 99);
    m_smoothing->setValue(60);
    m_smoothing->setFixedWidth(110);
    m_smoothing->setToolTip(concepts::smoothing());
    bar->addWidget(m_smoothing);
    m_zoomHint = new QLabel;
    m_zoomHint->setStyleSheet(QStringLiteral("color: #666"));
    bar->addWidget(m_zoomHint);
    auto* resetZoomButton = new QPushButton(tr("Reset zoom"));
    resetZoomButton->setToolTip(tr("Follow the whole run again (or double-click a chart). Wheel zooms, "
                                   "dragging pans; all charts share the step axis."));
    bar->addWidget(resetZoomButton);
    outer->addLayout(bar);

    m_area = new QWidget;
    auto* grid = new QGridLayout(m_area);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(4);
    const QString titles[k_chart_count] = {tr("Loss"), tr("Loss scale (log₂) &nbsp;<span style='color:#c0392b'>◆</span> skipped step &nbsp;▲ grew"),
                                           tr("Gradient underflow"), tr("Overflows per step"),
                                           tr("Throughput (smoothed)"), tr("Memory by category")};
    for (int i = 0; i < k_chart_count; ++i) {
        auto* p = new PlotWidget(titles[i]);
        p->setMinimumSize(280, 170);
        m_plots[i] = p;
        grid->addWidget(p, i / 2, i % 2);
        if (static_cast<ChartId>(i) == ChartId::memory) continue;
        p->setXTitle(tr("step"));
        const auto id = static_cast<ChartId>(i);
        connect(p, &PlotWidget::xRangeRequested, this, [this](double a, double b) { setView(a, b, false); });
        connect(p, &PlotWidget::resetRequested, this, &ChartsPanel::resetZoom);
        connect(p, &PlotWidget::hovered, this, [this, id](double x, const QPoint& g) { showHover(id, x, g); });
        connect(p, &PlotWidget::plotResized, this, [this] { drawTimeCharts(); });
    }
    plot(ChartId::scale)->setYScale(PlotWidget::YScale::log2);
    plot(ChartId::underflow)->setYLabelFormat(QStringLiteral("%.3g%%"));
    plot(ChartId::overflow)->setYLabelFormat(QStringLiteral("%.0f"));
    plot(ChartId::throughput)->setYLabelFormat(QStringLiteral("%.0f"));
    plot(ChartId::underflow)->setYTitle(tr("% of gradient values"));
    plot(ChartId::overflow)->setYTitle(tr("values → ±inf"));
    plot(ChartId::throughput)->setYTitle(tr("steps/s (alone)"));
    plot(ChartId::memory)->setToolTip(concepts::memory());
    for (int r = 0; r < 3; ++r) grid->setRowStretch(r, 1);
    outer->addWidget(m_area, 1);

    connect(m_logLoss, &QCheckBox::toggled, this, [this](bool on) {
        plot(ChartId::loss)->setYScale(on ? PlotWidget::YScale::log10 : PlotWidget::YScale::linear);
        drawTimeCharts();
    });
    connect(m_smoothing, &QSlider::valueChanged, this, [this] { drawTimeCharts(); });
    connect(resetZoomButton, &QPushButton::clicked, this, &ChartsPanel::resetZoom);
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        rebuildSeries();
        m_cursor = std::nan("");
        resetZoom();
    });
    connect(m_store, &gui::RecordStore::stepsRecorded, this, &ChartsPanel::refresh);
}

void ChartsPanel::rebuildSeries() {
    for (int i = 0; i < k_chart_count; ++i)
        if (static_cast<ChartId>(i) != ChartId::memory) m_plots[i]->removeAllSeries();
    for (QCheckBox* b : m_runBoxes) delete b;
    m_runBoxes.clear();
    m_series.clear();
    const auto session = m_store->session();
    if (!session) return;
    // Raw loss lines first, so every smoothed line is drawn over them.
    for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
        QColor faint = runColour(r);
        faint.setAlpha(70);
        RunSeries s;
        s.lossRaw = plot(ChartId::loss)->addLine(session->runs[r].label, faint, 1.0);
        m_series.push_back(s);
    }
    for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
        const QString label = session->runs[r].label;
        const QColor c = runColour(r);
        RunSeries& s = m_series[r];
        s.lossSmooth = plot(ChartId::loss)->addLine(label, c, 2.0);
        s.scale = plot(ChartId::scale)->addLine(label, c, 2.0);
        s.underflow = plot(ChartId::underflow)->addLine(label, c, 1.6);
        s.overflow = plot(ChartId::overflow)->addLine(label, c, 1.6);
        s.throughput = plot(ChartId::throughput)->addLine(label, c, 1.6);
        auto* box = new QCheckBox(label);
        box->setChecked(true);
        box->setIcon(swatch(c, 14));
        box->setToolTip(concepts::run(label));
        QFont f = box->font();
        f.setBold(true);
        box->setFont(f);
        connect(box, &QCheckBox::toggled, this, [this] { drawTimeCharts(); });
        m_legendLayout->addWidget(box, r / 4, r % 4);  // four runs to a row
        m_runBoxes << box;
    }
    // Markers last: on top of every line.
    for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
        const QColor c = runColour(r);
        m_series[r].skips = plot(ChartId::scale)->addMarkers(tr("skipped"), c, QColor(0xc0, 0x39, 0x2b),
                                                             PlotWidget::Marker::diamond, 9);
        m_series[r].grows = plot(ChartId::scale)->addMarkers(tr("grew"), c.lighter(130), c.darker(140),
                                                             PlotWidget::Marker::triangle, 7);
    }
}

bool ChartsPanel::runVisible(int run) const {
    return run < m_runBoxes.size() && m_runBoxes[run]->isChecked();
}

int ChartsPanel::rawLossSeries(int run) const { return m_series.at(static_cast<std::size_t>(run)).lossRaw; }
int ChartsPanel::scaleSeries(int run) const { return m_series.at(static_cast<std::size_t>(run)).scale; }
int ChartsPanel::skipMarkerSeries(int run) const { return m_series.at(static_cast<std::size_t>(run)).skips; }

void ChartsPanel::setLossLogScale(bool on) { m_logLoss->setChecked(on); }
bool ChartsPanel::lossLogScale() const { return m_logLoss->isChecked(); }
void ChartsPanel::setSmoothing(double s) { m_smoothing->setValue(static_cast<int>(std::lround(s * 100))); }
double ChartsPanel::smoothing() const { return m_smoothing->value() / 100.0; }

void ChartsPanel::updateFollowRange() {
    const auto session = m_store->session();
    const double steps = static_cast<double>(m_store->steps());
    double x1 = niceCeil(std::max(steps, 1.0));
    if (session && session->totalSteps > 0) x1 = std::min(x1, static_cast<double>(session->totalSteps));
    m_x0 = 0;
    m_x1 = std::max(x1, k_min_span);
}

void ChartsPanel::setView(double x0, double x1, bool follow) {
    m_follow = follow;
    if (follow) {
        updateFollowRange();
    } else {
        const auto session = m_store->session();
        const double limit = std::max<double>(
            {k_min_span, static_cast<double>(m_store->steps()), session ? static_cast<double>(session->totalSteps) : 0.0});
        double span = std::clamp(x1 - x0, k_min_span, limit * 1.1);
        x0 = std::clamp(x0, -0.05 * span, limit - 0.5 * span);
        m_x0 = x0;
        m_x1 = x0 + span;
    }
    m_zoomHint->setText(m_follow ? QString() : tr("zoomed: steps %1–%2").arg(std::llround(m_x0)).arg(std::llround(m_x1)));
    drawTimeCharts();
    emit viewChanged();
}

void ChartsPanel::resetZoom() { setView(0, 0, true); }
void ChartsPanel::zoomTo(double x0, double x1) { setView(x0, x1, false); }

void ChartsPanel::focusStep(qint64 step) {
    const double span = m_follow ? std::max(200.0, (m_x1 - m_x0) / 10) : (m_x1 - m_x0);
    m_cursor = static_cast<double>(step);
    setView(static_cast<double>(step) - span / 2, static_cast<double>(step) + span / 2, false);
}

void ChartsPanel::refresh() {
    if (m_follow) updateFollowRange();
    drawTimeCharts();
    drawMemory();
}

void ChartsPanel::drawTimeCharts() {
    const int runs = static_cast<int>(m_series.size());
    if (runs != m_store->runCount()) return;
    const double x0 = m_x0, x1 = m_x1;
    const double smooth = smoothing();
    const bool log_loss = lossLogScale();
    for (int i = 0; i < k_chart_count; ++i)
        if (static_cast<ChartId>(i) != ChartId::memory) {
            m_plots[i]->setXRange(x0, x1);
            m_plots[i]->setCursorStep(m_cursor);
        }
    // One pixel column per two pixels: a min/max pair per column is still a point per pixel, and
    // Qt Charts' cost grows with every point it strokes.
    auto columns = [this](ChartId c) { return std::max(16, plot(c)->plotWidth() / 2); };
    // Y ranges come from the points drawn, so an axis always fits what is on screen.
    struct Range {
        double lo = INFINITY, hi = -INFINITY;
        void add(const QList<QPointF>& pts, bool positiveOnly = false) {
            for (const QPointF& p : pts)
                if (!positiveOnly || p.y() > 0) lo = std::min(lo, p.y()), hi = std::max(hi, p.y());
        }
        bool valid() const { return lo <= hi; }
    } loss, scale, under, over, tput;
    QList<QPointF> pts;
    auto put = [&](ChartId c, int id, bool visible, Range* range) {
        plot(c)->setSeriesVisible(id, visible);
        if (visible && range) range->add(pts, c == ChartId::loss && log_loss);
        plot(c)->setPoints(id, visible ? pts : QList<QPointF>{});
        pts.clear();
    };
    for (int r = 0; r < runs; ++r) {
        const gui::RunHistory& h = m_store->history(r);
        const RunSeries& s = m_series[static_cast<std::size_t>(r)];
        const bool vis = runVisible(r);
        h.decimate(Metric::loss, gui::Reduce::envelope, x0, x1, columns(ChartId::loss), pts);
        put(ChartId::loss, s.lossRaw, vis, &loss);
        if (smooth > 0) h.smoothed(Metric::loss, smooth, x0, x1, columns(ChartId::loss), pts);
        put(ChartId::loss, s.lossSmooth, vis && smooth > 0, nullptr);

        h.decimate(Metric::lossScale, gui::Reduce::envelope, x0, x1, columns(ChartId::scale), pts);
        put(ChartId::scale, s.scale, vis, &scale);
        gui::decimateMarkers(m_store->skips(r), x0, x1, plot(ChartId::scale)->plotWidth() / 4, pts);
        put(ChartId::scale, s.skips, vis, nullptr);
        gui::decimateMarkers(m_store->grows(r), x0, x1, plot(ChartId::scale)->plotWidth() / 4, pts);
        put(ChartId::scale, s.grows, vis, nullptr);

        h.decimate(Metric::underflow, gui::Reduce::envelope, x0, x1, columns(ChartId::underflow), pts);
        for (QPointF& p : pts) p.setY(p.y() * 100);
        put(ChartId::underflow, s.underflow, vis, &under);
        h.decimate(Metric::overflow, gui::Reduce::max, x0, x1, columns(ChartId::overflow), pts);
        put(ChartId::overflow, s.overflow, vis, &over);
        // Step times are noisy (other processes share the cores): an EMA over ~10 steps.
        h.smoothed(Metric::throughput, 0.9, x0, x1, columns(ChartId::throughput), pts);
        put(ChartId::throughput, s.throughput, vis, &tput);
    }
    if (loss.valid()) {
        const double pad = log_loss ? 0 : (loss.hi - loss.lo) * 0.05;
        plot(ChartId::loss)->setYRange(log_loss ? loss.lo : std::max(0.0, loss.lo - pad), loss.hi + pad);
    }
    if (scale.valid()) plot(ChartId::scale)->setYRange(scale.lo / 2, scale.hi * 2);
    // A share in percent: headroom above the highest value, but never past 100 %.
    plot(ChartId::underflow)->setYRange(0, under.valid() && under.hi > 0 ? std::min(100.0, under.hi * 1.1) : 1);
    plot(ChartId::overflow)->setYRange(0, std::max(5.0, over.valid() ? over.hi * 1.1 : 0.0));
    plot(ChartId::throughput)->setYRange(0, tput.valid() && tput.hi > 0 ? tput.hi * 1.1 : 1);
}

void ChartsPanel::drawMemory() {
    const auto session = m_store->session();
    if (!session || m_store->steps() == 0) return;
    QStringList categories;
    double largest = 0;
    for (int r = 0; r < m_store->runCount(); ++r) {
        categories << session->runs[static_cast<std::size_t>(r)].label;
        largest = std::max(largest, static_cast<double>(m_store->memory(r).total()));
    }
    const bool mib = largest >= 1024.0 * 1024.0;
    const double unit = mib ? 1024.0 * 1024.0 : 1024.0;
    QList<PlotWidget::BarSet> sets;
    for (int c = 0; c < gui::k_memory_categories; ++c) {
        PlotWidget::BarSet s{gui::memoryCategoryName(c), memoryColour(c), {}};
        for (int r = 0; r < m_store->runCount(); ++r)
            s.values << static_cast<double>(m_store->memory(r).bytes[static_cast<std::size_t>(c)]) / unit;
        sets << s;
    }
    plot(ChartId::memory)->setBars(categories, sets, mib ? tr("MiB") : tr("KiB"));
}

QString ChartsPanel::hoverText(ChartId c, long long step) const {
    const auto session = m_store->session();
    if (!session) return {};
    QString explain;
    Metric m = Metric::loss;
    switch (c) {
        case ChartId::loss: m = Metric::loss; break;
        case ChartId::scale: m = Metric::lossScale; explain = concepts::lossScale(); break;
        case ChartId::underflow: m = Metric::underflow; explain = concepts::underflow(); break;
        case ChartId::overflow: m = Metric::overflow; explain = concepts::overflow(); break;
        case ChartId::throughput: m = Metric::throughput; explain = concepts::throughput(); break;
        case ChartId::memory: return {};
    }
    QString rows;
    for (int r = 0; r < m_store->runCount(); ++r) {
        const gui::BucketStat st = m_store->history(r).at(m, step);
        const double k = m == Metric::underflow ? 100 : 1;
        QString value;
        if (st.last < st.first && !st.valid) value = tr("—");
        else if (!st.valid) value = m == Metric::loss ? tr("NaN/inf") : tr("—");
        else if (st.first == st.last || st.min == st.max) value = number(st.min * k);
        else value = tr("%1 … %2").arg(number(st.min * k), number(st.max * k));
        if (m == Metric::underflow && st.valid) value += QLatin1Char('%');
        rows += QStringLiteral("<tr><td><span style='color:%1'>■</span> %2</td><td align=right>&nbsp;%3</td></tr>")
                    .arg(runColour(r).name(), session->runs[static_cast<std::size_t>(r)].label.toHtmlEscaped(), value);
    }
    const gui::BucketStat any = m_store->runCount() ? m_store->history(0).at(m, step) : gui::BucketStat{};
    const QString where = any.last > any.first ? tr("steps %1–%2").arg(any.first).arg(any.last) : tr("step %1").arg(step);
    QString html = QStringLiteral("<b>%1</b><table>%2</table>").arg(where, rows);
    if (!explain.isEmpty()) html += QStringLiteral("<p style='color:#666; white-space:normal'>%1</p>").arg(explain);
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
    QToolTip::showText(globalPos + QPoint(14, 10), hoverText(c, step), plot(c));
}

}  // namespace mpx::ui
