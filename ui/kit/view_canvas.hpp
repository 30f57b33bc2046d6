// A view's drawing surface: paints through the view's paintCanvas(painter, rect) and shows the
// view's tooltipAt(point), or the view's own tooltip where that gives none. Rule: the view holds
// every piece of state; the canvas only forwards its paint and tooltip events. A right click offers
// the canvas as a figure (chart_image.hpp), named after the view ("mpx-updates.png").
#pragma once

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QString>
#include <QToolTip>
#include <QWidget>

#include "ui/kit/chart_image.hpp"

namespace mpx::ui {

template <class View>
class ViewCanvas : public QWidget {
public:
    // inView: tooltipAt takes points in the view's coordinates, else in the canvas's.
    ViewCanvas(View* view, QSize minimum, bool inView = false) : m_view(view), m_inView(inView) {
        setMinimumSize(minimum);
        setMouseTracking(true);
        QString name = QString::fromLatin1(View::staticMetaObject.className());
        name = name.mid(name.lastIndexOf(QLatin1Char(':')) + 1);
        if (name.endsWith(QLatin1String("View"))) name.chop(4);
        installChartImageMenu(this, name);
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), palette().color(QPalette::Base));
        m_view->paintCanvas(p, rect());
    }
    bool event(QEvent* e) override {
        if (e->type() != QEvent::ToolTip) return QWidget::event(e);
        auto* help = static_cast<QHelpEvent*>(e);
        const QString t = m_view->tooltipAt(help->pos() + (m_inView ? geometry().topLeft() : QPoint()));
        QToolTip::showText(help->globalPos(), t.isEmpty() ? m_view->toolTip() : t, this);
        return true;
    }

    View* m_view;

private:
    bool m_inView;
};

}  // namespace mpx::ui
