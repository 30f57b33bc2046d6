// LivePanel: scaler and learning-rate forms; edits go out as whole, validated settings.
#include "ui/panels/live_panel.hpp"

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
#include <climits>

#include "ui/kit/concepts.hpp"
#include "ui/kit/number_edit.hpp"

namespace mpx::ui {
namespace {

// The training fields this panel shows, in its order; the other live ones stay in the JSON.
const QStringList k_trainShown = {QStringLiteral("lr"),        QStringLiteral("schedule"),
                                  QStringLiteral("step_size"), QStringLiteral("gamma"),
                                  QStringLiteral("warmup_steps"), QStringLiteral("min_lr"),
                                  QStringLiteral("clip_norm"), QStringLiteral("momentum"),
                                  QStringLiteral("weight_decay")};

// A control for one field: its range and help from the engine; `edited` fires when the user
// finishes a valid value.
template <class F>
QWidget* makeControl(const gui::FieldSpec& f, QObject* owner, F edited) {
    switch (f.kind) {
        case mpx::FieldKind::choice: {
            auto* c = new QComboBox;
            c->addItems(f.choices);
            c->setToolTip(f.help);
            QObject::connect(c, &QComboBox::currentTextChanged, owner, edited);
            return c;
        }
        case mpx::FieldKind::integer:
        case mpx::FieldKind::flag: {
            auto* b = new QSpinBox;
            b->setRange(static_cast<int>(std::max<double>(f.min, INT_MIN)),
                        static_cast<int>(std::min<double>(f.max, INT_MAX)));
            b->setKeyboardTracking(false);  // typing 50 must not apply 5 first
            b->setToolTip(f.help);
            QObject::connect(b, &QSpinBox::valueChanged, owner, edited);
            return b;
        }
        case mpx::FieldKind::number: break;
    }
    auto* e = new NumberEdit(f.min, f.max);
    e->setHelp(f.help);
    if (f.nullable && f.none != 0) e->setEmptyMeans(f.none, QObject::tr("none"));
    QObject::connect(e, &NumberEdit::valueEdited, owner, edited);
    return e;
}

template <class S>
void showValue(QWidget* w, const gui::FieldSpec& f, const S& s) {
    if (auto* c = qobject_cast<QComboBox*>(w)) c->setCurrentText(gui::fieldChoice(s, f.name));
    else if (auto* b = qobject_cast<QSpinBox*>(w)) b->setValue(static_cast<int>(gui::fieldNumber(s, f.name)));
    else if (auto* e = qobject_cast<NumberEdit*>(w)) e->setValue(gui::fieldNumber(s, f.name));
}

template <class S>
void takeValue(const QWidget* w, const gui::FieldSpec& f, S& s) {
    if (auto* c = qobject_cast<const QComboBox*>(w)) gui::setFieldChoice(s, f.name, c->currentText());
    else if (auto* b = qobject_cast<const QSpinBox*>(w)) gui::setFieldNumber(s, f.name, b->value());
    else if (auto* e = qobject_cast<const NumberEdit*>(w)) gui::setFieldNumber(s, f.name, e->value());
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
    m_target = new QComboBox;
    m_target->setObjectName(QStringLiteral("scalerTarget"));
    m_target->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_target->setMinimumContentsLength(16);
    m_target->setToolTip(tr("Whose loss scaler these settings are: the session scaler (followed by every run "
                            "whose label names no scaler), every run of one preset, or a single run. A run "
                            "edited live shows ✎ after its name in the legend; the event log lists each edit."));
    // The whole row's width, under its label: a run's label ("amp-bf16+autocast-cpu-1.13 (no scaler)")
    // beside the label was cut at 1600×1000.
    f->addRow(new QLabel(tr("Applies to")));
    f->addRow(m_target);
    m_following = new QLabel;
    m_following->setWordWrap(true);
    m_following->setStyleSheet(QStringLiteral("color: #555"));
    f->addRow(m_following);
    connect(m_target, &QComboBox::activated, this, [this] { showTarget(); });
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

    m_scalerFields = gui::scalerFields();
    for (const auto& field : m_scalerFields) {
        QWidget* w = makeControl(field, this, [this] { scalerChanged(); });
        m_scalerControls.insert(field.name, w);
        f->addRow(field.label, w);
    }
    m_scalerError = new QLabel;
    m_scalerError->setWordWrap(true);
    m_scalerError->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_scalerError->hide();
    f->addRow(m_scalerError);

    connect(m_preset, &QComboBox::textActivated, this, &LivePanel::presetChosen);
    connect(m_preset, &QComboBox::currentTextChanged, this,
            [this](const QString& name) { m_preset->setToolTip(concepts::scalerPreset(name)); });
    return box;
}

QWidget* LivePanel::buildTraining() {
    auto* box = new QGroupBox(tr("Learning rate and clipping · live"));
    box->setToolTip(concepts::live());
    auto* f = form(box);
    const QList<gui::FieldSpec> all = gui::trainFields();
    for (const QString& name : k_trainShown)
        for (const auto& field : all)
            if (field.name == name && field.live) m_trainFields << field;
    for (const auto& field : m_trainFields) {
        QWidget* w = makeControl(field, this, [this] {
            if (m_filling) return;
            updateEnabled();
            emit trainEdited();
        });
        w->setObjectName(field.name);
        m_trainControls.insert(field.name, w);
        f->addRow(field.label, w);
    }
    if (auto* clip = qobject_cast<NumberEdit*>(m_trainControls.value(QStringLiteral("clip_norm"))))
        clip->setEmptyMeans(0, tr("off"));
    return box;
}

void LivePanel::updateEnabled() {
    const auto choice = [](QWidget* w) {
        auto* c = qobject_cast<QComboBox*>(w);
        return c ? c->currentText() : QString();
    };
    const auto sched = gui::scheduleFrom(choice(m_trainControls.value(QStringLiteral("schedule"))));
    const auto enable = [this](const char* name, bool on) {
        if (QWidget* w = m_trainControls.value(QLatin1String(name))) w->setEnabled(on);
    };
    enable("step_size", sched == mpx::Schedule::step);
    enable("gamma", sched == mpx::Schedule::step);
    enable("warmup_steps", sched == mpx::Schedule::warmup_cosine);
    enable("min_lr", sched == mpx::Schedule::warmup_cosine);
    // Adam and AdamW keep their own moments and read no momentum: editable there, it changed nothing.
    if (QWidget* w = m_trainControls.value(QStringLiteral("momentum"))) {
        const bool sgd = m_optimizer == mpx::OptimizerKind::sgd;
        w->setEnabled(sgd);
        QString help;
        for (const auto& f : m_trainFields)
            if (f.name == QLatin1String("momentum")) help = f.help;
        const QString why = tr("Only SGD uses momentum; this session trains with %1, which keeps its own moments. "
                               "To use momentum, choose sgd under Setup ▸ Training and reset.")
                                .arg(gui::toText(m_optimizer));
        if (auto* e = qobject_cast<NumberEdit*>(w)) e->setHelp(sgd ? help : why);
        else w->setToolTip(sgd ? help : why);
    }
    // Kind none uses no setting; static only its scale; dynamic every one.
    const auto kind = gui::scalerKindFrom(choice(m_scalerControls.value(QStringLiteral("kind"))));
    for (auto it = m_scalerControls.begin(); it != m_scalerControls.end(); ++it) {
        if (it.key() == QLatin1String("kind")) continue;
        const bool scale = it.key() == QLatin1String("init_scale");
        it.value()->setEnabled(kind == mpx::ScalerKind::dynamic || (scale && kind == mpx::ScalerKind::fixed));
    }
}

void LivePanel::setScaler(const mpx::ScalerConfig& s) {
    m_filling = true;
    m_scaler = s;
    const int i = m_preset->findText(QString::fromStdString(s.preset));
    m_preset->setCurrentIndex(i >= 0 ? i : m_preset->count() - 1);
    for (const auto& f : m_scalerFields) showValue(m_scalerControls.value(f.name), f, s);
    m_scalerError->hide();
    updateEnabled();
    m_filling = false;
}

mpx::ScalerConfig LivePanel::scaler() const {
    mpx::ScalerConfig s = m_scaler;
    for (const auto& f : m_scalerFields) takeValue(m_scalerControls.value(f.name), f, s);
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
    m_optimizer = t.optimizer;
    for (const auto& f : m_trainFields) showValue(m_trainControls.value(f.name), f, t);
    updateEnabled();
    m_filling = false;
}

mpx::TrainConfig LivePanel::train(mpx::TrainConfig t) const {
    for (const auto& f : m_trainFields) takeValue(m_trainControls.value(f.name), f, t);
    return t;
}

void LivePanel::setRuns(const std::vector<gui::RunDescription>& runs, const gui::LiveScalersPtr& scalers) {
    const std::optional<ScalerTarget> previous =
        m_targets.isEmpty() ? std::nullopt : std::optional<ScalerTarget>(target());
    m_runs = runs;
    m_scalers = scalers;
    m_targets.clear();
    QStringList followers;
    QMap<QString, QStringList> byPreset;  // runs whose label names the preset
    for (const auto& r : runs) {
        if (r.followsLiveScaler) followers << r.label;
        if (!r.scalerPreset.isEmpty()) byPreset[r.scalerPreset] << r.label;
    }
    Target session{{true, {}}, {}, {}};
    if (followers.isEmpty()) {
        session.name = tr("Session scaler (no run follows it)");
        session.applies = tr("No run of this session follows the session scaler (FP32/BF16 runs need no scaler; runs "
                             "named “+preset” use their own): choose a run above to tune it live.");
    } else {
        session.name = followers.size() == 1 ? tr("Session scaler (1 run)")
                                             : tr("Session scaler (%1 runs)").arg(followers.size());
        session.applies = tr("Applies live to the runs without “+preset”: %1").arg(followers.join(QStringLiteral(", ")));
    }
    m_targets << session;
    for (auto it = byPreset.begin(); it != byPreset.end(); ++it)
        if (it.value().size() > 1)
            m_targets << Target{{false, it.value()},
                                tr("Every +%1 run (%2)").arg(it.key()).arg(it.value().size()),
                                tr("Applies live to every +%1 run: %2").arg(it.key(), it.value().join(QStringLiteral(", ")))};
    for (const auto& r : runs)
        m_targets << Target{{false, {r.label}},
                            r.hasScaler ? r.label : tr("%1 (no scaler)").arg(r.label),
                            tr("Applies live to %1 only.").arg(r.label)};
    int choice = -1;
    for (int i = 0; i < m_targets.size() && previous; ++i)
        if (m_targets[i].target == *previous) choice = i;
    if (choice < 0 && followers.isEmpty())  // nothing follows the session scaler: the first run with one
        for (int i = 1; i < m_targets.size() && choice < 0; ++i)
            for (const auto& r : runs)
                if (m_targets[i].target.runs == QStringList{r.label} && r.hasScaler) choice = i;
    m_target->clear();
    for (const Target& t : m_targets) m_target->addItem(t.name);
    m_target->setCurrentIndex(std::max(choice, 0));
    showTarget();
}

std::optional<mpx::ScalerConfig> LivePanel::targetScaler() const {
    if (!m_scalers) return std::nullopt;
    const ScalerTarget t = target();
    if (t.session) return m_scalers->session;
    for (std::size_t i = 0; i < m_runs.size() && i < m_scalers->runs.size(); ++i)
        if (m_runs[i].label == t.runs.value(0)) return m_scalers->runs[i];  // a preset's runs: the first's
    return std::nullopt;
}

void LivePanel::showTarget() {
    const int i = m_target->currentIndex();
    if (i < 0 || i >= m_targets.size()) return;
    if (const auto s = targetScaler()) setScaler(*s);
    m_following->setText(m_targets[i].applies);
}

void LivePanel::setScalers(const gui::LiveScalersPtr& scalers) {
    m_scalers = scalers;
    const auto s = targetScaler();
    if (s && !(*s == m_scaler)) setScaler(*s);
}

ScalerTarget LivePanel::target() const {
    const int i = m_target->currentIndex();
    return i >= 0 && i < m_targets.size() ? m_targets[i].target : ScalerTarget{};
}

QStringList LivePanel::targetNames() const {
    QStringList out;
    for (const Target& t : m_targets) out << t.name;
    return out;
}

bool LivePanel::chooseTarget(int index) {
    if (index < 0 || index >= m_targets.size()) return false;
    m_target->setCurrentIndex(index);
    showTarget();
    return true;
}

}  // namespace mpx::ui
