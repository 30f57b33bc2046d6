// MainWindow's menus and toolbar: the actions, their shortcuts and what each triggers; the Run
// menu's thread choices. Rule: an action calls the window's own public slots (run, reset, export…),
// so a test or the command line reaches the same code.
#include "ui/window/main_window.hpp"

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>

#include <algorithm>

#include "engine/precision/format.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/classroom.hpp"
#include "ui/panels/event_log_panel.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/panels/live_panel.hpp"
#include "ui/panels/setup_panel.hpp"
#include "ui/panels/status_line.hpp"
#include "ui/panels/sweep_panel.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/views/accumulator_lab.hpp"
#include "ui/views/attention_view.hpp"
#include "ui/views/boundary_view.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/views/fp4_view.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/mismatch_view.hpp"
#include "ui/views/range_view.hpp"
#include "ui/views/samples_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/view_names.hpp"

namespace mpx::ui {

void MainWindow::buildActions() {
    QStyle* st = style();
    m_runAction = new QAction(st->standardIcon(QStyle::SP_MediaPlay), tr("Run"), this);
    m_runAction->setShortcut(Qt::Key_Space);
    m_runAction->setToolTip(tr("Run or pause all runs (Space)"));
    m_stepAction = new QAction(st->standardIcon(QStyle::SP_MediaSkipForward), tr("Step"), this);
    m_stepAction->setShortcuts({QKeySequence(Qt::Key_S), QKeySequence(Qt::Key_Right)});
    m_stepAction->setToolTip(tr("One step of every run (S or →)"));
    m_resetAction = new QAction(st->standardIcon(QStyle::SP_BrowserReload), tr("Reset"), this);
    m_resetAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_resetAction->setToolTip(tr("Back to step 0 with the settings shown, same seed (Ctrl+R)"));
    connect(m_runAction, &QAction::triggered, this, [this] {
        if (m_engine->state() == gui::EngineState::running) pause();
        else run(-1, mpx::Timing::paced);
    });
    connect(m_stepAction, &QAction::triggered, this, &MainWindow::stepOnce);
    connect(m_resetAction, &QAction::triggered, this, &MainWindow::reset);

    auto* open = new QAction(tr("Open configuration…"), this);
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open configuration"), {}, tr("JSON (*.json)"));
        if (!path.isEmpty()) loadConfigFile(path);
    });
    auto* save = new QAction(tr("Save configuration as…"), this);
    save->setShortcut(QKeySequence::SaveAs);
    connect(save, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save configuration"), QStringLiteral("mpx-config.json"), tr("JSON (*.json)"));
        if (path.isEmpty()) return;
        const QString error = gui::saveConfig(currentConfig(), path);
        if (error.isEmpty()) m_messages->showMessage(MessageBar::Kind::success, tr("Saved the configuration to %1").arg(path));
        else m_messages->showMessage(MessageBar::Kind::error, error);
    });
    auto* reproduce = new QAction(tr("Reproduce from export…"), this);
    reproduce->setToolTip(tr("Load the configuration from an export's JSON sidecar"));
    connect(reproduce, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Reproduce a run from its sidecar"), {}, tr("mpx sidecar (*.json)"));
        if (!path.isEmpty()) reproduceFrom(path);
    });
    auto* csv = new QAction(tr("Export CSV…"), this);
    csv->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(csv, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export every run as CSV"), QStringLiteral("mpx-runs.csv"), tr("CSV (*.csv)"));
        if (!path.isEmpty()) exportCsv(path);
    });
    auto* trace = new QAction(tr("Open trace…"), this);
    trace->setToolTip(tr("Open a trace recorded from your own PyTorch training (mpx-cli trace --script) and replay any "
                         "scaler rule over it"));
    connect(trace, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a recorded trace"), traceFolder(), tr("mpx trace (*.csv)"));
        if (!path.isEmpty()) openTrace(path);
    });
    auto* torch = new QAction(tr("Export as PyTorch script…"), this);
    torch->setToolTip(tr("Write the configuration as a folder PyTorch trains (train.py, the data, initial weights and "
                         "batch order), to check mpx's runs against PyTorch with mpx-cli compare"));
    connect(torch, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export as a PyTorch script: name a new folder"),
                                                          QStringLiteral("mpx-torch"), {}, nullptr,
                                                          QFileDialog::ShowDirsOnly);
        if (!path.isEmpty()) exportTorch(path);
    });
    auto* png = new QAction(tr("Export the view as PNG…"), this);
    png->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));  // in classroom too: the window holds it
    addAction(png);
    png->setToolTip(tr("Save the view shown (charts, decision boundaries, range, where, updates, FP8 scaling, FP4, samples or attention) as a PNG picture"));
    connect(png, &QAction::triggered, this, [this] {
        const QString name = centralViewName(view());
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the view shown"), QStringLiteral("mpx-%1.png").arg(name),
                                                          tr("PNG (*.png)"));
        if (path.isEmpty()) return;
        if (exportViewPng(path)) m_messages->showMessage(MessageBar::Kind::success, tr("Saved the view to %1").arg(path));
        else m_messages->showMessage(MessageBar::Kind::error, tr("Could not write %1").arg(path));
    });
    auto* quit = new QAction(tr("Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addActions({open, save, reproduce, trace});
    file->addSeparator();
    file->addActions({csv, torch, png});
    file->addSeparator();
    file->addAction(quit);
    QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
    runMenu->addActions({m_runAction, m_stepAction, m_resetAction});
    runMenu->addSeparator();
    addThreadsMenu(runMenu);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("Reset zoom"), m_charts, &ChartsPanel::resetZoom);
    view->addAction(m_lessonDock->toggleViewAction());
    view->addAction(tr("Format explorer…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F), this, [this] { showFormatExplorer(); });
    view->addAction(tr("Accumulator lab…"), this, [this] { showAccumulatorLab(); })
        ->setToolTip(tr("How much a long sum loses under models of FP8 tensor-core accumulation"));
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("Keyboard shortcuts"), this, [this] {
        QMessageBox::information(this, tr("Keyboard shortcuts"),
                                 tr("Space: run / pause\nS or →: one step\nCtrl+R: reset\nCtrl+E: export CSV\nCtrl+Shift+E: export the view as PNG (every chart)\n"
                                    "Mouse wheel over the charts: scroll the list\nCtrl+wheel (or pinch) on a chart: zoom the step axis, within the run\n"
                                    "Drag: pan\nDouble-click: follow the whole run\nRight click on a chart: copy or save it as a picture"));
    });

    auto* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("runToolbar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addActions({m_runAction, m_stepAction, m_resetAction});
    addPaceControls(bar);
    bar->addSeparator();
    QAction* presetLabel = bar->addWidget(new QLabel(tr(" Preset ")));
    m_presets = new QComboBox;
    m_presets->addItems(gui::presetNames());
    m_presets->setMinimumContentsLength(14);
    m_presets->setPlaceholderText(tr("(own configuration)"));
    m_presets->setToolTip(tr("A shipped configuration: runs, model, data, scaler and training together."));
    connect(m_presets, &QComboBox::textActivated, this, &MainWindow::loadConfigFile);
    QAction* presetBox = bar->addWidget(m_presets);
    // The toolbar's buttons say it short (the menu keeps the full text), so a laptop's width holds them.
    open->setIconText(tr("Open…"));
    save->setIconText(tr("Save as…"));
    csv->setIconText(tr("CSV…"));
    png->setIconText(tr("PNG…"));
    bar->addAction(open);
    bar->addAction(save);
    bar->addSeparator();
    bar->addAction(csv);
    bar->addAction(png);

    // Classroom view: what it hides unless the teacher keeps it (the keys a configuration names).
    m_classroom = new Classroom(this);
    m_classroom->addControl(QStringLiteral("settings"), tr("Settings panel"), {findChild<QDockWidget*>(QStringLiteral("settingsDock"))});
    m_classroom->addControl(QStringLiteral("presets"), tr("Preset list"), {}, {presetLabel, presetBox});
    m_classroom->addControl(QStringLiteral("files"), tr("Open, save and export"), {}, {open, save, csv, png});
    m_classroom->addControl(QStringLiteral("event-log"), tr("Event log"), {m_log});
    m_classroom->addControl(QStringLiteral("menu"), tr("Menu bar"), {menuBar()});
    m_classroom->addControl(QStringLiteral("status"), tr("Status bar"), {statusBar()});
    m_classroomAction = new QAction(tr("Classroom"), this);
    m_classroomAction->setCheckable(true);
    m_classroomAction->setShortcut(Qt::Key_F11);
    m_classroomAction->setToolTip(tr("Classroom view (F11): large text and lines for a projector, only Run, Step, Reset, "
                                     "the charts and the lesson; View ▸ Keep in classroom chooses what else stays"));
    connect(m_classroomAction, &QAction::toggled, this, &MainWindow::setClassroom);
    connect(m_classroom, &Classroom::changed, this, [this] {
        m_charts->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_boundaries->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_range->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_where->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_updates->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_fp8->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_fp4->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_samples->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_attention->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0);
        m_classroomAction->setChecked(m_classroom->isOn());
    });
    // The log-probability mismatch (fp16-for-rl): the last tab (CentralView::mismatch), its classroom scale.
    auto* mismatch = new MismatchView(m_store);
    m_views->setTabToolTip(m_views->addTab(mismatch, tr("Mismatch")),
                           tr("GPT sessions with a mismatch section: one run's weights read in other precisions, how "
                              "far each held-out token's log-probability moves from the reference's (RL's FP16 vs BF16)."));
    connect(m_classroom, &Classroom::changed, mismatch,
            [this, mismatch] { mismatch->setPresentationScale(m_classroom->isOn() ? Classroom::k_chartScale : 1.0); });
    bar->insertAction(presetLabel, m_classroomAction);
    view->addAction(m_classroomAction);
    QMenu* keep = view->addMenu(tr("Keep in classroom"));
    for (const QString& key : m_classroom->keys()) {
        QAction* a = keep->addAction(m_classroom->label(key));
        a->setCheckable(true);
        connect(keep, &QMenu::aboutToShow, a, [this, a, key] { a->setChecked(m_classroom->isKept(key)); });
        connect(a, &QAction::toggled, this, [this, key](bool on) {
            QStringList k = m_classroom->kept();
            if (on && !k.contains(key)) k << key;
            if (!on) k.removeAll(key);
            m_classroom->setKept(k);
        });
    }
}

void MainWindow::addPaceControls(QToolBar* bar) {
    m_paceBox = new QComboBox;
    m_paceBox->setObjectName(QStringLiteral("paceBox"));
    m_paceBox->addItem(tr("Fastest"), 0.0);
    for (double rate : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0})
        m_paceBox->addItem(rate == 1.0 ? tr("1 step/s") : tr("%1 steps/s").arg(rate), rate);
    m_paceBox->setToolTip(tr("How fast Run steps: slow enough to talk over, or as fast as the engine goes. Step (S) "
                             "always takes one step. Kept with the configuration (its \"pace\"; mpx --pace)."));
    m_paceEvents = new QAction(tr("Slow at events"), this);
    m_paceEvents->setObjectName(QStringLiteral("paceEvents"));
    m_paceEvents->setCheckable(true);
    m_paceEvents->setToolTip(tr("Around a skipped step, a scale change or an overflow, Run slows to %1 steps/s for %2 "
                                "steps, so the event unfolds at talking speed")
                                 .arg(mpx::k_event_steps_per_second)
                                 .arg(mpx::k_event_steps));
    const auto edited = [this] {
        mpx::Pace p;
        p.steps_per_second = m_paceBox->currentData().toDouble();
        p.events = m_paceEvents->isChecked();
        m_base.pace = p;  // saved with the configuration, kept by Reset
        m_engine->setPace(p);
    };
    connect(m_paceBox, &QComboBox::activated, this, edited);
    connect(m_paceEvents, &QAction::triggered, this, edited);
    bar->addWidget(m_paceBox);
    bar->addAction(m_paceEvents);
}

void MainWindow::showPace(const mpx::Pace& p) {
    int i = m_paceBox->findData(p.steps_per_second);
    if (i < 0) {  // a preset's own rate (0.5, 3): an item of its own, in order
        i = 1;
        while (i < m_paceBox->count() && m_paceBox->itemData(i).toDouble() < p.steps_per_second) ++i;
        m_paceBox->insertItem(i, tr("%1 steps/s").arg(p.steps_per_second), p.steps_per_second);
    }
    m_paceBox->setCurrentIndex(i);
    m_paceEvents->setChecked(p.events);
}

void MainWindow::setPace(const mpx::Pace& p) {
    mpx::validate(p);
    showPace(p);
    m_base.pace = p;
    m_engine->setPace(p);
}

void MainWindow::addThreadsMenu(QMenu* runMenu) {
    // The engine's threads: one per core by default; the runs' numbers are the same for any count.
    QMenu* menu = runMenu->addMenu(tr("Threads"));
    menu->setToolTipsVisible(true);
    auto* group = new QActionGroup(menu);
    const unsigned saved = QSettings().value(QStringLiteral("engine/threads"), 0u).toUInt();
    const unsigned cores = gui::EngineController::cores();
    const auto add = [&](unsigned n, const QString& text) {
        QAction* a = menu->addAction(text);
        a->setCheckable(true);
        a->setChecked(n == saved);
        a->setToolTip(tr("CPU runs step side by side and large products split across the threads; "
                         "every number is the same bits for any count"));
        group->addAction(a);
        connect(a, &QAction::triggered, this, [this, n] {
            QSettings().setValue(QStringLiteral("engine/threads"), n);
            m_engine->setThreads(n);
        });
    };
    add(0, tr("One per core (%1)").arg(cores));
    for (unsigned n = 1; n <= std::min(cores, 16u); ++n) add(n, n == 1 ? tr("1 thread") : tr("%1 threads").arg(n));
    if (!group->checkedAction()) group->actions().front()->setChecked(true);
    m_engine->setThreads(saved <= std::min(cores, 16u) ? saved : 0);
}

QString MainWindow::traceFolder() const {
    const QString folder = QSettings().value(QStringLiteral("trace/folder")).toString();
    return !folder.isEmpty() && QFileInfo(folder).isDir() ? folder : QString();
}

}  // namespace mpx::ui
