// A small chart of vertical bars, one per category, each labelled under its foot and with its value
// text over its top: the FP4 view's "how many landed on each of E2M1's 8 values".
// Rule: it draws the shares it is given (0…1) and computes nothing; an empty chart says why in its
// placeholder line.
#pragma once

#include <QColor>
#include <QList>
#include <QStringList>
#include <QWidget>

namespace mpx::ui {

class ColumnChart : public QWidget {
public:
    struct Column {
        QString label;  // under the bar ("0.5", "on 6")
        double share = 0;  // the bar's height, 0…1 of the axis
        QString value;  // over the bar ("12.5 %")
        QColor colour;
    };
    explicit ColumnChart(QWidget* parent = nullptr);
    void setColumns(const QList<Column>& columns);
    const QList<Column>& columns() const { return m_columns; }
    // Shown instead of the bars while there are none ("no step yet").
    void setPlaceholder(const QString& text);
    void setFontScale(double s);
    QSize sizeHint() const override { return {360, 200}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    QList<Column> m_columns;
    QString m_placeholder;
    double m_fontScale = 1.0;
};

}  // namespace mpx::ui
