// ChartsPanel: a PlotWidget per row of the chart table over one RecordStore, one shared step range.
// This file builds the panel and lays it out (the tiles' grid, the run legend, the titles, the step
// range all charts share); charts_panel_draw.cpp draws what the store holds into the plots.
// Rule: every chart shows the same steps [m_x0, m_x1]; a zoom or pan of one goes through setView.
#include <algorithm>
#include "ui/panels/charts_panel.hpp"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QStyle>
#include <QSlider>
#include <cmath>

#include "ui/kit/concepts.hpp"
#include "ui/kit/run_style.hpp"

namespace mpx::ui {
namespace {

double niceCeil(double v) {
    if (v <= 10) return 10;
    const double mag = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (m * mag >= v) return m * mag;
    return 10 * mag;
}

constexpr double k_min_span = 10;  // steps: the closest zoom
constexpr int k_chart_columns = 3;  // at most
// A tile narrower than this cuts its axis labels ("1000" read "10" at 1280×800, issue 27): below
// it the grid drops a column, and below one column's worth it scrolls.
constexpr int k_tile_min_width = 300;
constexpr int k_tile_min_height = 170;
constexpr int k_legend_columns = 4;  // runs to a legend row
// A chart a lesson names is this much taller than the rest: its lanes and its point need the room.
constexpr double k_named_height = 1.4;
// Where the viewport is short, a named chart may be this much shorter than the least tile so that
// every chart the lesson names is in view (a tile this short has no bare x title, and Qt Charts keeps
// its tick labels whole: lost-updates' three at 1280×800).
constexpr double k_named_floor = 0.75;

}  // namespace

ChartsPanel::ChartsPanel(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(2);

    auto* bar = new QHBoxLayout;
    bar->setSpacing(10);
    m_legendLayout = new QGridLayout;
    m_legendLayout->setHorizontalSpacing(14);
    m_legendLayout->setVerticalSpacing(0);
    // The legend has a row of its own: beside the controls it left a narrow window "amp / amp / amp".
    outer->addLayout(m_legendLayout);
    bar->addStretch(1);
    m_logLoss = new QCheckBox(tr("Log loss"));
    m_logLoss->setToolTip(tr("Show the training and held-out loss on a logarithmic axis."));
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
    resetZoomButton->setToolTip(tr("Follow the whole run again (or double-click a chart). Ctrl+wheel zooms, "
                                   "dragging pans; all charts share the step axis."));
    bar->addWidget(resetZoomButton);
    outer->addLayout(bar);

    m_area = new QWidget;
    m_grid = new QGridLayout(m_area);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(4);
    for (const ChartSpec& c : chartTable()) {
        const int i = static_cast<int>(c.id);
        auto* p = new PlotWidget(m_titles[i] = chartTitle(c));
        p->setMinimumSize(k_tile_min_width, k_tile_min_height);
        m_plots[i] = p;
        m_order << c.id;
        if (c.draw == Draw::stacked) {
            p->setToolTip(c.explain());
            p->setPlaceholder(memoryPlaceholder());
            continue;
        }
        p->setXTitle(tr("step"));
        p->setYTitle(chartYTitle(c));
        switch (c.axis) {
            case AxisKind::loss: break;
            case AxisKind::log2: p->setYScale(PlotWidget::YScale::log2); break;
            case AxisKind::percent: p->setYLabelFormat(QStringLiteral("%.3g%%")); break;
            case AxisKind::count: p->setYLabelFormat(QStringLiteral("%.0f")); break;
        }
        const ChartId id = c.id;
        connect(p, &PlotWidget::xRangeRequested, this, [this](double a, double b) { setView(a, b, false); });
        connect(p, &PlotWidget::resetRequested, this, &ChartsPanel::resetZoom);
        connect(p, &PlotWidget::hovered, this, [this, id](double x, const QPoint& g) { showHover(id, x, g); });
        connect(p, &PlotWidget::plotResized, this, [this] { drawTimeCharts(); });
    }
    // In a scroll area, so that a small screen scrolls the tiles rather than squeezing them or
    // widening the window past the screen.
    m_scroll = new QScrollArea;
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidgetResizable(true);
    m_scroll->setWidget(m_area);
    m_scroll->viewport()->installEventFilter(this);  // a taller or shorter viewport refits the named tiles
    layoutCharts();
    outer->addWidget(m_scroll, 1);

    connect(m_logLoss, &QCheckBox::toggled, this, [this](bool on) {
        for (const ChartSpec& c : chartTable())
            if (c.axis == AxisKind::loss)
                plot(c.id)->setYScale(on ? PlotWidget::YScale::log10 : PlotWidget::YScale::linear);
        drawTimeCharts();
    });
    connect(m_smoothing, &QSlider::valueChanged, this, [this] { drawTimeCharts(); });
    connect(resetZoomButton, &QPushButton::clicked, this, &ChartsPanel::resetZoom);
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        // A new session has no memory figures until its first step: the old session's bars go.
        if (m_store->steps() == 0) plot(ChartId::memory)->setPlaceholder(memoryPlaceholder());
        m_events.clear();
        m_logSeen = 0;
        rebuildSeries();
        layoutCharts();  // the lanes' rows are known: the named tiles refit
        m_cursor = std::nan("");
        resetZoom();
    });
    connect(m_store, &gui::RecordStore::stepsRecorded, this, &ChartsPanel::refresh);
    connect(m_store, &gui::RecordStore::scalersEdited, this, &ChartsPanel::updateRunLabels);
}

// A run whose scaler was edited live reads "amp-fp16+deepspeed ✎" in the legend: the pencil is short
// enough for four runs to a row, and the tooltip lists the edits (the event log has each one).
void ChartsPanel::updateRunLabels() {
    const auto session = m_store->session();
    if (!session) return;
    for (int r = 0; r < m_runBoxes.size() && r < m_store->runCount(); ++r) {
        const QString label = session->runs[static_cast<std::size_t>(r)].label;
        const QStringList& edits = m_store->liveEdits(r);
        if (m_runTexts.size() != m_runBoxes.size()) m_runTexts = QStringList(m_runBoxes.size(), QString());
        m_runTexts[r] = edits.isEmpty() ? label : label + QStringLiteral(" ✎");
        QString tip = concepts::run(label);
        if (!edits.isEmpty()) {
            const qsizetype shown = std::min<qsizetype>(edits.size(), 5);
            tip += QStringLiteral("\n\n✎ ") +
                   (edits.size() == 1 ? tr("Its scaler was edited live:")
                                      : tr("Its scaler was edited live %1 times; the latest:").arg(edits.size())) +
                   QStringLiteral("\n") + edits.mid(edits.size() - shown).join(QStringLiteral("\n"));
        }
        m_runBoxes[r]->setToolTip(tip);
    }
    fitRunLabels();
}

void ChartsPanel::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    layoutCharts();
    fitRunLabels();
}

bool ChartsPanel::eventFilter(QObject* o, QEvent* e) {
    if (o == m_scroll->viewport() && e->type() == QEvent::Resize) layoutCharts();
    return QWidget::eventFilter(o, e);
}

// A tile's least size grows with the classroom's text, by its square root: at × 1.6 text a tile of
// the normal size cut every title and axis title, while × 1.6 tiles left a laptop one chart across.
void ChartsPanel::layoutCharts() {
    const int spacing = m_grid->spacing();
    const double grow = std::sqrt(m_scale);
    const int tileWidth = static_cast<int>(std::lround(k_tile_min_width * grow));
    const int tileHeight = static_cast<int>(std::lround(k_tile_min_height * grow));
    // The panel's own width (the scroll area is laid out after this resize): less the margins and
    // a vertical scroll bar's room.
    const int usable = std::max(1, width() - 8 - style()->pixelMetric(QStyle::PM_ScrollBarExtent));
    const int columns = std::clamp((usable + spacing) / (tileWidth + spacing), 1, k_chart_columns);
    QList<ChartId> order;  // the lesson's charts first, in the order it names them
    for (int i = 0; i < k_chart_count; ++i)
        if (m_highlighted[i]) order << static_cast<ChartId>(i);
    std::stable_sort(order.begin(), order.end(), [this](ChartId a, ChartId b) { return m_named.indexOf(a) < m_named.indexOf(b); });
    for (int i = 0; i < k_chart_count; ++i)
        if (!m_highlighted[i]) order << static_cast<ChartId>(i);
    order.removeIf([this](ChartId c) { return m_absent[static_cast<int>(c)]; });  // a trace has no data for it
    // Where no run has a scaler the Loss scale chart is one flat line at 2^0: last, not a top slot.
    const auto session = m_store->session();
    if (session && !m_highlighted[static_cast<int>(ChartId::scale)] &&
        std::none_of(session->runs.begin(), session->runs.end(), [](const gui::RunDescription& r) { return r.hasScaler; }) &&
        order.removeOne(ChartId::scale))
        order << ChartId::scale;
    const int named = namedTileHeight(order, columns, tileHeight);
    for (int i = 0; i < k_chart_count; ++i)
        m_plots[i]->setTileMinimumSize(QSize(tileWidth, std::max(m_highlighted[i] ? named : tileHeight, m_plots[i]->barsLeastHeight())));
    if (columns == m_columns && order == m_order) return;
    m_columns = columns;
    m_order = order;
    for (int i = 0; i < k_chart_count; ++i) m_grid->removeWidget(m_plots[i]);
    for (int r = 0; r < m_grid->rowCount(); ++r) m_grid->setRowStretch(r, 0);
    for (int c = 0; c < m_grid->columnCount(); ++c) m_grid->setColumnStretch(c, 0);
    for (int i = 0; i < k_chart_count; ++i) m_plots[i]->setVisible(!m_absent[i]);
    for (int i = 0; i < m_order.size(); ++i) m_grid->addWidget(plot(m_order[i]), i / columns, i % columns);
    for (int r = 0; r * columns < m_order.size(); ++r) m_grid->setRowStretch(r, 1);
    for (int c = 0; c < columns; ++c) m_grid->setColumnStretch(c, 1);
}

// The charts a lesson names are all in view without scrolling where the viewport allows: each
// named tile k_named_height × the least tile where there is room, down to k_named_floor × it where
// there is not (three named charts on a 1280×800 laptop), its event lanes below it kept whole.
int ChartsPanel::namedTileHeight(const QList<ChartId>& order, int columns, int tileHeight) const {
    const int tallest = static_cast<int>(std::lround(tileHeight * k_named_height));
    const int floor = static_cast<int>(std::lround(tileHeight * k_named_floor));
    const int count = static_cast<int>(std::count_if(order.begin(), order.end(), [this](ChartId c) { return m_highlighted[static_cast<int>(c)]; }));
    if (count == 0 || !m_scroll) return tallest;
    // The named rows' height with each named tile h tall (bars no shorter than they need), lanes below;
    // a row the named tiles share with others is as tall as its tallest tile.
    const auto rowsHeight = [&](int h) {
        int total = 0;
        for (int first = 0; first < count; first += columns) {
            int row = 0;
            for (int c = first; c < std::min<int>(static_cast<int>(order.size()), first + columns); ++c) {
                PlotWidget* p = plot(order[c]);
                row = std::max(row, std::max(m_highlighted[static_cast<int>(order[c])] ? h : tileHeight, p->barsLeastHeight()) + p->laneRoom());
            }
            total += row + (first > 0 ? m_grid->spacing() : 0);
        }
        return total;
    };
    int h = tallest;
    while (h > floor && rowsHeight(h) > m_scroll->viewport()->height()) --h;
    return h;
}

// As many runs to a legend row as fit with their labels whole (at most k_legend_columns); only
// where one to a row is still too narrow are labels elided in the middle, where run labels differ
// ("amp-fp16+…speed"), and where two would read alike the width grows for both until they differ.
void ChartsPanel::fitRunLabels() {
    if (m_runBoxes.isEmpty() || m_runTexts.size() != m_runBoxes.size()) return;
    const int spacing = m_legendLayout->horizontalSpacing();
    const int row = std::max(0, width() - 8);
    // The box's own indicator and icon: what a box needs beside its text.
    const QCheckBox* first = m_runBoxes.front();
    const int chrome = first->style()->pixelMetric(QStyle::PM_IndicatorWidth, nullptr, first) +
                       2 * first->style()->pixelMetric(QStyle::PM_CheckBoxLabelSpacing, nullptr, first) +
                       first->iconSize().width() + 8;
    const QFontMetrics fm(m_runBoxes.front()->font());
    int widest = 0;
    for (const QString& t : m_runTexts) widest = std::max(widest, fm.horizontalAdvance(t));
    const int runs = static_cast<int>(m_runBoxes.size());
    const int fit = (row + spacing) / std::max(1, widest + chrome + spacing);
    const int columns = std::clamp(fit, 1, std::min(k_legend_columns, runs));
    if (columns != m_legendColumns) {
        m_legendColumns = columns;
        for (QCheckBox* b : m_runBoxes) m_legendLayout->removeWidget(b);
        for (int r = 0; r < runs; ++r) m_legendLayout->addWidget(m_runBoxes[r], r / columns, r % columns);
        for (int c = 0; c < k_legend_columns; ++c) m_legendLayout->setColumnStretch(c, c < columns ? 1 : 0);
    }
    const int cell = std::max(24, (row - spacing * (columns - 1)) / columns - chrome);
    std::vector<int> widths(static_cast<std::size_t>(m_runBoxes.size()), cell);
    QStringList shown;
    for (int round = 0; round < 64; ++round) {
        shown.clear();
        for (int r = 0; r < m_runBoxes.size(); ++r)
            shown << fm.elidedText(m_runTexts[r], Qt::ElideMiddle, widths[static_cast<std::size_t>(r)]);
        bool clash = false;
        for (int a = 0; a < shown.size(); ++a)
            for (int b = a + 1; b < shown.size(); ++b)
                if (shown[a] == shown[b] && m_runTexts[a] != m_runTexts[b]) {
                    clash = true;
                    widths[static_cast<std::size_t>(a)] += fm.averageCharWidth();
                    widths[static_cast<std::size_t>(b)] += fm.averageCharWidth();
                }
        if (!clash) break;
    }
    for (int r = 0; r < m_runBoxes.size(); ++r)
        if (m_runBoxes[r]->text() != shown[r]) m_runBoxes[r]->setText(shown[r]);
}

QStringList ChartsPanel::legendTexts() const {
    QStringList out;
    for (const QCheckBox* b : m_runBoxes) out << b->text();
    return out;
}

void ChartsPanel::rebuildSeries() {
    for (const ChartSpec& c : chartTable())
        if (c.draw != Draw::stacked) plot(c.id)->removeAllSeries();
    for (QCheckBox* b : m_runBoxes) delete b;
    m_runBoxes.clear();
    m_runTexts.clear();
    m_series.clear();
    for (const ChartSpec& c : chartTable())
        if (c.scaleEvents) plot(c.id)->setLanes({});
    m_lanes = {};
    const auto session = m_store->session();
    if (!session) return;
    const int runs = static_cast<int>(session->runs.size());
    m_series.assign(static_cast<std::size_t>(runs), RunSeries{});
    updateTitles();
    // In three passes so that what matters is drawn on top: faint raw lines, then every run's line,
    // then markers. A chart with scale events draws them in lanes (drawLanes), not on its lines.
    for (const ChartSpec& c : chartTable())
        if (c.draw == Draw::rawAndSmoothed)
            for (int r = 0; r < runs; ++r) {
                QColor faint = session->runs[r].style.colour;
                faint.setAlpha(70);
                m_series[r][static_cast<int>(c.id)].raw = plot(c.id)->addLine(session->runs[r].label, faint, 1.0 * m_scale);
            }
    for (int r = 0; r < runs; ++r) {
        const QString label = session->runs[r].label;
        const gui::RunStyle& style = session->runs[r].style;
        for (const ChartSpec& c : chartTable()) {
            if (c.draw == Draw::stacked) continue;
            const double width = (c.draw == Draw::rawAndSmoothed || c.scaleEvents ? 2.0 : 1.6) * m_scale;
            const int line = plot(c.id)->addLine(label, style.colour, width, style.pen);
            m_series[r][static_cast<int>(c.id)].line = line;
            // Scales are powers of two that runs often share step for step: a line's width apart
            // (closer where many runs would spread past four widths), the first run highest, so the
            // run drawn last no longer hides the others (issue 27).
            const double apart = width * std::min(1.0, 4.0 / std::max(1, runs - 1));
            if (c.scaleEvents) plot(c.id)->setSeriesOffset(line, ((runs - 1) / 2.0 - r) * apart);
        }
        auto* box = new QCheckBox(label);
        box->setChecked(true);
        box->setIcon(swatch(style, 14));
        box->setToolTip(concepts::run(label));
        QFont f = box->font();
        f.setBold(true);
        box->setFont(f);
        // Its width comes from the legend's row, not from its text: fitRunLabels elides the text.
        box->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
        box->setMinimumWidth(60);
        connect(box, &QCheckBox::toggled, this, [this] { drawTimeCharts(); });
        m_legendLayout->addWidget(box, r / k_legend_columns, r % k_legend_columns);
        m_runBoxes << box;
        m_runTexts << label;
    }
    m_legendColumns = 0;  // fitRunLabels (via updateRunLabels) lays the rows out for the width
    for (int c = 0; c < k_legend_columns; ++c) m_legendLayout->setColumnStretch(c, c < runs ? 1 : 0);
    updateRunLabels();
    for (int r = 0; r < runs; ++r) {
        const QColor colour = session->runs[r].style.colour;
        for (const ChartSpec& c : chartTable()) {
            Series& s = m_series[r][static_cast<int>(c.id)];
            if (c.draw == Draw::dots)
                s.dots = plot(c.id)->addMarkers(tr("evaluated"), colour, colour.darker(140), PlotWidget::Marker::circle, 6 * m_scale);
        }
    }
}

bool ChartsPanel::runVisible(int run) const {
    return run < m_runBoxes.size() && m_runBoxes[run]->isChecked();
}

int ChartsPanel::lineSeries(ChartId c, int run) const {
    return m_series.at(static_cast<std::size_t>(run))[static_cast<int>(c)].line;
}
int ChartsPanel::rawLossSeries(int run) const {
    return m_series.at(static_cast<std::size_t>(run))[static_cast<int>(ChartId::loss)].raw;
}
int ChartsPanel::scaleSeries(int run) const {
    return m_series.at(static_cast<std::size_t>(run))[static_cast<int>(ChartId::scale)].line;
}
QList<int> ChartsPanel::laneRuns(ChartId c) const { return m_lanes[static_cast<int>(c)].runs; }

int ChartsPanel::laneMarks(ChartId c, int run, ScaleMark kind) const {
    const Lanes& l = m_lanes[static_cast<int>(c)];
    const qsizetype lane = l.runs.indexOf(run);
    return lane < 0 ? -1 : l.marks[static_cast<std::size_t>(lane)][static_cast<std::size_t>(kind)];
}

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
        // Never past the run's steps (issue 47 item 9): a zoom out stops at [0, the last step].
        const double span = std::clamp(x1 - x0, k_min_span, limit);
        x0 = std::clamp(x0, 0.0, limit - span);
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
    readEvents();
    if (m_follow) updateFollowRange();
    updateTitles();
    drawTimeCharts();
    drawMemory();
}

void ChartsPanel::updateTitles() {
    const auto session = m_store->session();
    bool relayout = false;
    for (const ChartSpec& c : chartTable()) {
        // Scale events are keyed under the chart, beside their lanes, not by the title's symbols.
        QString title = c.scaleEvents ? chartPlainTitle(c.id) : chartTitle(c);
        // Evaluation charts say how often they are measured, or that nothing is: step 0 always
        // evaluates, so no value there means the data has none (accuracy of a regression).
        if (c.draw == Draw::dots && session) {
            bool any = false;
            for (int r = 0; r < m_store->runCount(); ++r) any = any || m_store->history(r).at(c.metric, 0).valid;
            if (session->config.eval_every < 1) title = tr("%1 · off (eval_every 0)").arg(title);
            else if (m_store->steps() > 0 && !any) title = tr("%1 · none for this data set").arg(title);
            else title = tr("%1 · every %2 steps").arg(title).arg(session->config.eval_every);
        }
        // A replayed trace holds no measure of this chart (held-out data, memory, throughput ...):
        // the chart goes (layoutCharts), rather than take a tile to say so.
        bool absent = false;
        if (session && m_store->showsOutsideSession() && m_store->steps() > 0) {
            bool any = false;
            double lo = 0, hi = 0;
            for (int r = 0; r < m_store->runCount(); ++r)
                any = any || (c.draw == Draw::stacked ? m_store->memory(r).total() > 0
                                                      : m_store->history(r).range(c.metric, 0, static_cast<double>(m_store->steps()), lo, hi));
            absent = !any;
        }
        if (absent != m_absent[static_cast<int>(c.id)]) {
            m_absent[static_cast<int>(c.id)] = absent;
            relayout = true;
        }
        if (highlighted(c.id)) title = QStringLiteral("<span style='color:#d35400'>★</span> ") + title;
        if (title != m_titles[static_cast<int>(c.id)]) plot(c.id)->setTitle(m_titles[static_cast<int>(c.id)] = title);
    }
    if (relayout) layoutCharts();
}

void ChartsPanel::setPresentationScale(double s) {
    if (s == m_scale) return;
    m_scale = s;
    for (PlotWidget* p : m_plots) p->setFontScale(s);
    layoutCharts();
    if (m_store->session()) rebuildSeries();
    refresh();
}

void ChartsPanel::setHighlighted(const QList<ChartId>& charts) {
    m_named = charts;
    for (int i = 0; i < k_chart_count; ++i) {
        const bool on = charts.contains(static_cast<ChartId>(i));
        m_highlighted[i] = on;
        m_plots[i]->setHighlighted(on);
    }
    layoutCharts();
    updateTitles();
}

}  // namespace mpx::ui
