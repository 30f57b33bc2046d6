// EventLogPanel: rows from RecordStore::log(), summary line, click to focus the charts.
#include "ui/panels/event_log_panel.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>
#include <climits>

#include "ui/kit/concepts.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/session/config_bridge.hpp"

namespace mpx::ui {
namespace {

enum Column { colStep, colRun, colEvent, colScale, colDetail, colCount };

QString scale(double v) { return QString::number(v, 'g', 8); }

}  // namespace

EventLogModel::EventLogModel(gui::RecordStore* store, QObject* parent)
    : QAbstractTableModel(parent), m_store(store) {}

int EventLogModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }
int EventLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : colCount; }

qint64 EventLogModel::stepAt(int row) const {
    return row >= 0 && row < m_rows ? m_store->log()[static_cast<std::size_t>(row)].step : -1;
}

void EventLogModel::sync() {
    const int have = static_cast<int>(m_store->log().size());
    if (have < m_rows) {
        beginResetModel();
        m_rows = have;
        endResetModel();
    } else if (have > m_rows) {
        beginInsertRows({}, m_rows, have - 1);
        m_rows = have;
        endInsertRows();
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
            case colStep: return tr("Step");
            case colRun: return tr("Run");
            case colEvent: return tr("Event");
            case colScale: return tr("Scale old → new");
            case colDetail: return tr("Why");
        }
    }
    if (role == Qt::ToolTipRole && section == colScale) return concepts::lossScale();
    return {};
}

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows) return {};
    const gui::LogRow& r = m_store->log()[static_cast<std::size_t>(index.row())];
    const auto session = m_store->session();
    const bool perRun = r.run >= 0 && session && r.run < static_cast<int>(session->runs.size());
    using gui::LogKind;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case colStep: return QString::number(r.step);
            case colRun:
                if (perRun) return session->runs[static_cast<std::size_t>(r.run)].label;
                return r.kind == LogKind::scalerEdited ? tr("session scaler") : tr("all runs");
            case colEvent:
                switch (r.kind) {
                    case LogKind::grow: return tr("grow");
                    case LogKind::backoff: return tr("backoff");
                    case LogKind::hysteresis: return tr("hysteresis");
                    case LogKind::skip: return tr("skip");
                    case LogKind::setting:
                    case LogKind::scalerEdited: return tr("edited ✎");
                    case LogKind::runStopped: return tr("stopped");
                }
                return {};
            case colScale:
                if (r.kind == LogKind::setting || r.kind == LogKind::scalerEdited || r.kind == LogKind::runStopped)
                    return {};
                return r.oldScale == r.newScale ? scale(r.oldScale)
                                                : QStringLiteral("%1 → %2").arg(scale(r.oldScale), scale(r.newScale));
            case colDetail: {
                // Where the step's first inf/NaN was stored, first: the column is often cut.
                const QString what = r.firstNonfinite < 0
                    ? tr("inf/NaN in the gradients")
                    : tr("inf/NaN first at %1").arg(gui::firstNonfiniteText(r.firstNonfinite, r.firstNonfiniteMagnitude));
                switch (r.kind) {
                    case LogKind::grow: return tr("enough clean steps in a row: scale grew");
                    case LogKind::backoff: return tr("%1: step skipped, scale backed off").arg(what);
                    case LogKind::hysteresis:
                        return tr("%1: step skipped, overflow absorbed by hysteresis (scale kept)").arg(what);
                    case LogKind::skip: return tr("%1: step skipped (scale unchanged)").arg(what);
                    case LogKind::setting:
                    case LogKind::scalerEdited:  // "scaler edited: hysteresis 2 → 4"
                    case LogKind::runStopped: return m_store->noteText(r.note);
                }
                return {};
            }
        }
        return {};
    }
    if (role == Qt::DecorationRole && index.column() == colRun && perRun) return swatch(runStyle(session, r.run), 10);
    if (role == Qt::ForegroundRole && index.column() == colEvent) {
        switch (r.kind) {
            case LogKind::grow: return QColor(0x1e, 0x7d, 0x32);
            case LogKind::backoff:
            case LogKind::skip:
            case LogKind::runStopped: return QColor(0xc0, 0x39, 0x2b);
            case LogKind::hysteresis: return QColor(0xb3, 0x6b, 0x00);
            case LogKind::setting:
            case LogKind::scalerEdited: return QColor(0x1f, 0x4e, 0x9c);
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (r.kind) {
            case LogKind::grow: return concepts::growthInterval();
            case LogKind::backoff:
            case LogKind::skip: return concepts::skippedStep();
            case LogKind::hysteresis: return concepts::hysteresis();
            case LogKind::setting: return concepts::live();
            case LogKind::scalerEdited:  // the whole line, which a narrow column cuts
                return tr("step %1: %2 %3")
                    .arg(r.step)
                    .arg(perRun ? session->runs[static_cast<std::size_t>(r.run)].label : tr("session"),
                         m_store->noteText(r.note));
            case LogKind::runStopped: return tr("This run stopped; the others go on.");
        }
    }
    if (role == Qt::TextAlignmentRole && index.column() == colStep)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

EventLogPanel::EventLogPanel(gui::RecordStore* store, QWidget* parent)
    : QWidget(parent), m_store(store), m_model(new EventLogModel(store, this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    m_summary = new QLabel;
    // Its width is the panel's, not its text's: a long summary must not widen the window.
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_summary->setStyleSheet(QStringLiteral("color: #444"));
    layout->addWidget(m_summary);
    m_view = new QTableView;
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(20);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setColumnWidth(colStep, 70);
    m_view->setColumnWidth(colRun, 170);
    m_view->setColumnWidth(colEvent, 90);
    m_view->setColumnWidth(colScale, 170);
    m_view->setToolTip(tr("Click an event to move the charts to its step."));
    layout->addWidget(m_view, 1);
    connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& i) {
        const qint64 step = m_model->stepAt(i.row());
        if (step >= 0) emit stepActivated(step);
    });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& i) {
        const qint64 step = m_model->stepAt(i.row());
        if (step >= 0) emit stepActivated(step);
    });
    connect(store, &gui::RecordStore::sessionStarted, this, &EventLogPanel::update);
    connect(store, &gui::RecordStore::stepsRecorded, this, &EventLogPanel::update);
    update();
}

void EventLogPanel::update() {
    QScrollBar* bar = m_view->verticalScrollBar();
    const bool atBottom = bar->value() >= bar->maximum() - 2;
    m_model->sync();
    if (atBottom) m_view->scrollToBottom();
    const auto session = m_store->session();
    QStringList parts;
    for (int r = 0; r < m_store->runCount(); ++r) {
        const qint64 skipped = m_store->skippedSteps(r);
        if (session && session->runs[static_cast<std::size_t>(r)].hasScaler)
            parts << tr("%1: %n skipped", nullptr, static_cast<int>(std::min<qint64>(skipped, INT_MAX)))
                         .arg(session->runs[static_cast<std::size_t>(r)].label);
    }
    QString text = tr("Events: %1").arg(m_store->log().size());
    if (!parts.isEmpty()) text += QStringLiteral(" · ") + parts.join(QStringLiteral(" · "));
    if (m_store->droppedLogRows() > 0)
        text += tr(" · log full: %1 later events are not listed here (the CSV export has every step)")
                    .arg(m_store->droppedLogRows());
    m_summary->setText(text);
}

}  // namespace mpx::ui
