// The Sweep tab: one or two fields with their values (the same field list as the settings
// controls), an optional categorical field, the runs and the steps; Start/Cancel, a progress bar
// and ETA; the heatmap coloured by a chosen outcome; export as CSV + sidecar or PNG. Rule: the base
// of a sweep is the configuration the main view describes (setBaseConfig); clicking a cell hands
// that point's configuration back (pointChosen), it never touches the main view's session itself.
#pragma once

#include <QWidget>

#include <functional>

#include "ui/session/sweep_job.hpp"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace mpx::ui {

class SweepHeatmap;

class SweepPanel : public QWidget {
    Q_OBJECT
public:
    explicit SweepPanel(QWidget* parent = nullptr);

    void setBaseConfig(std::function<mpx::SessionConfig()> base) { m_base = std::move(base); }
    // The form, filled in code (tests, the screenshot): FIELD=VALUES lines, the runs and the steps.
    void setGrid(const QString& field1, const QString& values1, const QString& field2, const QString& values2,
                 const QString& categoricalValues = {});
    void setRuns(const QString& runs);
    void setSteps(int steps);
    void setOutcome(const QString& column);
    // A trace to sweep the rule over (nullptr: training again). A trace's sweep replays scaler settings
    // only (sweep_trace): the Runs and Steps rows and the train.* fields, which it would not use, go.
    void setTrace(std::shared_ptr<const mpx::Trace> trace);
    bool rowShown(QWidget* field) const;  // for tests: whether the form shows that field's row
    QWidget* runsField() const;
    QWidget* stepsField() const;

    QString start();  // an error message, or empty when the sweep started
    void cancel();
    gui::SweepJob* job() const { return m_job; }
    SweepHeatmap* heatmap() const { return m_map; }

signals:
    void pointChosen(const mpx::SessionConfig& cfg, const QString& origin);
    void progressText(const QString& text);  // for the status bar

private:
    void finished(bool cancelled, const QString& error);
    void refreshRuns();
    void updateExports();  // the export buttons, enabled once the sweep has a point
    void exportCsv();
    void exportPng();

    std::function<mpx::SessionConfig()> m_base;
    gui::SweepJob* m_job;
    QFormLayout* m_form;
    QComboBox *m_field1, *m_field2, *m_outcome, *m_run;
    QLineEdit *m_values1, *m_values2, *m_presets, *m_runs;
    QSpinBox* m_steps;
    QPushButton *m_start, *m_cancel, *m_csv, *m_png;
    QProgressBar* m_progress;
    QLabel *m_eta, *m_error;
    SweepHeatmap* m_map;
};

}  // namespace mpx::ui
