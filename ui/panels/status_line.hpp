// The status bar's permanent fields: the backend in use (and a GPU this build cannot use), the
// engine's state, steps per second and the progress of the fixed-length run.
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

private:
    void update();

    gui::RecordStore* m_store;
    gui::EngineController* m_engine;
    QLabel* m_backend;
    QLabel* m_state;
    QLabel* m_rate;
    QProgressBar* m_progress;
};

}  // namespace mpx::ui
