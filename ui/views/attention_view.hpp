// The Attention view: for a chosen run, block, head, window of the batch and kept step, the scores
// q·kᵀ (or the probabilities softmax made of them) as a position × position heatmap — rows the
// query position, columns the key position it reads, the future (upper triangle) masked and blank
// — and the same map of a second run beside it (amp-fp16 next to amp-bf16). Scores that passed the
// format's largest value and were stored as ±inf are marked ×.
// Rule: it draws the engine's AttentionSnapshots (RecordStore::attention()) and computes nothing
// but colours and the count of marked cells; the engine's own count for the step is shown beside it.
#pragma once

#include <QWidget>

class QPainter;

#include <memory>

#include "ui/kit/view_canvas.hpp"
#include "ui/session/record_store.hpp"

class QComboBox;
class QSlider;

namespace mpx::ui {

class AttentionView : public QWidget {
    Q_OBJECT
public:
    enum class Values { scores, probabilities };
    explicit AttentionView(gui::RecordStore* store, QWidget* parent = nullptr);

    QString message() const;  // why no map is drawn, or empty
    // The snapshot shown (the step slider's), or null.
    const mpx::AttentionSnapshot* shown() const;
    // Run `run`'s maps in the snapshot shown, or null.
    const mpx::AttentionMaps* mapsOf(int run) const;
    void setRuns(int a, int b);  // session run indices; b = -1: none beside
    int runA() const;
    int runB() const;
    void setBlock(int block);
    void setHead(int head);
    void setWindow(int window);
    void setValues(Values v);
    void setStepIndex(int i);  // into RecordStore::attention(); -1: the newest
    // The cells of (block, window, head) whose stored score is ±inf, in the causal triangle: a
    // finite score the rounding made infinite (NaN came from an inf or NaN operand, not from it).
    static long long markedCells(const mpx::AttentionMaps& m, int block, int window, int head);
    // Where run `run`'s map is drawn (view coordinates), and the cell (query i, key j) at a point
    // (-1, -1 outside).
    QRect mapRect(int run) const;
    QPoint cellAt(int run, QPoint pos) const;
    QString tooltipAt(QPoint pos) const;  // view coordinates: the cell under the pointer in words
    QString captionOf(int run) const;     // the line under run `run`'s map
    void setPresentationScale(double s);

    void paintCanvas(QPainter& p, const QRect& r);

signals:
    void wantedChanged(bool wanted);  // shown or hidden: GPT steps keep their maps only while shown

protected:
    void showEvent(QShowEvent*) override;
    void hideEvent(QHideEvent*) override;

private:
    struct Layout {
        QRect title, legend;
        QRect maps[2];
        int side = 0;
        int column = 0;  // the width of a map's titles and caption
        int widest = 0;  // the side the width alone would allow
    };
    Layout layout(const QRect& r) const;
    Layout layoutAt(const QRect& r) const;  // at m_textScale
    // The texts the layout measures: the view's headline and the line under it, a map's title
    // (the run, what is drawn, where and when) as it wraps in `width` — its height, drawn when
    // `p` is given.
    QString headline() const;
    QString explanation() const;
    int mapTitle(QPainter* p, int run, const QPoint& at, int width) const;
    void rebuildChoices();
    void refresh();
    QFont scaled(double f = 1.0) const;
    // The colour range of what is drawn: shared by both maps (scores: their finite cells' min and
    // max; probabilities: 0 … 1).
    std::pair<float, float> range() const;
    float value(const mpx::AttentionMaps& m, int i, int j) const;

    gui::RecordStore* m_store;
    ViewCanvas<AttentionView>* m_canvas;
    QComboBox *m_runA, *m_runB, *m_block, *m_head, *m_window, *m_values;
    QSlider* m_step;
    double m_scale = 1.0;
    // The text's scale the last layout chose: the classroom's m_scale, or less where the words at
    // that size would leave the maps too small to read (never below the desktop's 1).
    mutable double m_textScale = 1.0;
    bool m_follow = true;  // the slider at its right end follows the newest snapshot
};

// A value's colour on the view's sequential scale (viridis, t in [0, 1]).
QColor attentionColour(double t);

}  // namespace mpx::ui
