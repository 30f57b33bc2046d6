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
    // One control per field of the engine's lists (gui::scalerFields, gui::trainFields), by name:
    // a NumberEdit, a QSpinBox or a QComboBox after the field's kind.
    QList<gui::FieldSpec> m_scalerFields, m_trainFields;
    QMap<QString, QWidget*> m_scalerControls, m_trainControls;
    QLabel* m_following = nullptr;
    QLabel* m_scalerError = nullptr;
    QToolButton* m_snippet = nullptr;
};

}  // namespace mpx::ui
