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
#include <QStackedWidget>
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
    m_trainingBoxes = {m_badge, buildRuns(), buildModel(), buildData(), buildTraining()};
    for (QWidget* w : m_trainingBoxes) layout->addWidget(w);
    auto* trace = new QGroupBox(tr("Trace"));
    m_traceForm = form(trace);
    m_traceBox = trace;
    m_traceBox->hide();
    layout->addWidget(m_traceBox);
    layout->addStretch(1);
}

// A trace is the user's own model: its layers, data and precision are not mpx's settings, so the
// tab says what the trace holds, and how to get back to training.
void SetupPanel::showTrace(const gui::TraceSession* trace) {
    while (m_traceForm->rowCount() > 0) m_traceForm->removeRow(0);
    if (trace) {
        for (const auto& [name, value] : gui::traceSummary(*trace)) {
            auto* v = new QLabel(value);
            v->setWordWrap(true);
            v->setTextInteractionFlags(Qt::TextSelectableByMouse);
            m_traceForm->addRow(name, v);
        }
        auto* back = new QLabel(tr("A trace is replayed, not trained: its model, data and precisions are your own. Tune "
                                   "the rule in the Scaler tab, sweep it in the Sweep tab. Reset (Ctrl+R) or a preset "
                                   "leaves the trace for training, with the settings this tab shows then."));
        back->setWordWrap(true);
        back->setStyleSheet(QStringLiteral("QLabel { color: #666; }"));
        m_traceForm->addRow(back);
    }
    for (QWidget* w : m_trainingBoxes) w->setVisible(!trace);
    m_traceBox->setVisible(trace != nullptr);
}

bool SetupPanel::showsTrace() const { return !m_traceBox->isHidden(); }

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
    // Two to a row; a long label ("amp-bf16+autocast-cpu-1.13") has a row of its own, where the
    // dock's half width cut it.
    const bool wide = label.size() > 18;
    if (wide && m_runCell % 2) ++m_runCell;
    m_runGrid->addWidget(box, m_runCell / 2, m_runCell % 2, 1, wide ? 2 : 1);
    m_runCell += wide ? 2 : 1;
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
    auto* v = new QVBoxLayout(box);
    auto* kindRow = form(new QWidget);
    kindRow->setContentsMargins(0, 0, 0, 0);
    m_modelKind = new QComboBox;
    m_modelKind->addItem(tr("MLP on a toy data set"), QStringLiteral("mlp"));
    m_modelKind->addItem(tr("GPT on text (character-level)"), QStringLiteral("gpt"));
    m_modelKind->setToolTip(tr("The MLP learns a 2-D toy data set; the GPT (nanoGPT's shape) learns to write text, "
                               "with attention, softmax and LayerNorm where transformers' mixed-precision "
                               "failures live."));
    kindRow->addRow(tr("Kind"), m_modelKind);
    v->addWidget(kindRow->parentWidget());
    m_modelPages = new QStackedWidget;
    m_modelPages->addWidget(buildMlpFields());
    m_modelPages->addWidget(buildGptFields());
    v->addWidget(m_modelPages);
    connect(m_modelKind, &QComboBox::currentIndexChanged, this, [this] {
        if (m_filling) return;
        showModelKind();
        changed();
    });
    return box;
}

QWidget* SetupPanel::buildGptFields() {
    auto* box = new QWidget;
    auto* f = form(box);
    f->setContentsMargins(0, 0, 0, 0);
    const auto spin = [&](QSpinBox*& s, int lo, int hi, const QString& label, const QString& tip) {
        s = new QSpinBox;
        s->setRange(lo, hi);
        s->setToolTip(tip);
        f->addRow(label, s);
        connect(s, &QSpinBox::valueChanged, this, &SetupPanel::changed);
    };
    const auto decimal = [&](QDoubleSpinBox*& s, double lo, double hi, int decimals, double step, const QString& label,
                             const QString& tip) {
        s = new QDoubleSpinBox;
        s->setRange(lo, hi);
        s->setDecimals(decimals);
        s->setSingleStep(step);
        s->setToolTip(tip);
        f->addRow(label, s);
        connect(s, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    };
    const auto combo = [&](QComboBox*& c, const QStringList& items, const QString& label, const QString& tip) {
        c = new QComboBox;
        c->addItems(items);
        c->setToolTip(tip);
        f->addRow(label, c);
        connect(c, &QComboBox::currentTextChanged, this, &SetupPanel::changed);
    };
    spin(m_nLayer, 1, mpx::k_max_gpt_layers, tr("Blocks"),
         tr("Transformer blocks (nanoGPT's n_layer): each is LayerNorm → attention → residual, then "
            "LayerNorm → MLP → residual."));
    spin(m_nHead, 1, 64, tr("Heads"), tr("Attention heads (n_head); the width must divide by it."));
    spin(m_nEmbd, 1, 2048, tr("Width"), tr("Embedding width (n_embd): the channels of the residual stream."));
    spin(m_blockSize, 2, 1024, tr("Context"),
         tr("Characters the model sees at once (block_size): each head's scores are context × context."));
    m_tie = new QCheckBox(tr("LM head tied to the token embedding"));
    m_tie->setToolTip(tr("The LM head reuses the token embedding's weights, as nanoGPT does."));
    f->addRow(m_tie);
    connect(m_tie, &QCheckBox::toggled, this, &SetupPanel::changed);
    decimal(m_initScale, 0.001, 10000, 3, 1, tr("Init scale"),
            tr("Multiplies the spread of every random initial weight; q·kᵀ grows with its square "
               "(256 makes gpt-nanogpt-cpu's scores pass FP16's 65504)."));
    decimal(m_qkInitScale, 0.001, 10000, 3, 1, tr("q, k init scale"),
            tr("Multiplies the spread of the q and k weights only (model.qk_init_scale): the "
               "attention scores grow with its square while the rest trains as usual — "
               "attention-logit growth (Dehghani et al. 2023) set up at step 0."));
    decimal(m_gptDropout, 0, 0.9, 2, 0.05, tr("Dropout"),
            tr("nanoGPT's dropout at four places: the embeddings' sum, the attention "
               "probabilities and after each block's two projections (0 in its CPU recipe, "
               "0.2 for Shakespeare); none when the held-out loss is measured."));
    combo(m_attnScale, gui::attentionScaleNames(), tr("1/√d applied"),
          tr("after q·kᵀ (llm.c: FP16 scores can pass 65504 first), before it on q, or split as d^-¼ on q "
             "and k (PyTorch's math attention); HF transformers#24638."));
    combo(m_softmax, gui::softmaxFormatNames(), tr("Softmax in"),
          tr("fp32: as CUDA autocast runs it; storage: in the run's FP16/BF16 (transformers#17306)."));
    m_softcap = new QDoubleSpinBox;
    m_softcap->setRange(0, 10000);
    m_softcap->setDecimals(1);
    m_softcap->setSpecialValueText(tr("off"));
    m_softcap->setToolTip(tr("Gemma 2's soft-cap c·tanh(x/c) on the scores; off at 0."));
    f->addRow(tr("Score soft-cap"), m_softcap);
    connect(m_softcap, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    m_qkNorm = new QCheckBox(tr("QK-norm (LayerNorm on each head's q and k)"));
    m_qkNorm->setToolTip(tr("ViT-22B's QK-norm, as OLMo 2 and Gemma 3 use it: the scores stay bounded by the head size, "
                            "so FP16 cannot overflow them."));
    f->addRow(m_qkNorm);
    connect(m_qkNorm, &QCheckBox::toggled, this, &SetupPanel::changed);
    combo(m_normStats, gui::normStatsNames(), tr("LayerNorm sums in"),
          tr("fp32: LayerNorm's mean and variance summed in FP32, as PyTorch's kernels do; storage: in the run's "
             "FP16/BF16, where a BF16 sum stalls at 256 (pytorch#92164)."));
    m_zLoss = new QDoubleSpinBox;
    m_zLoss->setRange(0, 1);
    m_zLoss->setDecimals(5);
    m_zLoss->setSingleStep(1e-4);
    m_zLoss->setSpecialValueText(tr("off"));
    m_zLoss->setToolTip(tr("PaLM's z-loss: λ·(log Z)² added to the loss, which keeps the LM head's logits from "
                           "drifting up; off at 0."));
    f->addRow(tr("z-loss λ"), m_zLoss);
    connect(m_zLoss, &QDoubleSpinBox::valueChanged, this, &SetupPanel::changed);
    combo(m_autocast, gui::autocastPolicyNames(), tr("Autocast lists"),
          tr("cuda: CUDA autocast's (softmax and LayerNorm in FP32); cpu-1.13: PyTorch 1.13's CPU autocast, "
             "softmax and LayerNorm in BF16 (pytorch#92164)."));
    m_gptError = errorLabel();
    f->addRow(m_gptError);
    return box;
}

QWidget* SetupPanel::buildMlpFields() {
    auto* box = new QWidget;
    auto* f = form(box);
    f->setContentsMargins(0, 0, 0, 0);
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
    m_dataForm = f;
    m_dataKind = new QComboBox;
    for (const QString& k : gui::datasetNames())  // the text is the GPT's (its own rows below)
        if (gui::datasetFrom(k) != mpx::DatasetKind::text) m_dataKind->addItem(k);
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
    m_textFile = new QLineEdit;
    m_textFile->setPlaceholderText(tr("Debian's fortunes"));
    m_textFile->setToolTip(tr("A UTF-8 text file to learn (nanoGPT's tiny Shakespeare, for one); empty: the "
                              "fortunes package's quotations (633,055 characters). 90 % trains, 10 % is held out."));
    f->addRow(tr("Text file"), m_textFile);
    m_nTest = new QSpinBox;
    m_nTest->setRange(1, gui::maxSamples());
    m_nTest->setToolTip(tr("Windows of the held-out text each evaluation reads, spread over it in whole batches."));
    f->addRow(tr("Held-out windows"), m_nTest);
    connect(m_textFile, &QLineEdit::textEdited, this, &SetupPanel::changed);
    connect(m_nTest, &QSpinBox::valueChanged, this, &SetupPanel::changed);
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

bool SetupPanel::gpt() const { return m_modelKind->currentData().toString() == QLatin1String("gpt"); }

void SetupPanel::showModelKind() {
    const bool g = gpt();
    m_modelPages->setCurrentIndex(g ? 1 : 0);
    for (QWidget* w : std::initializer_list<QWidget*>{m_dataKind, m_classes, m_nTrain, m_noise, m_inputScale})
        m_dataForm->setRowVisible(w, !g);
    m_dataForm->setRowVisible(m_textFile, g);
    m_dataForm->setRowVisible(m_nTest, g);
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
    const bool ok = gpt() || gui::parseModelSizes(m_sizes->text(), &error).has_value();
    m_sizesError->setText(error);
    m_sizesError->setVisible(!ok);
    const QString gptError = gpt() ? gui::checkGptShape(m_nLayer->value(), m_nHead->value(), m_nEmbd->value(),
                                                        m_blockSize->value())
                                   : QString();
    m_gptError->setText(gptError);
    m_gptError->setVisible(!gptError.isEmpty());
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
    m_modelKind->setCurrentIndex(c.model.kind == mpx::ModelKind::gpt ? 1 : 0);
    m_nLayer->setValue(c.model.gpt.n_layer);
    m_nHead->setValue(c.model.gpt.n_head);
    m_nEmbd->setValue(c.model.gpt.n_embd);
    m_blockSize->setValue(c.model.gpt.block_size);
    m_tie->setChecked(c.model.gpt.tie_embeddings);
    m_initScale->setValue(c.model.gpt.init_scale);
    m_qkInitScale->setValue(c.model.gpt.qk_init_scale);
    m_attnScale->setCurrentText(gui::toText(c.model.attention.scale));
    m_softmax->setCurrentText(gui::toText(c.model.attention.softmax));
    m_softcap->setValue(c.model.attention.softcap);
    m_autocast->setCurrentText(gui::toText(c.model.autocast));
    m_qkNorm->setChecked(c.model.attention.qk_norm);
    m_normStats->setCurrentText(gui::toText(c.model.norm_stats));
    m_zLoss->setValue(c.train.z_loss);
    m_textFile->setText(QString::fromStdString(c.data.text_file));
    m_nTest->setValue(c.data.n_test);
    m_gptError->hide();
    showModelKind();
    m_sizes->setText(gui::modelSizesText(c.model.sizes));
    m_activation->setCurrentText(gui::toText(c.model.activation));
    m_dropout->setValue(c.model.dropout);
    m_gptDropout->setValue(c.model.dropout);
    m_layernorm->setChecked(c.model.layernorm);
    m_recompute->setChecked(c.model.recompute);
    m_keepOutput->setChecked(c.model.keep_output_fp32);
    if (c.data.kind != mpx::DatasetKind::text) m_dataKind->setCurrentText(gui::toText(c.data.kind));
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
    c.model.kind = gpt() ? mpx::ModelKind::gpt : mpx::ModelKind::mlp;
    if (gpt()) {
        c.model.gpt.n_layer = m_nLayer->value();
        c.model.gpt.n_head = m_nHead->value();
        c.model.gpt.n_embd = m_nEmbd->value();
        c.model.gpt.block_size = m_blockSize->value();
        c.model.gpt.tie_embeddings = m_tie->isChecked();
        if (std::abs(c.model.gpt.init_scale - m_initScale->value()) > 0.5e-3)
            c.model.gpt.init_scale = static_cast<float>(m_initScale->value());
        if (std::abs(c.model.gpt.qk_init_scale - m_qkInitScale->value()) > 0.5e-3)
            c.model.gpt.qk_init_scale = static_cast<float>(m_qkInitScale->value());
        c.model.attention.scale = gui::attentionScaleFrom(m_attnScale->currentText());
        c.model.attention.softmax = gui::softmaxFormatFrom(m_softmax->currentText());
        if (std::abs(c.model.attention.softcap - m_softcap->value()) > 0.05)
            c.model.attention.softcap = static_cast<float>(m_softcap->value());
        c.model.autocast = gui::autocastPolicyFrom(m_autocast->currentText());
        c.model.attention.qk_norm = m_qkNorm->isChecked();
        c.model.norm_stats = gui::normStatsFrom(m_normStats->currentText());
        if (std::abs(c.train.z_loss - m_zLoss->value()) > 0.5e-5) c.train.z_loss = m_zLoss->value();
        c.data.kind = mpx::DatasetKind::text;
        c.data.text_file = m_textFile->text().trimmed().toStdString();
        c.data.n_test = m_nTest->value();
    } else {
        // An MLP session keeps no attention or autocast settings (they are refused on an MLP).
        c.model.attention = mpx::AttentionConfig{};
        c.model.autocast = mpx::AutocastPolicy::cuda;
        c.model.norm_stats = mpx::NormStats::fp32;
        c.train.z_loss = 0.0;
        c.data.text_file.clear();
    }
    if (auto sizes = gui::parseModelSizes(m_sizes->text())) c.model.sizes = *sizes;
    c.model.activation = gui::activationFrom(m_activation->currentText());
    c.model.keep_output_fp32 = m_keepOutput->isChecked();
    // The MLP's LayerNorm and recomputation are refused on the GPT: its page has neither.
    c.model.layernorm = !gpt() && m_layernorm->isChecked();
    c.model.recompute = !gpt() && m_recompute->isChecked();
    if (!gpt()) c.data.kind = gui::datasetFrom(m_dataKind->currentText());
    c.data.classes = m_classSetting;  // the box shows the fixed count of other kinds; the setting stays
    c.data.n_train = m_nTrain->value();
    // Spin boxes round to their decimals: a value they cannot show stays unless the user changed it.
    auto edited = [](double was, const QDoubleSpinBox* box) {
        return std::abs(was - box->value()) > 0.5 * std::pow(10.0, -box->decimals());
    };
    if (edited(c.data.noise, m_noise)) c.data.noise = m_noise->value();
    if (edited(c.data.input_scale, m_inputScale)) c.data.input_scale = m_inputScale->value();
    QDoubleSpinBox* dropout = gpt() ? m_gptDropout : m_dropout;  // each kind's page has its own box
    if (edited(c.model.dropout, dropout)) c.model.dropout = static_cast<float>(dropout->value());
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
