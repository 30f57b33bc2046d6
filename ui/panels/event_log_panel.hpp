// The event log: every backoff, growth, hysteresis and skipped step with its step, run and
// old → new scale, plus live setting changes and stopped runs. Clicking a row moves the charts to
// that step. Rule: a table model over the RecordStore's log, grown once per drain.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include "ui/session/record_store.hpp"

class QLabel;
class QTableView;

namespace mpx::ui {

class EventLogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit EventLogModel(gui::RecordStore* store, QObject* parent = nullptr);
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;
    void sync();  // take the rows the store added since the last call
    qint64 stepAt(int row) const;
    // A row's Why: as the column shows it, or whole, as its tooltip's first line says it.
    enum class Detail { column, full };
    QString detail(const gui::LogRow& r, Detail d) const;

private:
    gui::RecordStore* m_store;
    int m_rows = 0;
};

class EventLogPanel : public QWidget {
    Q_OBJECT
public:
    explicit EventLogPanel(gui::RecordStore* store, QWidget* parent = nullptr);
    EventLogModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    QLabel* summary() const { return m_summary; }
    // The height that shows the summary, the header and three rows: the window's first share, so
    // that the charts a lesson names keep the rest of a laptop's height.
    int compactHeight() const;

signals:
    void stepActivated(qint64 step);

private:
    void update();
    void resizeEvent(QResizeEvent* e) override;
    void changeEvent(QEvent* e) override;
    void fitSummary();  // the first of m_summaryForms that fits one line, else the last one wrapped
    void fitColumns();  // Step, Run, Event and Scale as wide as their contents

    gui::RecordStore* m_store;
    EventLogModel* m_model;
    QTableView* m_view;
    QLabel* m_summary;
    QStringList m_summaryForms;  // the summary, longest first
};

}  // namespace mpx::ui
