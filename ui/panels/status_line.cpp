// StatusLine: labels and a progress bar, refreshed per drain and per state change.
#include "ui/panels/status_line.hpp"

#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QStatusBar>
#include <QTimer>
#include <QEvent>

#include <algorithm>

#include "ui/session/config_bridge.hpp"

namespace mpx::ui {

StatusLine::StatusLine(QStatusBar* bar, gui::RecordStore* store, gui::EngineController* engine)
    : QObject(bar), m_bar(bar), m_store(store), m_engine(engine) {
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
    connect(bar, &QStatusBar::messageChanged, this, [this](const QString& text) {
        if (text.isEmpty() && !m_verdict.isEmpty()) QTimer::singleShot(0, this, &StatusLine::fitVerdict);
    });
    bar->installEventFilter(this);
    update();
}

void StatusLine::showVerdict(const QString& verdict) {
    m_verdict = verdict;
    m_bar->clearMessage();  // a new verdict takes the bar from any message before it
    fitVerdict();
}

QString StatusLine::verdictShown() const { return m_verdict.isEmpty() ? QString() : m_verdictShown; }

bool StatusLine::eventFilter(QObject* watched, QEvent* e) {
    const bool refit = e->type() == QEvent::Resize || e->type() == QEvent::Show || e->type() == QEvent::FontChange;
    if (watched == m_bar && refit && !m_verdict.isEmpty()) QTimer::singleShot(0, this, &StatusLine::fitVerdict);
    return QObject::eventFilter(watched, e);
}

// Whole clauses, as many as the bar's message area holds: a verdict cut mid-word (or under a
// permanent label) read as another verdict.
void StatusLine::fitVerdict() {
    if (m_verdict.isEmpty() || !m_store->showsOutsideSession()) return;
    const QString current = m_bar->currentMessage();
    if (!current.isEmpty() && current != m_verdictShown) return;  // another message has the bar for now
    if (!m_bar->isVisible()) {  // not laid out yet: fitted once it is shown (its resize)
        m_verdictShown = m_verdict;
        m_bar->showMessage(m_verdict);
        return;
    }
    int right = m_bar->width() - 24;  // the size grip and the message's margins
    for (QWidget* w : {static_cast<QWidget*>(m_backend), static_cast<QWidget*>(m_state), static_cast<QWidget*>(m_rate),
                       static_cast<QWidget*>(m_progress)})
        if (!w->isHidden()) right = std::min(right, w->x() - 8);
    const QFontMetrics fm(m_bar->font());
    const QStringList clauses = m_verdict.split(QStringLiteral("; "));
    QString shown = clauses.front();
    for (qsizetype k = 1; k < clauses.size(); ++k) {
        const QString more = shown + QStringLiteral("; ") + clauses[k];
        const QString tail = k + 1 < clauses.size() ? QStringLiteral("; …") : QString();
        if (fm.horizontalAdvance(more + tail) > right) {
            shown += QStringLiteral("; …");
            break;
        }
        shown = more;
    }
    if (fm.horizontalAdvance(shown) > right) shown = fm.elidedText(clauses.front(), Qt::ElideRight, std::max(0, right));
    m_verdictShown = shown;
    m_bar->setToolTip(shown == m_verdict ? QString() : m_verdict);
    m_bar->showMessage(shown);
}

QString StatusLine::backendText() const { return m_backend->text(); }

void StatusLine::update() {
    const auto session = m_store->session();
    const bool trace = m_store->showsOutsideSession();
    for (QWidget* w : {static_cast<QWidget*>(m_backend), static_cast<QWidget*>(m_state), static_cast<QWidget*>(m_rate),
                       static_cast<QWidget*>(m_progress)})
        w->setVisible(!trace);
    if (!trace && !m_verdict.isEmpty()) {  // back to training: the verdict goes with the trace
        m_verdict.clear();
        m_bar->setToolTip({});
    }
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
