// Numbers as the views write them for people: shares as percentages, formats by their upper-case
// names. Rule: one spelling for each, so the same share reads the same in every view.
#pragma once

#include <QString>

#include "engine/precision/format.hpp"

namespace mpx::ui {

// "0 %", "12.5 %", "0.0031 %": three significant digits, two below 0.1 %.
QString percentText(double share);
// "FP16", "E4M3": the format's name in capitals.
QString formatName(mpx::Format f);

}  // namespace mpx::ui
