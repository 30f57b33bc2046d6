// MismatchView: a title, a caption, one legend line a policy (its numbers), and the histogram of
// |Δ log p| in log2 bins, one bar a policy in each bin.
#include "ui/views/mismatch_view.hpp"

#include <QLocale>
#include <QPainter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/base/error.hpp"
#include "engine/config/run_plan.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/session/run_colours.hpp"

namespace mpx::ui {

namespace {
constexpr int k_margin = 12, k_gap = 8;

QString superscript(int n) {
    static const QString digits = QStringLiteral("⁰¹²³⁴⁵⁶⁷⁸⁹");
    QString s = n < 0 ? QStringLiteral("⁻") : QString();
    for (QChar c : QString::number(std::abs(n))) s += digits[c.digitValue()];
    return s;
}

// The first of `texts` that fits `width` in `fm` (the longest first), else the last one elided.
QString fitted(const QFontMetrics& fm, const QStringList& texts, int width) {
    for (const QString& t : texts)
        if (fm.horizontalAdvance(t) <= width) return t;
    return fm.elidedText(texts.back(), Qt::ElideRight, width);
}

QString count(unsigned long long n) { return QLocale(QLocale::English).toString(static_cast<qulonglong>(n)); }
}  // namespace

MismatchView::MismatchView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 4, 0, 0);
    m_canvas = new ViewCanvas<MismatchView>(this, QSize(480, 300), true);
    setPicturePart(m_canvas, PicturePart::picture);
    v->addWidget(m_canvas, 1);
    connect(m_store, &gui::RecordStore::mismatchUpdated, m_canvas, qOverload<>(&QWidget::update));
    connect(m_store, &gui::RecordStore::sessionStarted, m_canvas, qOverload<>(&QWidget::update));
}

void MismatchView::setPresentationScale(double s) {
    m_scale = s;
    m_canvas->update();
}

QFont MismatchView::scaled(double factor) const {
    QFont f = font();
    f.setPointSizeF(font().pointSizeF() * m_scale * factor);
    return f;
}

QString MismatchView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: load the fp16-for-rl lesson from the Preset box and press Run.");
    if (session->config.model.kind != mpx::ModelKind::gpt)
        return tr("The mismatch is the GPT's per-token log-probabilities (model.kind = gpt): load the fp16-for-rl lesson.");
    if (!session->config.mismatch.enabled())
        return tr("This session measures no mismatch: set mismatch.policies (e.g. [\"amp-fp16\", \"amp-bf16\"]) or load "
                  "the fp16-for-rl lesson.");
    if (m_store->mismatches().empty()) {
        const int every = session->config.mismatch.every;
        return every > 0 ? tr("Nothing measured yet: the weights are read again after step 0, then every %1 steps, and "
                              "at the end.").arg(every)
                         : tr("Nothing measured yet: the weights are read again after the last step.");
    }
    return {};
}

long long MismatchView::shownStep() const {
    return message().isEmpty() ? m_store->mismatches().back().step : -1;
}

std::vector<const mpx::MismatchResult*> MismatchView::shown() const {
    std::vector<const mpx::MismatchResult*> out;
    const long long step = shownStep();
    if (step < 0 && !message().isEmpty()) return out;
    for (const mpx::MismatchResult& r : m_store->mismatches())
        if (r.step == step) out.push_back(&r);
    return out;
}

std::vector<int> MismatchView::shownSlots() const {
    const auto results = shown();
    std::vector<int> out;
    int lo = mpx::core::k_log2_bins, hi = -1;
    bool zero = false;
    for (const mpx::MismatchResult* r : results) {
        for (int s = 0; s < mpx::core::k_log2_bins; ++s)
            if (r->bins.n[s]) lo = std::min(lo, s), hi = std::max(hi, s);
        zero = zero || r->bins.n[mpx::core::k_slot_zero];
    }
    if (zero) out.push_back(mpx::core::k_slot_zero);
    for (int s = lo; s <= hi; ++s) out.push_back(s);
    return out;
}

unsigned long long MismatchView::barCount(int policy, int slot) const {
    const auto results = shown();
    if (policy < 0 || policy >= static_cast<int>(results.size())) return 0;
    return results[static_cast<std::size_t>(policy)]->bins.n[slot];
}

QString MismatchView::binText(int slot) const {
    if (slot == mpx::core::k_slot_zero) return tr("Δ = 0 exactly");
    if (slot == mpx::core::k_slot_inf) return tr("|Δ| = inf");
    if (slot == mpx::core::k_slot_nan) return tr("Δ is NaN");
    const int b = slot + mpx::core::k_bin_min;
    return tr("2%1 ≤ |Δ| < 2%2 nats").arg(superscript(b), superscript(b + 1));
}

QColor MismatchView::policyColour(const std::string& label) const {
    const auto session = m_store->session();
    try {
        return gui::precisionColour(mpx::resolve_run(label, session->config).spec);
    } catch (const mpx::ConfigError&) {
        return QColor(0x77, 0x77, 0x77);
    }
}

QString MismatchView::caption() const {
    if (const QString msg = message(); !msg.isEmpty()) return msg;
    const mpx::MismatchResult& first = *shown().front();
    return tr("%1's weights after step %2, read by each policy; for each of the %3 held-out tokens, Δ = log p(next "
              "token) under the policy − log p under %4. An RL trainer and its inference engine disagree like this.")
        .arg(QString::fromStdString(first.weights), count(static_cast<unsigned long long>(first.step)),
             count(static_cast<unsigned long long>(first.tokens)), QString::fromStdString(first.reference));
}

double MismatchView::peakShare() const {
    double peak = 0.0;
    for (const mpx::MismatchResult* r : shown())
        for (int s : shownSlots())
            if (r->tokens > 0) peak = std::max(peak, double(r->bins.n[s]) / double(r->tokens));
    const double step = peak > 0.3 ? 0.1 : 0.05;
    return std::max(step, std::ceil(peak / step - 1e-9) * step);
}

MismatchView::Layout MismatchView::layout(const QRect& r) const {
    Layout l;
    const QFontMetrics title(scaled(1.25)), body(scaled());
    const QRect inner = r.adjusted(k_margin, k_margin / 2, -k_margin, -k_margin / 2);
    l.title = QRect(inner.left(), inner.top(), inner.width(), title.lineSpacing());
    const QRect captionRoom(inner.left(), l.title.bottom() + 2, inner.width(), 4 * body.lineSpacing());
    const int captionHeight = body.boundingRect(captionRoom, Qt::TextWordWrap, caption()).height();
    l.caption = QRect(captionRoom.topLeft(), QSize(inner.width(), captionHeight));
    const int policies = static_cast<int>(shown().size());
    l.legend = QRect(inner.left(), l.caption.bottom() + k_gap, inner.width(), policies * body.lineSpacing());
    // The plot: room on the left for the share ticks and the axis title, below for the bins' labels.
    const int left = body.horizontalAdvance(QStringLiteral("100 %")) + body.lineSpacing() + 10;
    const int below = QFontMetrics(scaled(0.9)).lineSpacing() * 2 + body.lineSpacing() + 8;
    l.plot = QRect(QPoint(inner.left() + left, l.legend.bottom() + k_gap + body.lineSpacing() / 2),
                   QPoint(inner.right() - 4, inner.bottom() - below));
    return l;
}

QRect MismatchView::barRect(int policy, int slot) const {
    return barIn(m_canvas->rect(), policy, slot).translated(m_canvas->pos());
}

QRect MismatchView::barIn(const QRect& canvas, int policy, int slot) const {
    const auto results = shown();
    const auto binSlots = shownSlots();
    const auto at = std::find(binSlots.begin(), binSlots.end(), slot);
    if (at == binSlots.end() || policy < 0 || policy >= static_cast<int>(results.size())) return {};
    const mpx::MismatchResult& r = *results[static_cast<std::size_t>(policy)];
    if (!r.bins.n[slot] || r.tokens <= 0) return {};
    const QRect plot = layout(canvas).plot;
    const double group = double(plot.width()) / double(binSlots.size());
    const double bar = group * 0.8 / double(results.size());
    const double x = plot.left() + group * double(at - binSlots.begin()) + group * 0.1 + bar * policy;
    const double share = double(r.bins.n[slot]) / double(r.tokens);
    const int h = std::max(1, int(std::lround(share / peakShare() * plot.height())));
    return QRect(int(std::lround(x)), plot.bottom() - h + 1, std::max(1, int(bar) - 1), h);
}

void MismatchView::paintCanvas(QPainter& p, const QRect& r) {
    const Layout l = layout(r);
    const QColor ink = palette().color(QPalette::WindowText), grey(0x55, 0x55, 0x55);
    const QFontMetrics tm(scaled(1.25)), bm(scaled()), sm(scaled(0.9));
    p.setPen(ink);
    p.setFont(scaled(1.25));
    p.drawText(l.title.topLeft() + QPoint(0, tm.ascent()),
               fitted(tm, {tr("Log-probability mismatch: one set of weights read in other precisions"),
                           tr("Log-probability mismatch: one set of weights"), tr("Log-probability mismatch")},
                      l.title.width()));
    p.setFont(scaled());
    p.setPen(grey);
    const QString msg = message();
    if (!msg.isEmpty()) {
        p.drawText(l.caption, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, msg);
        return;
    }
    const auto results = shown();
    const mpx::MismatchResult& first = *results.front();
    p.drawText(l.caption, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, caption());
    // The legend: each policy's numbers, the ratio of its mean to the first policy's.
    for (std::size_t i = 0; i < results.size(); ++i) {
        const mpx::MismatchResult& m = *results[i];
        const QRect line(l.legend.left(), l.legend.top() + int(i) * bm.lineSpacing(), l.legend.width(), bm.lineSpacing());
        const int sw = bm.ascent();
        p.fillRect(QRect(line.left(), line.top() + (line.height() - sw) / 2, sw, sw), policyColour(m.policy));
        QFont bold = scaled();
        bold.setBold(true);
        p.setFont(bold);
        p.setPen(ink);
        const QString name = QString::fromStdString(m.policy);
        p.drawText(line.adjusted(sw + 6, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, name);
        p.setFont(scaled());
        const QString mean = QString::number(m.mean_abs, 'g', 3), max = QString::number(m.max_abs, 'g', 3);
        const QString ratio = i > 0 && first.mean_abs > 0.0 ? QString::number(m.mean_abs / first.mean_abs, 'f', 2) : QString();
        const QString other = QString::fromStdString(first.policy);
        const int x = sw + 14 + QFontMetrics(bold).horizontalAdvance(name);
        const QStringList texts =
            ratio.isEmpty() ? QStringList{tr("mean |Δ| %1 nats · largest %2").arg(mean, max), tr("mean |Δ| %1 · max %2").arg(mean, max)}
                            : QStringList{tr("mean |Δ| %1 nats · largest %2 · %3× %4's mean").arg(mean, max, ratio, other),
                                          tr("mean |Δ| %1 · max %2 · %3× %4").arg(mean, max, ratio, other),
                                          tr("mean %1 · max %2 · %3×").arg(mean, max, ratio)};
        p.drawText(line.adjusted(x, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, fitted(bm, texts, line.width() - x));
    }
    // Axes: share of the tokens (y), the bins (x).
    const QRect plot = l.plot;
    const double peak = peakShare(), tick = peak > 0.3 ? 0.1 : 0.05;
    p.setFont(scaled(0.9));
    for (int k = 0; k * tick <= peak + 1e-9; ++k) {
        const int y = plot.bottom() - int(std::lround(k * tick / peak * plot.height()));
        p.setPen(QColor(0xE4, 0xE4, 0xE4));
        if (k > 0) p.drawLine(plot.left(), y, plot.right(), y);
        p.setPen(grey);
        const QString t = QStringLiteral("%1 %").arg(int(std::lround(k * tick * 100)));
        p.drawText(QRect(plot.left() - 60 - 6, y - sm.height() / 2, 60, sm.height()), Qt::AlignRight | Qt::AlignVCenter, t);
    }
    p.save();
    p.translate(r.left() + k_margin + bm.ascent(), plot.center().y());
    p.rotate(-90);
    p.setFont(scaled());
    p.drawText(QRect(-plot.height() / 2, -bm.ascent(), plot.height(), bm.lineSpacing()), Qt::AlignCenter, tr("share of tokens"));
    p.restore();
    const auto binSlots = shownSlots();
    const double group = double(plot.width()) / double(binSlots.size());
    for (std::size_t k = 0; k < binSlots.size(); ++k) {
        for (int i = 0; i < static_cast<int>(results.size()); ++i)
            if (const QRect b = barIn(r, i, binSlots[k]); !b.isEmpty()) p.fillRect(b, policyColour(results[static_cast<std::size_t>(i)]->policy));
        const int s = binSlots[k];
        const QString t = s == mpx::core::k_slot_zero ? tr("0") : QStringLiteral("2") + superscript(s + mpx::core::k_bin_min);
        // Every label where they fit, else every second one.
        const int every = sm.horizontalAdvance(QStringLiteral("2⁻¹⁰")) + 6 > group ? 2 : 1;
        if (k % static_cast<std::size_t>(every) == 0) {
            p.setPen(grey);
            p.setFont(scaled(0.9));
            p.drawText(QRect(int(plot.left() + group * double(k)), plot.bottom() + 4, int(group * every), sm.lineSpacing()),
                       Qt::AlignLeft | Qt::AlignTop, t);
        }
    }
    p.setPen(ink);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.setFont(scaled());
    p.setPen(grey);
    const QRect axis(r.left() + k_margin, plot.bottom() + 4 + sm.lineSpacing() + 2, r.width() - 2 * k_margin, bm.lineSpacing());
    p.drawText(axis, Qt::AlignCenter,
               fitted(bm, {tr("|Δ log p| in nats, by power of two (a bar at 2ᵏ holds 2ᵏ ≤ |Δ| < 2ᵏ⁺¹)"),
                           tr("|Δ log p| in nats (bar 2ᵏ: 2ᵏ ≤ |Δ| < 2ᵏ⁺¹)"), tr("|Δ log p| in nats")},
                      axis.width()));
}

QString MismatchView::tooltipAt(QPoint at) const {
    if (!message().isEmpty()) return {};
    const QPoint pos = at - m_canvas->pos();  // the canvas hands the view's coordinates
    const QRect plot = layout(m_canvas->rect()).plot;
    if (!plot.adjusted(0, 0, 0, 20).contains(pos)) return {};
    const auto binSlots = shownSlots();
    const auto results = shown();
    const double group = double(plot.width()) / double(binSlots.size());
    const auto k = static_cast<std::size_t>(std::clamp(int((pos.x() - plot.left()) / group), 0, int(binSlots.size()) - 1));
    QString t = binText(binSlots[k]) + QLatin1Char(':');
    for (const mpx::MismatchResult* r : results) {
        const unsigned long long n = r->bins.n[binSlots[k]];
        t += tr("\n%1: %2 of %3 tokens (%4 %)")
                 .arg(QString::fromStdString(r->policy), count(n), count(static_cast<unsigned long long>(r->tokens)))
                 .arg(r->tokens ? 100.0 * double(n) / double(r->tokens) : 0.0, 0, 'f', 1);
    }
    return t;
}

}  // namespace mpx::ui
