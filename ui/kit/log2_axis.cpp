// Log2Axis: tick spacing and superscript labels.
#include "ui/kit/log2_axis.hpp"

#include <QFontMetrics>
#include <algorithm>
#include <cmath>

namespace mpx::ui {

QString pow2Text(double exponent) {
    if (exponent != std::round(exponent)) return QStringLiteral("2^%1").arg(exponent, 0, 'f', 1);
    const int e = static_cast<int>(exponent);
    if (e == 0) return QStringLiteral("1");
    static const QChar sup[] = {u'⁰', u'¹', u'²', u'³', u'⁴', u'⁵', u'⁶', u'⁷', u'⁸', u'⁹'};
    QString s = QStringLiteral("2");
    if (e < 0) s += u'⁻';
    for (QChar c : QString::number(std::abs(e))) s += sup[c.digitValue()];
    return s;
}

void Log2Axis::draw(QPainter& p, const QColor& text) const {
    const QFontMetrics fm(p.font());
    const double span = hi - lo;
    // The smallest of 1, 2, 4, 8, 16 that leaves room for a label such as 2⁻¹²⁰ between ticks.
    const double room = fm.horizontalAdvance(QStringLiteral("2⁻¹²⁰")) * 1.6;
    int step = 1;
    while (step < 16 && plot.width() / span * step < room) step *= 2;
    p.setPen(QPen(text, 1));
    p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()));
    for (int e = static_cast<int>(std::ceil(lo / step)) * step; e <= hi; e += step) {
        const double px = x(e);
        p.drawLine(QPointF(px, plot.bottom()), QPointF(px, plot.bottom() + 4));
        const QString t = pow2Text(e);
        p.drawText(QPointF(px - fm.horizontalAdvance(t) / 2.0, plot.bottom() + 5 + fm.ascent()), t);
    }
}

double shareAxisTop(double largest, double headroom) {
    if (!(largest > 0)) return 1.0;
    const double raw = std::min(1.0, largest * headroom) / 4;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * mag >= raw) return std::min(1.0, 4 * m * mag);
    return 1.0;
}

void drawShareAxis(QPainter& p, const QRectF& plot, double top, const QColor& text, const QString& title, double titleX) {
    const QFontMetrics fm(p.font());
    p.setPen(QPen(text, 1));
    p.drawLine(plot.bottomLeft(), plot.topLeft());
    // Every tick labelled where the plot is tall enough, else every second one, else the ends.
    int every = 1;
    while (every < 4 && plot.height() * every / 4 < fm.height() + fm.ascent() / 2.0) every *= 2;
    for (int k = 0; k <= 4; ++k) {
        const double v = top * k / 4;
        const double y = plot.bottom() - v / top * plot.height();
        p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.left(), y));
        if (k % every != 0) continue;
        const QString t = QStringLiteral("%1 %").arg(100 * v, 0, 'g', 3);
        // Centred on its tick, but "0 %" sits on the axis (its baseline on the tick), clear of the
        // log₂ labels under the plot's left end.
        const double baseline = k == 0 ? y - fm.descent() : y + fm.ascent() / 2.0 - 1;
        p.drawText(QPointF(plot.left() - 6 - fm.horizontalAdvance(t), baseline), t);
    }
    p.save();
    p.translate(titleX + fm.ascent(), plot.center().y());
    p.rotate(-90);
    p.drawText(QPointF(-fm.horizontalAdvance(title) / 2.0, 0), title);
    p.restore();
}

}  // namespace mpx::ui
