// MainWindow: layout and the connections between panels, store and engine (its menus and
// toolbar: main_window_menus.cpp).
#include "ui/window/main_window.hpp"

#include <QAction>
#include <QActionGroup>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

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
#include "ui/views/boundary_view.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/views/fp4_view.hpp"
#include "ui/views/attention_view.hpp"
#include "ui/views/mismatch_view.hpp"
#include "ui/views/samples_view.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/range_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/views/where_view.hpp"

namespace mpx::ui {
namespace {

// The view a tab shows, inside its scroll area where it has one.
QWidget* pageOf(QWidget* tab) {
    if (auto* area = qobject_cast<QScrollArea*>(tab); area && area->widget()) return area->widget();
    return tab;
}

QScrollArea* scrolled(QWidget* w) {
    auto* area = new QScrollArea;
    area->setWidget(w);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    // Sideways too where the dock is narrower than the form (issue 27: the Scaler form was cut at
    // the right with no way to reach it).
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    return area;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("mpx — Mixed-Precision Explorer"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/mpx.png")));
    m_engine = new gui::EngineController(this);
    m_store = new gui::RecordStore(&m_engine->buffer(), this);
    buildLayout();
    buildActions();
    connectEngine();
    connectLesson();
    m_status = new StatusLine(statusBar(), m_store, m_engine);
    // The whole available screen (issue 27: the charts need every pixel a laptop has); a saved
    // geometry of the user's wins (restoreSettings).
    fitToScreen(screen() ? screen()->availableGeometry().size() : QSize(1500, 950));
    restoreSettings();
    updateRunAction();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildLayout() {
    m_setup = new SetupPanel;
    m_live = new LivePanel;
    m_tabs = new QTabWidget;
    m_tabs->addTab(scrolled(m_setup), tr("Setup ⟳ reset"));
    m_tabs->addTab(scrolled(m_live), tr("Scaler && LR ● live"));
    m_tabs->setTabToolTip(0, tr("Precisions, model, data and training: changes apply when you reset."));
    m_tabs->setTabToolTip(1, tr("Loss scaler, learning rate and clipping: changes apply at the next step."));
    m_sweep = new SweepPanel;
    m_sweep->setBaseConfig([this] {
        if (!m_trace) return currentConfig();
        mpx::SessionConfig c = m_base;  // a sweep over the trace varies the replayed rule only
        c.scaler = m_trace->rule;
        return c;
    });
    m_tabs->setTabToolTip(m_tabs->addTab(scrolled(m_sweep), tr("Sweep")),
                          tr("Train a grid of settings in the background; click a cell to load it here."));
    connect(m_sweep, &SweepPanel::pointChosen, this, [this](const mpx::SessionConfig& c, const QString& origin) {
        if (!m_trace) return applyConfig(c, origin);
        if (replayTrace(c.scaler)) m_live->setScaler(c.scaler);  // the point's rule over the trace
    });
    connect(m_sweep, &SweepPanel::progressText, this, [this](const QString& t) { statusBar()->showMessage(t, 5000); });
    auto* dock = new QDockWidget(tr("Settings"), this);
    dock->setObjectName(QStringLiteral("settingsDock"));
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    dock->setWidget(m_tabs);
    dock->setMinimumWidth(340);
    addDockWidget(Qt::LeftDockWidgetArea, dock);
    m_lesson = new LessonPanel;
    m_lessonDock = new QDockWidget(tr("Lesson"), this);
    m_lessonDock->setObjectName(QStringLiteral("lessonDock"));
    m_lessonDock->setWidget(m_lesson);
    m_lessonDock->setMinimumWidth(300);
    addDockWidget(Qt::RightDockWidgetArea, m_lessonDock);
    m_lessonDock->hide();  // shown by a configuration that carries a lesson

    auto* top = new QWidget;
    auto* v = new QVBoxLayout(top);
    v->setContentsMargins(4, 4, 4, 0);
    v->setSpacing(4);
    m_messages = new MessageBar;
    m_resetBar = new MessageBar;
    v->addWidget(m_messages);
    v->addWidget(m_resetBar);
    m_charts = new ChartsPanel(m_store);
    m_boundaries = new BoundaryView(m_store);
    m_views = new QTabWidget;
    m_views->setDocumentMode(true);
    m_views->addTab(m_charts, tr("Training"));
    m_views->setTabToolTip(0, tr("Loss, loss scale, overflow, underflow and memory of every run, step by step."));
    m_views->addTab(m_boundaries, tr("Decision boundaries"));
    m_views->setTabToolTip(1, tr("For two-dimensional data sets: which class each run's model predicts over the input "
                                 "plane, computed in that run's own precision, side by side. Where a low-precision run "
                                 "draws the same map as fp32, it tracks FP32."));
    connect(m_boundaries, &BoundaryView::wantedChanged, m_engine, &gui::EngineController::setBoundariesWanted);
    m_range = new RangeView(m_store);
    // Range's controls need ~750 px: on a laptop with both docks open it scrolls sideways rather
    // than widen the window past the screen (issue 27).
    QScrollArea* rangeArea = scrolled(m_range);
    m_views->setTabToolTip(m_views->addTab(rangeArea, tr("Range")),
                           tr("How big one layer's values are, against what the run's number format can hold: which "
                              "ones become 0, lose digits, or become infinity, and how the loss scale moves gradients."));
    m_where = new WhereView(m_store);
    m_views->setTabToolTip(m_views->addTab(m_where, tr("Where")),
                           tr("Which layer loses gradients to underflow or overflows, step by step, and where each "
                              "skipped step's first inf/NaN appeared. Click a cell to open it in Range."));
    m_updates = new UpdatesView(m_store);
    m_views->setTabToolTip(m_views->addTab(m_updates, tr("Updates")),
                           tr("How big weight updates are against the spacing of the stored weights: updates under "
                              "half a spacing are rounded away."));
    m_fp8 = new Fp8View(m_store);
    m_views->setTabToolTip(m_views->addTab(m_fp8, tr("FP8 scaling")),
                           tr("FP8 runs: how each tensor's scale follows its largest value (amax), the steps delayed "
                              "scaling takes it from, and the share of values that saturate or flush to zero."));
    m_fp4 = new Fp4View(m_store);
    m_views->setTabToolTip(m_views->addTab(m_fp4, tr("FP4")),
                           tr("FP4 runs (nvfp4, mxfp4): where each tensor's values land on FP4's 8 sizes, where each "
                              "block's largest value lands (MXFP4's lost binade), the shares clamped at ±6 or flushed "
                              "to 0, NVFP4's tensor scale, and whether the weights' two FP4 copies agree."));
    m_samples = new SamplesView(m_store);
    m_views->setTabToolTip(m_views->addTab(m_samples, tr("Samples")),
                           tr("GPT sessions: the text each run writes from the same prompt with the same random "
                              "numbers, with the step and held-out loss it came from."));
    connect(m_samples, &SamplesView::sampleRequested, m_engine, &gui::EngineController::sampleNow);
    m_attention = new AttentionView(m_store);
    m_views->setTabToolTip(m_views->addTab(m_attention, tr("Attention")),
                           tr("GPT sessions: one run's attention scores or probabilities, position by position, beside "
                              "a second run's, with the scores that passed the format's largest value marked."));
    connect(m_attention, &AttentionView::wantedChanged, m_engine, &gui::EngineController::setAttentionWanted);
    connect(m_where, &WhereView::cellActivated, this, [this](int run, int layer, qint64 step, WhereView::Measure m) {
        m_range->setRuns(run, m_range->runB() == run ? -1 : m_range->runB());
        m_range->setLayer(layer);
        // The tensor the cell counted: a trace records output gradients only; an FP8 or FP4 run's
        // saturations are mostly in its casts of x; otherwise weight gradients flush, output
        // gradients overflow.
        const auto session = m_store->session();
        const bool low = session && run >= 0 && run < static_cast<int>(session->runs.size()) &&
                         (mpx::is_fp8(session->runs[static_cast<std::size_t>(run)].spec.mode) ||
                          mpx::is_fp4(session->runs[static_cast<std::size_t>(run)].spec.mode));
        m_range->setTensor(m_trace                                              ? mpx::HistTensor::grad_output
                           : m == WhereView::Measure::overflowCount && low      ? mpx::HistTensor::input
                           : m == WhereView::Measure::underflowShare            ? mpx::HistTensor::grad_weight
                                                                                : mpx::HistTensor::grad_output);
        m_range->setStep(step);
        setView(View::range);
    });
    v->addWidget(m_views, 1);
    m_log = new EventLogPanel(m_store);
    m_split = new QSplitter(Qt::Vertical);
    m_split->addWidget(top);
    m_split->addWidget(m_log);
    // The log keeps three rows and the charts the rest: at 1280×800 a larger share left a lesson's
    // named charts below the fold. A taller window gives its height to the charts.
    m_split->setStretchFactor(0, 1);
    m_split->setStretchFactor(1, 0);
    m_split->setSizes({720, m_log->compactHeight()});
    setCentralWidget(m_split);
}

void MainWindow::connectEngine() {
    connect(m_engine, &gui::EngineController::stateChanged, this, &MainWindow::updateRunAction);
    connect(m_engine, &gui::EngineController::runFailed, this,
            [this](const QString& m) { m_messages->showMessage(MessageBar::Kind::error, m); });
    connect(m_engine, &gui::EngineController::exported, this, [this](const QString& path) {
        m_messages->showMessage(MessageBar::Kind::success,
                                tr("Exported every recorded step to %1 (configuration in %2)")
                                    .arg(path, QFileInfo(path).completeBaseName() + QStringLiteral(".json")));
    });
    connect(m_engine, &gui::EngineController::exportFailed, this, [this](const QString& m) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Export failed: %1").arg(m));
    });
    connect(m_engine, &gui::EngineController::settingsApplied, this, [this](qint64 step, const QString& what) {
        statusBar()->showMessage(tr("Applied from step %1: %2").arg(step).arg(what), 5000);
    });
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        if (m_trace && !m_store->showsOutsideSession()) leaveTrace();
        if (const auto s = m_store->session()) m_live->setRuns(s->runs, s->scalers);
        updateViewTabs();
        updatePendingReset();
        updateRunAction();
    });
    connect(m_store, &gui::RecordStore::scalersEdited, this, [this] { m_live->setScalers(m_store->liveScalers()); });
    connect(m_setup, &SetupPanel::edited, this, &MainWindow::updatePendingReset);
    connect(m_resetBar, &MessageBar::actionClicked, this, &MainWindow::reset);
    connect(m_messages, &MessageBar::actionClicked, this, &MainWindow::reset);  // "all steps done: Reset"
    connect(m_live, &LivePanel::scalerEdited, this, [this](const mpx::ScalerConfig& s) {
        if (m_trace) {  // the trace's replayed rule: the replay is redone at once
            replayTrace(s);
            return;
        }
        const ScalerTarget t = m_live->target();
        if (!t.session) {
            m_engine->setRunScaler(t.runs, s);  // this session only: Reset starts the runs as their labels say
            return;
        }
        m_base.scaler = s;  // the session scaler is also where the next Reset starts
        m_engine->setScaler(s);
    });
    connect(m_live, &LivePanel::trainEdited, this, [this] {
        m_base.train = m_live->train(m_base.train);
        m_engine->setTrain(m_base.train);
    });
    connect(m_live, &LivePanel::snippetCopied, this, [this](const QString& fw) {
        statusBar()->showMessage(tr("Copied the scaler settings for %1 to the clipboard").arg(fw), 5000);
    });
    connect(m_log, &EventLogPanel::stepActivated, m_charts, &ChartsPanel::focusStep);
}

mpx::SessionConfig MainWindow::currentConfig() const {
    mpx::SessionConfig c = m_base;
    m_setup->applyTo(c);
    c.train = m_live->train(c.train);  // the session scaler is m_base's: the panel may show a run's
    if (m_classroom->isOn()) {
        c.classroom.emplace();
        for (const QString& k : m_classroom->kept()) c.classroom->push_back(k.toStdString());
    } else {
        c.classroom.reset();
    }
    return c;
}

void MainWindow::applyConfig(const mpx::SessionConfig& cfg, const QString& origin) {
    m_base = cfg;
    m_setup->setConfig(cfg);
    m_live->setScaler(cfg.scaler);
    m_live->setTrain(cfg.train);
    showPace(cfg.pace);
    // The shipped preset of that name, unless the configuration came from elsewhere.
    const int i = m_presets->findText(QString::fromStdString(cfg.name));
    m_presets->setCurrentIndex(i >= 0 && gui::presetNames().contains(origin) ? i : -1);
    m_store->followEngine();  // a trace shown gives way to this session
    m_engine->configure(cfg);
    showLesson(cfg);
    if (cfg.classroom) {
        QStringList keep;
        for (const auto& k : *cfg.classroom) keep << QString::fromStdString(k);
        const QStringList unknown = m_classroom->setKept(keep);
        setClassroom(true);
        if (!unknown.isEmpty())
            m_messages->showMessage(MessageBar::Kind::warning, tr("The classroom list names controls mpx does not have: %1 (it knows %2)")
                                                                   .arg(unknown.join(QStringLiteral(", ")), m_classroom->keys().join(QStringLiteral(", "))));
    }
    statusBar()->showMessage(tr("Loaded %1").arg(origin), 4000);
    updatePendingReset();
}

void MainWindow::loadConfigFile(const QString& nameOrPath) {
    const gui::ConfigResult r = gui::loadConfig(nameOrPath);
    if (!r.config) {
        m_messages->showMessage(MessageBar::Kind::error,
                                tr("Could not load “%1”: %2").arg(nameOrPath, r.error));
        return;
    }
    m_messages->hide();
    applyConfig(*r.config, nameOrPath);
}

void MainWindow::reproduceFrom(const QString& sidecarPath) {
    const gui::ConfigResult r = gui::configFromSidecar(sidecarPath);
    if (!r.config) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Could not reproduce from “%1”: %2").arg(sidecarPath, r.error));
        return;
    }
    applyConfig(*r.config, sidecarPath);
    const QStringList changes = gui::sidecarLiveChanges(sidecarPath);  // an older export: its changes as text, not replayable
    const int replayed = static_cast<int>(r.config->live_changes.size());
    if (changes.isEmpty() && replayed == 0)
        m_messages->showMessage(MessageBar::Kind::success, tr("Loaded the configuration of %1: Run reproduces it step for step.").arg(sidecarPath));
    else if (changes.isEmpty())
        m_messages->showMessage(MessageBar::Kind::success,
                                tr("Loaded the configuration of %1 and its live changes (%2 in all): Run replays each "
                                   "at its step, so it reproduces the export step for step.")
                                    .arg(sidecarPath)
                                    .arg(replayed));
    else
        m_messages->showMessage(MessageBar::Kind::warning,
                                tr("Loaded the starting configuration of %1. It was changed live while it ran, and "
                                   "those changes are not replayed: %2").arg(sidecarPath, changes.join(QStringLiteral("; "))));
}

void MainWindow::run(qint64 stopAtStep, mpx::Timing timing) {
    if (m_engine->state() == gui::EngineState::finished) {
        m_messages->showMessage(MessageBar::Kind::warning, tr("All %1 steps are done. Reset (Ctrl+R) to run again, or raise the step count.")
                                                               .arg(m_store->steps()), tr("Reset"));
        return;
    }
    if (!m_store->session() && m_engine->state() == gui::EngineState::empty) reset();
    m_engine->start(stopAtStep, timing);
}

void MainWindow::pause() { m_engine->pause(); }
void MainWindow::stepOnce() { m_engine->stepOnce(); }

void MainWindow::reset() {
    mpx::SessionConfig cfg = currentConfig();
    QString error = gui::checkConfig(cfg);
    QString dropped;
    if (!error.isEmpty() && !cfg.live_changes.empty()) {
        // The live changes of a loaded configuration name its runs and settings: after the Setup tab
        // changed those (a run removed, a batch that makes a listed change impossible) they are left
        // out rather than making every reset fail.
        mpx::SessionConfig without = cfg;
        without.live_changes.clear();
        if (gui::checkConfig(without).isEmpty()) {
            dropped = error;
            cfg = std::move(without);
            error.clear();
        }
    }
    if (!error.isEmpty()) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Cannot reset with these settings: %1").arg(error));
        return;
    }
    m_messages->hide();
    if (!dropped.isEmpty())
        m_messages->showMessage(MessageBar::Kind::warning,
                                tr("The live changes the loaded configuration lists do not fit these settings and are "
                                   "left out: %1").arg(dropped));
    m_base = cfg;
    m_store->followEngine();  // a trace shown gives way to this session
    m_engine->configure(cfg);
}

void MainWindow::setClassroom(bool on) {
    m_classroom->setOn(on);
    if (on) m_lessonDock->setVisible(!m_base.lesson.empty());
}

void MainWindow::exportCsv(const QString& path) {
    if (!m_trace) return m_engine->exportCsv(path);
    // A trace's session: the replay, in `mpx-cli replay --csv`'s columns.
    if (const QString error = gui::exportReplayCsv(*m_trace, path); error.isEmpty())
        m_messages->showMessage(MessageBar::Kind::success, tr("Exported the replay of every step to %1").arg(path));
    else
        m_messages->showMessage(MessageBar::Kind::error, tr("Export failed: %1").arg(error));
}

bool MainWindow::openTrace(const QString& path) {
    std::shared_ptr<const mpx::Trace> trace;
    try {
        trace = std::make_shared<const mpx::Trace>(mpx::read_trace(path.toStdString()));
    } catch (const std::exception& e) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Cannot open the trace: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    if (trace->steps.empty()) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Cannot open the trace: %1 holds no steps").arg(path));
        return false;
    }
    pause();
    // PyTorch's rule, started where the recording started: the replay and the recording then part
    // only where the rules differ.
    mpx::ScalerConfig rule = mpx::scaler_preset("pytorch");
    rule.init_scale = trace->steps.front().scale;
    auto previous = std::move(m_trace);
    m_trace = std::make_unique<gui::TraceSession>();
    m_trace->trace = std::move(trace);
    if (!replayTrace(rule)) {
        m_trace = std::move(previous);
        return false;
    }
    m_sweep->setTrace(m_trace->trace);
    m_live->setScaler(rule);
    m_lessonDock->hide();
    m_charts->setHighlighted({ChartId::scale, ChartId::loss});  // the replay against the frontier first, and taller
    m_presets->setCurrentIndex(-1);
    setView(View::charts);
    m_charts->resetZoom();
    QSettings().setValue(QStringLiteral("trace/folder"), QFileInfo(path).absolutePath());  // Open trace… starts there
    return true;
}

bool MainWindow::replayTrace(const mpx::ScalerConfig& rule) {
    gui::TraceSession t;
    try {
        t = gui::traceSession(m_trace->trace, rule, ++m_traceGeneration);
    } catch (const std::exception& e) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Not replayed: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    const bool following = m_charts->following();
    const double x0 = m_charts->viewX0(), x1 = m_charts->viewX1();
    *m_trace = std::move(t);
    m_store->showSession(m_trace->info, m_trace->records, m_trace->notes, m_trace->histograms);
    if (!following) m_charts->zoomTo(x0, x1);
    m_status->showVerdict(m_trace->verdict);
    m_setup->showTrace(m_trace.get());  // what the trace holds, not the training forms
    m_messages->showMessage(
        MessageBar::Kind::success,
        tr("%1.\nTrace %2, %3 recorded steps: the recording (dashed), the rule replayed over it (solid: tune it in the "
           "Scaler tab, sweep it in the Sweep tab) and the frontier 65504 / amax (grey): a step overflows where its "
           "scale is above the frontier. Exact per step for the recorded weights; after a skip that differs from the "
           "recording, an estimate. Reset or a preset goes back to training.")
            .arg(m_trace->verdict, QString::fromStdString(m_trace->info->config.name))
            .arg(m_trace->trace->steps.size()));
    return true;
}

void MainWindow::leaveTrace() {
    m_trace.reset();
    m_sweep->setTrace(nullptr);
    m_setup->showTrace(nullptr);
    m_live->setScaler(m_base.scaler);  // the tab showed the replayed rule
    statusBar()->clearMessage();
}

bool MainWindow::exportTorch(const QString& folder) {
    const QString error = gui::exportTorch(currentConfig(), folder);
    if (!error.isEmpty()) {
        m_messages->showMessage(MessageBar::Kind::error, tr("Not exported: %1").arg(error));
        return false;
    }
    m_messages->showMessage(MessageBar::Kind::success,
                            tr("Wrote %1. Train it in PyTorch: python3 %1/train.py --csv torch.csv (add --emulate where "
                               "PyTorch cannot run FP16 on the CPU); train the same here (Run), save it with File ▸ Export "
                               "CSV… as mpx.csv and run mpx-cli compare mpx.csv torch.csv").arg(folder));
    return true;
}

bool MainWindow::exportChartsPng(const QString& path) { return saveViewPng(m_charts, path); }

void MainWindow::setView(View v) {
    m_views->setTabVisible(static_cast<int>(v), true);  // asked for: shown, whatever the session
    m_views->setCurrentIndex(static_cast<int>(v));
}

MainWindow::View MainWindow::view() const { return static_cast<View>(std::max(0, m_views->currentIndex())); }

bool MainWindow::exportViewPng(const QString& path) {
    // The picture only: charts, titles, legends and captions, without the view's controls.
    return saveViewPng(view() == View::charts ? static_cast<QWidget*>(m_charts) : pageOf(m_views->currentWidget()), path);
}

bool MainWindow::saveScreenshot(const QString& path) { return savePng(grab(), path); }

FormatExplorer* MainWindow::showFormatExplorer(const QString& value) {
    if (!m_explorer) {
        m_explorer = new FormatExplorer(this);
        m_explorer->setWindowFlag(Qt::Window);
        // Beside the window where the screen has room, the whole screen where it has not (a laptop).
        const QSize room = screen() ? screen()->availableGeometry().size() - QSize(8, 32) : QSize(1450, 620);
        m_explorer->resize(QSize(1450, 620).boundedTo(room));
    }
    if (!value.isEmpty()) m_explorer->setText(value);
    m_explorer->show();
    m_explorer->raise();
    m_explorer->activateWindow();
    return m_explorer;
}

AccumulatorLab* MainWindow::showAccumulatorLab(const QString& format) {
    const bool first = !m_lab;
    if (first) {
        m_lab = new AccumulatorLab(this);
        m_lab->setWindowFlag(Qt::Window);
    }
    // "e4m3" or a lesson's "e4m3@4096" (the K its note quotes).
    if (const auto f = mpx::parse_format(format.section(QLatin1Char('@'), 0, 0).toLower().toStdString())) m_lab->setOperandFormats({*f});
    m_lab->setQuotedK(format.contains(QLatin1Char('@')) ? format.section(QLatin1Char('@'), 1).toInt() : 0);
    m_lab->show();
    m_lab->raise();
    m_lab->activateWindow();
    if (first) m_lab->run();  // a chart to look at at once (about a second); Run recomputes after changes
    return m_lab;
}

void MainWindow::updatePendingReset() {
    const auto session = m_store->session();
    bool pending = false;
    // A trace's session is not built from the Setup tab: its settings wait for the next training.
    if (session && !m_store->showsOutsideSession()) {
        mpx::SessionConfig candidate = session->config;
        m_setup->applyTo(candidate);
        pending = gui::configToJson(candidate) != gui::configToJson(session->config);
    }
    m_setup->setPendingReset(pending);
    if (pending)
        m_resetBar->showMessage(MessageBar::Kind::warning,
                                tr("You changed settings that need a reset (precisions, model, data or training). "
                                   "The charts still show the session as it was built."),
                                tr("Reset now (Ctrl+R)"));
    else
        m_resetBar->hide();
}

void MainWindow::updateRunAction() {
    const bool running = m_engine->state() == gui::EngineState::running;
    m_runAction->setText(running ? tr("Pause") : tr("Run"));
    m_runAction->setIcon(style()->standardIcon(running ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    // A trace's session is replayed, not trained: Reset goes back to training.
    const bool trace = m_store->showsOutsideSession();
    m_runAction->setEnabled(!trace);
    m_stepAction->setEnabled(!trace && !running && m_engine->state() != gui::EngineState::finished);
}

std::optional<mpx::SessionConfig> MainWindow::lastConfig() {
    const QString text = QSettings().value(QStringLiteral("session/config")).toString();
    if (text.isEmpty()) return std::nullopt;
    return gui::parseConfigText(text, QStringLiteral("the last session")).config;
}

void MainWindow::fitToScreen(QSize wanted) {
    const QScreen* s = screen();
    if (!s) {
        resize(wanted);
        return;
    }
    // The frame (title bar, borders) is the window manager's and unknown before the window shows:
    // leave a usual one's room where the window would otherwise fill the screen.
    const QSize room = s->availableGeometry().size() - QSize(8, 32);
    resize(wanted.boundedTo(room.expandedTo(minimumSizeHint())));
}

void MainWindow::restoreSettings() {
    QSettings s;
    if (s.contains(QStringLiteral("window/geometry"))) restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    m_split->restoreState(s.value(QStringLiteral("window/split")).toByteArray());
    m_tabs->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
    m_views->setCurrentIndex(s.value(QStringLiteral("window/view"), 0).toInt());
    m_charts->setLossLogScale(s.value(QStringLiteral("charts/logLoss"), true).toBool());
    m_charts->setSmoothing(s.value(QStringLiteral("charts/smoothing"), 0.6).toDouble());
}

void MainWindow::saveSettings() const {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    s.setValue(QStringLiteral("window/split"), m_split->saveState());
    s.setValue(QStringLiteral("window/tab"), m_tabs->currentIndex());
    s.setValue(QStringLiteral("window/view"), m_views->currentIndex());
    s.setValue(QStringLiteral("charts/logLoss"), m_charts->lossLogScale());
    s.setValue(QStringLiteral("charts/smoothing"), m_charts->smoothing());
    s.setValue(QStringLiteral("session/config"), gui::configToJson(currentConfig()));
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    e->accept();
}

}  // namespace mpx::ui
