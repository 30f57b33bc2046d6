// A step slider over one run's collected steps (its HistogramLog's snapshots), with the step shown
// beside it: it follows the newest step while training until the user moves it, and when the log
// thins (indices move) it stays at its step, not its index. The Range and Updates views scrub with it.
#pragma once

#include <QWidget>

#include <vector>

#include "engine/compute/histograms.hpp"

class QLabel;
class QSlider;

namespace mpx::ui {

// The snapshot of `snaps` nearest `step` (the later one on a tie); nullptr when there is none.
const mpx::HistogramSnapshot* nearestSnapshot(const std::vector<mpx::HistogramSnapshot>* snaps, long long step);

class StepScrubber : public QWidget {
    Q_OBJECT
public:
    explicit StepScrubber(QWidget* parent = nullptr);
    // The steps to scrub (nullptr or empty: none) and the interval they were collected at; call
    // whenever they change. Following: moves to the newest; else stays at the step shown.
    void setSnapshots(const std::vector<mpx::HistogramSnapshot>* snaps, long long every);
    long long step() const;  // the collected step shown, -1 when none
    // Shows the collected step nearest `step` and stops following, even at the newest: the user
    // asked for this step.
    void setStep(long long step);
    // A new session: forget the snapshots (their log is replaced) and follow the newest step once
    // setSnapshots gives the new ones.
    void follow();
    bool following() const { return m_follow; }
    QSlider* slider() const { return m_slider; }

signals:
    void stepChanged();

private:
    void showLabel();
    const std::vector<mpx::HistogramSnapshot>* m_snaps = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_label = nullptr;
    long long m_every = 0;
    bool m_follow = true;
    bool m_setting = false;  // the slider is being moved by code, not by the user
};

}  // namespace mpx::ui
