// The settings that apply at the next step, while the session runs: every loss-scaler parameter
// (from a framework preset or by hand) and the learning rate, its schedule and clipping.
// Rule: emits only valid settings; an invalid field stays red and is not sent.
#pragma once

#include <QMap>
#include <QWidget>

#include "app/gui/config_bridge.hpp"

class QComboBox;
class QSpinBox;
class QLabel;
class QToolButton;

namespace mpx::ui {

class NumberEdit;

class LivePanel : public QWidget {
    Q_OBJECT
public:
    explicit LivePanel(QWidget* parent = nullptr);

    void setScaler(const mpx::ScalerConfig& s);  // no signal
    void setTrain(const mpx::TrainConfig& t);    // no signal
    mpx::ScalerConfig scaler() const;
    // The live training fields of this panel written over `base`.
    mpx::TrainConfig train(mpx::TrainConfig base) const;
    // Which runs a scaler change reaches (the others name their own scaler or have none).
    void setFollowingRuns(const QStringList& labels);

signals:
    void scalerEdited(const mpx::ScalerConfig& s);
    void trainEdited();
    void snippetCopied(const QString& framework);

private:
    QWidget* buildScaler();
    QWidget* buildTraining();
    void scalerChanged();
    void presetChosen(const QString& name);
    void updateEnabled();

    mpx::ScalerConfig m_scaler;  // the last values set or edited
    bool m_filling = false;
    QComboBox* m_preset = nullptr;
    QComboBox* m_kind = nullptr;
    NumberEdit *m_init = nullptr, *m_growth = nullptr, *m_backoff = nullptr, *m_min = nullptr, *m_max = nullptr;
    QSpinBox *m_interval = nullptr, *m_hysteresis = nullptr;
    QMap<QString, QComboBox*> m_enums;
    QLabel* m_following = nullptr;
    QLabel* m_scalerError = nullptr;
    QToolButton* m_snippet = nullptr;
    NumberEdit *m_lr = nullptr, *m_gamma = nullptr, *m_minLr = nullptr, *m_clip = nullptr,
               *m_momentum = nullptr, *m_decay = nullptr;
    QComboBox* m_schedule = nullptr;
    QSpinBox *m_stepSize = nullptr, *m_warmup = nullptr;
};

}  // namespace mpx::ui
