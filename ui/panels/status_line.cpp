// StatusLine: labels and a progress bar, refreshed per drain and per state change.
#include "ui/panels/status_line.hpp"

#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QStatusBar>

#include "ui/session/config_bridge.hpp"

namespace mpx::ui {

StatusLine::StatusLine(QStatusBar* bar, gui::RecordStore* store, gui::EngineController* engine)
    : QObject(bar), m_store(store), m_engine(engine) {
    m_backend = new QLabel;
    m_backend->setToolTip(tr("Where the runs train. The CPU backend emulates every format bit for bit."));
    m_state = new QLabel;
    m_state->setMinimumWidth(70);
    m_state->setAlignment(Qt::AlignCenter);
    m_state->setStyleSheet(QStringLiteral("QLabel { padding: 0 10px; border-left: 1px solid #bbb; border-right: 1px solid #bbb; }"));
    m_rate = new QLabel;
    m_rate->setMinimumWidth(150);
    m_rate->setToolTip(tr("Lockstep steps per second of the whole comparison, over the last second, and the "
                          "engine's threads (Run ▸ Threads): CPU runs step side by side, to the same bits "
                          "for any count."));
    m_progress = new QProgressBar;
    m_progress->setFixedWidth(220);
    m_progress->setTextVisible(true);
    bar->addPermanentWidget(m_backend);
    bar->addPermanentWidget(m_state);
    bar->addPermanentWidget(m_rate);
    bar->addPermanentWidget(m_progress);
    connect(store, &gui::RecordStore::stepsRecorded, this, &StatusLine::update);
    connect(store, &gui::RecordStore::sessionStarted, this, &StatusLine::update);
    connect(engine, &gui::EngineController::stateChanged, this, &StatusLine::update);
    connect(engine, &gui::EngineController::threadsChanged, this, &StatusLine::update);
    update();
}

QString StatusLine::backendText() const { return m_backend->text(); }

void StatusLine::update() {
    const auto session = m_store->session();
    if (!session) {
        m_backend->setText(tr("Backend: —"));
        m_progress->setRange(0, 1);
        m_progress->setValue(0);
        m_progress->setFormat(tr("no session"));
    } else {
        m_backend->setText(tr("Backend: %1").arg(gui::describeBackend(session->device, session->deviceNote)));
        const qint64 total = std::max<qint64>(1, session->totalSteps);
        // QProgressBar holds ints: scale long runs down.
        const double k = total > 1'000'000'000 ? 1000.0 : 1.0;
        m_progress->setRange(0, static_cast<int>(total / k));
        m_progress->setValue(static_cast<int>(std::min(m_store->steps(), total) / k));
        const QLocale loc;
        m_progress->setFormat(tr("step %1 / %2").arg(loc.toString(m_store->steps()), loc.toString(total)));
    }
    const bool running = m_engine->state() == gui::EngineState::running;
    m_state->setText(gui::toText(m_engine->state()));
    const unsigned n = m_engine->threads();
    const QString threads = n == 1 ? tr("1 thread") : tr("%1 threads").arg(n);
    m_rate->setText(running ? tr("%1 steps/s · %2").arg(QLocale().toString(m_store->stepsPerSecond(), 'f', 0), threads)
                            : tr("— steps/s · %1").arg(threads));
}

}  // namespace mpx::ui
