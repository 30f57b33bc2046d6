// The Decision boundaries view: one small map per run, side by side on one shared input plane, of the
// class that run's model predicts at every point (colour: class; pale: unsure, deep: sure), with
// the held-out points on top, coloured by their true class.
// Rule: it draws what RecordStore::boundaries() holds (the engine computed every prediction in the
// run's own precision) and computes nothing but colours; it asks for grids only while it is shown.
#pragma once

#include <QImage>
#include <QWidget>

#include <memory>

#include "ui/session/record_store.hpp"

namespace mpx::ui {

class BoundaryView : public QWidget {
    Q_OBJECT
public:
    explicit BoundaryView(gui::RecordStore* store, QWidget* parent = nullptr);

    // What the view says instead of maps (a data set without two input features, no session, no grid
    // yet), or empty when it draws maps.
    QString message() const;
    // "64×64 grid per run, 12 ms for 3 runs; grids take 4.0 % of the engine's time while it trains";
    // empty without grids.
    QString costText() const;
    // Whether the view shows the weights after `steps` steps (or has nothing to wait for: refused).
    bool showsStep(qint64 steps) const;
    // Where run `run`'s map is drawn (tests, tooltips); empty when it is not drawn.
    QRect mapRect(int run) const;
    // Run `run`'s map as drawn before scaling: one pixel per cell, row 0 at the top (highest y).
    QImage mapImage(int run) const;
    // A cell's colour: its class's colour (classColour), mixed with white the more, the closer its
    // probability is to chance (1/classes); dark grey where the logits held inf or NaN (label -1).
    static QRgb cellColour(int label, float confidence, int classes);
    // Text and dots × s (the classroom view); 1 = normal.
    void setPresentationScale(double s);

signals:
    // The view appeared or disappeared (its tab chosen, the window shown): grids are wanted only
    // while it is visible.
    void wantedChanged(bool wanted);

protected:
    void paintEvent(QPaintEvent*) override;
    bool event(QEvent* e) override;  // tooltips: the cell under the mouse in every run, else what the view shows
    void showEvent(QShowEvent*) override;
    void hideEvent(QHideEvent*) override;

private:
    struct Layout {
        QRect header, legend;
        QString title;
        int titleHeight = 0, footHeight = 0;  // the header's title, wrapped; the captions under the maps
        int side = 0, gap = 0, top = 0, left = 0;
    };
    Layout layout() const;
    void rebuildImages();
    QString tooltipAt(QPoint pos) const;

    QFont scaledFont() const;
    QString headerTitle() const;
    QString caption(int run) const;  // under run `run`'s map: its agreement with FP32, its held-out accuracy

    gui::RecordStore* m_store;
    double m_scale = 1.0;
    std::shared_ptr<const mpx::Boundaries> m_shown;  // the grids the images were made from
    std::vector<QImage> m_images;
};

}  // namespace mpx::ui
