// LivePanel: scaler and learning-rate forms; edits go out as whole, validated settings.
#include "ui/live_panel.hpp"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QMenu>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <limits>

#include "ui/concepts.hpp"
#include "ui/number_edit.hpp"

namespace mpx::ui {
namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

QString enumLabel(const QString& field) {
    if (field == QLatin1String("hysteresis_reset")) return QObject::tr("Hysteresis refill");
    if (field == QLatin1String("growth_count")) return QObject::tr("Growth count");
    if (field == QLatin1String("at_min")) return QObject::tr("At minimum");
    if (field == QLatin1String("scale_storage")) return QObject::tr("Scale stored as");
    if (field == QLatin1String("non_finite_growth")) return QObject::tr("Growth to inf");
    return QObject::tr("Hysteresis count");
}

QString enumHelp(const QString& field) {
    if (field == QLatin1String("hysteresis_reset")) return concepts::hysteresisReset();
    if (field == QLatin1String("growth_count")) return concepts::growthCount();
    if (field == QLatin1String("at_min")) return concepts::atMin();
    if (field == QLatin1String("scale_storage")) return concepts::scaleStorage();
    if (field == QLatin1String("non_finite_growth")) return concepts::nonFiniteGrowth();
    return concepts::hysteresisDecrement();
}

QFormLayout* form(QWidget* w) {
    auto* f = new QFormLayout(w);
    f->setContentsMargins(8, 6, 8, 6);
    f->setHorizontalSpacing(8);
    f->setVerticalSpacing(4);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    return f;
}

}  // namespace

LivePanel::LivePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(buildScaler());
    layout->addWidget(buildTraining());
    layout->addStretch(1);
    setScaler(gui::scalerPreset(QStringLiteral("pytorch")));
}

QWidget* LivePanel::buildScaler() {
    auto* box = new QGroupBox(tr("Loss scaler · live"));
    box->setToolTip(concepts::live());
    auto* f = form(box);
    m_preset = new QComboBox;
    const QStringList presets = gui::scalerPresetNames();
    m_preset->addItems(presets);
    for (int i = 0; i < presets.size(); ++i)
        m_preset->setItemData(i, concepts::scalerPreset(presets[i]), Qt::ToolTipRole);
    m_preset->addItem(QStringLiteral("custom"));
    m_preset->setToolTip(concepts::scalerPreset());
    m_snippet = new QToolButton;
    m_snippet->setText(tr("Copy as…"));
    m_snippet->setToolTip(tr("Copy these scaler settings as code or configuration for a framework."));
    m_snippet->setPopupMode(QToolButton::InstantPopup);
    m_snippet->setMinimumWidth(96);
    auto* menu = new QMenu(m_snippet);
    const QStringList fws = gui::frameworkNames();
    for (int i = 0; i < fws.size(); ++i)
        menu->addAction(fws[i], this, [this, i, fws] {
            QApplication::clipboard()->setText(gui::frameworkSnippet(scaler(), i));
            emit snippetCopied(fws[i]);
        });
    m_snippet->setMenu(menu);
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(m_preset, 1);
    presetRow->addWidget(m_snippet);
    f->addRow(tr("Preset"), presetRow);

    m_kind = new QComboBox;
    m_kind->addItems(gui::scalerKindNames());
    m_kind->setToolTip(concepts::scalerKind());
    f->addRow(tr("Kind"), m_kind);
    auto addNumber = [&](NumberEdit*& e, const QString& label, double lo, double hi, const QString& help) {
        e = new NumberEdit(lo, hi);
        e->setHelp(help);
        f->addRow(label, e);
        connect(e, &NumberEdit::valueEdited, this, &LivePanel::scalerChanged);
    };
    addNumber(m_init, tr("Initial scale"), 0, k_inf, concepts::initScale());
    addNumber(m_growth, tr("Growth factor"), 1, k_inf, concepts::growthFactor());
    addNumber(m_backoff, tr("Backoff factor"), 0, 1, concepts::backoffFactor());
    m_interval = new QSpinBox;
    m_interval->setRange(1, 100'000'000);
    m_interval->setKeyboardTracking(false);  // typing 50 must not apply 5 first
    m_interval->setToolTip(concepts::growthInterval());
    f->addRow(tr("Growth interval"), m_interval);
    addNumber(m_min, tr("Minimum scale"), 0, k_inf, concepts::minScale());
    addNumber(m_max, tr("Maximum scale"), 0, k_inf, concepts::maxScale());
    m_max->setEmptyMeans(k_inf, tr("none"));
    m_hysteresis = new QSpinBox;
    m_hysteresis->setRange(1, 1000);
    m_hysteresis->setKeyboardTracking(false);
    m_hysteresis->setToolTip(concepts::hysteresis());
    f->addRow(tr("Hysteresis"), m_hysteresis);
    for (const QString& field : gui::scalerEnumFields()) {
        auto* c = new QComboBox;
        c->addItems(gui::scalerEnumChoices(field));
        c->setToolTip(enumHelp(field));
        m_enums.insert(field, c);
        f->addRow(enumLabel(field), c);
        connect(c, &QComboBox::currentTextChanged, this, &LivePanel::scalerChanged);
    }
    m_following = new QLabel;
    m_following->setWordWrap(true);
    m_following->setStyleSheet(QStringLiteral("color: #555"));
    f->addRow(m_following);
    m_scalerError = new QLabel;
    m_scalerError->setWordWrap(true);
    m_scalerError->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_scalerError->hide();
    f->addRow(m_scalerError);

    connect(m_preset, &QComboBox::textActivated, this, &LivePanel::presetChosen);
    connect(m_preset, &QComboBox::currentTextChanged, this,
            [this](const QString& name) { m_preset->setToolTip(concepts::scalerPreset(name)); });
    connect(m_kind, &QComboBox::currentTextChanged, this, &LivePanel::scalerChanged);
    connect(m_interval, &QSpinBox::valueChanged, this, &LivePanel::scalerChanged);
    connect(m_hysteresis, &QSpinBox::valueChanged, this, &LivePanel::scalerChanged);
    return box;
}

QWidget* LivePanel::buildTraining() {
    auto* box = new QGroupBox(tr("Learning rate and clipping · live"));
    box->setToolTip(concepts::live());
    auto* f = form(box);
    auto addNumber = [&](NumberEdit*& e, const QString& label, double lo, double hi, const QString& help) {
        e = new NumberEdit(lo, hi);
        e->setHelp(help);
        f->addRow(label, e);
        connect(e, &NumberEdit::valueEdited, this, &LivePanel::trainEdited);
    };
    addNumber(m_lr, tr("Learning rate"), 0, 1e3, concepts::learningRate());
    m_schedule = new QComboBox;
    m_schedule->addItems(gui::scheduleNames());
    m_schedule->setToolTip(concepts::schedule());
    f->addRow(tr("Schedule"), m_schedule);
    m_stepSize = new QSpinBox;
    m_stepSize->setRange(1, 100'000'000);
    m_stepSize->setKeyboardTracking(false);
    m_stepSize->setToolTip(tr("step schedule: multiply the learning rate by gamma every this many steps."));
    f->addRow(tr("Step size"), m_stepSize);
    addNumber(m_gamma, tr("Gamma"), 1e-9, 1, tr("step schedule: the factor applied every step size steps."));
    m_warmup = new QSpinBox;
    m_warmup->setRange(0, 100'000'000);
    m_warmup->setKeyboardTracking(false);
    m_warmup->setToolTip(tr("warmup-cosine: steps of linear warm-up before the cosine decay."));
    f->addRow(tr("Warm-up steps"), m_warmup);
    addNumber(m_minLr, tr("Minimum LR"), 0, 1e3, tr("warmup-cosine: the learning rate at the end of the decay."));
    addNumber(m_clip, tr("Clip grad norm"), 0, 1e30, concepts::clipping());
    m_clip->setEmptyMeans(0, tr("off"));
    addNumber(m_momentum, tr("Momentum (SGD)"), 0, 0.999999, tr("SGD momentum."));
    addNumber(m_decay, tr("Weight decay"), 0, 1e3, tr("L2 penalty (SGD, Adam) or decoupled decay (AdamW)."));
    connect(m_schedule, &QComboBox::currentTextChanged, this, [this] {
        updateEnabled();
        if (!m_filling) emit trainEdited();
    });
    connect(m_stepSize, &QSpinBox::valueChanged, this, [this] { if (!m_filling) emit trainEdited(); });
    connect(m_warmup, &QSpinBox::valueChanged, this, [this] { if (!m_filling) emit trainEdited(); });
    return box;
}

void LivePanel::updateEnabled() {
    const auto sched = gui::scheduleFrom(m_schedule->currentText());
    m_stepSize->setEnabled(sched == mpx::Schedule::step);
    m_gamma->setEnabled(sched == mpx::Schedule::step);
    m_warmup->setEnabled(sched == mpx::Schedule::warmup_cosine);
    m_minLr->setEnabled(sched == mpx::Schedule::warmup_cosine);
    const bool dynamic = gui::scalerKindFrom(m_kind->currentText()) == mpx::ScalerKind::dynamic;
    const bool any = gui::scalerKindFrom(m_kind->currentText()) != mpx::ScalerKind::none;
    m_init->setEnabled(any);
    for (QWidget* w : std::initializer_list<QWidget*>{m_growth, m_backoff, m_interval, m_min, m_max, m_hysteresis})
        w->setEnabled(dynamic);
    for (QComboBox* c : m_enums) c->setEnabled(dynamic);
}

void LivePanel::setScaler(const mpx::ScalerConfig& s) {
    m_filling = true;
    m_scaler = s;
    const int i = m_preset->findText(QString::fromStdString(s.preset));
    m_preset->setCurrentIndex(i >= 0 ? i : m_preset->count() - 1);
    m_kind->setCurrentText(gui::toText(s.kind));
    m_init->setValue(s.init_scale);
    m_growth->setValue(s.growth_factor);
    m_backoff->setValue(s.backoff_factor);
    m_interval->setValue(s.growth_interval);
    m_min->setValue(s.min_scale);
    m_max->setValue(s.max_scale);
    m_hysteresis->setValue(s.hysteresis);
    for (auto it = m_enums.begin(); it != m_enums.end(); ++it)
        it.value()->setCurrentText(gui::scalerEnumValue(s, it.key()));
    m_scalerError->hide();
    updateEnabled();
    m_filling = false;
}

mpx::ScalerConfig LivePanel::scaler() const {
    mpx::ScalerConfig s = m_scaler;
    s.kind = gui::scalerKindFrom(m_kind->currentText());
    s.init_scale = m_init->value();
    s.growth_factor = m_growth->value();
    s.backoff_factor = m_backoff->value();
    s.growth_interval = m_interval->value();
    s.min_scale = m_min->value();
    s.max_scale = m_max->value();
    s.hysteresis = m_hysteresis->value();
    for (auto it = m_enums.begin(); it != m_enums.end(); ++it)
        gui::setScalerEnumValue(s, it.key(), it.value()->currentText());
    return s;
}

void LivePanel::presetChosen(const QString& name) {
    if (name == QLatin1String("custom")) return;
    setScaler(gui::scalerPreset(name));
    emit scalerEdited(m_scaler);
}

void LivePanel::scalerChanged() {
    if (m_filling) return;
    updateEnabled();
    const mpx::ScalerConfig s = scaler();
    const QString error = gui::checkScaler(s);
    m_scalerError->setText(error);
    m_scalerError->setVisible(!error.isEmpty());
    if (!error.isEmpty()) return;
    // A hand edit keeps the preset's name (the run labels use it) but shows the values are its own.
    if (!(s == gui::scalerPreset(QString::fromStdString(s.preset)))) {
        m_filling = true;
        m_preset->setCurrentIndex(m_preset->count() - 1);
        m_filling = false;
    }
    m_scaler = s;
    emit scalerEdited(s);
}

void LivePanel::setTrain(const mpx::TrainConfig& t) {
    m_filling = true;
    m_lr->setValue(t.lr);
    m_schedule->setCurrentText(gui::toText(t.schedule));
    m_stepSize->setValue(t.step_size);
    m_gamma->setValue(t.gamma);
    m_warmup->setValue(t.warmup_steps);
    m_minLr->setValue(t.min_lr);
    m_clip->setValue(t.clip_norm);
    m_momentum->setValue(t.momentum);
    m_decay->setValue(t.weight_decay);
    updateEnabled();
    m_filling = false;
}

mpx::TrainConfig LivePanel::train(mpx::TrainConfig t) const {
    t.lr = m_lr->value();
    t.schedule = gui::scheduleFrom(m_schedule->currentText());
    t.step_size = m_stepSize->value();
    t.gamma = m_gamma->value();
    t.warmup_steps = m_warmup->value();
    t.min_lr = m_minLr->value();
    t.clip_norm = m_clip->value();
    t.momentum = m_momentum->value();
    t.weight_decay = m_decay->value();
    return t;
}

void LivePanel::setFollowingRuns(const QStringList& labels) {
    m_following->setText(labels.isEmpty()
                             ? tr("No run of this session follows these settings (FP32/BF16 runs need no "
                                  "scaler; runs named “+preset” use their own).")
                             : tr("Applies live to: %1").arg(labels.join(QStringLiteral(", "))));
}

}  // namespace mpx::ui
