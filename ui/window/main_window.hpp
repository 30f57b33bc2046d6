// The main window: wires the panels, the engine controller and the record store together, and
// owns the actions (run, pause, step, reset, presets, export). Rule: it wires, it does not compute:
// numbers come from the store, settings from the panels, results from the engine's signals.
#pragma once

#include <QMainWindow>

#include "ui/session/engine_controller.hpp"
#include "ui/session/record_store.hpp"
#include "ui/session/trace_session.hpp"
#include "ui/window/view_names.hpp"

class QAction;
class QComboBox;
class QDockWidget;
class QSplitter;
class QTabWidget;
class QToolBar;

namespace mpx::ui {

class AccumulatorLab;
class BoundaryView;
class ChartsPanel;
class EventLogPanel;
class FormatExplorer;
class Fp8View;
class Fp4View;
class SamplesView;
class AttentionView;
class Classroom;
class LessonPanel;
struct LessonView;
class LivePanel;
class MessageBar;
class RangeView;
class SetupPanel;
class StatusLine;
class SweepPanel;
class UpdatesView;
class WhereView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Shows the configuration in the panels and builds a session from it (paused at step 0).
    void applyConfig(const mpx::SessionConfig& cfg, const QString& origin);
    // The configuration saved at the last close, or nullopt.
    static std::optional<mpx::SessionConfig> lastConfig();
    // The configuration the panels describe now (what Reset would build).
    mpx::SessionConfig currentConfig() const;

    // Runs every run to the end, or to stopAtStep. Timing::paced keeps the toolbar's pace (the Run
    // button, Space, mpx --start); fastest, the default, ignores it: a run to a step for a picture
    // or a test is a seek, not a lecture.
    void run(qint64 stopAtStep = -1, mpx::Timing timing = mpx::Timing::fastest);
    void pause();
    void stepOnce();
    void reset();
    void loadConfigFile(const QString& nameOrPath);  // errors go to the message bar
    void reproduceFrom(const QString& sidecarPath);
    void exportCsv(const QString& path);
    // File ▸ Export as PyTorch script…: the configuration shown as a new folder (train.py and its
    // data); the message says what to run next. False, with the reason shown, when nothing was written.
    bool exportTorch(const QString& folder);
    // File ▸ Open trace…: the trace as the window's session (ui/session/trace_session.hpp): its runs
    // are the recording, the session scaler's rule replayed over it and the overflow frontier; the
    // Scaler tab tunes the rule, the Sweep tab sweeps it over the trace, a sweep's cell sets it. The
    // engine pauses; Reset, a preset or a configuration goes back to training. False, with the
    // reason shown and nothing changed, when the trace cannot be read.
    bool openTrace(const QString& path);
    QString traceFolder() const;  // where Open trace… starts: the folder of the last trace opened, else the working folder
    // The trace shown, or nullptr while the session is the engine's.
    const gui::TraceSession* traceSession() const { return m_trace.get(); }
    bool exportChartsPng(const QString& path);
    // The view the central tabs show, in tab order: the training charts, the decision boundaries,
    // the histogram views (Range, Where, Updates), the FP8 scaling view, the FP4 view, the GPT's samples and attention.
    using View = CentralView;  // ui/window/view_names.hpp
    void setView(View v);
    View view() const;
    bool exportViewPng(const QString& path);  // the view shown, as File ▸ Export the view as PNG saves it
    bool saveScreenshot(const QString& path);
    // The format explorer window (made on first use), showing `value` when one is given.
    FormatExplorer* showFormatExplorer(const QString& value = {});
    // The accumulator lab window (made on first use), with only `format` ticked when one is given (a
    // name parse_format reads, e.g. "e4m3"); it runs its experiment the first time it is shown.
    AccumulatorLab* showAccumulatorLab(const QString& format = {});

    gui::EngineController* engine() const { return m_engine; }
    gui::RecordStore* store() const { return m_store; }
    ChartsPanel* charts() const { return m_charts; }
    BoundaryView* boundaryView() const { return m_boundaries; }
    RangeView* rangeView() const { return m_range; }
    WhereView* whereView() const { return m_where; }
    UpdatesView* updatesView() const { return m_updates; }
    Fp8View* fp8View() const { return m_fp8; }
    Fp4View* fp4View() const { return m_fp4; }
    SamplesView* samplesView() const { return m_samples; }
    AttentionView* attentionView() const { return m_attention; }
    EventLogPanel* eventLog() const { return m_log; }
    SetupPanel* setupPanel() const { return m_setup; }
    LivePanel* livePanel() const { return m_live; }
    SweepPanel* sweepPanel() const { return m_sweep; }
    MessageBar* messages() const { return m_messages; }
    MessageBar* resetBanner() const { return m_resetBar; }
    LessonPanel* lessonPanel() const { return m_lesson; }
    QDockWidget* lessonDock() const { return m_lessonDock; }
    Classroom* classroom() const { return m_classroom; }
    void setClassroom(bool on);
    // How fast Run plays the session: the toolbar's pace, the configuration's "pace" (saved with it).
    void setPace(const mpx::Pace& p);
    mpx::Pace pace() const { return m_base.pace; }
    QComboBox* paceBox() const { return m_paceBox; }
    QAction* paceEventsAction() const { return m_paceEvents; }
    // The views a lesson may name ({view:NAME}): each --view name with its tab's title.
    QList<LessonView> lessonViews() const;

protected:
    void closeEvent(QCloseEvent* e) override;

private:
    void buildActions();
    void buildLayout();
    void connectEngine();
    void updatePendingReset();
    void updateRunAction();
    void restoreSettings();
    // Resizes to `wanted`, or to the screen's available area where that is smaller (issue 27: a
    // 1280×800 laptop gets the whole screen and not more). A lesson's dock cannot push it wider: every
    // page of the centre scrolls where it would need more (tests/ui/test_window_fit.cpp).
    void fitToScreen(QSize wanted);
    void addThreadsMenu(QMenu* runMenu);
    void addPaceControls(QToolBar* bar);
    void showPace(const mpx::Pace& p);  // the toolbar shows p (no signal)
    // The central tabs of views this session has something for (main_window_lesson.cpp): the GPT's
    // views on a GPT, the boundaries on an MLP, FP8 and FP4 with such runs, so every tab fits a
    // laptop's width; the tab shown stays, and setView shows the tab it opens.
    void updateViewTabs();
    void connectLesson();  // the lesson's links to the views (main_window_lesson.cpp)
    void showLesson(const mpx::SessionConfig& cfg);
    void saveSettings() const;
    // The trace shown with `rule` replayed over it; the charts keep their zoom. False, with the
    // reason shown, for a rule that is not valid.
    bool replayTrace(const mpx::ScalerConfig& rule);
    void leaveTrace();  // the engine's session is shown again

    gui::EngineController* m_engine;
    gui::RecordStore* m_store;
    mpx::SessionConfig m_base;  // the last configuration applied; panels write over it
    ChartsPanel* m_charts = nullptr;
    BoundaryView* m_boundaries = nullptr;
    RangeView* m_range = nullptr;
    WhereView* m_where = nullptr;
    UpdatesView* m_updates = nullptr;
    Fp8View* m_fp8 = nullptr;
    Fp4View* m_fp4 = nullptr;
    SamplesView* m_samples = nullptr;
    AttentionView* m_attention = nullptr;
    QTabWidget* m_views = nullptr;  // in View's order
    EventLogPanel* m_log = nullptr;
    SetupPanel* m_setup = nullptr;
    LivePanel* m_live = nullptr;
    SweepPanel* m_sweep = nullptr;
    MessageBar* m_messages = nullptr;
    MessageBar* m_resetBar = nullptr;
    StatusLine* m_status = nullptr;
    QSplitter* m_split = nullptr;
    QTabWidget* m_tabs = nullptr;
    QComboBox* m_presets = nullptr;
    QComboBox* m_paceBox = nullptr;   // steps per second; item data the rate (0: fast)
    QAction* m_paceEvents = nullptr;  // slow down around events
    FormatExplorer* m_explorer = nullptr;
    AccumulatorLab* m_lab = nullptr;
    LessonPanel* m_lesson = nullptr;
    QDockWidget* m_lessonDock = nullptr;
    Classroom* m_classroom = nullptr;
    QAction* m_classroomAction = nullptr;
    QAction *m_runAction = nullptr, *m_stepAction = nullptr, *m_resetAction = nullptr;
    std::unique_ptr<gui::TraceSession> m_trace;  // the trace shown (openTrace), or null
    quint64 m_traceGeneration = quint64{1} << 62;  // apart from the engine's generations
};

}  // namespace mpx::ui
