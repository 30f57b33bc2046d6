// Colours: a run's own (ui/session/run_colours.hpp: one per precision, Okabe–Ito based, read from
// RunDescription::style), one per memory category (Paul Tol's bright scheme) and one per class of a
// data set (matplotlib's tab10, the colours students know from scikit-learn's plots; blue and orange
// first). Rule: nothing here colours a run by its position in the session.
#pragma once

#include <QColor>
#include <QIcon>

#include "ui/session/session_info.hpp"

namespace mpx::ui {

// Run `run`'s style as its session was described (RunDescription::style); grey and solid where the
// session does not know the run (no session yet, or a record of an older one).
inline gui::RunStyle runStyle(const gui::SessionInfo* session, int run) {
    if (session && run >= 0 && static_cast<std::size_t>(run) < session->runs.size()) {
        const gui::RunStyle& s = session->runs[static_cast<std::size_t>(run)].style;
        if (s.colour.isValid()) return s;
    }
    return {QColor(0x77, 0x77, 0x77), Qt::SolidLine};
}
inline gui::RunStyle runStyle(const gui::SessionInfoPtr& session, int run) { return runStyle(session.get(), run); }
inline QColor runColour(const gui::SessionInfoPtr& session, int run) { return runStyle(session, run).colour; }

inline QColor memoryColour(int category) {
    // Paul Tol's bright scheme, colour-blind safe; compensation (Kahan buffers) in its grey.
    static const QColor k[] = {QColor(0x44, 0x77, 0xAA), QColor(0x66, 0xCC, 0xEE), QColor(0x22, 0x88, 0x33),
                               QColor(0xCC, 0xBB, 0x44), QColor(0xEE, 0x66, 0x77), QColor(0xAA, 0x33, 0x77),
                               QColor(0xBB, 0xBB, 0xBB)};
    return k[static_cast<unsigned>(category) % 7];
}

inline QColor classColour(int cls) {
    static const QColor k[] = {QColor(0x1F, 0x77, 0xB4), QColor(0xFF, 0x7F, 0x0E), QColor(0x2C, 0xA0, 0x2C),
                               QColor(0xD6, 0x27, 0x28), QColor(0x94, 0x67, 0xBD), QColor(0x8C, 0x56, 0x4B),
                               QColor(0xE3, 0x77, 0xC2), QColor(0x7F, 0x7F, 0x7F), QColor(0xBC, 0xBD, 0x22),
                               QColor(0x17, 0xBE, 0xCF)};
    return k[static_cast<unsigned>(cls) % 10];
}

// A filled square of the colour, for legends and table cells.
QIcon swatch(const QColor& c, int size = 12);
// A run's swatch: filled for a solid pen, hatched in its colour for a dashed one, so two runs of one
// colour family still differ in a legend or a table.
QIcon swatch(const gui::RunStyle& s, int size = 12);

}  // namespace mpx::ui
