// The settings that shape a session and so need a reset: precisions to compare, model, data set,
// optimizer, batch, seed, steps, device. Rule: writes only these fields (applyTo); the window
// decides when they take effect and shows the "needs reset" banner.
#pragma once

#include <QWidget>

#include "ui/session/config_bridge.hpp"
#include "ui/session/trace_session.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGridLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;

namespace mpx::ui {

class SetupPanel : public QWidget {
    Q_OBJECT
public:
    explicit SetupPanel(QWidget* parent = nullptr);

    void setConfig(const mpx::SessionConfig& cfg);  // no signal
    void applyTo(mpx::SessionConfig& cfg) const;
    QStringList runs() const;  // checked run labels, in display order
    void setRunChecked(const QString& label, bool checked);
    void setPendingReset(bool pending);  // the title badge
    bool pendingReset() const { return m_pending; }
    // A trace shown (File ▸ Open trace…): the tab shows what the trace holds instead of the training
    // forms, which do not describe it; nullptr brings the forms back. The forms keep their values.
    void showTrace(const gui::TraceSession* trace);
    bool showsTrace() const;

signals:
    void edited();

private:
    QWidget* buildRuns();
    QWidget* buildModel();
    QWidget* buildMlpFields();
    QWidget* buildGptFields();
    // The model kind picks the fields shown: the MLP's, or the GPT's with the text it reads.
    void showModelKind();
    bool gpt() const;
    QWidget* buildData();
    QWidget* buildTraining();
    QCheckBox* addRunBox(const QString& label);
    void dataKindChanged();
    // The Classes box shows the data set's real class count: the setting where the kind has one
    // (spirals, blobs), else the count the kind fixes (digits 10), greyed.
    void showClasses();
    void changed();

    bool m_filling = false;
    bool m_pending = false;
    int m_classSetting = 2;  // data.classes as set or typed: kept while a kind that fixes its own is shown
    QLabel* m_badge = nullptr;
    QList<QWidget*> m_trainingBoxes;  // the forms a trace hides
    QWidget* m_traceBox = nullptr;
    QFormLayout* m_traceForm = nullptr;
    QGridLayout* m_runGrid = nullptr;
    QList<QCheckBox*> m_runBoxes;
    int m_runCell = 0;  // the run grid's next cell, two to a row
    QLineEdit* m_addRun = nullptr;
    QLabel* m_runError = nullptr;
    QLineEdit* m_sizes = nullptr;
    QLabel* m_sizesError = nullptr;
    QComboBox* m_activation = nullptr;
    QCheckBox *m_layernorm = nullptr, *m_recompute = nullptr, *m_keepOutput = nullptr;
    QDoubleSpinBox* m_dropout = nullptr;
    QComboBox* m_modelKind = nullptr;
    QStackedWidget* m_modelPages = nullptr;
    QSpinBox *m_nLayer = nullptr, *m_nHead = nullptr, *m_nEmbd = nullptr, *m_blockSize = nullptr;
    QCheckBox* m_tie = nullptr;
    QDoubleSpinBox *m_initScale = nullptr, *m_qkInitScale = nullptr, *m_gptDropout = nullptr, *m_softcap = nullptr;
    QComboBox *m_attnScale = nullptr, *m_softmax = nullptr, *m_autocast = nullptr, *m_normStats = nullptr;
    QCheckBox* m_qkNorm = nullptr;
    QDoubleSpinBox* m_zLoss = nullptr;
    QLabel* m_gptError = nullptr;
    QFormLayout* m_dataForm = nullptr;
    QLineEdit* m_textFile = nullptr;
    QSpinBox* m_nTest = nullptr;
    QComboBox* m_dataKind = nullptr;
    QSpinBox *m_classes = nullptr, *m_nTrain = nullptr;
    QDoubleSpinBox *m_noise = nullptr, *m_inputScale = nullptr;
    QComboBox *m_optimizer = nullptr, *m_device = nullptr;
    QSpinBox *m_batch = nullptr, *m_accumulation = nullptr, *m_steps = nullptr, *m_seed = nullptr,
             *m_recordEvery = nullptr;
};

}  // namespace mpx::ui
