// The status bar's permanent fields: the backend in use (and a GPU this build cannot use), the
// engine's state, steps per second and the progress of the fixed-length run. A trace shown has none of
// these (no backend, nothing trains): they go, and the bar holds the replay's verdict, in whole
// clauses that fit (the whole verdict in its tooltip, the message bar and the event log).
#pragma once

#include <QObject>

#include "ui/session/engine_controller.hpp"
#include "ui/session/record_store.hpp"

class QLabel;
class QProgressBar;
class QStatusBar;

namespace mpx::ui {

class StatusLine : public QObject {
    Q_OBJECT
public:
    StatusLine(QStatusBar* bar, gui::RecordStore* store, gui::EngineController* engine);
    QString backendText() const;
    // The trace's verdict ("Verdict (rule): a; b; c"), shown while the trace is, and again after
    // another message (a sweep's progress) has gone.
    void showVerdict(const QString& verdict);
    QString verdictShown() const;  // the clauses that fit, as the bar shows them; empty outside a trace

private:
    void update();
    void fitVerdict();
    bool eventFilter(QObject* watched, QEvent* e) override;

    QStatusBar* m_bar;
    QString m_verdict;  // in full
    QString m_verdictShown;
    gui::RecordStore* m_store;
    gui::EngineController* m_engine;
    QLabel* m_backend;
    QLabel* m_state;
    QLabel* m_rate;
    QProgressBar* m_progress;
};

}  // namespace mpx::ui
