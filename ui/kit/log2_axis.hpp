// A horizontal axis of log2|value| shared by the histogram views (Range, Updates): where a power of
// two sits on screen, and its ticks labelled 2⁻²⁴ … 2¹⁶ as a student reads them.
// Rule: bin b of a histogram (core::bin_slot) covers [2^b, 2^(b+1)), so it spans x(b) … x(b + 1).
#pragma once

#include <QPainter>
#include <QRect>
#include <QString>

namespace mpx::ui {

// "2⁻²⁴", "2¹⁶", "1" for 0; fractional exponents with one decimal ("2^15.9").
QString pow2Text(double exponent);

struct Log2Axis {
    double lo = -40, hi = 20;  // log2 at the plot's left and right edge
    QRectF plot;
    double x(double log2) const { return plot.left() + (log2 - lo) / (hi - lo) * plot.width(); }
    double log2At(double px) const { return lo + (px - plot.left()) / plot.width() * (hi - lo); }
    // Ticks under the plot every `step` (a power of two chosen to fit), labelled with pow2Text.
    void draw(QPainter& p, const QColor& text) const;
};

// The top of a "share of values" axis for a largest share `largest` (0..1) with `headroom` × room
// above it: four ticks at round percentages (1, 2, 2.5 or 5 × 10^k %).
double shareAxisTop(double largest, double headroom = 1.15);
// That axis at the plot's left edge: ticks, "12.5 %" labels and the title `title` turned upright.
void drawShareAxis(QPainter& p, const QRectF& plot, double top, const QColor& text, const QString& title, double titleX);

}  // namespace mpx::ui
