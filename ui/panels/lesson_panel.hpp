// The lesson side panel: a teaching preset's guided text (SessionConfig::lesson) with the charts it
// names in bold. Rule: a lesson names a chart as {chart:KEY} (KEY from chart_table's chartKey), the
// format explorer as {explorer:VALUE} and the accumulator lab as {lab:FORMAT} (an operand format's
// name, e.g. e4m3); parseLesson is the only reader of that markup, so the test that every named chart
// exists (tests/ui/test_lessons.cpp) checks what the panel shows.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>

#include "ui/views/chart_table.hpp"

class QLabel;
class QTextBrowser;

namespace mpx::ui {

struct Lesson {
    QString html;                // the text with chart titles in bold and the explorer as a link
    QList<ChartId> charts;       // the charts it names, in order, each once
    QString explorerValue;       // {explorer:VALUE}, or empty
    QString labFormat;           // {lab:FORMAT}, or empty; a format's name as engine's parse_format reads it
    QStringList unknownCharts;   // {chart:KEY} with a KEY no chart has
    QStringList unknownFormats;  // {lab:FORMAT} with a FORMAT no format has (shown as plain text)
};
Lesson parseLesson(const QString& text);

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(QWidget* parent = nullptr);
    void setLesson(const QString& title, const Lesson& lesson);
    QString plainText() const;
signals:
    void explorerRequested(const QString& value);
    void labRequested(const QString& format);  // a {lab:FORMAT} link was clicked
private:
    QLabel* m_title;
    QTextBrowser* m_text;
};

}  // namespace mpx::ui
