// The sweep's picture: a heatmap of one outcome over two numeric fields (a line chart over one),
// one small map per value of the categorical field, side by side on one shared colour scale.
// Rule: it draws what the SweepJob holds and computes nothing but colours; cells not yet finished
// stay grey. Each heatmap cell is parted from its neighbours by a thin gap and shows its value where
// it fits. Hover shows every outcome of a cell, a click emits the cell's point.
#pragma once

#include <QStringList>
#include <QWidget>

#include <optional>

#include "engine/sweep/sweep_grid.hpp"
#include "engine/sweep/sweep_outcome.hpp"

namespace mpx::ui {

class SweepHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit SweepHeatmap(QWidget* parent = nullptr);

    void setGrid(const mpx::SweepGrid& grid);
    void setPoints(const std::vector<mpx::SweepPoint>* points);  // not owned; redraws
    void setOutcome(const QString& column);
    void setRun(int runIndex);
    // Log colour scale when the values span more than two decades and none is negative.
    bool logScale() const { return m_log; }
    // The point under a widget position, if any.
    std::optional<std::size_t> pointAt(QPoint pos) const;
    // The cell's rectangle (for tests and the screenshot), empty if the point is not drawn.
    QRect cellRect(std::size_t point) const;
    // The labels of an axis' values, in one notation (all 2ᵏ or all plain numbers).
    QStringList axisLabels(int axis) const;
    // The value written in a finished cell (empty: not trained yet); drawn where it fits.
    QString cellText(std::size_t point) const;

signals:
    void pointClicked(std::size_t point);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mousePressEvent(QMouseEvent*) override;

private:
    struct Layout {
        int numericX = -1, numericY = -1, categorical = -1;  // axis indices, -1 when absent
        int panels = 1, nx = 1, ny = 1;
        QRect area;       // every panel
        int panelW = 0, gap = 0;
    };
    Layout layout() const;
    std::optional<double> value(std::size_t point) const;
    QColor colour(double v) const;
    const mpx::SweepPoint* find(std::size_t point) const;
    void updateRange();

    mpx::SweepGrid m_grid;
    const std::vector<mpx::SweepPoint>* m_points = nullptr;
    QString m_outcome = QStringLiteral("skipped");
    int m_run = 0;
    double m_min = 0, m_max = 1;
    bool m_log = false;
};

}  // namespace mpx::ui
