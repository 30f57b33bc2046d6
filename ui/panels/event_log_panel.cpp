// EventLogPanel: rows from RecordStore::log(), summary line, click to focus the charts.
#include "ui/panels/event_log_panel.hpp"

#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>
#include <climits>
#include <cmath>

#include "ui/kit/concepts.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/kit/title_fit.hpp"
#include "ui/session/config_bridge.hpp"

namespace mpx::ui {
namespace {

enum Column { colStep, colRun, colEvent, colScale, colDetail, colCount };

QString scale(double v) { return QString::number(v, 'g', 8); }

bool powerOfTwo(double v) {
    int e = 0;
    return v > 0 && std::isfinite(v) && std::frexp(v, &e) == 0.5;
}

// In the column: 2²⁴ → 2²³ where both are powers of two (as scalers keep them), which leaves the
// Why column the room "16777216 → 8388608" took; the tooltip has the digits.
QString scaleShort(double v, double other) {
    return powerOfTwo(v) && powerOfTwo(other) ? pow2Text(std::log2(v)) : scale(v);
}

}  // namespace

EventLogModel::EventLogModel(gui::RecordStore* store, QObject* parent)
    : QAbstractTableModel(parent), m_store(store) {}

int EventLogModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }
int EventLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : colCount; }

QString EventLogModel::detail(const gui::LogRow& r, Detail d) const {
    using gui::LogKind;
    // In the column, short: the Event and Scale columns say what became of the scale, so a skip says
    // only where its first inf/NaN was stored. The tooltip's line says it all.
    const QString where = r.firstNonfinite < 0
        ? tr("inf/NaN in the gradients")
        : m_store->session()
            ? tr("inf/NaN first at %1").arg(gui::firstNonfiniteText(r.firstNonfinite, r.firstNonfiniteMagnitude,
                                                                      m_store->session()->config.model))
            : tr("inf/NaN first at %1").arg(gui::firstNonfiniteText(r.firstNonfinite, r.firstNonfiniteMagnitude));
    const bool full = d == Detail::full;
    switch (r.kind) {
        case LogKind::grow: return tr("enough clean steps in a row: scale grew");
        case LogKind::backoff: return (full ? tr("step skipped, scale backed off: %1") : tr("step skipped: %1")).arg(where);
        case LogKind::hysteresis:
            return (full ? tr("step skipped, overflow absorbed by hysteresis (scale kept): %1") : tr("step skipped: %1")).arg(where);
        case LogKind::skip: return (full ? tr("step skipped, scale unchanged: %1") : tr("step skipped: %1")).arg(where);
        case LogKind::setting:
        case LogKind::scalerEdited:  // "scaler edited: hysteresis 2 → 4"
        case LogKind::runStopped:
        case LogKind::verdict: return m_store->noteText(r.note);
    }
    return {};
}

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
                    case LogKind::verdict: return tr("verdict");
                }
                return {};
            case colScale:
                if (r.kind == LogKind::setting || r.kind == LogKind::scalerEdited || r.kind == LogKind::runStopped ||
                    r.kind == LogKind::verdict)
                    return {};
                return r.oldScale == r.newScale
                           ? scaleShort(r.oldScale, r.newScale)
                           : QStringLiteral("%1 → %2").arg(scaleShort(r.oldScale, r.newScale), scaleShort(r.newScale, r.oldScale));
            case colDetail: return detail(r, Detail::column);
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
            case LogKind::scalerEdited:
            case LogKind::verdict: return QColor(0x1f, 0x4e, 0x9c);
        }
    }
    if (role == Qt::ToolTipRole) {
        if (r.kind == LogKind::scalerEdited)  // the whole line, which a narrow column cuts
            return tr("step %1: %2 %3")
                .arg(r.step)
                .arg(perRun ? session->runs[static_cast<std::size_t>(r.run)].label : tr("session"), m_store->noteText(r.note));
        // The row's own line, whole (a narrow column cuts it), then what such an event is.
        const QString who = perRun ? session->runs[static_cast<std::size_t>(r.run)].label : tr("all runs");
        QString line = tr("Step %1, %2: %3").arg(r.step).arg(who, detail(r, Detail::full));
        if (r.kind == LogKind::grow || r.kind == LogKind::backoff || r.kind == LogKind::hysteresis || r.kind == LogKind::skip)
            line += r.oldScale == r.newScale ? tr(" (loss scale %1)").arg(scale(r.oldScale))
                                             : tr(" (loss scale %1 → %2)").arg(scale(r.oldScale), scale(r.newScale));
        QString general;
        switch (r.kind) {
            case LogKind::grow: general = concepts::growthInterval(); break;
            case LogKind::backoff:
            case LogKind::skip: general = concepts::skippedStep(); break;
            case LogKind::hysteresis: general = concepts::hysteresis(); break;
            case LogKind::setting: general = concepts::live(); break;
            case LogKind::scalerEdited: break;
            case LogKind::runStopped: general = tr("This run stopped; the others go on."); break;
            case LogKind::verdict: break;
        }
        return general.isEmpty() ? line : line + QStringLiteral("\n\n") + general;
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
    // The first four columns as wide as what they hold (fitColumns), the rest for Why: a fixed
    // 500 px left it 450 of a 950 px log and cut the line.
    QHeaderView* header = m_view->horizontalHeader();
    header->setStretchLastSection(true);
    header->setResizeContentsPrecision(200);  // the visible rows and 200 more: cheap at every drain
    fitColumns();
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

void EventLogPanel::fitColumns() {
    // Only wider, never narrower: a column the user widened stays, and a row scrolled away does not
    // make its column jump back.
    const QAbstractItemView* view = m_view;  // QTableView hides sizeHintForColumn; the base shows it
    for (int c : {colStep, colRun, colEvent, colScale})
        m_view->setColumnWidth(c, std::max(m_model->rowCount() == 0 ? 0 : m_view->columnWidth(c),
                                           std::max(view->sizeHintForColumn(c), m_view->horizontalHeader()->sectionSizeHint(c))));
}

void EventLogPanel::update() {
    QScrollBar* bar = m_view->verticalScrollBar();
    const bool atBottom = bar->value() >= bar->maximum() - 2;
    const int before = m_model->rowCount();
    m_model->sync();
    if (m_model->rowCount() != before) fitColumns();
    if (atBottom) m_view->scrollToBottom();
    const auto session = m_store->session();
    // Each run with a scaler and its skipped steps: in full, then shorter, then only the runs that
    // skipped (the summary was cut at the panel's edge with four runs at 1280×800).
    QStringList full, brief, skipping;
    int scaled = 0;
    for (int r = 0; r < m_store->runCount(); ++r) {
        if (!session || !session->runs[static_cast<std::size_t>(r)].hasScaler) continue;
        const QString& label = session->runs[static_cast<std::size_t>(r)].label;
        const qint64 skipped = m_store->skippedSteps(r);
        ++scaled;
        full << tr("%1: %n skipped", nullptr, static_cast<int>(std::min<qint64>(skipped, INT_MAX))).arg(label);
        brief << QStringLiteral("%1 %2").arg(label).arg(skipped);
        if (skipped > 0) skipping << QStringLiteral("%1 %2").arg(label).arg(skipped);
    }
    const QString events = tr("Events: %1").arg(m_store->log().size());
    const QString dropped = m_store->droppedLogRows() == 0
                                ? QString()
                                : tr(" · log full: %1 later events are not listed here (the CSV export has every step)")
                                      .arg(m_store->droppedLogRows());
    m_summaryForms = {events + dropped};
    if (scaled > 0) {
        QString few;
        if (skipping.isEmpty()) few = scaled == 1 ? tr("no step skipped") : tr("no run skipped a step");
        else if (skipping.size() == scaled) few = tr("steps skipped: %1").arg(skipping.join(QStringLiteral(", ")));
        else if (scaled - skipping.size() == 1) few = tr("steps skipped: %1; none in the other run").arg(skipping.join(QStringLiteral(", ")));
        else few = tr("steps skipped: %1; none in the other %2 runs").arg(skipping.join(QStringLiteral(", "))).arg(scaled - skipping.size());
        m_summaryForms = {events + QStringLiteral(" · ") + full.join(QStringLiteral(" · ")) + dropped,
                          events + QStringLiteral(" · ") + tr("steps skipped: %1").arg(brief.join(QStringLiteral(", "))) + dropped,
                          events + QStringLiteral(" · ") + few + dropped};
    }
    fitSummary();
}

void EventLogPanel::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    fitSummary();
}

void EventLogPanel::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange) fitSummary();  // the classroom's text: another form may fit
}

void EventLogPanel::fitSummary() {
    if (m_summaryForms.isEmpty()) return;
    const fit::Paragraph p = fit::paragraph(m_summaryForms, m_summary->fontMetrics(), m_summary->contentsRect().width());
    m_summary->setWordWrap(p.wrapped);
    if (m_summary->text() != p.text) m_summary->setText(p.text);
}

int EventLogPanel::compactHeight() const {
    const QMargins m = layout()->contentsMargins();
    return m.top() + m.bottom() + layout()->spacing() + m_summary->fontMetrics().lineSpacing() +
           m_view->horizontalHeader()->sizeHint().height() + 3 * m_view->verticalHeader()->defaultSectionSize() +
           2 * m_view->frameWidth();
}

}  // namespace mpx::ui
