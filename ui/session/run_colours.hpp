// How a run is drawn: one colour per precision (mode and low format), shared by every chart, legend,
// picker and table of the app, so amp-bf16 is the same blue in every lesson. Rule: a view reads a
// run's RunDescription::style and never derives a colour from the run's position in the session.
#pragma once

#include <QColor>
#include <vector>

#include "engine/precision/policy.hpp"

namespace mpx::gui {

struct RunStyle {
    QColor colour;                      // the line, swatch and label colour
    Qt::PenStyle pen = Qt::SolidLine;   // runs of one precision that differ in a '+' suffix: dashed
};

// The precision's colour from the one table (run_colours.cpp): the colour of its plain label
// ("amp-fp16"), which its variants ("amp-fp16+deepspeed") shade.
QColor precisionColour(const mpx::RunSpec& spec);

// Every run's style, in the order given: a plain label gets its precision's colour and a solid pen,
// a label with '+' suffixes a shade and dash chosen by the suffixes (the same in every session), and
// where two runs of the session would still be drawn alike the later takes the next free shade.
// Rule: no two of the returned styles are equal.
std::vector<RunStyle> runStyles(const std::vector<mpx::RunSpec>& specs);

}  // namespace mpx::gui
