// RangeView's drawing surface, shared by range_view.cpp (which makes it) and range_paint.cpp (which
// lays out and paints in it). Rule: it holds no state; the view decides everything it shows, and a
// new width only asks the view to fit the height again (the captions wrap anew).
#pragma once

#include "ui/kit/view_canvas.hpp"
#include "ui/views/range_view.hpp"

namespace mpx::ui {

class RangeView::Canvas : public ViewCanvas<RangeView> {
public:
    explicit Canvas(RangeView* view) : ViewCanvas(view, {500, 300}) {}

protected:
    void resizeEvent(QResizeEvent* e) override {
        ViewCanvas::resizeEvent(e);
        m_view->fitCanvasHeight();  // the captions wrap anew
    }
};

}  // namespace mpx::ui
