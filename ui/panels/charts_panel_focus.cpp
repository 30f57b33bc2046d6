// ChartsPanel: bringing one chart into view, for a lesson's link (charts_panel.hpp).
#include <QLayout>
#include <QScrollArea>
#include <QScrollBar>

#include "ui/panels/charts_panel.hpp"

namespace mpx::ui {

bool ChartsPanel::showChart(ChartId c) {
    PlotWidget* p = plot(c);
    if (!p || p->isHidden()) return false;  // not laid out (a trace without its data)
    if (m_area->layout()) m_area->layout()->activate();  // positions as they will be shown
    const QRect r(p->mapTo(m_area, QPoint(0, 0)), p->size());
    QScrollBar* bar = m_scroll->verticalScrollBar();
    const int view = m_scroll->viewport()->height();
    // Whole where it fits: scroll the least that shows its bottom, then its top wins.
    int value = bar->value();
    if (r.bottom() > value + view - 1) value = r.bottom() - view + 1;
    if (r.top() < value) value = r.top();
    bar->setValue(value);
    return chartInView(c);
}

bool ChartsPanel::chartInView(ChartId c) const {
    PlotWidget* p = plot(c);
    if (!p || p->isHidden()) return false;
    const QRect inViewport(p->mapTo(m_scroll->viewport(), QPoint(0, 0)), p->size());
    return m_scroll->viewport()->rect().contains(inViewport);
}

}  // namespace mpx::ui
