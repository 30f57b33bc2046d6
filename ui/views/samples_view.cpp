// SamplesView: a title, one column per run (name, source, text), and the "Write samples now" button.
#include "ui/views/samples_view.hpp"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "ui/kit/png_export.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/title_fit.hpp"

namespace mpx::ui {

namespace {
constexpr int k_margin = 12, k_gap = 12, k_pad = 8;
constexpr int k_captionFlags = Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop;
constexpr int k_boxLines = 6;  // the least a run's column takes: its label, source and a few lines of text
constexpr int k_textFlags = Qt::AlignLeft | Qt::AlignTop | Qt::TextWrapAnywhere | Qt::TextExpandTabs;
constexpr double k_leastText = 0.7;  // a box's text shrinks to fit down to this share of the text size

// Runs to a row of boxes and rows: up to four side by side, more in two rows.
std::pair<int, int> gridOf(int n) {
    const int cols = n <= 4 ? n : (n + 1) / 2;
    return {cols, cols == 0 ? 0 : (n + cols - 1) / cols};
}

// A run's label in lines no wider than `width`: whole on one line where it fits, else broken before
// each '+' switch that would not fit ("amp-fp16" / "+attn-before"); a part wider than the column
// alone stays whole on its own line (never elided: two runs must stay apart).
QStringList labelLinesFor(const QString& label, const QFontMetrics& fm, int width) {
    if (fm.horizontalAdvance(label) <= width) return {label};
    QStringList lines;
    QString line;
    for (const QString& part : label.split(QLatin1Char('+'))) {
        const QString piece = line.isEmpty() && lines.isEmpty() ? part : QStringLiteral("+") + part;
        if (!line.isEmpty() && fm.horizontalAdvance(line + piece) > width) {
            lines << line;
            line = piece;
        } else {
            line += piece;
        }
    }
    if (!line.isEmpty()) lines << line;
    return lines;
}
}  // namespace

SamplesView::SamplesView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 4, 0, 0);
    v->setSpacing(2);
    auto* row = new QHBoxLayout;
    row->setContentsMargins(k_margin, 0, k_margin, 0);
    m_button = new QPushButton(tr("Write samples now"));
    m_button->setToolTip(tr("Every run continues the prompt from its current weights, now (paused or training)"));
    row->addWidget(m_button);
    row->addStretch(1);
    v->addLayout(row);
    m_canvas = new ViewCanvas<SamplesView>(this, QSize(480, 240));
    setPicturePart(m_canvas, PicturePart::picture);
    v->addWidget(fit::scrollingPage(m_canvas), 1);
    m_canvas->installEventFilter(this);  // narrower (a scroll bar came) wraps more: its height refits
    connect(m_button, &QPushButton::clicked, this, &SamplesView::sampleRequested);
    connect(m_store, &gui::RecordStore::samplesUpdated, this, &SamplesView::refresh);
    connect(m_store, &gui::RecordStore::sessionStarted, this, &SamplesView::refresh);
    refresh();
}

void SamplesView::refresh() {
    const auto session = m_store->session();
    m_button->setEnabled(session && session->config.model.kind == mpx::ModelKind::gpt);
    fitHeight();
    m_canvas->update();
}

void SamplesView::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    fitHeight();
}

bool SamplesView::eventFilter(QObject* o, QEvent* e) {
    if (o == m_canvas && e->type() == QEvent::Resize) fitHeight();
    return QWidget::eventFilter(o, e);
}

void SamplesView::fitHeight() {
    const int least = std::max(240, leastHeight(m_canvas->width()));
    if (m_canvas->minimumHeight() != least) m_canvas->setMinimumHeight(least);
}

void SamplesView::setPresentationScale(double s) {
    m_scale = s;
    QFont f = m_button->font();
    f.setPointSizeF(font().pointSizeF() * s);
    m_button->setFont(f);
    fitHeight();
    m_canvas->update();
}

QFont SamplesView::scaled(double factor, bool mono) const {
    QFont f = mono ? QFontDatabase::systemFont(QFontDatabase::FixedFont) : font();
    f.setPointSizeF(font().pointSizeF() * m_scale * factor);
    return f;
}

QString SamplesView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: load a GPT preset (gpt-classroom) and press Run.");
    if (session->config.model.kind != mpx::ModelKind::gpt)
        return tr("Samples are what a GPT writes (model.kind = gpt): load gpt-classroom from the Preset box.");
    if (m_store->samples().empty()) {
        const int every = session->config.sample.every;
        return every > 0 ? tr("No sample yet: each run writes one after step 0, then every %1 steps, and at the end; "
                              "or press Write samples now.").arg(every)
                         : tr("Samples are off while training (sample.every = 0): press Write samples now.");
    }
    return {};
}

std::vector<int> SamplesView::shownRuns() const {
    std::vector<int> out;
    if (!message().isEmpty()) return out;
    for (int r = 0; r < m_store->runCount(); ++r)
        if (m_store->latestSample(r)) out.push_back(r);
    return out;
}

QString SamplesView::sourceText(int run) const {
    const mpx::TextSample* s = m_store->latestSample(run);
    if (!s) return {};
    const QString step = s->step < 0 ? tr("before training") : tr("step %1").arg(QLocale(QLocale::English).toString(s->step));
    if (!s->eval_loss) return step;
    return tr("%1 · held-out loss %2").arg(step, QString::number(*s->eval_loss, 'f', 3));
}

QString SamplesView::caption(bool brief) const {
    if (const QString msg = message(); !msg.isEmpty()) return msg;
    const mpx::SampleConfig& sc = m_store->session()->config.sample;
    const QString prompt = QString::fromStdString(sc.prompt).replace(QLatin1Char('\n'), QStringLiteral("⏎"));
    if (brief)
        return tr("Each run continues “%1” with the same random numbers as every other: where two texts part, their "
                  "probabilities did.")
            .arg(prompt);
    return tr("Each run continues the prompt “%1” by %2 characters, one at a time, drawn from its own "
              "probabilities with the same random numbers as every other run: where two texts part, their "
              "probabilities did. The held-out loss is that of the weights that wrote the text.")
        .arg(prompt)
        .arg(sc.length);
}

SamplesView::Layout SamplesView::layout(const QRect& r) const {
    const QFontMetrics body(scaled());
    const QRect inner = r.adjusted(k_margin, k_margin / 2, -k_margin, -k_margin / 2);
    const std::vector<int> runs = shownRuns();
    const int n = static_cast<int>(runs.size());
    const auto [cols, rows] = gridOf(n);
    const int w = cols == 0 ? 0 : (inner.width() - (cols - 1) * k_gap) / cols;
    const int need = tallestNeed(runs, w);
    // The whole caption where the boxes keep room for ten lines and their texts, else the brief one
    // (a classroom's large text on a laptop); each wrapped as painted.
    Layout l;
    for (const bool brief : {false, true}) {
        l = Layout{};
        l.caption = caption(brief);
        l.title = QRect(inner.left(), inner.top(), inner.width(), headHeight(l.caption, inner.width()));
        if (n == 0) return l;
        const int room = (inner.bottom() - (l.title.bottom() + k_gap) - (rows - 1) * k_gap) / rows;
        if (room >= std::max(need, body.lineSpacing() * 10)) break;
    }
    const int top = l.title.bottom() + k_gap;
    const int h = std::max(need, (inner.bottom() - top - (rows - 1) * k_gap) / rows);
    for (int i = 0; i < n; ++i)
        l.columns.push_back(QRect(inner.left() + (i % cols) * (w + k_gap), top + (i / cols) * (h + k_gap), w, h));
    return l;
}

// The height a run's column needs at `width`: its label and source lines, and a box that holds its
// text at k_leastText of the text size (with the stopped note where sampling stopped).
int SamplesView::columnNeed(int run, int width) const {
    const auto session = m_store->session();
    const mpx::TextSample* s = m_store->latestSample(run);
    const QFontMetrics body(scaled());
    QFont bold = scaled();
    bold.setBold(true);
    if (!session || !s) return body.lineSpacing() * k_boxLines;
    const int label = static_cast<int>(labelLinesFor(session->runs[static_cast<std::size_t>(run)].label, QFontMetrics(bold), width).size());
    const int source = body.horizontalAdvance(sourceText(run)) > width ? 2 : 1;
    const QRect inBox(0, 0, std::max(1, width - 2 * k_pad), 1 << 20);
    const int text = QFontMetrics(scaled(k_leastText, true)).boundingRect(inBox, k_textFlags, QString::fromStdString(s->text)).height();
    const int note = s->nonfinite ? 2 * QFontMetrics(bold).lineSpacing() + 4 : 0;
    return (label + source) * body.lineSpacing() + 4 + 2 * k_pad + text + note;
}

// The title and the caption wrapped at `width`: the head above the boxes.
int SamplesView::headHeight(const QString& caption, int width) const {
    const QFontMetrics title(scaled(1.25)), body(scaled());
    const int lines = body.boundingRect(QRect(0, 0, width, 1 << 20), k_captionFlags, caption).height();
    return title.lineSpacing() + 2 + std::max(2 * body.lineSpacing(), lines) + 4;
}

// The tallest column's need at column width `w`, never under k_boxLines lines.
int SamplesView::tallestNeed(const std::vector<int>& runs, int w) const {
    int need = QFontMetrics(scaled()).lineSpacing() * k_boxLines;
    for (int r : runs) need = std::max(need, columnNeed(r, w));
    return need;
}

int SamplesView::leastHeight(int width) const {
    const int inner = std::max(1, width - 2 * k_margin);
    const int head = headHeight(caption(true), inner);
    const std::vector<int> runs = shownRuns();
    const auto [cols, rows] = gridOf(static_cast<int>(runs.size()));
    if (rows == 0) return k_margin + head;
    return k_margin + head + k_gap + rows * tallestNeed(runs, (inner - (cols - 1) * k_gap) / cols) + (rows - 1) * k_gap;
}

QRect SamplesView::columnRect(int run) const {
    const std::vector<int> runs = shownRuns();
    const Layout l = layout(m_canvas->rect());
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i] == run) return l.columns[i].translated(m_canvas->mapTo(this, QPoint(0, 0)));
    return {};
}

void SamplesView::paintCanvas(QPainter& p, const QRect& r) {
    const Layout l = layout(r);
    const QColor ink = palette().color(QPalette::WindowText), grey(0x55, 0x55, 0x55);
    const auto session = m_store->session();
    p.setPen(ink);
    p.setFont(scaled(1.25));
    const QFontMetrics tm(scaled(1.25)), bm(scaled());
    p.drawText(l.title.topLeft() + QPoint(0, tm.ascent()), tr("What each precision writes"));
    p.setFont(scaled());
    p.setPen(grey);
    const QRect captionRect = l.title.adjusted(0, tm.lineSpacing() + 2, 0, 0);
    p.drawText(captionRect, k_captionFlags, l.caption);
    if (!message().isEmpty()) return;
    const std::vector<int> runs = shownRuns();
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const QRect c = l.columns[i];
        const gui::RunStyle style = runStyle(session, runs[i]);
        const mpx::TextSample* s = m_store->latestSample(runs[i]);
        QFont bold = scaled();
        bold.setBold(true);
        p.setFont(bold);
        p.setPen(style.colour);
        // The label whole: broken before a '+' switch where the column is too narrow for one line.
        const QStringList labelLines = labelLinesFor(session->runs[static_cast<std::size_t>(runs[i])].label, QFontMetrics(bold), c.width());
        for (int k = 0; k < labelLines.size(); ++k)
            p.drawText(QRect(c.left(), c.top() + k * bm.lineSpacing(), c.width(), bm.lineSpacing()), Qt::AlignLeft | Qt::AlignVCenter,
                       labelLines[k]);
        const int labelHeight = static_cast<int>(labelLines.size()) * bm.lineSpacing();
        p.setFont(scaled());
        p.setPen(grey);
        // The source whole: on a second line where one is too narrow (the classroom's large text).
        const QString source = sourceText(runs[i]);
        const int sourceLines = bm.horizontalAdvance(source) > c.width() ? 2 : 1;
        p.drawText(QRect(c.left(), c.top() + labelHeight, c.width(), sourceLines * bm.lineSpacing()),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, source);
        const QRect box = c.adjusted(0, labelHeight + sourceLines * bm.lineSpacing() + 4, 0, 0);
        p.fillRect(box, QColor(0xFA, 0xFA, 0xF7));
        QPen frame(style.colour, 2, style.pen);
        p.setPen(frame);
        p.drawRect(box.adjusted(1, 1, -1, -1));
        QString text = QString::fromStdString(s->text);
        // Room kept at the bottom for the note of a run whose sampling stopped, so it stays in the box:
        // the longest form that takes at most half of it (a small box in the classroom view).
        const QRect inBox = box.adjusted(k_pad, k_pad, -k_pad, -k_pad);
        const auto noteHeightOf = [&](const QString& t) {
            return QFontMetrics(bold).boundingRect(QRect(0, 0, inBox.width(), 1 << 20), Qt::TextWordWrap, t).height() + 4;
        };
        QString stopped;
        if (s->nonfinite)
            for (const QString& form : {tr("Stopped: this run's logits hold inf or NaN, so no next character can be drawn."),
                                        tr("Stopped: inf or NaN in the logits."), tr("Stopped: inf/NaN")}) {
                stopped = form;
                if (noteHeightOf(form) <= inBox.height() / 2) break;
            }
        const int noteHeight = stopped.isEmpty() ? 0 : noteHeightOf(stopped);
        const QRect textRect = inBox.adjusted(0, 0, 0, -noteHeight);
        const int flags = k_textFlags;
        // The whole text in its box: a smaller monospace size where the box is short.
        QFont mono = scaled(1.0, true);
        for (double f = 0.9; f > k_leastText - 0.05 && QFontMetrics(mono).boundingRect(textRect, flags, text).height() > textRect.height(); f -= 0.1)
            mono = scaled(f, true);
        p.setFont(mono);
        p.setPen(ink);
        p.drawText(textRect, flags, text);
        if (!stopped.isEmpty()) {
            p.setFont(bold);
            p.setPen(QColor(0xCC, 0x33, 0x11));
            const QRect used = QFontMetrics(mono).boundingRect(textRect, flags, text);
            const int top = std::min(used.bottom(), textRect.bottom()) + 4;
            p.drawText(QRect(inBox.left(), top, inBox.width(), inBox.bottom() - top), Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop,
                       stopped);
        }
    }
}

QString SamplesView::tooltipAt(QPoint pos) const {
    const std::vector<int> runs = shownRuns();
    const Layout l = layout(m_canvas->rect());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (!l.columns[i].contains(pos)) continue;
        const auto session = m_store->session();
        const mpx::TextSample* s = m_store->latestSample(runs[i]);
        return tr("%1, %2: the prompt, then %3 characters this run drew one at a time from its softmax (temperature 1), "
                  "in its own precision.%4")
            .arg(session->runs[static_cast<std::size_t>(runs[i])].label, sourceText(runs[i]))
            .arg(QString::fromStdString(s->text).size() - QString::fromStdString(session->config.sample.prompt).size())
            .arg(s->nonfinite ? tr(" Its logits held inf or NaN, so it stopped there.") : QString());
    }
    return {};
}

}  // namespace mpx::ui
