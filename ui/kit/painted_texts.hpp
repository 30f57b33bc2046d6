// Every text a widget paints, read back as painted: each run of text, where it went and what clip
// it was painted under, in the widget's pixels. It renders the widget (and its children, charts
// included) into a paint device that records text instead of pixels, so a test reads a custom-painted
// view as it reads a label: nothing elided, nothing past its clip, no two texts on each other
// (ui_test_view_fit). Rule: it reads, never changes, the widget; a view need not take part.
#pragma once

#include <QList>
#include <QRectF>
#include <QString>

class QWidget;

namespace mpx::ui {

struct PaintedText {
    QString text;  // one run of text as painted (a line of a wrapped paragraph, one span of rich text)
    QRectF rect;   // the box it took: its advance by its ascent and descent
    QRectF clip;   // the clip it was painted under (the widget's rect where none was set)
};

// The texts `w` paints now, in paint order (an empty widget or a hidden one paints none); with
// `children`, its children's too, each in `w`'s pixels.
QList<PaintedText> paintedTexts(QWidget* w, bool children = true);

}  // namespace mpx::ui
