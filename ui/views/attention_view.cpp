// AttentionView: the choices, two heatmaps with their axes, a colour legend and the counts.
#include "ui/views/attention_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/core/format_core.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/kit/run_style.hpp"

namespace mpx::ui {

namespace {
constexpr int k_margin = 12, k_gap = 28;

QString formatName(mpx::Format f) { return QString::fromLatin1(mpx::format_info(f).name).toUpper(); }
QString largest(mpx::Format f) { return QString::number(static_cast<double>(mpx::format_info(f).max_finite), 'g', 6); }

QComboBox* combo(QHBoxLayout* row, const QString& label, const QString& tip) {
    auto* l = new QLabel(label);
    auto* c = new QComboBox;
    c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    c->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    c->setToolTip(tip);
    row->addWidget(l);
    row->addWidget(c);
    return c;
}
}  // namespace

QColor attentionColour(double t) {
    // Viridis at nine stops (matplotlib's table), interpolated linearly: dark for small, yellow for large.
    static const QColor k[] = {QColor(0x44, 0x01, 0x54), QColor(0x47, 0x2c, 0x7a), QColor(0x3b, 0x51, 0x8b),
                               QColor(0x2c, 0x71, 0x8e), QColor(0x21, 0x90, 0x8d), QColor(0x27, 0xad, 0x81),
                               QColor(0x5c, 0xc8, 0x63), QColor(0xaa, 0xdc, 0x32), QColor(0xfd, 0xe7, 0x25)};
    t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 8.0;
    const int i = std::min(7, static_cast<int>(t));
    const double f = t - i;
    const QColor a = k[i], b = k[i + 1];
    return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * f),
                            static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * f),
                            static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * f));
}

AttentionView::AttentionView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 4, 0, 0);
    v->setSpacing(2);
    // Two rows of choices: the runs and what is shown, then where and when (one row is wider than
    // the view at 1280×800 with the settings open).
    auto* row = new QHBoxLayout;
    row->setContentsMargins(k_margin, 0, k_margin, 0);
    m_runA = combo(row, tr("Run"), tr("The run whose attention is drawn on the left"));
    m_runB = combo(row, tr("beside"), tr("A second run drawn on the right, at the same step, block, head and window"));
    m_values = combo(row, tr("Show"), tr("The scores q·kᵀ as stored, or the probabilities softmax made of them"));
    m_values->addItems({tr("scores"), tr("probabilities")});
    row->addStretch(1);
    v->addLayout(row);
    row = new QHBoxLayout;
    row->setContentsMargins(k_margin, 0, k_margin, 0);
    m_block = combo(row, tr("Block"), tr("The transformer block"));
    m_head = combo(row, tr("Head"), tr("The attention head"));
    m_window = combo(row, tr("Window"), tr("Which of the step's training windows (rows of the batch)"));
    row->addWidget(new QLabel(tr("Step")));
    m_step = new QSlider(Qt::Horizontal);
    m_step->setToolTip(tr("The steps whose attention was kept while this view was shown; at the right end the view "
                          "follows training"));
    m_step->setMinimumWidth(120);
    row->addWidget(m_step, 1);
    v->addLayout(row);
    m_canvas = new ViewCanvas<AttentionView>(this, QSize(520, 300), true);
    setPicturePart(m_canvas, PicturePart::picture);
    v->addWidget(m_canvas, 1);
    for (QComboBox* c : {m_runA, m_runB, m_block, m_head, m_window, m_values})
        connect(c, &QComboBox::currentIndexChanged, m_canvas, qOverload<>(&QWidget::update));
    connect(m_step, &QSlider::valueChanged, this, [this](int value) {
        m_follow = value == m_step->maximum();
        m_canvas->update();
    });
    connect(m_store, &gui::RecordStore::attentionUpdated, this, &AttentionView::refresh);
    connect(m_store, &gui::RecordStore::sessionStarted, this, &AttentionView::rebuildChoices);
    rebuildChoices();
}

void AttentionView::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    emit wantedChanged(true);
}

void AttentionView::hideEvent(QHideEvent* e) {
    QWidget::hideEvent(e);
    emit wantedChanged(false);
}

void AttentionView::rebuildChoices() {
    const auto session = m_store->session();
    const QSignalBlocker b1(m_runA), b2(m_runB), b3(m_block), b4(m_head), b5(m_window);
    m_runA->clear();
    m_runB->clear();
    m_block->clear();
    m_head->clear();
    m_window->clear();
    m_runB->addItem(tr("none"), -1);
    if (session && session->config.model.kind == mpx::ModelKind::gpt) {
        for (int r = 0; r < static_cast<int>(session->runs.size()); ++r) {
            const gui::RunStyle s = runStyle(session, r);
            m_runA->addItem(swatch(s), session->runs[static_cast<std::size_t>(r)].label, r);
            m_runB->addItem(swatch(s), session->runs[static_cast<std::size_t>(r)].label, r);
        }
        // Each run's whole label shows: the row gives the run pickers their width first.
        int widest = 0;
        for (const auto& d : session->runs) widest = std::max(widest, m_runA->fontMetrics().horizontalAdvance(d.label));
        m_runA->setMinimumWidth(widest + 56);
        m_runB->setMinimumWidth(widest + 56);
        const mpx::GptConfig& g = session->config.model.gpt;
        for (int b = 0; b < g.n_layer; ++b) m_block->addItem(QString::number(b), b);
        for (int h = 0; h < g.n_head; ++h) m_head->addItem(QString::number(h), h);
        for (int w = 0; w < session->config.train.batch; ++w) m_window->addItem(QString::number(w), w);
        // The first low-precision run beside the first run of another format: amp-fp16 next to amp-bf16.
        int a = -1, b = -1;
        for (int r = 0; r < static_cast<int>(session->runs.size()); ++r)
            if (session->runs[static_cast<std::size_t>(r)].spec.precision() != "fp32") {
                if (a < 0) a = r;
                else if (b < 0 && session->runs[static_cast<std::size_t>(r)].spec.precision() !=
                                      session->runs[static_cast<std::size_t>(a)].spec.precision())
                    b = r;
            }
        setRuns(a < 0 ? 0 : a, b);
    }
    m_follow = true;
    refresh();
}

void AttentionView::refresh() {
    const int n = static_cast<int>(m_store->attention().size());
    const QSignalBlocker block(m_step);
    m_step->setRange(0, std::max(0, n - 1));
    if (m_follow) m_step->setValue(m_step->maximum());
    m_step->setEnabled(n > 1);
    m_canvas->update();
}

void AttentionView::setRuns(int a, int b) {
    m_runA->setCurrentIndex(std::max(0, m_runA->findData(a)));
    m_runB->setCurrentIndex(std::max(0, m_runB->findData(b)));
}
int AttentionView::runA() const { return m_runA->currentIndex() < 0 ? -1 : m_runA->currentData().toInt(); }
int AttentionView::runB() const { return m_runB->currentIndex() < 0 ? -1 : m_runB->currentData().toInt(); }
void AttentionView::setBlock(int block) { m_block->setCurrentIndex(m_block->findData(block)); }
void AttentionView::setHead(int head) { m_head->setCurrentIndex(m_head->findData(head)); }
void AttentionView::setWindow(int window) { m_window->setCurrentIndex(m_window->findData(window)); }
void AttentionView::setValues(Values v) { m_values->setCurrentIndex(v == Values::scores ? 0 : 1); }
void AttentionView::setStepIndex(int i) { m_step->setValue(i < 0 ? m_step->maximum() : i); }

void AttentionView::setPresentationScale(double s) {
    m_scale = s;
    m_canvas->update();
}

QFont AttentionView::scaled(double f) const {
    QFont font = this->font();
    font.setPointSizeF(font.pointSizeF() * m_textScale * f);
    return font;
}

const mpx::AttentionSnapshot* AttentionView::shown() const {
    const auto& all = m_store->attention();
    if (all.empty()) return nullptr;
    const int i = std::clamp(m_step->value(), 0, static_cast<int>(all.size()) - 1);
    return all[static_cast<std::size_t>(i)].get();
}

const mpx::AttentionMaps* AttentionView::mapsOf(int run) const {
    const mpx::AttentionSnapshot* s = shown();
    if (!s || run < 0) return nullptr;
    for (const mpx::AttentionMaps& m : s->runs)
        if (m.run == run) return &m;
    return nullptr;
}

QString AttentionView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: load a GPT preset (gpt-classroom) and press Run.");
    if (session->config.model.kind != mpx::ModelKind::gpt)
        return tr("Attention maps are the GPT's (model.kind = gpt): load gpt-classroom from the Preset box.");
    if (!shown()) return tr("No step kept yet: steps keep their attention while this view is shown. Press Run or Step.");
    if (!mapsOf(runA())) return tr("This run had stopped by the step shown: it kept no attention.");
    return {};
}

long long AttentionView::markedCells(const mpx::AttentionMaps& m, int block, int window, int head) {
    const mpx::AttentionBlock& k = m.blocks[static_cast<std::size_t>(block)];
    const std::size_t T = static_cast<std::size_t>(m.T);
    const std::size_t first = (static_cast<std::size_t>(window) * static_cast<std::size_t>(m.heads) + static_cast<std::size_t>(head)) * T;
    long long n = 0;
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j <= i; ++j) n += std::isinf(k.scores[(first + i) * T + j]) ? 1 : 0;
    return n;
}

float AttentionView::value(const mpx::AttentionMaps& m, int i, int j) const {
    const mpx::AttentionBlock& k = m.blocks[static_cast<std::size_t>(std::max(0, m_block->currentIndex()))];
    const std::size_t T = static_cast<std::size_t>(m.T);
    const std::size_t row = (static_cast<std::size_t>(std::max(0, m_window->currentIndex())) * static_cast<std::size_t>(m.heads) +
                             static_cast<std::size_t>(std::max(0, m_head->currentIndex()))) * T + static_cast<std::size_t>(i);
    return (m_values->currentIndex() == 0 ? k.scores : k.probs)[row * T + static_cast<std::size_t>(j)];
}

std::pair<float, float> AttentionView::range() const {
    if (m_values->currentIndex() == 1) return {0.0f, 1.0f};
    float lo = INFINITY, hi = -INFINITY;
    for (int run : {runA(), runB()})
        if (const mpx::AttentionMaps* m = mapsOf(run))
            for (int i = 0; i < m->T; ++i)
                for (int j = 0; j <= i; ++j)
                    if (const float x = value(*m, i, j); std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    if (!(lo <= hi)) return {0.0f, 1.0f};
    if (lo == hi) hi = lo + 1.0f;
    return {lo, hi};
}

QString AttentionView::headline() const { return tr("Attention: which earlier characters each position reads"); }

// Where and when once for both maps (they show one step's snapshot), then how to read them.
QString AttentionView::explanation() const {
    if (const QString msg = message(); !msg.isEmpty()) return msg;
    const mpx::AttentionMaps* m = mapsOf(runA());
    return tr("Step %1 · block %2 · head %3 · window %4. Row i: the query at position i; column j: the key it reads "
              "(j ≤ i; the future is left blank). %5")
        .arg(m->step).arg(m_block->currentIndex()).arg(m_head->currentIndex()).arg(m_window->currentIndex())
        .arg(m_values->currentIndex() == 0 ? tr("Scores q·kᵀ as stored; × marks one past its format's largest value, stored as inf.")
                                           : tr("Probabilities: each row sums to 1; × marks a position whose score became inf."));
}

// The run in its colour, then what is drawn, on one line where it fits and on two where not.
int AttentionView::mapTitle(QPainter* p, int run, const QPoint& at, int width) const {
    const mpx::AttentionMaps* m = mapsOf(run);
    const auto session = m_store->session();
    if (!m || !session) return 0;
    const bool scores = m_values->currentIndex() == 0;
    const mpx::AttentionBlock& blk = m->blocks[static_cast<std::size_t>(std::max(0, m_block->currentIndex()))];
    QFont bold = scaled();
    bold.setBold(true);
    const QFontMetrics bm(bold), fm(scaled());
    const int line = fm.lineSpacing();
    const QString label = session->runs[static_cast<std::size_t>(run)].label;
    const QString what = tr("%1 in %2").arg(scores ? tr("scores") : tr("probabilities")).arg(formatName(scores ? blk.scores_format : blk.probs_format));
    const bool oneLine = bm.horizontalAdvance(label) + fm.horizontalAdvance(QStringLiteral(" · ") + what) <= width;
    const int height = (oneLine ? 1 : 2) * line;
    if (!p) return height;
    p->setFont(bold);
    p->setPen(runStyle(session, run).colour);
    p->drawText(QRect(at.x(), at.y(), width, line), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(label, Qt::ElideRight, width));
    p->setFont(scaled());
    p->setPen(palette().color(QPalette::WindowText));
    if (oneLine)
        p->drawText(QRect(at.x() + bm.horizontalAdvance(label), at.y(), width, line), Qt::AlignLeft | Qt::AlignVCenter,
                    QStringLiteral(" · ") + what);
    else
        p->drawText(QRect(at.x(), at.y() + line, width, line), Qt::AlignLeft | Qt::AlignVCenter, what);
    return height;
}

// Every text is measured as it wraps at its width (the headline and its explanation across the
// view, a map's title and caption in its column), and the maps take the square that is left: in
// the classroom view's large type the maps shrink, the words stay whole.
AttentionView::Layout AttentionView::layout(const QRect& r) const {
    // The maps are what the view is for: the text steps down from the classroom's size until they
    // take at least two fifths of the height (or all the width there is).
    Layout l;
    for (m_textScale = m_scale;; m_textScale = std::max(1.0, m_textScale - 0.1)) {
        l = layoutAt(r);
        if (m_textScale <= 1.0 || l.side >= std::min(l.widest, r.height() * 2 / 5)) return l;
    }
}

AttentionView::Layout AttentionView::layoutAt(const QRect& r) const {
    Layout l;
    const QFontMetrics title(scaled(1.25)), body(scaled()), small(scaled(0.9));
    const int line = body.lineSpacing();
    const int width = r.width() - 2 * k_margin;
    const auto wrapped = [](const QFontMetrics& fm, int w, const QString& text) {
        return fm.boundingRect(QRect(0, 0, std::max(1, w), 100000), Qt::TextWordWrap, text).height();
    };
    l.title = QRect(r.left() + k_margin, r.top() + 4, width,
                    wrapped(title, width, headline()) + 2 + wrapped(body, width, explanation()) + 4);
    const int legendW = body.horizontalAdvance(QStringLiteral("-1.234e+04")) + 30;
    const int runs[2] = {runA(), runB() >= 0 && mapsOf(runB()) ? runB() : -1};
    const int maps = runs[1] >= 0 ? 2 : 1;
    // Room around each map: its title above, tick labels and the axis name left and below, the
    // caption under those.
    const int left = body.horizontalAdvance(QStringLiteral("000")) + line + 10;
    const int availW = (width - legendW - k_gap - (maps - 1) * k_gap) / maps - left;
    l.column = std::max(40, availW) + k_gap - 4;  // titles and captions take the column, not the map's width
    int above = 0, caption = 0;
    for (int k = 0; k < maps; ++k) {
        above = std::max(above, mapTitle(nullptr, runs[k], {}, l.column));
        caption = std::max(caption, wrapped(body, l.column, captionOf(runs[k])));
    }
    above += 6;
    const int below = 4 + small.lineSpacing() + line + 8 + caption;
    const int availH = r.bottom() - l.title.bottom() - 8 - above - below;
    l.side = std::max(40, std::min(availW, availH));
    l.widest = availW;
    int x = r.left() + k_margin + left;
    const int y = l.title.bottom() + 8 + above;
    for (int k = 0; k < maps; ++k) {
        l.maps[k] = QRect(x, y, l.side, l.side);
        x += std::max(l.side, availW) + k_gap + left;
    }
    // The colour bar's three labels and the three marks under it need their lines whatever the map's size.
    l.legend = QRect(x - left, y, legendW, std::max(l.side, 7 * line));
    return l;
}

QRect AttentionView::mapRect(int run) const {
    if (!message().isEmpty() || run < 0) return {};
    const Layout l = layout(m_canvas->rect());
    const QPoint at = m_canvas->pos();
    if (run == runA()) return l.maps[0].translated(at);
    if (run == runB() && l.maps[1].isValid()) return l.maps[1].translated(at);
    return {};
}

QPoint AttentionView::cellAt(int run, QPoint pos) const {
    const QRect m = mapRect(run);
    const mpx::AttentionMaps* maps = mapsOf(run);
    if (!maps || !m.contains(pos)) return {-1, -1};
    const int T = maps->T;
    const int j = std::min(T - 1, (pos.x() - m.left()) * T / m.width());
    const int i = std::min(T - 1, (pos.y() - m.top()) * T / m.height());
    return {j, i};
}

QString AttentionView::captionOf(int run) const {
    const mpx::AttentionMaps* m = mapsOf(run);
    if (!m) return {};
    const int block = std::max(0, m_block->currentIndex());
    const mpx::AttentionBlock& k = m->blocks[static_cast<std::size_t>(block)];
    long long all = 0;
    for (int w = 0; w < m->batch; ++w)
        for (int h = 0; h < m->heads; ++h) all += markedCells(*m, block, w, h);
    const long long here = markedCells(*m, block, std::max(0, m_window->currentIndex()), std::max(0, m_head->currentIndex()));
    const QString fmt = formatName(k.scores_format);
    if (all == 0 && k.overflow == 0)
        return tr("No score of block %1 passed %2's largest value, %3, on this step.").arg(block).arg(fmt, largest(k.scores_format));
    return tr("× %1 here, %2 in block %3 (%4 heads × %5 windows) past %6's largest value, %7. "
              "The engine counted %8 (the largest %9).")
        .arg(here).arg(all).arg(block).arg(m->heads).arg(m->batch).arg(fmt, largest(k.scores_format))
        .arg(k.overflow).arg(k.overflow_max, 0, 'g', 6);
}

void AttentionView::paintCanvas(QPainter& p, const QRect& r) {
    const Layout l = layout(r);
    const QColor ink = palette().color(QPalette::WindowText), grey(0x55, 0x55, 0x55);
    const QFontMetrics tm(scaled(1.25)), bm(scaled());
    const int line = bm.lineSpacing();
    p.setPen(ink);
    p.setFont(scaled(1.25));
    const QRect head = tm.boundingRect(l.title, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, headline());
    p.drawText(l.title, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, headline());
    p.setFont(scaled());
    p.setPen(grey);
    p.drawText(l.title.adjusted(0, head.height() + 2, 0, 0), Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, explanation());
    if (!message().isEmpty()) return;
    const auto [lo, hi] = range();
    const auto session = m_store->session();
    const int runs[2] = {runA(), l.maps[1].isValid() ? runB() : -1};
    for (int k = 0; k < 2; ++k) {
        const mpx::AttentionMaps* m = mapsOf(runs[k]);
        if (!m) continue;
        const QRect map = l.maps[k];
        const int T = m->T;
        // The title: the run in its colour, what is drawn, where and when.
        const int titleH = mapTitle(nullptr, runs[k], {}, l.column);
        mapTitle(&p, runs[k], QPoint(map.left(), map.top() - 6 - titleH), l.column);
        p.setPen(ink);
        // Cells.
        p.fillRect(map, Qt::white);
        for (int i = 0; i < T; ++i)
            for (int j = 0; j <= i; ++j) {
                const QRect cell(map.left() + j * map.width() / T, map.top() + i * map.height() / T,
                                 (j + 1) * map.width() / T - j * map.width() / T, (i + 1) * map.height() / T - i * map.height() / T);
                const float score = value(*m, i, j);  // the value drawn
                const bool inf = std::isinf(m->blocks[static_cast<std::size_t>(std::max(0, m_block->currentIndex()))]
                                                .scores[((static_cast<std::size_t>(std::max(0, m_window->currentIndex())) * m->heads +
                                                          static_cast<std::size_t>(std::max(0, m_head->currentIndex()))) * T + i) * T + j]);
                if (inf) {
                    p.fillRect(cell, QColor(0xD6, 0x27, 0x28));
                    p.setPen(QPen(Qt::white, std::max(1, cell.width() / 6)));
                    p.drawLine(cell.topLeft() + QPoint(1, 1), cell.bottomRight() - QPoint(1, 1));
                    p.drawLine(cell.topRight() + QPoint(-1, 1), cell.bottomLeft() + QPoint(1, -1));
                } else if (std::isnan(score)) {
                    p.fillRect(cell, QColor(0x40, 0x40, 0x40));
                } else {
                    p.fillRect(cell, attentionColour((score - lo) / (hi - lo)));
                }
            }
        p.setPen(QPen(grey, 1));
        p.drawRect(map.adjusted(0, 0, -1, -1));
        // Ticks: every `every` positions, as many as fit without touching.
        const int every = std::max(1, [&] {
            const int room = bm.horizontalAdvance(QStringLiteral("000")) + 4;
            int e = 1;
            while (map.width() * e / T < room) e *= 2;
            return e;
        }());
        p.setFont(scaled(0.9));
        const QFontMetrics sm(scaled(0.9));
        for (int t = 0; t < T; t += every) {
            const int x = map.left() + (2 * t + 1) * map.width() / (2 * T);
            const int y = map.top() + (2 * t + 1) * map.height() / (2 * T);
            p.drawLine(x, map.bottom() + 1, x, map.bottom() + 4);
            p.drawText(QRect(x - 20, map.bottom() + 4, 40, sm.lineSpacing()), Qt::AlignHCenter | Qt::AlignTop, QString::number(t));
            p.drawLine(map.left() - 4, y, map.left() - 1, y);
            p.drawText(QRect(map.left() - 44, y - sm.lineSpacing() / 2, 38, sm.lineSpacing()), Qt::AlignRight | Qt::AlignVCenter,
                       QString::number(t));
        }
        p.setFont(scaled());
        p.drawText(QRect(map.left(), map.bottom() + 4 + sm.lineSpacing(), map.width(), line), Qt::AlignHCenter | Qt::AlignTop,
                   tr("key position j"));
        p.save();
        p.translate(map.left() - bm.horizontalAdvance(QStringLiteral("000")) - line, map.center().y());
        p.rotate(-90);
        p.drawText(QRect(-map.height() / 2, -line / 2 - 2, map.height(), line), Qt::AlignCenter, tr("query position i"));
        p.restore();
        p.setPen(grey);
        p.drawText(QRect(map.left(), map.bottom() + 8 + sm.lineSpacing() + line, l.column, r.bottom() - map.bottom()),
                   Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, captionOf(runs[k]));
    }
    // Legend: the colour bar with its ends and middle, then the marks.
    const QRect bar(l.legend.left(), l.legend.top() + line / 2, 16, std::max(3 * line, l.legend.height() - 4 * line));
    for (int y = 0; y < bar.height(); ++y) {
        p.setPen(attentionColour(1.0 - static_cast<double>(y) / std::max(1, bar.height() - 1)));
        p.drawLine(bar.left(), bar.top() + y, bar.right(), bar.top() + y);
    }
    p.setPen(grey);
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    p.setPen(ink);
    for (double t : {1.0, 0.5, 0.0}) {
        const int y = bar.top() + static_cast<int>((1.0 - t) * (bar.height() - 1));
        p.drawText(QRect(bar.right() + 4, y - line / 2, l.legend.width() - 20, line), Qt::AlignLeft | Qt::AlignVCenter,
                   QString::number(lo + t * (hi - lo), 'g', 4));
    }
    int y = bar.bottom() + line / 2 + 8;  // below the lowest value's label
    const auto entry = [&](const QColor& c, const QString& text, bool cross) {
        const QRect sw(l.legend.left(), y, 14, 14);
        p.fillRect(sw, c);
        p.setPen(QPen(cross ? Qt::white : grey, cross ? 2 : 1));
        if (cross) {
            p.drawLine(sw.topLeft() + QPoint(2, 2), sw.bottomRight() - QPoint(2, 2));
            p.drawLine(sw.topRight() + QPoint(-2, 2), sw.bottomLeft() + QPoint(2, -2));
        } else {
            p.drawRect(sw.adjusted(0, 0, -1, -1));
        }
        p.setPen(ink);
        p.drawText(QRect(sw.right() + 6, y - 2, l.legend.width() - 20, line), Qt::AlignLeft | Qt::AlignVCenter, text);
        y += line + 2;
    };
    entry(QColor(0xD6, 0x27, 0x28), tr("inf"), true);
    entry(QColor(0x40, 0x40, 0x40), tr("NaN"), false);
    entry(Qt::white, tr("future"), false);
}

QString AttentionView::tooltipAt(QPoint pos) const {
    for (int run : {runA(), runB()}) {
        const QPoint c = cellAt(run, pos);
        if (c.x() < 0) continue;
        const int i = c.y(), j = c.x();
        const mpx::AttentionMaps* m = mapsOf(run);
        const auto session = m_store->session();
        const QString who = tr("%1, step %2, block %3, head %4, window %5")
                                .arg(session->runs[static_cast<std::size_t>(run)].label)
                                .arg(m->step).arg(m_block->currentIndex()).arg(m_head->currentIndex()).arg(m_window->currentIndex());
        if (j > i) return tr("%1: position %2 may not read position %3, a later one (masked)").arg(who).arg(i).arg(j);
        const mpx::AttentionBlock& k = m->blocks[static_cast<std::size_t>(std::max(0, m_block->currentIndex()))];
        const std::size_t T = static_cast<std::size_t>(m->T);
        const std::size_t at = ((static_cast<std::size_t>(std::max(0, m_window->currentIndex())) * m->heads +
                                 static_cast<std::size_t>(std::max(0, m_head->currentIndex()))) * T + static_cast<std::size_t>(i)) * T +
                               static_cast<std::size_t>(j);
        const float s = k.scores[at], pr = k.probs[at];
        QString text = tr("%1: query position %2 reads key position %3 — score %4 (%5), probability %6 (%7)")
                           .arg(who).arg(i).arg(j).arg(static_cast<double>(s), 0, 'g', 6).arg(formatName(k.scores_format))
                           .arg(static_cast<double>(pr), 0, 'g', 4).arg(formatName(k.probs_format));
        if (std::isinf(s))
            text += tr("; this score passed %1's largest value, %2, and was stored as infinity")
                        .arg(formatName(k.scores_format), largest(k.scores_format));
        return text;
    }
    return {};
}

}  // namespace mpx::ui
