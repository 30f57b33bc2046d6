// PlotWidget's mouse (plot_widget.hpp): hover, drag to pan, Ctrl+wheel or a touchpad pinch to zoom,
// double click to reset, the tooltip at rest, the figure menu on a right click (chart_image.hpp). The
// view only asks: it emits the owner's signals and changes no range itself.
// Rules: a new x range is requested (xRangeRequested), never set here, so charts sharing a step axis
// move together. A wheel without Ctrl is not the chart's: it goes on to the scroll area that holds the
// chart (a list of charts scrolls under the pointer, as every list does); zoom is Ctrl+wheel, as in
// most plotting tools.
#include "ui/kit/plot_private.hpp"

#include <QMouseEvent>
#include <QNativeGestureEvent>
#include <QToolTip>
#include <QWheelEvent>

namespace mpx::ui {

double PlotWidget::View::xAt(double px) const {
    const QRectF area = chart()->plotArea();
    const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
    return x0 + (px - area.left()) / std::max(1.0, area.width()) * (x1 - x0);
}

void PlotWidget::View::mouseMoveEvent(QMouseEvent* e) {
    const QPointF pos = e->position();
    if (m_dragging) {
        const double dx = xAt(pos.x()) - xAt(m_dragStart);
        request(m_startX0 - dx, m_startX1 - dx);
    } else if (chart()->plotArea().contains(pos)) {
        emit m_owner->hovered(xAt(pos.x()), e->globalPosition().toPoint());
    } else {
        emit m_owner->hovered(std::nan(""), {});
    }
}

void PlotWidget::View::mousePressEvent(QMouseEvent* e) {
    if (e->button() == Qt::LeftButton && chart()->plotArea().contains(e->position())) {
        m_dragging = true;
        m_dragStart = e->position().x();
        m_startX0 = m_owner->xMin();
        m_startX1 = m_owner->xMax();
        setCursor(Qt::ClosedHandCursor);
    }
}

void PlotWidget::View::mouseReleaseEvent(QMouseEvent*) {
    m_dragging = false;
    unsetCursor();
}

void PlotWidget::View::mouseDoubleClickEvent(QMouseEvent*) { emit m_owner->resetRequested(); }

void PlotWidget::View::leaveEvent(QEvent*) { emit m_owner->hovered(std::nan(""), {}); }

void PlotWidget::View::request(double x0, double x1) {
    const Private& d = *m_owner->d;
    if (std::isfinite(d.xLimitLo) && std::isfinite(d.xLimitHi) && d.xLimitHi > d.xLimitLo) {
        const double span = std::min(x1 - x0, d.xLimitHi - d.xLimitLo);
        x0 = std::clamp(x0, d.xLimitLo, d.xLimitHi - span);
        x1 = x0 + span;
    }
    emit m_owner->xRangeRequested(x0, x1);
}

void PlotWidget::View::zoomAround(double px, double factor) {
    const double at = xAt(px);
    const double x0 = m_owner->xMin(), x1 = m_owner->xMax();
    request(at - (at - x0) * factor, at + (x1 - at) * factor);
}

void PlotWidget::View::wheelEvent(QWheelEvent* e) {
    const double steps = e->angleDelta().y() / 120.0;
    if (!(e->modifiers() & Qt::ControlModifier) || steps == 0 || m_owner->d->bars) {
        e->ignore();  // the parent scrolls
        return;
    }
    zoomAround(e->position().x(), std::pow(0.8, steps));  // wheel up zooms in around the pointer
    e->accept();
}

void PlotWidget::View::resizeEvent(QResizeEvent* e) {
    QChartView::resizeEvent(e);
    m_owner->fitTitles();
    emit m_owner->plotResized();
}

// The mouse at rest (~0.7 s) asks for a tooltip. QGraphicsScene answers with the tooltip of the item
// under it, and with an empty one (which hides any tooltip) where no item has one: that hid the hover
// readout within a second of the mouse stopping (issue 27). At rest over the plot the readout is asked
// for again instead; elsewhere the widget's own tooltip (the Memory chart's explanation).
bool PlotWidget::View::viewportEvent(QEvent* e) {
    // A touchpad's pinch (where the platform reports one): spread to zoom in, as Ctrl+wheel up.
    if (e->type() == QEvent::NativeGesture) {
        const auto* g = static_cast<QNativeGestureEvent*>(e);
        if (g->gestureType() != Qt::ZoomNativeGesture || m_owner->d->bars) return QChartView::viewportEvent(e);
        zoomAround(g->position().x(), std::clamp(1.0 - g->value(), 0.5, 2.0));
        e->accept();
        return true;
    }
    if (e->type() != QEvent::ToolTip) return QChartView::viewportEvent(e);
    const auto* help = static_cast<QHelpEvent*>(e);
    const Private& d = *m_owner->d;
    if (!m_dragging && !d.bars && d.placeholderText.isEmpty() && chart()->plotArea().contains(help->pos()))
        emit m_owner->hovered(xAt(help->pos().x()), help->globalPos());
    else if (!m_owner->toolTip().isEmpty())
        QToolTip::showText(help->globalPos(), m_owner->toolTip(), this);
    else
        return QChartView::viewportEvent(e);
    e->accept();
    return true;
}

}  // namespace mpx::ui
