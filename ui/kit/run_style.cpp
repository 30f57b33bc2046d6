// Swatches for legends, pickers and table cells (run_style.hpp).
#include "ui/kit/run_style.hpp"

#include <QPainter>
#include <QPixmap>

namespace mpx::ui {

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

QIcon swatch(const gui::RunStyle& s, int size) {
    if (s.pen == Qt::SolidLine) return swatch(s.colour, size);
    // One hatch per dash, so the swatch says what the line's pattern says.
    Qt::BrushStyle hatch = Qt::BDiagPattern;
    switch (s.pen) {
        case Qt::DashLine: hatch = Qt::BDiagPattern; break;
        case Qt::DotLine: hatch = Qt::Dense4Pattern; break;
        case Qt::DashDotLine: hatch = Qt::CrossPattern; break;
        case Qt::DashDotDotLine: hatch = Qt::DiagCrossPattern; break;
        default: hatch = Qt::FDiagPattern; break;
    }
    QPixmap pm(size, size);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    const QRectF box(0.5, 0.5, size - 1, size - 1);
    QColor pale = s.colour;
    pale.setAlpha(90);
    p.setPen(Qt::NoPen);
    p.setBrush(pale);
    p.drawRoundedRect(box, 2, 2);
    p.setBrush(QBrush(s.colour, hatch));
    p.drawRoundedRect(box, 2, 2);
    p.setRenderHint(QPainter::Antialiasing);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(s.colour.darker(110), 1.5));
    p.drawRoundedRect(box.adjusted(0.5, 0.5, -0.5, -0.5), 2, 2);
    return QIcon(pm);
}

}  // namespace mpx::ui
