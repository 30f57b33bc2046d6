// WhereView: per-layer counts of the snapshots into an image, skip markers from the event log.
#include "ui/views/where_view.hpp"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/compute/overflow_verdict.hpp"
#include "engine/core/step_stats.hpp"
#include "engine/precision/policy.hpp"
#include "ui/kit/concepts.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/view_canvas.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/session/trace_session.hpp"
#include "ui/views/range_bands.hpp"

namespace mpx::ui {
namespace {

const QColor k_skip(0xc0, 0x39, 0x2b);


}  // namespace

class WhereView::Canvas : public ViewCanvas<WhereView> {
public:
    explicit Canvas(WhereView* view) : ViewCanvas(view, {500, 260}, true) {
        setMouseTracking(false);
        setCursor(Qt::PointingHandCursor);
    }

protected:
    void mouseReleaseEvent(QMouseEvent* e) override {
        const QPointF pos = e->position() + geometry().topLeft();
        const QRect r = m_view->heatRect();
        const int col = m_view->columnAt(pos.x());
        if (e->button() != Qt::LeftButton || !r.contains(pos.toPoint()) || col < 0) return;
        const int layer = std::clamp(static_cast<int>((pos.y() - r.top()) * m_view->layers() / r.height()), 0, m_view->layers() - 1);
        emit m_view->cellActivated(m_view->run(), layer, m_view->columnStep(col), m_view->measure());
    }
};

WhereView::WhereView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(2);
    auto* bar = new QHBoxLayout;
    m_run = new QComboBox;
    m_run->setToolTip(tr("The run whose layers are shown."));
    m_run->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_measure = new QComboBox;
    m_measure->addItem(tr("Gradient underflow (share → 0)"));
    m_measure->addItem(tr("Overflows (count → ±inf or max)"));
    m_measure->setToolTip(concepts::underflow() + QStringLiteral("\n\n") + concepts::overflow());
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(m_run);
    bar->addWidget(new QLabel(tr("Colour")));
    bar->addWidget(m_measure);
    bar->addStretch(1);
    outer->addLayout(bar);
    m_canvas = new Canvas(this);
    outer->addWidget(m_canvas, 1);
    setToolTip(tr("Where in the network and when precision trouble happens: one row per layer (fc1 reads the "
                  "data), one column per step at which histograms were collected. The darker a cell, the more of "
                  "that layer's values were lost (became 0) or blew up (became infinity). A red ring marks a step "
                  "that was skipped, in the layer where the first infinity or NaN appeared. Click a cell to see "
                  "that layer's values in the Range view."));
    connect(m_run, &QComboBox::currentIndexChanged, this, [this] { m_canvas->update(); });
    connect(m_measure, &QComboBox::currentIndexChanged, this, [this] { m_canvas->update(); });
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        rebuildChoices();
        m_canvas->update();
    });
    connect(m_store, &gui::RecordStore::stepsRecorded, this, [this] {
        if (isVisible()) m_canvas->update();
    });
    rebuildChoices();
}

void WhereView::rebuildChoices() {
    const QSignalBlocker b(m_run);
    m_run->clear();
    m_key = {};
    m_stepsKey = {};
    const auto session = m_store->session();
    if (!session) return;
    int pick = -1, fp8 = -1;
    for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
        const auto& d = session->runs[static_cast<std::size_t>(r)];
        m_run->addItem(swatch(runStyle(session, r)), d.label, r);
        if (pick < 0 && d.spec.precision() != "fp32") pick = r;  // where the trouble is
        if (const Fp8Cast c = fp8Cast(*m_store, r, 0, mpx::HistTensor::input, 0); fp8 < 0 && (c.fp8Run || c.fp4Run)) fp8 = r;
    }
    // A session with FP8 runs (the fp8 preset) opens on the first of them and where its casts
    // saturate: its gradients stay in BF16, so their underflow map would be empty.
    // The measure follows only a change between FP8 and other sessions: a Reset keeps the user's.
    // A trace opens on its replay: a recording cannot see what flushed to 0 (those values are among
    // its zeros), the replay predicts it at its own scale (ui/session/trace_session.hpp).
    if (!session->layerNames.isEmpty()) pick = gui::k_trace_replay;
    m_run->setCurrentIndex(std::max(0, fp8 >= 0 ? fp8 : pick));
    if ((fp8 >= 0) != m_fp8Session) setMeasure(fp8 >= 0 ? Measure::overflowCount : Measure::underflowShare);
    m_fp8Session = fp8 >= 0;
}

bool WhereView::fp8Run() const {
    const auto session = m_store->session();
    const int r = run();
    return session && r >= 0 && r < static_cast<int>(session->runs.size()) &&
           mpx::scales_gemms(session->runs[static_cast<std::size_t>(r)].spec.mode);
}
QString WhereView::castName() const {
    const auto session = m_store->session();
    const int r = run();
    const bool fp4 = session && r >= 0 && r < static_cast<int>(session->runs.size()) &&
                     mpx::is_fp4(session->runs[static_cast<std::size_t>(r)].spec.mode);
    return fp4 ? QStringLiteral("FP4") : QStringLiteral("FP8");
}

bool WhereView::castColumns() const {
    return measure() == Measure::overflowCount && run() >= 0 && run() < m_store->runCount() && fp8Run() &&
           !m_store->fp8(run()).empty();
}

const std::vector<long long>& WhereView::steps() const {
    // The columns' steps: the FP8 rows' (every step) or the collected histograms', rebuilt only
    // when the run, the source or its length changed.
    const int r = run();
    const bool cast = castColumns();
    std::size_t n = 0;
    long long last = -1;
    if (cast) {
        const gui::Fp8History& h = m_store->fp8(r);
        for (int l : h.layers())
            for (int t = 0; t < mpx::k_fp8_tensors; ++t)
                if (const gui::Fp8Series* s = h.series(l, static_cast<mpx::Fp8Tensor>(t))) n += s->points().size();
        last = h.lastStep();
    } else if (r >= 0 && r < m_store->runCount()) {
        const auto& snaps = m_store->histograms(r).snapshots();
        n = snaps.size();
        last = snaps.empty() ? -1 : snaps.back().step;
    }
    const StepsKey key{r, cast, n, last};
    if (key == m_stepsKey) return m_steps;
    m_stepsKey = key;
    m_steps.clear();
    if (cast) {
        const gui::Fp8History& h = m_store->fp8(r);
        for (int l : h.layers())
            for (int t = 0; t < mpx::k_fp8_tensors; ++t)
                if (const gui::Fp8Series* s = h.series(l, static_cast<mpx::Fp8Tensor>(t)))
                    for (const gui::Fp8Point& p : s->points()) m_steps.push_back(p.step);
        std::sort(m_steps.begin(), m_steps.end());
        m_steps.erase(std::unique(m_steps.begin(), m_steps.end()), m_steps.end());
    } else if (r >= 0 && r < m_store->runCount()) {
        for (const mpx::HistogramSnapshot& s : m_store->histograms(r).snapshots()) m_steps.push_back(s.step);
    }
    return m_steps;
}

const gui::Fp8Point* WhereView::castRow(int layer, mpx::Fp8Tensor t, long long step) const {
    const gui::Fp8Series* s = m_store->fp8(run()).series(layer, t);
    if (!s) return nullptr;
    const auto& pts = s->points();
    const auto it = std::lower_bound(pts.begin(), pts.end(), step, [](const gui::Fp8Point& p, long long v) { return p.step < v; });
    return it != pts.end() && it->step == step ? &*it : nullptr;
}

int WhereView::saturatingSteps(int layer, mpx::Fp8Tensor t) const {
    // As the FP8 scaling tab counts them: its rows of this layer and tensor that saturated any value.
    if (run() < 0 || run() >= m_store->runCount()) return 0;
    const gui::Fp8Series* s = m_store->fp8(run()).series(layer, t);
    if (!s) return 0;
    return static_cast<int>(std::count_if(s->points().begin(), s->points().end(),
                                          [](const gui::Fp8Point& p) { return p.saturated > 0; }));
}

QString WhereView::saturationSummary() const {
    if (!castColumns()) return {};
    static const char* const names[] = {"x", "w", "dy"};
    QStringList layersText;
    for (int l : m_store->fp8(run()).layers()) {
        QStringList parts;
        for (int t = 0; t < mpx::k_fp8_tensors; ++t)
            if (m_store->fp8(run()).series(l, static_cast<mpx::Fp8Tensor>(t)))
                parts << QStringLiteral("%1 %2").arg(QLatin1String(names[t])).arg(saturatingSteps(l, static_cast<mpx::Fp8Tensor>(t)));
        layersText << QStringLiteral("%1: %2").arg(gui::layerName(*m_store->session(), l), parts.join(QStringLiteral(", ")));
    }
    return tr("Steps on which a cast saturated, as the %1 scaling tab counts them: %2.")
        .arg(castName(), layersText.join(QStringLiteral(" · ")));
}

QString WhereView::subtitle() const {
    const auto session = m_store->session();
    const int L = layers();
    const QString rows = session && !session->layerNames.isEmpty()
                             ? tr("One row per recorded module, in the order the trace first names them")
                         : session && session->config.model.kind == mpx::ModelKind::gpt
                             ? tr("One row per layer of the GPT, from the embeddings to the LM head; each block's five "
                                  "(q, k, v; attention: scores and softmax; attention out and its residual; MLP up "
                                  "with GELU; MLP down and the residual after the block)")
                             : tr("One row per layer (fc1 reads the data, fc%1 gives the output)").arg(L);
    if (castColumns())
        return tr("%1, one column per step: the %2 casts' own counts, the rows of the %2 scaling tab (the histograms "
                  "behind the other colour are collected every %3 steps). Click a cell to see that layer's values in "
                  "the Range view.").arg(rows, castName()).arg(collectedEvery());
    const long long every = collectedEvery();
    if (session && m_store->showsOutsideSession()) {  // a trace: its histograms are the recorder's, not a setting here
        if (every <= 1)
            return tr("%1, one column per recorded step (every step). Click a cell to see that module's values in the Range "
                      "view.").arg(rows);
        return tr("%1, one column per recorded histogram (every %2 steps, the recorder's every=: a step between two "
                  "columns is not shown; for every step, record with mpx_trace.Recorder(..., every=1)). Click a cell to "
                  "see that module's values in the Range view.").arg(rows).arg(every);
    }
    if (every <= 1)
        return tr("%1, one column per collected step (every step). Click a cell to see that layer's values in the Range view.").arg(rows);
    return tr("%1, one column per collected step (every %2 steps: a step between two columns is not shown; for every "
              "step, set instruments.every = 1 and reset, e.g. mpx --set instruments.every=1). Click a cell to see "
              "that layer's values in the Range view.").arg(rows).arg(every);
}

long long WhereView::collectedEvery() const {
    const auto session = m_store->session();
    if (!session || run() < 0 || run() >= m_store->runCount()) return 0;
    return session->config.instruments.every * m_store->histograms(run()).stride();
}

void WhereView::setRun(int run) { m_run->setCurrentIndex(m_run->findData(run)); }
int WhereView::run() const { return m_run->currentIndex() < 0 ? -1 : m_run->currentData().toInt(); }
void WhereView::setMeasure(Measure m) { m_measure->setCurrentIndex(static_cast<int>(m)); }
WhereView::Measure WhereView::measure() const { return static_cast<Measure>(std::max(0, m_measure->currentIndex())); }

int WhereView::layers() const {
    const auto session = m_store->session();
    return session ? gui::layerCount(*session) : 0;
}

int WhereView::columns() const { return static_cast<int>(steps().size()); }

long long WhereView::columnStep(int column) const { return steps()[static_cast<std::size_t>(column)]; }

double WhereView::cellValue(int layer, int column) const {
    if (castColumns()) {
        unsigned long long n = 0;
        for (int t = 0; t < mpx::k_fp8_tensors; ++t)
            if (const gui::Fp8Point* p = castRow(layer, static_cast<mpx::Fp8Tensor>(t), columnStep(column))) n += p->saturated;
        return static_cast<double>(n);
    }
    const mpx::HistogramSnapshot& s = m_store->histograms(run()).snapshots()[static_cast<std::size_t>(column)];
    if (measure() == Measure::overflowCount) {
        unsigned long long n = 0;
        for (mpx::Pass p : {mpx::Pass::forward, mpx::Pass::backward, mpx::Pass::update}) n += s.layer(layer, p).overflow;
        return static_cast<double>(n);
    }
    const core::Counts& c = s.layer(layer, mpx::Pass::backward);
    return c.nonzero ? static_cast<double>(c.underflow) / static_cast<double>(c.nonzero) : 0.0;
}

std::vector<WhereView::Skip> WhereView::skips() const {
    std::vector<Skip> out;
    const int r = run();
    for (const gui::LogRow& row : m_store->log())
        if (row.skipped && row.run == r)
            out.push_back({row.step, row.firstNonfinite >= 0 ? row.firstNonfinite / mpx::k_tensor_kinds : -1,
                           row.firstNonfinite, row.firstNonfiniteMagnitude});
    return out;
}

QString WhereView::verdict() const {
    const auto session = m_store->session();
    if (!session || m_store->showsOutsideSession()) return {};
    std::vector<long long> steps;
    std::vector<int> sites;
    for (const Skip& k : skips()) {
        steps.push_back(k.step);
        sites.push_back(k.site);
    }
    const std::string v = mpx::run_forward_verdict(steps, sites, m_store->steps(), session->config.model);
    if (v.empty()) return {};
    QString q = QString::fromStdString(v);
    q[0] = q[0].toUpper();
    return q + QLatin1Char('.');
}

QString WhereView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: press Run or Step.");
    if (session->config.instruments.every <= 0)
        return tr("Histograms are off for this session (instruments.every = 0): set it to 10 and reset.");
    if (columns() == 0) return tr("No collected step yet (one every %1 steps). Press Run or Step.").arg(session->config.instruments.every);
    return {};
}

QRect WhereView::heatRectIn(const QRect& area) const {
    const QFontMetrics fm(m_canvas->font());
    const int line = fm.lineSpacing();
    const int left = labelWidth(area), right = 110;
    // Title, the subtitle wrapped to the width; under the map: step labels, "step", the ring's
    // legend, the colour's, and for cast columns the saturating steps per tensor.
    const int sub = fm.boundingRect(QRect(0, 0, std::max(100, area.width() - 16), 10 * line), Qt::TextWordWrap, subtitle()).height();
    int notes = 0;  // the lines under the map, wrapped as paintCanvas draws them
    const QStringList lines = this->notes();
    for (int k = 0; k < lines.size(); ++k)
        notes += fm.boundingRect(QRect(0, 0, notesWidth(area) - (k == 0 ? 16 : 0), 10 * line), Qt::TextWordWrap, lines[k]).height();
    const int top = line + 4 + sub + 8, bottom = 2 * line + 6 + notes + 6;
    const int h = std::min(area.height() - top - bottom, std::max(1, layers()) * 130);
    return QRect(area.left() + left, area.top() + top, area.width() - left - right, std::max(20, h));
}

QRect WhereView::heatRect() const { return heatRectIn(m_canvas->rect()).translated(m_canvas->geometry().topLeft()); }

QRectF WhereView::cellRect(int layer, int column) const {
    const QRect r = heatRect();
    const int n = std::max(1, columns()), L = std::max(1, layers());
    return {r.left() + r.width() * static_cast<double>(column) / n, r.top() + r.height() * static_cast<double>(layer) / L,
            r.width() / static_cast<double>(n), r.height() / static_cast<double>(L)};
}

int WhereView::columnAt(double x) const {
    const QRect r = heatRect();
    const int n = columns();
    if (n == 0 || x < r.left() || x > r.right() + 1) return -1;
    return std::clamp(static_cast<int>((x - r.left()) * n / r.width()), 0, n - 1);
}

QPointF WhereView::skipPos(const Skip& s) const {
    const std::vector<long long>& st = steps();
    // The column of the step at or before the skipped one.
    const auto it = std::upper_bound(st.begin(), st.end(), s.step);
    const int col = std::max(0, static_cast<int>(it - st.begin()) - 1);
    return cellRect(std::max(0, s.layer), col).center();
}

QColor WhereView::colour(double v, double max) const {
    if (!(v > 0) || !(max > 0)) return QColor(0xf7, 0xf7, 0xf7);
    // Overflow counts span decades: a log scale; shares: linear up to the largest.
    const double t = measure() == Measure::overflowCount ? std::log1p(v) / std::log1p(max) : v / max;
    const QColor deep = measure() == Measure::overflowCount ? QColor(0x99, 0x1b, 0x1b) : QColor(0x08, 0x30, 0x6b);
    const QColor pale = measure() == Measure::overflowCount ? QColor(0xfc, 0xe0, 0xd0) : QColor(0xde, 0xeb, 0xf7);
    const double w = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(pale.redF() + (deep.redF() - pale.redF()) * w, pale.greenF() + (deep.greenF() - pale.greenF()) * w,
                            pale.blueF() + (deep.blueF() - pale.blueF()) * w);
}

void WhereView::setPresentationScale(double s) {
    m_scale = s;
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * s);
    m_canvas->setFont(f);
    m_key = {};
    m_canvas->update();
}

void WhereView::paintCanvas(QPainter& p, const QRect& area) {
    const QString msg = message();
    const QFontMetrics fm(p.font());
    const QColor text = palette().color(QPalette::WindowText);
    if (!msg.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(area.adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, msg);
        return;
    }
    const QRect r = heatRectIn(area);
    const int n = columns(), L = layers();
    const std::vector<long long>& colSteps = steps();
    // The image: one pixel column per collected step, or per group of them when there are more
    // steps than pixels (each group's largest value).
    const int w = std::max(1, std::min(n, r.width()));
    const Key key{run(), static_cast<int>(measure()), n, w, colSteps.back()};
    if (!(key == m_key)) {
        m_key = key;
        std::vector<double> v(static_cast<std::size_t>(w) * static_cast<std::size_t>(L), 0.0);
        m_max = 0;
        for (int c = 0; c < n; ++c) {
            const int x = static_cast<int>(static_cast<long long>(c) * w / n);
            for (int l = 0; l < L; ++l) {
                double& cell = v[static_cast<std::size_t>(l) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)];
                cell = std::max(cell, cellValue(l, c));
                m_max = std::max(m_max, cell);
            }
        }
        m_image = QImage(w, L, QImage::Format_RGB32);
        for (int l = 0; l < L; ++l) {
            auto* line = reinterpret_cast<QRgb*>(m_image.scanLine(l));
            for (int x = 0; x < w; ++x) line[x] = colour(v[static_cast<std::size_t>(l) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)], m_max).rgb();
        }
    }
    const auto session = m_store->session();
    const int line = fm.lineSpacing();
    QFont bold = p.font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(runColour(session, run()));
    const QString label = session->runs[static_cast<std::size_t>(run())].label;
    const QString title = measure() == Measure::underflowShare
                              ? tr("%1: which layer's gradients underflow (became 0), and when").arg(label)
                              : castColumns() ? tr("%1: where the %2 casts saturate, and when").arg(label, castName())
                              : fp8Run() ? tr("%1: which layer's values saturate in %2 or become ±inf, and when").arg(label, castName())
                                         : tr("%1: which layer overflows (values became ±inf), and when").arg(label);
    p.drawText(area.left() + 8, area.top() + 4 + fm.ascent(), fm.elidedText(title, Qt::ElideRight, area.width() - 16));
    p.setFont(m_canvas->font());
    p.setPen(text);
    p.drawText(QRect(area.left() + 8, area.top() + 4 + line, area.width() - 16, r.top() - area.top() - line - 8),
               Qt::AlignLeft | Qt::TextWordWrap, subtitle());

    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(r, m_image);
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.drawRect(r.adjusted(-1, -1, 0, 0));
    // Row labels and separators.
    p.setPen(text);
    for (int l = 0; l < L; ++l) {
        const double y0 = r.top() + r.height() * static_cast<double>(l) / L, h = r.height() / static_cast<double>(L);
        const double room = r.left() - area.left() - 12;  // clear of the skip rings on the first column
        const QString t = rowLabel(p.fontMetrics(), gui::layerName(*m_store->session(), l), static_cast<int>(room));
        p.drawText(QRectF(area.left(), y0, room, h), Qt::AlignRight | Qt::AlignVCenter, t);
        if (l > 0) {
            p.setPen(QPen(QColor(255, 255, 255), 1));
            p.drawLine(QPointF(r.left(), y0), QPointF(r.right(), y0));
            p.setPen(text);
        }
    }
    // Step axis: ticks at round steps (1, 2 or 5 × 10^k apart), under the column holding each.
    const long long s0 = colSteps.front(), s1 = colSteps.back();
    // At least a column apart: with columns every n steps (or sparser), finer ticks would share a column.
    const double columnGap = colSteps.size() > 1 ? static_cast<double>(s1 - s0) / static_cast<double>(colSteps.size() - 1) : 1.0;
    const double want = std::max({1.0, columnGap, static_cast<double>(s1 - s0) / std::max(2, r.width() / 90)});
    const double mag = std::pow(10.0, std::floor(std::log10(want)));
    const long long every = static_cast<long long>(want <= mag ? mag : want <= 2 * mag ? 2 * mag : want <= 5 * mag ? 5 * mag : 10 * mag);
    double lastRight = -1e9;  // a label that would touch the one before it is left out
    for (long long t = (s0 + every - 1) / every * every; t <= s1; t += every) {
        const double x = skipPos({t, 0, -1, std::nullopt}).x() - m_canvas->geometry().left();
        const QString label = QString::number(t);
        const double w = fm.horizontalAdvance(label);
        if (x - w / 2.0 < lastRight + 6) continue;
        lastRight = x + w / 2.0;
        p.drawLine(QPointF(x, r.bottom() + 1), QPointF(x, r.bottom() + 5));
        p.drawText(QPointF(x - w / 2.0, r.bottom() + 6 + fm.ascent()), label);
    }
    p.drawText(QRect(r.left(), r.bottom() + 6 + line, r.width(), line), Qt::AlignHCenter, tr("step"));
    // Skipped steps: a red ring in the layer of the first inf/NaN.
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(k_skip, 2));
    p.setBrush(Qt::NoBrush);
    const QPoint off = m_canvas->geometry().topLeft();
    const double radius = std::clamp(r.height() / std::max(1.0, 2.5 * L), 4.0, 7.0);
    for (const Skip& s : skips())
        if (s.layer >= 0) p.drawEllipse(skipPos(s) - off, radius, radius);  // notes() counts the others
    p.setRenderHint(QPainter::Antialiasing, false);
    // Colour scale on the right, and the legend of the rings below.
    const QRect scale(r.right() + 24, r.top(), 14, r.height());
    for (int y = 0; y < scale.height(); ++y)
        p.fillRect(QRect(scale.left(), scale.bottom() - y, scale.width(), 1), colour(m_max * (y + 1) / scale.height(), m_max));
    p.setPen(text);
    p.drawRect(scale.adjusted(0, 0, -1, -1));
    const QString maxText = measure() == Measure::underflowShare ? percentText(m_max) : QString::number(m_max, 'f', 0);
    p.drawText(QPointF(scale.right() + 4, scale.top() + fm.ascent()), maxText);
    p.drawText(QPointF(scale.right() + 4, scale.bottom()), measure() == Measure::underflowShare ? QStringLiteral("0 %") : QStringLiteral("0"));
    // Under the map, each line wrapped to the width (notes()): the rings' legend beside a ring, the
    // colour's meaning, for cast columns the saturating steps per tensor.
    int y = r.bottom() + 6 + 2 * line;
    const int width = notesWidth(area);
    const QStringList lines = notes();
    for (int k = 0; k < lines.size(); ++k) {
        const int indent = k == 0 ? 16 : 0;
        const QRect box = fm.boundingRect(QRect(r.left() + indent, y, width - indent, 10 * line), Qt::TextWordWrap, lines[k]);
        if (k == 0) {
            p.setRenderHint(QPainter::Antialiasing, true);
            p.setPen(QPen(k_skip, 2));
            p.drawEllipse(QPointF(r.left() + 6, y + line / 2.0), 5, 5);
            p.setRenderHint(QPainter::Antialiasing, false);
        }
        p.setPen(k == 1 && lines[k] == verdict() ? k_skip : text);  // the verdict in the rings' red
        p.drawText(QRect(r.left() + indent, y, width - indent, box.height()), Qt::AlignLeft | Qt::TextWordWrap, lines[k]);
        y += box.height();
    }
}

// A module's name that does not fit loses its middle, never its last component: "encoder.lay….mlp.fc1"
// still says which layer and which op (cut from the left, "…ler.fc1" named neither).
QString WhereView::rowLabel(const QFontMetrics& fm, const QString& name, int room) {
    if (fm.horizontalAdvance(name) <= room) return name;
    const qsizetype dot = name.lastIndexOf(QLatin1Char('.'));
    const QString last = dot > 0 ? name.mid(dot) : QString();  // ".fc1"
    const int left = room - fm.horizontalAdvance(last);
    if (last.isEmpty() || left < fm.horizontalAdvance(QStringLiteral("a…b"))) return fm.elidedText(name, Qt::ElideMiddle, room);
    return fm.elidedText(name.left(dot), Qt::ElideMiddle, left) + last;
}

QStringList WhereView::rowLabels() const {
    QStringList out;
    const auto session = m_store->session();
    if (!session) return out;
    const QRect area = m_canvas->rect();
    const int room = heatRectIn(area).left() - area.left() - 12;
    const QFontMetrics fm(m_canvas->font());
    for (int l = 0; l < layers(); ++l) out << rowLabel(fm, gui::layerName(*session, l), room);
    return out;
}

int WhereView::notesWidth(const QRect& area) const {
    return std::max(100, area.width() - labelWidth(area) - 24);
}

int WhereView::labelWidth(const QRect& area) const {
    // The widest row label ("fc12", "block 3 · attention out"), at most a third of the view; a
    // longer one is elided where it is drawn.
    const QFontMetrics fm(m_canvas->font());
    int widest = fm.horizontalAdvance(QStringLiteral("fc99"));
    if (const auto session = m_store->session())
        for (int l = 0; l < layers(); ++l) widest = std::max(widest, fm.horizontalAdvance(gui::layerName(*session, l)));
    return std::min(widest, area.width() / 3) + fm.horizontalAdvance(QLatin1Char(' ')) + 18;
}

QStringList WhereView::notes() const {
    int unplaced = 0;
    for (const Skip& k : skips()) unplaced += k.layer < 0;
    QString legend = tr("skipped step (inf/NaN in the gradients), in the layer where the first inf/NaN was stored");
    if (unplaced) legend += tr(" (%1 skips with no recorded place are not drawn)").arg(unplaced);
    QStringList out{legend};
    if (const QString v = verdict(); !v.isEmpty()) out << v;
    out << (measure() == Measure::underflowShare
                ? tr("Colour: the share of the layer's non-zero gradient values that became 0 when stored (darker: more lost).")
            : castColumns() ? tr("Colour: values that saturated in the layer's %1 casts (x, w, dy) on that step (log scale; darker: more).").arg(castName())
            : fp8Run()      ? tr("Colour: values that saturated in an %1 cast or became ±inf, per layer and step (log scale; darker: more).").arg(castName())
                            : tr("Colour: how many of the layer's values became ±inf when stored (log scale; darker: more)."));
    if (castColumns()) out << saturationSummary();
    return out;
}

QString WhereView::tooltipAt(QPoint pos) const {
    if (!message().isEmpty()) return {};
    const QRect r = heatRect();
    const int col = columnAt(pos.x());
    if (!r.contains(pos) || col < 0) return {};
    const int L = layers();
    const int layer = std::clamp((pos.y() - r.top()) * L / r.height(), 0, L - 1);
    if (castColumns()) {
        // The step's rows, tensor by tensor, as the FP8 scaling tab shows them one at a time.
        const long long step = columnStep(col);
        static const char* const names[] = {"x (activations)", "w (weights)", "dy (gradients)"};
        QString t = tr("<b>%1 at step %2</b>").arg(gui::layerName(*m_store->session(), layer)).arg(step);
        bool any = false;
        for (int k = 0; k < mpx::k_fp8_tensors; ++k)
            if (const gui::Fp8Point* p = castRow(layer, static_cast<mpx::Fp8Tensor>(k), step)) {
                any = true;
                t += tr("<br>%1: %2 of %3 values saturated (%4)")
                         .arg(QLatin1String(names[k]), QLocale().toString(p->saturated), QLocale().toString(p->count),
                              percentText(p->saturatedShare()));
            }
        if (!any) t += tr("<br>This layer's matrix products are not cast to %1.").arg(castName());
        for (const Skip& k : skips())
            if (k.layer == layer && columnAt(skipPos(k).x()) == col)
                t += tr("<br><span style='color:#c0392b'>Step %1 was skipped: its first inf/NaN was stored at %2.</span>")
                         .arg(k.step).arg(gui::firstNonfiniteText(k.site, k.magnitude, m_store->session()->config.model));
        t += tr("<br><i>Click to see this layer's values in the Range view (at the collected step nearest %1).</i>").arg(step);
        return t;
    }
    const mpx::HistogramSnapshot& s = m_store->histograms(run()).snapshots()[static_cast<std::size_t>(col)];
    const core::Counts& b = s.layer(layer, mpx::Pass::backward);
    unsigned long long over = 0;
    for (mpx::Pass p : {mpx::Pass::forward, mpx::Pass::backward, mpx::Pass::update}) over += s.layer(layer, p).overflow;
    QString t = tr("<b>%1 at step %2</b><br>").arg(gui::layerName(*m_store->session(), layer)).arg(s.step);
    t += tr("%1 of the %2 non-zero gradient values of this layer became 0 when stored (underflow: %3 of that "
            "signal is lost).<br>").arg(QLocale().toString(b.underflow), QLocale().toString(b.nonzero),
                                        percentText(b.nonzero ? static_cast<double>(b.underflow) / static_cast<double>(b.nonzero) : 0.0));
    unsigned long long largest = 0;  // core::Counts::overflow_max: bits of the largest value that overflowed
    for (mpx::Pass p : {mpx::Pass::forward, mpx::Pass::backward, mpx::Pass::update})
        largest = std::max(largest, s.layer(layer, p).overflow_max);
    t += over ? (fp8Run() ? tr("%1 values saturated or became ±inf (overflow); the largest was %2 before rounding "
                               "(%3 casts: after scaling).")
                                .arg(QLocale().toString(over), QStringLiteral("%2"), castName())
                          : tr("%1 values became ±inf (overflow); the largest was %2 before rounding.").arg(QLocale().toString(over)))
                    .arg(QLocale().toString(core::float_of(static_cast<std::uint32_t>(largest)), 'g', 6))
              : tr("No value became ±inf.");
    for (const Skip& k : skips())
        if (k.layer == layer && columnAt(skipPos(k).x()) == col)
            t += tr("<br><span style='color:#c0392b'>Step %1 was skipped: its first inf/NaN was stored at %2.</span>")
                     .arg(k.step).arg(gui::firstNonfiniteText(k.site, k.magnitude, m_store->session()->config.model));
    t += tr("<br><i>Click to see this layer's values in the Range view.</i>");
    return t;
}

}  // namespace mpx::ui
