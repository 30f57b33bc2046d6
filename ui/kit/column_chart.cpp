// ColumnChart: bars on a 0…max-share axis, painted directly (no Qt Charts: eight bars need none).
#include "ui/kit/column_chart.hpp"

#include "ui/kit/chart_image.hpp"

#include <QApplication>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace mpx::ui {

ColumnChart::ColumnChart(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(150);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    installChartImageMenu(this, QStringLiteral("e2m1-values"));  // Copy image, Save image… on a right click
}

void ColumnChart::setColumns(const QList<Column>& columns) {
    m_columns = columns;
    update();
}

void ColumnChart::setPlaceholder(const QString& text) {
    m_placeholder = text;
    update();
}

void ColumnChart::setFontScale(double s) {
    m_fontScale = s;
    updateGeometry();
    update();
}

void ColumnChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().color(QPalette::Base));
    QFont f = font();
    f.setPointSizeF(QApplication::font().pointSizeF() * m_fontScale);
    p.setFont(f);
    const QFontMetrics fm(f);
    if (m_columns.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    // The axis goes to the tallest bar (at least 1 %), so a few small bars still show their sizes.
    double top = 0.01;
    for (const Column& c : m_columns) top = std::max(top, c.share);
    const int labelRows = 1 + static_cast<int>(std::any_of(m_columns.begin(), m_columns.end(), [](const Column& c) {
                              return c.label.contains(QLatin1Char('\n'));
                          }));
    const QRectF plot(8, fm.lineSpacing() + 6, width() - 16, height() - fm.lineSpacing() * (labelRows + 1) - 14);
    const double slot = plot.width() / static_cast<double>(m_columns.size());
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()));
    for (int i = 0; i < m_columns.size(); ++i) {
        const Column& c = m_columns[i];
        const double x = plot.left() + slot * i;
        const double h = std::isfinite(c.share) ? plot.height() * std::clamp(c.share / top, 0.0, 1.0) : 0.0;
        const QRectF bar(x + slot * 0.18, plot.bottom() - h, slot * 0.64, h);
        p.setPen(Qt::NoPen);
        p.setBrush(c.colour);
        p.drawRect(bar);
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(x, bar.top() - fm.lineSpacing() - 2, slot, fm.lineSpacing()), Qt::AlignHCenter | Qt::AlignBottom,
                   fm.elidedText(c.value, Qt::ElideRight, static_cast<int>(slot)));
        p.drawText(QRectF(x, plot.bottom() + 3, slot, fm.lineSpacing() * labelRows + 2), Qt::AlignHCenter | Qt::AlignTop,
                   c.label);
    }
}

}  // namespace mpx::ui
