// RangeView's picture (range_view.hpp): the layout of one paint (legend rows, each side's title,
// plot and caption), the captions' words, the painting of bands, bars, limits and overlay, and the
// tooltip over a bar or a caption.
// Rule: layoutIn is the one place sizes are decided; paintCanvas, plotRect, fitCanvasHeight and the
// tooltip all read its Layout, so what is drawn is where the tests and the mouse look for it.
#include "ui/views/range_view.hpp"

#include <QLocale>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ui/kit/log2_axis.hpp"
#include "ui/kit/number_text.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/views/range_canvas.hpp"

namespace mpx::ui {
namespace {

struct Geometry {
    QRect plot[2];
    int sides = 1;
};

constexpr int k_right = 18;

// The margin left of the plot, in the small font (fs): the upright "share of values", its widest
// tick label, and "|value|" clear of the first x label; 64 px at the desktop's size, more in classroom.
int leftMargin(const QFontMetrics& fs) {
    const int shares = 2 + fs.height() + 4 + fs.horizontalAdvance(QStringLiteral("12.5 %")) + 8;
    const int name = 2 + fs.horizontalAdvance(QStringLiteral("|value|")) + 6 +
                     std::max(fs.horizontalAdvance(QStringLiteral("2⁻⁴⁰")) / 2, fs.horizontalAdvance(QStringLiteral("0 %")) + 6);
    return std::max({64, shares, name});
}
constexpr int k_captionLines = 8;  // at most, per side; the rest is in the caption's tooltip
constexpr int k_minPlot = 90;      // px: a plot's least height before the view scrolls

QFont smallFont(const QFont& f) {  // the band labels', axis labels' and caption's font
    QFont s = f;
    s.setPointSizeF(f.pointSizeF() * 0.85);
    return s;
}

// `text` in lines no wider than `width`, broken between words (a word wider than that on its own).
QStringList wrapped(const QString& text, const QFontMetrics& fm, int width) {
    QStringList lines;
    QString line;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
            lines << line;
            line = word;
        } else {
            line = longer;
        }
    }
    if (!line.isEmpty()) lines << line;
    return lines;
}

// The caption's paragraphs as the lines drawn: wrapped to the plot's width, at most k_captionLines,
// the last one ending in "…" when more did not fit.
QStringList captionLayout(const QStringList& paragraphs, const QFontMetrics& fs, int width) {
    QStringList lines;
    for (const QString& para : paragraphs) lines << wrapped(para, fs, width);
    if (lines.size() > k_captionLines) {
        const QString rest = lines.mid(k_captionLines - 1).join(QLatin1Char(' '));
        lines = lines.mid(0, k_captionLines - 1);
        lines << fs.elidedText(rest, Qt::ElideRight, width);
    }
    return lines;
}

// The legend's rows on top, then per side: title, band labels, plot, axis labels and `lines[side]`
// caption lines (fs: the small font's metrics).
Geometry panelGeometry(const QRect& area, int sides, int legendRows, const QFontMetrics& fm, const QFontMetrics& fs,
                       const int lines[2]) {
    Geometry g;
    g.sides = sides;
    const int line = fm.lineSpacing(), small = fs.lineSpacing();
    const int above = 2 * line + 8, legend = legendRows * line + 4;
    const int h = (area.height() - 8 - legend) / sides;
    for (int s = 0; s < sides; ++s) {
        const int below = 6 + small + 4 + lines[s] * small + 6;
        const int top = area.top() + 4 + legend + s * h + above;
        g.plot[s] = QRect(area.left() + leftMargin(fs), top, area.width() - leftMargin(fs) - k_right, std::max(40, h - above - below));
    }
    return g;
}

}  // namespace

RangeView::Layout RangeView::layoutIn(const QRect& area, const QFont& font) const {
    Layout out;
    out.sides = runB() >= 0 ? 2 : 1;
    out.panels[0] = panel(0);
    if (out.sides > 1) out.panels[1] = panel(1);
    std::tie(out.lo, out.hi) = axisRange();
    const QFontMetrics fm(font), fs(smallFont(font));
    const int width = area.width() - leftMargin(fs) - k_right;
    int lines[2] = {0, 0};
    for (int s = 0; s < out.sides; ++s) {
        out.caption[s] = captionLayout(captionOf(out.panels[s], out.lo, out.hi), fs, width);
        lines[s] = static_cast<int>(out.caption[s].size());
    }
    // The legend: the bands' colours in words, then the thin lines, wrapped to the width.
    const bool cast8 = (out.panels[0].fp8.active && out.panels[0].fp8.fp8Run) || (out.panels[1].fp8.active && out.panels[1].fp8.fp8Run);
    const bool cast4 = (out.panels[0].fp8.active && out.panels[0].fp8.fp4Run) || (out.panels[1].fp8.active && out.panels[1].fp8.fp4Run);
    std::vector<LegendItem> items = {
        {Band::flushed, false, tr("becomes 0")},
        {Band::subnormal, false, tr("subnormal: keeps fewer digits")},
        {Band::normal, false, tr("stored normally")},
        {Band::overflow, false, cast8 && cast4 ? tr("becomes ±inf (FP8: saturates; FP4: clamped at ±6)")
                                : cast8        ? tr("becomes ±inf (FP8: saturates)")
                                : cast4        ? tr("becomes ±inf (FP4: clamped at ±6)")
                                               : tr("becomes ±inf")}};
    if (!limitFormats().empty()) items.push_back({Band::normal, true, tr("where the session's formats stop")});
    const int swatch = fm.height() - 4;
    int x = area.left() + 8, row = 0;
    for (LegendItem& it : items) {
        const int w = swatch + 4 + fm.horizontalAdvance(it.text);
        if (x > area.left() + 8 && x + w > area.right() - 4) x = area.left() + 8, ++row;
        it.x = x;
        it.row = row;
        x += w + 14;
    }
    out.legend = std::move(items);
    const Geometry g = panelGeometry(area, out.sides, row + 1, fm, fs, lines);
    // The sides share the height evenly: each needs room for the longer caption.
    const int most = std::max(lines[0], lines[1]);
    out.minHeight = 8 + (row + 1) * fm.lineSpacing() + 4 +
                    out.sides * (2 * fm.lineSpacing() + 8 + k_minPlot + 6 + fs.lineSpacing() + 4 + most * fs.lineSpacing() + 6);
    out.plot[0] = g.plot[0];
    out.plot[1] = g.plot[1];
    return out;
}

QRect RangeView::plotRect(int side) const {
    if (!message().isEmpty() || side < 0 || side > 1 || (side == 1 && runB() < 0)) return {};
    return layoutIn(m_canvas->rect(), m_canvas->font()).plot[side].translated(m_canvas->geometry().topLeft());
}

QStringList RangeView::caption(int side) const {
    if (!message().isEmpty() || side < 0 || side > 1 || (side == 1 && runB() < 0)) return {};
    const auto [lo, hi] = axisRange();
    return captionOf(panel(side), lo, hi);
}

QStringList RangeView::captionOf(const Panel& pn, double lo, double hi) const {
    if (pn.run < 0 || !pn.found) return {};
    QStringList out;
    // Exact zeros have no bar (0 has no power of two) and are not underflow: they are 0 in every
    // format. Say where they come from, or a student reads "87.9 %" as values lost.
    const mpx::HistTensor t = tensor();
    const auto session = m_store->session();
    const bool relu = session && session->config.model.activation == mpx::Activation::relu;
    QString why;
    switch (t) {
        case mpx::HistTensor::grad_output:
            if (relu) why = tr("a ReLU unit that was off passes no gradient back");
            break;
        case mpx::HistTensor::grad_weight:
        case mpx::HistTensor::grad_weight_unscaled:
            why = relu ? tr("a weight gets no gradient when its input was 0, or its ReLU unit off, for the whole batch")
                       : tr("a weight gets no gradient when its input was 0 for the whole batch");
            break;
        case mpx::HistTensor::output:
            if (relu) why = tr("a ReLU outputs 0 for every unit that is off");
            break;
        case mpx::HistTensor::input:
            why = layer() == 0 ? tr("the data's own zeros") : relu ? tr("the layer below is a ReLU: 0 for every unit that is off") : QString();
            break;
        default: break;
    }
    const QString count = QLocale().toString(static_cast<qulonglong>(pn.total));
    QString first = pn.zero > 0
        ? tr("Exactly 0 before rounding: %1 of the %2 values. They have no bar (0 has no power of two) and are not "
             "underflow: 0 stays 0 in every format%3. The bars are the other %4.")
              .arg(percentText(pn.zero), count, why.isEmpty() ? QString() : QStringLiteral(" (") + why + QLatin1Char(')'),
                   percentText(std::max(0.0, 1.0 - pn.zero - pn.inf - pn.nan)))
        : tr("%1 values, none exactly 0; each bar is the share of them between one power of two and the next.").arg(count);
    if (pn.inf > 0 || pn.nan > 0)
        first += tr(" Already inf before rounding: %1; NaN: %2 (no bar).").arg(percentText(pn.inf), percentText(pn.nan));
    out << first;
    if (!pn.unscaled.empty())
        out << tr("Solid bars: the gradients as stored (× loss scale %1). Faint dashed bars: the same gradients "
                  "÷ loss scale — where they would sit without scaling.").arg(pow2Text(pn.shift));
    if (!pn.fp8.note.isEmpty()) out << pn.fp8.note.split(QLatin1Char('\n'));
    QStringList offAxis;
    for (mpx::Format f : limitFormats()) {
        if (pn.fp8.active && (f == mpx::Format::e4m3 || f == mpx::Format::e5m2)) continue;
        const FormatInfo d = format_info(f);
        const double at[2] = {std::log2(static_cast<double>(d.min_subnormal)), std::log2(static_cast<double>(d.max_finite))};
        if (at[0] < lo || at[0] > hi || at[1] < lo || at[1] > hi)
            offAxis << tr("%1 %2 … %3").arg(formatName(f), pow2Text(std::round(at[0] * 10) / 10), pow2Text(std::round(at[1] * 10) / 10));
    }
    if (!offAxis.isEmpty()) out << tr("Off this axis: %1.").arg(offAxis.join(QStringLiteral(", ")));
    return out;
}

void RangeView::paintCanvas(QPainter& p, const QRect& area) const {
    const QString msg = message();
    const QFontMetrics fm(p.font());
    if (!msg.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(area.adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, msg);
        return;
    }
    const auto session = m_store->session();
    const Layout g = layoutIn(area, p.font());
    const int sides = g.sides;
    const Panel(&panels)[2] = g.panels;
    const std::vector<mpx::Format> lineFormats = limitFormats();
    // The legend first: what the colours mean, in words, in as many rows as the width needs.
    const int swatch = fm.height() - 4;
    for (const LegendItem& it : g.legend) {
        const int y = area.top() + 4 + it.row * fm.lineSpacing();
        if (it.dashed) {
            p.setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
            p.drawLine(it.x + swatch / 2, y + 2, it.x + swatch / 2, y + fm.height() - 2);
        } else {
            p.fillRect(QRect(it.x, y + 2, swatch, swatch), bandColour(it.band));
        }
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(it.x + swatch + 4, y + fm.ascent(), it.text);
    }
    const double lo = g.lo, hi = g.hi;
    double ymax = 0;  // one y scale for both sides: the heights compare
    for (const Panel& pn : panels) {
        for (double s : pn.share) ymax = std::max(ymax, s);
        for (const auto& u : pn.unscaled) ymax = std::max(ymax, u.second);
    }
    ymax = shareAxisTop(ymax);
    const QColor text = palette().color(QPalette::WindowText);
    const int line = fm.lineSpacing();
    QFont bold = p.font();
    bold.setBold(true);
    const QFont small = smallFont(p.font());
    const QFontMetrics fs(small);
    const QString tensorName = QString::fromLatin1(mpx::to_string(tensor()).data(), static_cast<int>(mpx::to_string(tensor()).size()));

    for (int side = 0; side < sides; ++side) {
        const Panel& pn = panels[side];
        const QRect r = g.plot[side];
        Log2Axis ax{lo, hi, QRectF(r)};
        const QString label = pn.run >= 0 && session ? session->runs[static_cast<std::size_t>(pn.run)].label : QString();
        p.setFont(bold);
        p.setPen(runColour(session, pn.run));
        const int titleY = r.top() - line - 8;
        p.fillRect(QRect(area.left() + 8, titleY - fm.ascent() + 2, 4, line - 2), runColour(session, pn.run));
        QString title = tr("%1 — %2 %3").arg(label, gui::layerName(*m_store->session(), layer()), tensorName);
        if (pn.found) title += tr(", stored as %1").arg(formatName(pn.format));
        title += tr(", step %1").arg(pn.step);
        if (mpx::is_scaled_gradient(tensor())) title += tr(", loss scale %1").arg(pow2Text(pn.shift));
        if (!pn.fp8.title.isEmpty()) title += QStringLiteral(", ") + pn.fp8.title;
        p.drawText(area.left() + 16, titleY, fm.elidedText(title, Qt::ElideRight, area.width() - 24));
        p.setFont(small);
        if (pn.run < 0 || !pn.found) {
            p.setPen(palette().color(QPalette::PlaceholderText));
            p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap,
                       pn.run < 0 ? tr("No histogram at this step for this run.")
                       : !m_store->session()->layerNames.isEmpty()
                           ? tr("A trace records each module's output gradients (grad_output) only.")
                           : tr("This layer has no such values (normalized needs a model with LayerNorm)."));
            continue;
        }
        // The shaded bands (an FP8 cast's, placed by its scale, or the storage format's), labelled
        // above the plot; for MXFP8 that row holds the window of the block with the amax instead.
        const bool window = pn.fp8.active && pn.fp8.block;
        drawBands(p, ax, QRectF(r), pn.shaded, pn.format, pn.fp8.active && !window ? &pn.fp8 : nullptr,
                  window ? std::nan("") : r.top() - 4.0);
        if (window) drawBlockWindow(p, ax, QRectF(r.left(), r.top() - fs.lineSpacing() - 3, r.width(), fs.lineSpacing() + 1), pn.fp8);
        // Other formats' limits: thin dashed lines, labelled inside the plot, each label on the
        // first row where it does not run into another.
        struct Limit {
            double x;
            QString text;
            bool smallest;
        };
        std::vector<Limit> limits;
        for (mpx::Format f : lineFormats) {
            // An FP8 cast is always scaled: its unscaled limits would mislead.
            if (pn.fp8.active && (f == mpx::Format::e4m3 || f == mpx::Format::e5m2)) continue;
            const FormatInfo d = format_info(f);
            const double at[2] = {std::log2(static_cast<double>(d.min_subnormal)), std::log2(static_cast<double>(d.max_finite))};
            for (int k = 0; k < 2; ++k)
                if (at[k] >= lo && at[k] <= hi)
                    limits.push_back({ax.x(at[k]), k == 0 ? tr("%1 smallest").arg(formatName(f)) : tr("%1 largest").arg(formatName(f)), k == 0});
        }
        std::sort(limits.begin(), limits.end(), [](const Limit& a, const Limit& b) { return a.x < b.x; });
        std::vector<double> rowEnd;
        for (const Limit& l : limits) {
            p.setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
            p.drawLine(QPointF(l.x, r.top()), QPointF(l.x, r.bottom()));
            const double w = fs.horizontalAdvance(l.text);
            const double tx = l.smallest ? l.x + 2 : l.x - 2 - w;
            std::size_t row = 0;
            while (row < rowEnd.size() && rowEnd[row] > tx - 4) ++row;
            if (row == rowEnd.size()) rowEnd.push_back(0);
            rowEnd[row] = tx + w;
            p.setPen(QColor(70, 70, 70));
            p.drawText(QPointF(tx, r.top() + fs.ascent() + 2 + static_cast<double>(row) * fs.lineSpacing()), l.text);
        }
        // Upright along the plot, clear of "|value|" under it: "share" where the plot is too short.
        const QString shareTitle = fs.horizontalAdvance(tr("share of values")) + 8 < r.height() ? tr("share of values") : tr("share");
        drawShareAxis(p, QRectF(r), ymax, text, shareTitle, area.left() + 2);
        // Unscaled overlay first (faint, dashed), then the values as stored.
        const QColor c = runColour(session, pn.run);
        auto barRect = [&](double x0, double s) {
            const double h = s / ymax * r.height();
            return QRectF(ax.x(x0) + 0.5, r.bottom() - h, std::max(1.0, ax.x(x0 + 1) - ax.x(x0) - 1), h);
        };
        QColor faint = c;
        faint.setAlpha(45);
        for (const auto& [x0, s] : pn.unscaled) {
            if (x0 < lo || x0 + 1 > hi) continue;
            p.fillRect(barRect(x0, s), faint);
            p.setPen(QPen(c.lighter(130), 1, Qt::DashLine));
            p.drawRect(barRect(x0, s));
        }
        for (int i = 0; i < core::k_log2_bins; ++i) {
            const double s = pn.share[static_cast<std::size_t>(i)];
            if (s <= 0) continue;
            p.fillRect(barRect(i + core::k_bin_min, s), c);
        }
        // The shift, as an arrow from the unscaled values' middle to the scaled values' middle.
        if (!pn.unscaled.empty()) {
            double mu = 0, mw = 0, ms = 0, sw = 0;
            for (const auto& [x0, s] : pn.unscaled) mu += (x0 + 0.5) * s, mw += s;
            for (int i = 0; i < core::k_log2_bins; ++i) {
                const double s = pn.share[static_cast<std::size_t>(i)];
                ms += (i + core::k_bin_min + 0.5) * s, sw += s;
            }
            if (mw > 0 && sw > 0) {
                const double xa = ax.x(mu / mw), xb = ax.x(ms / sw), y = r.top() + r.height() * 0.42;
                p.setRenderHint(QPainter::Antialiasing, true);
                p.setPen(QPen(text, 1.6));
                p.drawLine(QPointF(xa, y), QPointF(xb, y));
                const double dir = xb > xa ? -1 : 1;
                QPainterPath head;
                head.moveTo(xb, y);
                head.lineTo(xb + dir * 8, y - 4);
                head.lineTo(xb + dir * 8, y + 4);
                head.closeSubpath();
                p.fillPath(head, text);
                p.setRenderHint(QPainter::Antialiasing, false);
                p.setFont(bold);
                const QString t = tr("×%1 loss scale").arg(pow2Text(pn.shift));
                p.drawText(QPointF((xa + xb) / 2 - QFontMetrics(bold).horizontalAdvance(t) / 2.0, y - 6), t);
                p.setFont(small);
            }
        }
        p.setPen(text);
        ax.draw(p, text);
        // The axis' name in the margin, clear of the first tick's label.
        p.drawText(QPointF(area.left() + 2, r.bottom() + 5 + fs.ascent()), tr("|value|"));
        // Caption: zero/inf/NaN, the legend of the overlay, the FP8 cast, formats off the axis.
        const int cy = r.bottom() + 6 + fs.lineSpacing() + 4;
        for (int k = 0; k < static_cast<int>(g.caption[side].size()); ++k)
            p.drawText(QRect(r.left(), cy + k * fs.lineSpacing(), r.width(), fs.lineSpacing()), Qt::AlignLeft, g.caption[side][k]);
    }
}

QString RangeView::tooltipAt(QPoint pos) const {
    if (!message().isEmpty()) return {};
    const QPoint viewPos = pos + m_canvas->geometry().topLeft();
    for (int side = 0; side < (runB() >= 0 ? 2 : 1); ++side) {
        const QRect r = plotRect(side);
        // Below the axis: the whole caption, in case its last line was cut.
        if (viewPos.x() >= r.left() && viewPos.x() <= r.right() && viewPos.y() > r.bottom() + 20 &&
            viewPos.y() < r.bottom() + 20 + (k_captionLines + 1) * QFontMetrics(smallFont(m_canvas->font())).lineSpacing())
            return caption(side).join(QStringLiteral("<br>"));
        if (!r.contains(viewPos)) continue;
        const Panel pn = panel(side);
        if (pn.run < 0 || !pn.found) return {};
        const auto [lo, hi] = axisRange();
        const Log2Axis ax{lo, hi, QRectF(r)};
        const int b = static_cast<int>(std::floor(ax.log2At(viewPos.x())));
        if (b < core::k_bin_min || b > core::k_bin_max) return {};
        const double s = pn.share[static_cast<std::size_t>(b - core::k_bin_min)];
        // The band at the bin's middle: an FP8 cast's edges need not be whole powers of two.
        const bool cast = pn.fp8.active && !pn.fp8.block;
        Band band = Band::normal;
        for (const BandSpan& sp : pn.shaded)
            if (b + 0.5 >= sp.lo && b + 0.5 < sp.hi) band = sp.band;
        const QString what = bandFate(band, pn.format, cast ? &pn.fp8 : nullptr).arg(formatName(cast ? pn.fp8.format : pn.format));
        const auto session = m_store->session();
        QString t = tr("<b>%1</b>, step %2<br>%3 of the values have |value| between %4 and %5:<br>%6.")
                        .arg(session->runs[static_cast<std::size_t>(pn.run)].label.toHtmlEscaped())
                        .arg(pn.step)
                        .arg(percentText(s), pow2Text(b), pow2Text(b + 1), what);
        if (cast)
            t += tr("<br>(Stored as %1; the matrix product multiplies them by the scale and rounds to %2 — the shaded bands.)")
                     .arg(formatName(pn.format), formatName(pn.fp8.format));
        if (pn.fp8.active && tensor() == mpx::HistTensor::weight)
            t += tr("<br>The bars are the weights and biases written back at the end of this step; this step's matrix "
                    "products cast the weights (not the biases) one update earlier.");
        if (pn.fp8.active && pn.fp8.block) t += pn.fp8.blockHelp;
        if (!pn.unscaled.empty())
            t += tr("<br>Faint bars: the same gradients without the loss scale (÷%1), where they would sit without scaling.")
                     .arg(pow2Text(pn.shift));
        return t;
    }
    return {};
}

}  // namespace mpx::ui
