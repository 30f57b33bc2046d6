// LineKey: a chart's key drawn as a widget under it: a sample of each line's pen and its name,
// wrapped onto as many rows as the width needs (Qt Charts' own legend keeps one row and cuts every
// name short once a few lines share it). An entry without a pen is a heading that starts a row.
// Rule: heightForWidth and paintEvent place the entries with the same layoutAt, so the height asked
// for is the height drawn.
#pragma once

#include <QList>
#include <QPen>
#include <QPointF>
#include <QString>
#include <QWidget>
#include <algorithm>
#include <utility>

namespace mpx::ui {

class LineKey : public QWidget {
public:
    struct Entry {
        QPen pen;  // Qt::NoPen: a heading, drawn bold without a sample
        QString text;
    };
    LineKey() { setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred); }
    void setEntries(const QList<Entry>& entries) {
        m_entries = entries;
        updateGeometry();
        update();
    }
    const QList<Entry>& entries() const { return m_entries; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int w) const override { return layoutAt(w).second; }
    QSize sizeHint() const override { return {400, heightForWidth(std::max(width(), 400))}; }
    // As wide as its widest entry: an entry is one line and is never cut.
    QSize minimumSizeHint() const override {
        const int least = std::max(100, widest());
        return {least, heightForWidth(std::max(width(), least))};
    }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    static constexpr int k_sample = 28, k_gap = 16;
    // Each entry's top-left for width w, and the height they take.
    std::pair<QList<QPointF>, int> layoutAt(int w) const;
    int entryWidth(const Entry& e) const;
    int widest() const;
    QList<Entry> m_entries;
};

}  // namespace mpx::ui
