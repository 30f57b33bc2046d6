// SetupPanel: forms for the settings that need a reset.
#include "ui/panels/setup_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <climits>
#include <cmath>

#include "ui/kit/concepts.hpp"

namespace mpx::ui {
namespace {

QFormLayout* form(QWidget* w) {
    auto* f = new QFormLayout(w);
    f->setContentsMargins(8, 6, 8, 6);
    f->setHorizontalSpacing(8);
    f->setVerticalSpacing(4);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    return f;
}

QLabel* errorLabel() {
    auto* l = new QLabel;
    l->setWordWrap(true);
    l->setStyleSheet(QStringLiteral("color: #c0392b"));
    l->hide();
    return l;
}

}  // namespace

SetupPanel::SetupPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_badge = new QLabel(tr("Changes below apply when you reset (Ctrl+R)"));
    m_badge->setToolTip(concepts::needsReset());
    m_badge->setWordWrap(true);
    layout->addWidget(m_badge);
    setPendingReset(false);
    layout->addWidget(buildRuns());
    layout->addWidget(buildModel());
    layout->addWidget(buildData());
    layout->addWidget(buildTraining());
    layout->addStretch(1);
}

void SetupPanel::setPendingReset(bool pending) {
    m_pending = pending;
    // Idle, a quiet grey hint; amber only once something was changed that a reset would apply (an
    // amber "Needs reset" on every start, with nothing changed, taught a class to ignore it).
    m_badge->setText(pending ? tr("⟳ Changed — press Reset (Ctrl+R) to apply")
                             : tr("Changes here apply when you reset (Ctrl+R)."));
    m_badge->setStyleSheet(pending ? QStringLiteral("QLabel { background: #fff3cd; color: #7a5a00; border: 1px solid #e0c060;"
                                                    " border-radius: 3px; padding: 3px 6px; font-weight: bold; }")
                                   : QStringLiteral("QLabel { color: #666; padding: 3px 6px; }"));
}

QCheckBox* SetupPanel::addRunBox(const QString& label) {
    auto* box = new QCheckBox(label);
    box->setToolTip(concepts::run(label));
    const int n = static_cast<int>(m_runBoxes.size());
    m_runGrid->addWidget(box, n / 2, n % 2);
    m_runBoxes << box;
    connect(box, &QCheckBox::toggled, this, &SetupPanel::changed);
    return box;
}

QWidget* SetupPanel::buildRuns() {
    auto* box = new QGroupBox(tr("Precisions to compare"));
    box->setToolTip(concepts::needsReset());
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(8, 6, 8, 6);
    m_runGrid = new QGridLayout;
    m_runGrid->setHorizontalSpacing(12);
    m_runGrid->setVerticalSpacing(2);
    v->addLayout(m_runGrid);
    for (const QString& r : gui::standardRuns()) addRunBox(r);
    auto* addRow = new QHBoxLayout;
    m_addRun = new QLineEdit;
    m_addRun->setPlaceholderText(tr("other run, e.g. half-fp16+deepspeed"));
    m_addRun->setToolTip(tr("A run label: mode-format, optionally + a scaler preset, a write-back cure or an "
                            "accumulation model (fp32, tf32, amp-fp16, half-bf16, pure-fp16, amp-fp16+apex, "
                            "pure-bf16+sr, fp8-hybrid+acc-te, fp8-hybrid+acc-fast, mxfp8, ...). FP4: nvfp4 "
                            "(Transformer Engine's recipe; switches +no-rht, +no-sr, +1d, +4over6, +bf16-first-N, "
                            "+bf16-last-N) and mxfp4 (scale rule +floor, +ceil, +rceil or +even); the FP4 tab shows them."));
    auto* add = new QPushButton(tr("Add"));
    addRow->addWidget(m_addRun, 1);
    addRow->addWidget(add);
    v->addLayout(addRow);
    m_runError = errorLabel();
    v->addWidget(m_runError);
    auto addIt = [this] {
        const QString label = m_addRun->text().trimmed();
        if (label.isEmpty()) return;
        const QString error = gui::checkRunLabel(label);
        m_runError->setText(error);
        m_runError->setVisible(!error.isEmpty());
        if (!error.isEmpty()) return;
        setRunChecked(label, true);
        m_addRun->clear();
    };
    connect(add, &QPushButton::clicked, this, addIt);
    connect(m_addRun, &QLineEdit::returnPressed, this, addIt);
    return box;
}

QWidget* SetupPanel::buildModel() {
    auto* box = new QGroupBox(tr("Model"));
    auto* f = form(box);
    m_sizes = new QLineEdit;
    m_sizes->setToolTip(tr("Layer sizes from input to output, e.g. 2-64-64-2 (the first must match the "
                           "data set's features, the last its classes)."));
    f->addRow(tr("Layer sizes"), m_sizes);
    m_sizesError = errorLabel();
    f->addRow(m_sizesError);
    m_activation = new QComboBox;
    m_activation->addItems(gui::activationNames());
    f->addRow(tr("Activation"), m_activation);
    m_dropout = new QDoubleSpinBox;
    m_dropout->setRange(0, 0.9);
    m_dropout->setSingleStep(0.05);
    m_dropout->setToolTip(concepts::dropout());
    f->addRow(tr("Dropout"), m_dropout);
    m_layernorm = new QCheckBox(tr("LayerNorm"));
    m_layernorm->setToolTip(concepts::layernorm());
    m_recompute = new QCheckBox(tr("Recompute"));
    m_recompute->setToolTip(concepts::recompute());
    m_keepOutput = new QCheckBox(tr("Output layer in FP32"));
    m_keepOutput->setToolTip(tr("Keep the last layer in FP32 whatever the run's precision."));
    auto* checks = new QGridLayout;
    checks->addWidget(m_layernorm, 0, 0);
    checks->addWidget(m_recompute, 0, 1);
    checks->addWidget(m_keepOutput, 1, 0, 1, 2);
    f->addRow(checks);
    connect(m_sizes, &QLineEdit::textEdited, this, &SetupPanel::changed);
    connect(m_activation, &QComboBox::currentTextChanged, this, &SetupPanel::changed);
    connect(m_dropout, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    for (QCheckBox* c : {m_layernorm, m_recompute, m_keepOutput}) connect(c, &QCheckBox::toggled, this, &SetupPanel::changed);
    return box;
}

QWidget* SetupPanel::buildData() {
    auto* box = new QGroupBox(tr("Data set"));
    auto* f = form(box);
    m_dataKind = new QComboBox;
    m_dataKind->addItems(gui::datasetNames());
    m_dataKind->setToolTip(tr("A toy data set generated from the seed (nothing is downloaded)."));
    f->addRow(tr("Kind"), m_dataKind);
    m_classes = new QSpinBox;
    m_classes->setObjectName(QStringLiteral("classes"));
    m_classes->setRange(2, gui::maxClasses());
    f->addRow(tr("Classes"), m_classes);
    m_nTrain = new QSpinBox;
    m_nTrain->setRange(1, gui::maxSamples());
    f->addRow(tr("Training samples"), m_nTrain);
    m_noise = new QDoubleSpinBox;
    m_noise->setRange(0, 10);
    m_noise->setSingleStep(0.05);
    f->addRow(tr("Noise"), m_noise);
    m_inputScale = new QDoubleSpinBox;
    m_inputScale->setRange(1e-6, 1e6);
    m_inputScale->setDecimals(4);
    m_inputScale->setToolTip(tr("Multiplies the inputs: large values push activations towards FP16's "
                                "limit (65504), small ones towards underflow."));
    f->addRow(tr("Input scale"), m_inputScale);
    connect(m_dataKind, &QComboBox::currentTextChanged, this, &SetupPanel::dataKindChanged);
    connect(m_classes, &QSpinBox::valueChanged, this, [this](int n) {
        if (m_filling || !m_classes->isEnabled()) return;
        m_classSetting = n;
        dataKindChanged();
    });
    connect(m_nTrain, &QSpinBox::valueChanged, this, &SetupPanel::changed);
    connect(m_noise, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    connect(m_inputScale, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    return box;
}

QWidget* SetupPanel::buildTraining() {
    auto* box = new QGroupBox(tr("Training"));
    auto* f = form(box);
    // The training settings that need a reset: label, range and help from the engine's field list.
    const QList<gui::FieldSpec> fields = gui::trainFields();
    const auto spec = [&](const char* name) {
        for (const auto& field : fields)
            if (field.name == QLatin1String(name)) return field;
        return gui::FieldSpec{};
    };
    const auto spin = [&](QSpinBox*& box, const char* name) {
        const gui::FieldSpec field = spec(name);
        box = new QSpinBox;
        box->setRange(static_cast<int>(field.min), static_cast<int>(std::min<double>(field.max, INT_MAX)));
        box->setToolTip(field.help);
        f->addRow(field.label, box);
    };
    const gui::FieldSpec optimizer = spec("optimizer");
    m_optimizer = new QComboBox;
    m_optimizer->addItems(optimizer.choices);
    m_optimizer->setToolTip(optimizer.help);
    f->addRow(optimizer.label, m_optimizer);
    spin(m_batch, "batch");
    spin(m_accumulation, "accumulation");
    m_steps = new QSpinBox;
    m_steps->setObjectName(QStringLiteral("steps"));
    m_steps->setRange(1, static_cast<int>(std::min<long long>(gui::maxSteps(), INT_MAX)));
    m_steps->setGroupSeparatorShown(true);
    f->addRow(tr("Steps"), m_steps);
    m_seed = new QSpinBox;
    m_seed->setRange(0, INT_MAX);
    m_seed->setToolTip(concepts::seed());
    f->addRow(tr("Seed"), m_seed);
    m_recordEvery = new QSpinBox;
    m_recordEvery->setRange(1, 1'000'000);
    m_recordEvery->setToolTip(tr("The CSV export keeps every n-th step (1 = all); the charts show every step."));
    f->addRow(tr("Export every"), m_recordEvery);
    m_device = new QComboBox;
    m_device->addItems(gui::deviceNames());
    m_device->setToolTip(tr("cpu: Eigen on the CPU with exact emulation of the formats; cuda: the GPU; "
                            "auto: the GPU where one can be used."));
    f->addRow(tr("Device"), m_device);
    connect(m_optimizer, &QComboBox::currentTextChanged, this, &SetupPanel::changed);
    connect(m_device, &QComboBox::currentTextChanged, this, &SetupPanel::changed);
    for (QSpinBox* s : {m_batch, m_accumulation, m_steps, m_seed, m_recordEvery})
        connect(s, &QSpinBox::valueChanged, this, &SetupPanel::changed);
    return box;
}

void SetupPanel::dataKindChanged() {
    if (m_filling) return;
    showClasses();
    // Keep the model's first and last sizes matching the data set, so a new data set just works.
    mpx::DatasetConfig d;
    d.kind = gui::datasetFrom(m_dataKind->currentText());
    d.classes = m_classSetting;
    const auto [features, outputs] = gui::datasetShape(d);
    if (auto sizes = gui::parseModelSizes(m_sizes->text()); sizes && features > 0) {
        sizes->front() = features;
        sizes->back() = outputs;
        m_sizes->setText(gui::modelSizesText(*sizes));
    }
    changed();
}

void SetupPanel::showClasses() {
    mpx::DatasetConfig d;
    d.kind = gui::datasetFrom(m_dataKind->currentText());
    d.classes = m_classSetting;
    const bool setting = gui::datasetHasClasses(d.kind);
    const QSignalBlocker block(m_classes);
    const int count = gui::datasetClassCount(d);
    // 0 only for a regression set (sine), which has no classes; a spin box shows its special text
    // at its minimum, so the text is there only then.
    m_classes->setSpecialValueText(count == 0 ? tr("none (regression)") : QString());
    m_classes->setMinimum(setting ? 2 : count);
    m_classes->setValue(count);
    m_classes->setEnabled(setting);
    m_classes->setToolTip(setting ? tr("Spirals' arms or blobs' centres: the classes the model tells apart.")
                                  : tr("Fixed by the %1 data set.").arg(m_dataKind->currentText()));
}

void SetupPanel::changed() {
    if (m_filling) return;
    QString error;
    const bool ok = gui::parseModelSizes(m_sizes->text(), &error).has_value();
    m_sizesError->setText(error);
    m_sizesError->setVisible(!ok);
    emit edited();
}

void SetupPanel::setRunChecked(const QString& label, bool checked) {
    for (QCheckBox* b : m_runBoxes)
        if (b->text() == label) {
            b->setChecked(checked);
            return;
        }
    if (checked) addRunBox(label)->setChecked(true);
}

void SetupPanel::setConfig(const mpx::SessionConfig& c) {
    m_filling = true;
    for (QCheckBox* b : m_runBoxes) b->setChecked(false);
    for (const auto& r : c.runs) setRunChecked(QString::fromStdString(r), true);
    m_sizes->setText(gui::modelSizesText(c.model.sizes));
    m_activation->setCurrentText(gui::toText(c.model.activation));
    m_dropout->setValue(c.model.dropout);
    m_layernorm->setChecked(c.model.layernorm);
    m_recompute->setChecked(c.model.recompute);
    m_keepOutput->setChecked(c.model.keep_output_fp32);
    m_dataKind->setCurrentText(gui::toText(c.data.kind));
    m_classSetting = c.data.classes;
    showClasses();
    m_nTrain->setValue(c.data.n_train);
    m_noise->setValue(c.data.noise);
    m_inputScale->setValue(c.data.input_scale);
    m_optimizer->setCurrentText(gui::toText(c.train.optimizer));
    m_batch->setValue(c.train.batch);
    m_accumulation->setValue(c.train.accumulation);
    m_steps->setValue(static_cast<int>(std::min<long long>(c.steps, m_steps->maximum())));
    m_seed->setValue(static_cast<int>(std::min<std::uint64_t>(c.seed, INT_MAX)));
    m_recordEvery->setValue(c.record_every);
    m_device->setCurrentText(QString::fromStdString(c.device));
    m_sizesError->hide();
    m_runError->hide();
    m_filling = false;
}

QStringList SetupPanel::runs() const {
    QStringList out;
    for (QCheckBox* b : m_runBoxes)
        if (b->isChecked()) out << b->text();
    return out;
}

void SetupPanel::applyTo(mpx::SessionConfig& c) const {
    c.runs.clear();
    for (const QString& r : runs()) c.runs.push_back(r.toStdString());
    if (auto sizes = gui::parseModelSizes(m_sizes->text())) c.model.sizes = *sizes;
    c.model.activation = gui::activationFrom(m_activation->currentText());
    c.model.layernorm = m_layernorm->isChecked();
    c.model.recompute = m_recompute->isChecked();
    c.model.keep_output_fp32 = m_keepOutput->isChecked();
    c.data.kind = gui::datasetFrom(m_dataKind->currentText());
    c.data.classes = m_classSetting;  // the box shows the fixed count of other kinds; the setting stays
    c.data.n_train = m_nTrain->value();
    // Spin boxes round to their decimals: a value they cannot show stays unless the user changed it.
    auto edited = [](double was, const QDoubleSpinBox* box) {
        return std::abs(was - box->value()) > 0.5 * std::pow(10.0, -box->decimals());
    };
    if (edited(c.data.noise, m_noise)) c.data.noise = m_noise->value();
    if (edited(c.data.input_scale, m_inputScale)) c.data.input_scale = m_inputScale->value();
    if (edited(c.model.dropout, m_dropout)) c.model.dropout = static_cast<float>(m_dropout->value());
    c.train.optimizer = gui::optimizerFrom(m_optimizer->currentText());
    c.train.batch = m_batch->value();
    c.train.accumulation = m_accumulation->value();
    c.steps = m_steps->value();
    // The seed box shows at most INT_MAX: a larger seed stays unless the user typed a new one.
    if (static_cast<std::uint64_t>(m_seed->value()) != std::min<std::uint64_t>(c.seed, INT_MAX)) {
        c.seed = static_cast<std::uint64_t>(m_seed->value());
        c.data.seed = c.seed;
    }
    c.record_every = m_recordEvery->value();
    c.device = m_device->currentText().toStdString();
}

}  // namespace mpx::ui
