// PNG files written all or nothing, and a view's picture without its controls. A file goes to a
// temporary beside the target, which replaces the target only once it is complete.
// Rule: a failed export (no folder, no permission, a full disk) leaves no half file and the old file,
// if any, untouched; an exported view holds what a reader looks at (charts, titles, legend, caption),
// never the combo boxes, sliders, buttons and check boxes that drive it.
#pragma once

#include <QPixmap>
#include <QString>

class QWidget;

namespace mpx::ui {

// false when the file could not be written whole; the target is then as it was.
bool savePng(const QPixmap& picture, const QString& path);

// What a widget is in an exported picture. Without a mark, pictureOf decides by kind: combo boxes,
// sliders, spin boxes, line edits and buttons are controls, and so is a label in a layout row with
// one ("Run", "Smoothing"); a check box with an icon is a legend entry (its icon and text, when
// checked); a chart view or a widget with no children is drawn.
enum class PicturePart { automatic, picture, control };
void setPicturePart(QWidget* w, PicturePart part);

// `page` as shown, less its controls, cropped to what is left: a white background where a control
// was, each picture part at its place. A scroll area in it is drawn whole, its content from the top
// whatever is scrolled into view, the page growing by what the area did not show (every chart of a
// list of charts, not the visible part). The whole page when nothing of it is a picture.
QPixmap pictureOf(const QWidget* page);
bool saveViewPng(const QWidget* page, const QString& path);  // savePng(pictureOf(page), path)

}  // namespace mpx::ui
