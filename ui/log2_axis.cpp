// Log2Axis: tick spacing and superscript labels.
#include "ui/log2_axis.hpp"

#include <QFontMetrics>
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

}  // namespace mpx::ui
