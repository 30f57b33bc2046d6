// SweepPanel: the form, the job's signals and the heatmap.
#include "ui/panels/sweep_panel.hpp"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/session/config_bridge.hpp"
#include "ui/views/sweep_heatmap.hpp"
#include "ui/kit/png_export.hpp"

namespace mpx::ui {
namespace {

// Every numeric setting of the engine's field lists, as --set keys; the box is editable, so any
// other numeric key (data.noise, steps, ...) can be typed.
void fillFields(QComboBox* box, bool scalerOnly = false) {
    box->setEditable(true);
    const auto add = [box](const QString& section, const QList<gui::FieldSpec>& fields) {
        for (const auto& f : fields) {
            if (f.kind != mpx::FieldKind::number && f.kind != mpx::FieldKind::integer) continue;
            box->addItem(section + "." + f.name);
            box->setItemData(box->count() - 1, f.label + " — " + f.help, Qt::ToolTipRole);
        }
    };
    add(QStringLiteral("scaler"), gui::scalerFields());
    if (!scalerOnly) add(QStringLiteral("train"), gui::trainFields());
}

}  // namespace

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent), m_job(new gui::SweepJob(this)) {
    auto* v = new QVBoxLayout(this);
    auto* form = m_form = new QFormLayout;
    m_field1 = new QComboBox;
    fillFields(m_field1);
    m_field1->setCurrentText(QStringLiteral("scaler.init_scale"));
    m_values1 = new QLineEdit(QStringLiteral("2^8..2^36*2^4"));
    m_field2 = new QComboBox;
    m_field2->addItem(tr("(none)"));
    fillFields(m_field2);
    m_field2->setCurrentText(QStringLiteral("scaler.growth_interval"));
    m_values2 = new QLineEdit(QStringLiteral("2^4..2^11*2"));
    const QString valuesHelp = tr("A list 16,256,65536 (terms may be 2^8), a range start:stop:step "
                                  "(0.1:1:0.1) or a geometric range start..stop*factor (2^8..2^32*4)");
    m_values1->setToolTip(valuesHelp);
    m_values2->setToolTip(valuesHelp);
    m_presets = new QLineEdit(QStringLiteral("pytorch"));
    m_presets->setToolTip(tr("Scaler presets, one small heatmap each on one colour scale (e.g. "
                             "pytorch,deepspeed,megatron); empty: the scaler of the main view"));
    m_runs = new QLineEdit(QStringLiteral("amp-fp16"));
    m_runs->setToolTip(tr("Runs trained at every point; runs without a +preset suffix follow the swept scaler"));
    m_steps = new QSpinBox;
    m_steps->setRange(1, 1'000'000);
    m_steps->setValue(1000);
    form->addRow(tr("Field 1"), m_field1);
    form->addRow(tr("Values"), m_values1);
    form->addRow(tr("Field 2"), m_field2);
    form->addRow(tr("Values"), m_values2);
    form->addRow(tr("Scaler presets"), m_presets);
    form->addRow(tr("Runs"), m_runs);
    form->addRow(tr("Steps"), m_steps);
    v->addLayout(form);

    auto* buttons = new QHBoxLayout;
    m_start = new QPushButton(tr("Start"));
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setEnabled(false);
    buttons->addWidget(m_start);
    buttons->addWidget(m_cancel);
    v->addLayout(buttons);
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_eta = new QLabel;
    m_error = new QLabel;
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020"));
    v->addWidget(m_progress);
    v->addWidget(m_eta);
    v->addWidget(m_error);

    auto* view = new QFormLayout;
    m_outcome = new QComboBox;
    for (const auto& c : mpx::sweep_outcome_columns()) m_outcome->addItem(QString::fromStdString(c));
    m_outcome->setCurrentText(QStringLiteral("skipped"));
    m_run = new QComboBox;
    view->addRow(tr("Colour by"), m_outcome);
    view->addRow(tr("Run"), m_run);
    v->addLayout(view);
    m_map = new SweepHeatmap;
    m_map->setMinimumHeight(320);
    // Narrower than the dock it opens in: its own least width (360) was the dock's, and the vertical
    // scroll bar a finished sweep brings then pushed the form sideways ("ield 1" at the left).
    m_map->setMinimumWidth(280);
    v->addWidget(m_map, 1);
    auto* exports = new QHBoxLayout;
    m_csv = new QPushButton(tr("Export CSV…"));
    m_png = new QPushButton(tr("Export PNG…"));
    m_csv->setObjectName(QStringLiteral("exportCsv"));
    m_png->setObjectName(QStringLiteral("exportPng"));
    exports->addWidget(m_csv);
    exports->addWidget(m_png);
    v->addLayout(exports);
    updateExports();

    connect(m_start, &QPushButton::clicked, this, [this] { start(); });
    connect(m_cancel, &QPushButton::clicked, this, &SweepPanel::cancel);
    connect(m_outcome, &QComboBox::currentTextChanged, m_map, &SweepHeatmap::setOutcome);
    connect(m_run, &QComboBox::currentIndexChanged, m_map, &SweepHeatmap::setRun);
    connect(m_csv, &QPushButton::clicked, this, &SweepPanel::exportCsv);
    connect(m_png, &QPushButton::clicked, this, &SweepPanel::exportPng);
    connect(m_job, &gui::SweepJob::progressed, this, [this](int done, int planned, double eta) {
        m_progress->setRange(0, planned);
        m_progress->setValue(done);
        const QString text = tr("Sweep: %1/%2 points, about %3 s left").arg(done).arg(planned).arg(eta, 0, 'f', 0);
        m_eta->setText(text);
        emit progressText(text);
        refreshRuns();
        m_map->setPoints(&m_job->points());
        updateExports();
    });
    connect(m_job, &gui::SweepJob::finished, this, &SweepPanel::finished);
    connect(m_map, &SweepHeatmap::pointClicked, this, [this](std::size_t point) {
        try {
            emit pointChosen(m_job->pointConfig(point), tr("sweep point %1").arg(point));
        } catch (const std::exception& e) {
            m_error->setText(QString::fromStdString(e.what()));
        }
    });
}

void SweepPanel::setGrid(const QString& field1, const QString& values1, const QString& field2,
                         const QString& values2, const QString& categoricalValues) {
    m_field1->setCurrentText(field1);
    m_values1->setText(values1);
    m_field2->setCurrentText(field2.isEmpty() ? tr("(none)") : field2);
    m_values2->setText(values2);
    m_presets->setText(categoricalValues);
}

void SweepPanel::setTrace(std::shared_ptr<const mpx::Trace> trace) {
    const bool traced = trace != nullptr;
    m_job->setTrace(std::move(trace));
    m_form->setRowVisible(m_runs, !traced);
    m_form->setRowVisible(m_steps, !traced);
    for (QComboBox* box : {m_field1, m_field2}) {
        const QString current = box->currentText();
        const bool none = box == m_field2;
        const QSignalBlocker block(box);
        box->clear();
        if (none) box->addItem(tr("(none)"));
        fillFields(box, traced);
        box->setCurrentText(current);
    }
}

bool SweepPanel::rowShown(QWidget* field) const {
    QFormLayout::ItemRole role;
    int row = -1;
    m_form->getWidgetPosition(field, &row, &role);
    return row >= 0 && m_form->isRowVisible(row);
}
QWidget* SweepPanel::runsField() const { return m_runs; }
QWidget* SweepPanel::stepsField() const { return m_steps; }

void SweepPanel::setRuns(const QString& runs) { m_runs->setText(runs); }
void SweepPanel::setSteps(int steps) { m_steps->setValue(steps); }
void SweepPanel::setOutcome(const QString& column) { m_outcome->setCurrentText(column); }

QString SweepPanel::start() {
    m_error->clear();
    mpx::SessionConfig base = m_base ? m_base() : mpx::load_config("default");
    QStringList sets;  // a trace's sweep replays its own steps, its one run
    if (!m_job->trace()) {
        sets << QStringLiteral("steps=%1").arg(m_steps->value());
        if (const QString runs = m_runs->text().trimmed(); !runs.isEmpty()) sets << QStringLiteral("runs=") + runs;
    }
    const auto applied = gui::applyOverrides(base, sets);
    QString error = applied.error;
    QStringList grid;
    if (error.isEmpty()) {
        base = *applied.config;
        const auto preset = m_presets->text().trimmed();
        if (!preset.isEmpty()) grid << QStringLiteral("scaler.preset=") + preset;
        grid << m_field1->currentText().trimmed() + "=" + m_values1->text();
        if (m_field2->currentIndex() != 0 || m_field2->currentText() != tr("(none)"))
            grid << m_field2->currentText().trimmed() + "=" + m_values2->text();
        error = m_job->start(base, grid);
    }
    if (!error.isEmpty()) {
        m_error->setText(error);
        return error;
    }
    m_map->setGrid(m_job->grid());
    m_map->setPoints(&m_job->points());
    m_run->clear();
    m_progress->setRange(0, static_cast<int>(m_job->planned()));
    m_progress->setValue(0);
    m_eta->setText(tr("Sweep: 0/%1 points").arg(m_job->planned()));
    m_start->setEnabled(false);
    m_cancel->setEnabled(true);
    updateExports();  // the new sweep has no point yet: the old one's are gone
    return {};
}

void SweepPanel::cancel() { m_job->cancel(); }

void SweepPanel::refreshRuns() {
    if (m_run->count() > 0 || m_job->points().empty()) return;
    for (const auto& o : m_job->points().front().runs) m_run->addItem(QString::fromStdString(o.run));
}

void SweepPanel::finished(bool cancelled, const QString& error) {
    m_start->setEnabled(true);
    m_cancel->setEnabled(false);
    m_map->setPoints(&m_job->points());
    refreshRuns();
    updateExports();
    if (!error.isEmpty()) m_error->setText(error);
    const QString text = cancelled ? tr("Sweep cancelled: %1 of %2 points kept").arg(m_job->points().size()).arg(m_job->planned())
                                   : tr("Sweep finished: %1 points").arg(m_job->planned());
    m_eta->setText(text);
    emit progressText(text);
}

// Export only what exists: before any point, a CSV was a header alone, written without a word.
void SweepPanel::updateExports() {
    const bool any = !m_job->points().empty();
    const QString none = tr("Nothing to export yet: start a sweep, and export once it has finished a point.");
    m_csv->setEnabled(any);
    m_png->setEnabled(any);
    m_csv->setToolTip(any ? tr("Every finished point's outcomes as CSV, with a JSON sidecar to reproduce the sweep.") : none);
    m_png->setToolTip(any ? tr("The heatmap as shown, as a PNG image.") : none);
}

void SweepPanel::exportCsv() {
    if (m_job->points().empty()) {  // the buttons are disabled then; a shortcut or a test may still ask
        m_error->setText(tr("Nothing to export yet: start a sweep first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the sweep as CSV"), QStringLiteral("mpx-sweep.csv"),
                                                      tr("CSV (*.csv)"));
    if (path.isEmpty()) return;
    const QString error = m_job->exportCsv(path);
    m_error->setText(error);
    if (error.isEmpty()) emit progressText(tr("Wrote %1 and its sidecar").arg(path));
}

void SweepPanel::exportPng() {
    if (m_job->points().empty()) {
        m_error->setText(tr("Nothing to export yet: start a sweep first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the heatmap as PNG"), QStringLiteral("mpx-sweep.png"),
                                                      tr("PNG (*.png)"));
    if (path.isEmpty()) return;
    if (!savePng(m_map->grab(), path)) m_error->setText(tr("Cannot write %1").arg(path));
}

}  // namespace mpx::ui
