// The Mismatch view (the fp16-for-rl lesson): one run's weights read by other precision policies,
// the per-token |Δ log p| against the reference policy as a histogram in log2 bins, one bar a policy
// in its precision's colour, with each policy's mean and largest |Δ| and the ratio of the means.
// Rule: it draws RecordStore::mismatches() as the engine measured them (the newest step) and
// computes nothing but shares of its counts.
#pragma once

#include <QWidget>

#include <vector>

#include "ui/kit/view_canvas.hpp"
#include "ui/session/record_store.hpp"

namespace mpx::ui {

class MismatchView : public QWidget {
    Q_OBJECT
public:
    explicit MismatchView(gui::RecordStore* store, QWidget* parent = nullptr);

    // Why nothing is drawn (no session, an MLP, no mismatch section, none measured yet), or empty.
    QString message() const;
    // The step drawn (the newest measured), −1 without one; its results, in the section's order.
    long long shownStep() const;
    std::vector<const mpx::MismatchResult*> shown() const;
    // The bins drawn, left to right: core::bin_slot slots (the exact-zero slot first where any
    // token has Δ = 0), spanning every policy's non-empty bins.
    std::vector<int> shownSlots() const;
    // Policy i's bar at slot s: its count, and where it is drawn (the view's coordinates; empty when 0).
    unsigned long long barCount(int policy, int slot) const;
    QRect barRect(int policy, int slot) const;
    void setPresentationScale(double s);  // text × s (the classroom view); 1 = normal

    // ViewCanvas's callbacks.
    void paintCanvas(QPainter& p, const QRect& r);
    QString tooltipAt(QPoint pos) const;

private:
    struct Layout {
        QRect title, caption, legend, plot;
    };
    Layout layout(const QRect& r) const;
    QRect barIn(const QRect& canvas, int policy, int slot) const;  // in the canvas's coordinates
    QFont scaled(double factor = 1.0) const;
    QColor policyColour(const std::string& label) const;
    QString caption() const;          // the message, or what the numbers are
    QString binText(int slot) const;  // "2⁻⁹ ≤ |Δ| < 2⁻⁸" or "Δ = 0 exactly"
    double peakShare() const;         // the tallest bar's share of its policy's tokens, rounded up for the axis

    gui::RecordStore* m_store;
    ViewCanvas<MismatchView>* m_canvas;
    double m_scale = 1.0;
};

}  // namespace mpx::ui
