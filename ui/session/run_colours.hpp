// How a run is drawn: one colour per precision (mode and low format), shared by every chart, legend,
// picker and table of the app, so amp-bf16 is the same blue in every lesson. Rule: a view reads a
// run's RunDescription::style and never derives a colour from the run's position in the session.
#pragma once

#include <QColor>
#include <array>
#include <vector>

#include "engine/precision/policy.hpp"

namespace mpx::gui {

struct RunStyle {
    QColor colour;                      // the line, swatch and label colour
    Qt::PenStyle pen = Qt::SolidLine;   // runs of one precision that differ in a '+' suffix: dashed
};

// How far apart two colours look: CIELAB (D65) of an sRGB colour, with `ambient` the share of
// white light a room adds to every colour on a projector's screen (0: a monitor), and the CIEDE2000
// difference (Sharma, Wu and Dalal's formulation). A projected difference is that with a fifth of
// the light ambient: dark shades close up, as on a washed-out lecture-hall screen.
using Lab = std::array<double, 3>;
Lab lab(const QColor& c, double ambient = 0.0);
double deltaE2000(const Lab& p, const Lab& q);
inline constexpr double k_projector_ambient = 0.2;
double projectedDifference(const QColor& a, const QColor& b);

// The precision's colour from the one table (run_colours.cpp): the colour of its plain label
// ("amp-fp16"), which its variants ("amp-fp16+deepspeed") shade.
QColor precisionColour(const mpx::RunSpec& spec);

// Every run's style, in the order given: a plain label gets its precision's colour and a solid pen,
// a label with '+' suffixes a shade and dash chosen by the suffixes (the same in every session), and
// where a variant would be drawn close to a run of the session (projectedDifference < 10) it takes
// the next shade of its sequence. Rule: no two of the returned styles are equal, and in a session
// of up to a family's shades no two are close.
std::vector<RunStyle> runStyles(const std::vector<mpx::RunSpec>& specs);

}  // namespace mpx::gui
