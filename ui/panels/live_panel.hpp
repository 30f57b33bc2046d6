// The settings that apply at the next step, while the session runs: every loss-scaler parameter
// (from a framework preset or by hand) of the session scaler, of one run or of every run sharing a
// preset, and the learning rate, its schedule and clipping.
// Rule: emits only valid settings; an invalid field stays red and is not sent. The form always shows
// the chosen target's scaler as the engine last reported it.
#pragma once

#include <QMap>
#include <optional>
#include <QWidget>

#include "ui/session/config_bridge.hpp"
#include "ui/session/session_info.hpp"

class QComboBox;
class QSpinBox;
class QLabel;
class QToolButton;

namespace mpx::ui {

class NumberEdit;

// Which runs a scaler edit reaches: the session scaler (the runs whose label names no scaler follow
// it), or the scalers of the runs named.
struct ScalerTarget {
    bool session = true;
    QStringList runs;
    bool operator==(const ScalerTarget&) const = default;
};

class LivePanel : public QWidget {
    Q_OBJECT
public:
    explicit LivePanel(QWidget* parent = nullptr);

    void setScaler(const mpx::ScalerConfig& s);  // no signal
    void setTrain(const mpx::TrainConfig& t);    // no signal
    mpx::ScalerConfig scaler() const;
    // The live training fields of this panel written over `base`.
    mpx::TrainConfig train(mpx::TrainConfig base) const;
    // The session's runs: the "Applies to" choices are the session scaler (the default when a run
    // follows it), every preset two or more runs name, and each run. Keeps the choice when it is
    // still there. No signal.
    void setRuns(const std::vector<gui::RunDescription>& runs, const gui::LiveScalersPtr& scalers);
    // The scalers now in force (after a live edit): the form shows the chosen target's. No signal.
    void setScalers(const gui::LiveScalersPtr& scalers);
    ScalerTarget target() const;
    QStringList targetNames() const;  // the "Applies to" choices, in order
    bool chooseTarget(int index);     // as the user would; false when there is no such choice

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
    void showTarget();
    std::optional<mpx::ScalerConfig> targetScaler() const;

    mpx::ScalerConfig m_scaler;  // the last values set or edited
    // The session's optimizer (a reset setting, from setTrain): momentum is SGD's alone.
    mpx::OptimizerKind m_optimizer = mpx::OptimizerKind::adam;
    bool m_filling = false;
    QComboBox* m_preset = nullptr;
    struct Target {
        ScalerTarget target;
        QString name;     // the choice as listed
        QString applies;  // the line under the form: which runs it reaches
    };
    QList<Target> m_targets;
    std::vector<gui::RunDescription> m_runs;
    gui::LiveScalersPtr m_scalers;
    QComboBox* m_target = nullptr;
    // One control per field of the engine's lists (gui::scalerFields, gui::trainFields), by name:
    // a NumberEdit, a QSpinBox or a QComboBox after the field's kind.
    QList<gui::FieldSpec> m_scalerFields, m_trainFields;
    QMap<QString, QWidget*> m_scalerControls, m_trainControls;
    QLabel* m_following = nullptr;
    QLabel* m_scalerError = nullptr;
    QToolButton* m_snippet = nullptr;
};

}  // namespace mpx::ui
