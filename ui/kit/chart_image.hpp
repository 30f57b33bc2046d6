// Figures for slides: one chart as a picture, whole (title, axes, lanes, legend), at twice its pixels,
// on a light background; a right click on a chart offers Copy image and Save image…. Every PlotWidget
// has the menu; any other widget that draws a chart gets it with installChartImageMenu(widget).
// Rule: a chart's picture is rendered by the widget into an image of its own, so it never depends on
// where the chart is scrolled to, what covers it or how large the window is; at a chosen size the
// chart is laid out at that size for the picture and back at once.
#pragma once

#include <QImage>
#include <QSize>
#include <QString>
#include <functional>

class QMenu;
class QWidget;

namespace mpx::ui {

constexpr double k_figureRatio = 2.0;  // pixels of a figure per pixel of the chart on screen

// The chart's size in a figure: as laid out now, or a slide's (logical pixels, × k_figureRatio).
enum class FigureSize { asShown, wide, standard };
QSize figureSize(FigureSize size, const QWidget* chart);  // asShown: the chart's size now
QString figureSizeName(FigureSize size, const QWidget* chart);  // "As shown (620 × 340)"

// The chart at `logical` size (invalid: as shown), `ratio` image pixels per logical pixel, on white.
// A PlotWidget whose own legend is hidden (its runs' legend is elsewhere, as in the charts panel)
// gets a key of its visible lines under it, so the figure says which line is which.
QImage chartImage(QWidget* chart, QSize logical = {}, double ratio = k_figureRatio);
// "loss-scale.png": the chart's title (or its name in installChartImageMenu) as a file name.
QString figureFileName(const QWidget* chart);
void copyChartImage(QWidget* chart, QSize logical = {});
// Written all or nothing (savePng); false where the file could not be written whole.
bool saveChartImage(QWidget* chart, const QString& path, QSize logical = {});

// Where Save image… asks for a file: `suggested` is a full path in the folder last saved to (the
// Pictures folder at first); an empty answer saves nothing. Tests install one that answers a path in
// a temporary folder, so that no dialog opens; an empty function restores the file dialog.
using FigurePathAsker = std::function<QString(QWidget* parent, const QString& suggested)>;
void setFigurePathAsker(FigurePathAsker ask);

// The figure menu of `chart` (Copy image, Save image…, Image size), owned by the caller.
QMenu* chartImageMenu(QWidget* chart);
// A right click on `chart` (or on any child that leaves the click to it) opens chartImageMenu.
// `name` names the figure's file where the chart has no title of its own ("fp4-values").
void installChartImageMenu(QWidget* chart, const QString& name = {});

}  // namespace mpx::ui
