// LineKey (line_key.hpp): the entries' places for a width, and their painting.
#include "ui/kit/line_key.hpp"

#include <QFontMetrics>
#include <QPainter>

namespace mpx::ui {

void LineKey::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const auto [places, height] = layoutAt(width());
    const QFontMetrics fm(font());
    for (int i = 0; i < m_entries.size(); ++i) {
        const Entry& e = m_entries[i];
        QPointF at = places[i];
        const double mid = at.y() + fm.height() / 2.0;
        QFont f = font();
        f.setBold(e.pen.style() == Qt::NoPen);
        if (e.pen.style() != Qt::NoPen) {
            p.setPen(e.pen);
            p.drawLine(QPointF(at.x(), mid), QPointF(at.x() + k_sample, mid));
            at.rx() += k_sample + 5;
        }
        p.setFont(f);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QPointF(at.x(), at.y() + fm.ascent()), e.text);
    }
}

// Each entry's top-left for width w, and the height they take.
std::pair<QList<QPointF>, int> LineKey::layoutAt(int w) const {
    const QFontMetrics fm(font());
    QList<QPointF> places;
    double x = 0, y = 0;
    const int line = fm.height() + 4;
    for (const Entry& e : m_entries) {
        const bool heading = e.pen.style() == Qt::NoPen;
        const double ew = entryWidth(e);
        if (x > 0 && (x + ew > w || (heading && !places.isEmpty()))) x = 0, y += line;  // a heading starts a row
        places << QPointF(x, y);
        x += ew + (heading ? 6 : k_gap);
    }
    return {places, m_entries.isEmpty() ? 0 : int(y) + line};
}

int LineKey::entryWidth(const Entry& e) const {
    QFont bold = font();
    bold.setBold(true);
    return e.pen.style() == Qt::NoPen ? QFontMetrics(bold).horizontalAdvance(e.text) : k_sample + 5 + QFontMetrics(font()).horizontalAdvance(e.text);
}

int LineKey::widest() const {
    int w = 0;
    for (const Entry& e : m_entries) w = std::max(w, entryWidth(e));
    return w;
}

}  // namespace mpx::ui
