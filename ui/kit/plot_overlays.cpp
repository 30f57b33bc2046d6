// PlotWidget's marks on the plot (plot_widget.hpp): the step cursor, the shaded band of a window of
// steps and its label, and the empty state's placeholder line.
// Rule: each is placed in the plot area's pixels from the axes' range, so every change of range or
// plot area places them again (placeBand, placePlaceholder, setCursorStep); none shows in bar mode.
#include "ui/kit/plot_private.hpp"

namespace mpx::ui {

void PlotWidget::setCursorStep(double x) {
    d->cursorX = x;
    const QRectF area = d->chart->plotArea();
    const double x0 = xMin(), x1 = xMax();
    if (!std::isfinite(x) || x < x0 || x > x1 || d->bars) {
        d->cursor->hide();
        return;
    }
    const double px = area.left() + (x - x0) / (x1 - x0) * area.width();
    d->cursor->setLine(px, area.top(), px, area.bottom());
    d->cursor->show();
}

void PlotWidget::setXBand(double x0, double x1, const QString& label) {
    d->bandX0 = x0;
    d->bandX1 = x1;
    d->bandLabel->setText(label);
    placeBand();
}

QPair<double, double> PlotWidget::xBand() const { return {d->bandX0, d->bandX1}; }

void PlotWidget::placeBand() {
    const QRectF area = d->chart->plotArea();
    const double x0 = xMin(), x1 = xMax();
    if (!std::isfinite(d->bandX0) || !std::isfinite(d->bandX1) || d->bandX1 < x0 || d->bandX0 > x1 || d->bars) {
        d->band->hide();
        d->bandLabel->hide();
        return;
    }
    auto px = [&](double x) { return area.left() + (std::clamp(x, x0, x1) - x0) / (x1 - x0) * area.width(); };
    const double a = px(d->bandX0), b = std::max(px(d->bandX1), a + 2);  // a one-step window stays visible
    d->band->setRect(a, area.top(), b - a, area.height());
    d->band->show();
    if (d->bandLabel->text().isEmpty()) {
        d->bandLabel->hide();
        return;
    }
    // At the band's top, inside the plot: right of the band, or left of it where the right has no room.
    const double w = d->bandLabel->boundingRect().width();
    const double lx = b + 4 + w <= area.right() ? b + 4 : std::max(area.left() + 2, a - 4 - w);
    d->bandLabel->setPos(lx, area.top() + 3);
    d->bandLabel->show();
}

void PlotWidget::setPlaceholder(const QString& text) {
    d->placeholderText = text;
    const bool on = !text.isEmpty();
    // Axes without data would be invented ones (the Memory chart's 0–100 × 0–1 before any step):
    // the empty state shows the line alone.
    for (QAbstractAxis* a : d->chart->axes()) a->setVisible(!on);
    if (d->bars) {
        d->bars->setVisible(!on);
        d->chart->legend()->setVisible(!on);
    }
    if (on) {
        d->cursor->hide();
        d->band->hide();
        d->bandLabel->hide();
    } else {
        setCursorStep(d->cursorX);
        placeBand();
    }
    placePlaceholder();
}

QString PlotWidget::placeholder() const { return d->placeholderText; }

void PlotWidget::placePlaceholder() {
    if (d->placeholderText.isEmpty()) {
        d->placeholder->hide();
        return;
    }
    // Centred in the plot area (with the axes hidden, all of the chart under its title), broken into
    // lines at spaces where the tile is narrow (classroom fonts on a laptop), never past its edge.
    const QRectF r = d->chart->plotArea();
    const QFontMetricsF metrics(d->placeholder->font());
    const double room = r.width() - 8;
    QStringList lines;
    for (const QString& word : d->placeholderText.split(QLatin1Char(' '))) {
        if (!lines.isEmpty() && metrics.horizontalAdvance(lines.back() + QLatin1Char(' ') + word) <= room)
            lines.back() += QLatin1Char(' ') + word;
        else
            lines << word;
    }
    for (QString& line : lines) line = metrics.elidedText(line, Qt::ElideRight, room);
    d->placeholder->setText(lines.join(QLatin1Char('\n')));
    const QRectF t = d->placeholder->boundingRect();
    d->placeholder->setPos(std::max(r.left(), r.center().x() - t.width() / 2), r.center().y() - t.height() / 2);
    d->placeholder->show();
}

}  // namespace mpx::ui
