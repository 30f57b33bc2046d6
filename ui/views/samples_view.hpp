// The Samples view: what each precision writes. Side by side, each run's newest sample — the run's
// name in its precision's colour, the step and held-out loss it came from, the text in a monospace
// font with its line breaks kept — and a button that has every run write one now.
// Rule: it draws RecordStore::samples() as the engine wrote them (every run drew with the same
// random numbers, so where two texts part, the runs' own probabilities did) and computes nothing.
#pragma once

#include <QWidget>

#include "ui/kit/view_canvas.hpp"
#include "ui/session/record_store.hpp"

class QPushButton;

namespace mpx::ui {

class SamplesView : public QWidget {
    Q_OBJECT
public:
    explicit SamplesView(gui::RecordStore* store, QWidget* parent = nullptr);

    // Why no sample is shown (no session, an MLP, none written yet), or empty.
    QString message() const;
    // The runs shown, in session order, and where each one's column is drawn (canvas coordinates).
    std::vector<int> shownRuns() const;
    QRect columnRect(int run) const;
    // "step 1,250 · held-out loss 2.513" for run `run`'s newest sample; empty without one.
    QString sourceText(int run) const;
    QPushButton* sampleButton() const { return m_button; }
    void setPresentationScale(double s);  // text × s (the classroom view); 1 = normal

    // ViewCanvas's callbacks.
    void paintCanvas(QPainter& p, const QRect& r);
    QString tooltipAt(QPoint pos) const;

signals:
    void sampleRequested();  // "Write samples now": every run writes one from its current weights

private:
    struct Layout {
        QRect title;
        QString caption;             // the form that leaves the boxes room
        std::vector<QRect> columns;  // by position in shownRuns()
    };
    Layout layout(const QRect& r) const;
    // The canvas's least height at `width`: the title, the brief caption and every row of boxes at
    // k_boxLines lines. A shorter view scrolls rather than cut the last row at the canvas's foot.
    int leastHeight(int width) const;
    int columnNeed(int run, int width) const;
    int headHeight(const QString& caption, int width) const;
    int tallestNeed(const std::vector<int>& runs, int w) const;
    void fitHeight();  // the canvas's minimum height for its width, runs and text size
    void resizeEvent(QResizeEvent* e) override;
    bool eventFilter(QObject* o, QEvent* e) override;
    QString caption(bool brief) const;  // under the title: the message, or what the texts are
    QFont scaled(double factor = 1.0, bool mono = false) const;
    void refresh();

    gui::RecordStore* m_store;
    ViewCanvas<SamplesView>* m_canvas;
    QPushButton* m_button;
    double m_scale = 1.0;
};

}  // namespace mpx::ui
