// Colours: one per run (Okabe–Ito, distinguishable with colour-vision deficiencies and on a
// projector), one per memory category (Paul Tol's bright scheme) and one per class of a data set
// (matplotlib's tab10, the colours students know from scikit-learn's plots; blue and orange first).
#pragma once

#include <QColor>
#include <QIcon>

namespace mpx::ui {

inline QColor runColour(int run) {
    static const QColor k[] = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73),
                               QColor(0xCC, 0x79, 0xA7), QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                               QColor(0x55, 0x55, 0x55), QColor(0x88, 0x22, 0x55)};
    return k[static_cast<unsigned>(run) % 8];
}

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

}  // namespace mpx::ui
