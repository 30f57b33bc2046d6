// The lesson side panel: a teaching preset's guided text (SessionConfig::lesson) whose names point.
// Rule: a lesson names a chart as {chart:KEY} (KEY from chart_table's chartKey), a central view as
// {view:NAME} (a --view name, ui/window/view_names.hpp), a step range as {steps:A-B}, the format
// explorer as {explorer:VALUE} and the accumulator lab as {lab:FORMAT} (an operand format's name,
// e.g. e4m3); each becomes a link. parseLesson is the only reader of that markup, so the test that
// every name exists (tests/ui/test_lessons.cpp) checks what the panel shows.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>

#include "ui/views/chart_table.hpp"

class QLabel;
class QTextBrowser;
class QUrl;

namespace mpx::ui {

// A view a lesson may name: its --view name and the title its tab shows (the window's table).
struct LessonView {
    QString name;
    QString title;
};

struct StepRange {
    qint64 first = 0, last = 0;
    bool operator==(const StepRange&) const = default;
};

struct Lesson {
    QString html;                // the text with its names as links (charts as ★ titles)
    QList<ChartId> charts;       // the charts it names, in order, each once
    QStringList views;           // the views it names ({view:NAME}), in order, each once
    QList<StepRange> stepRanges; // the step ranges it names, in order
    QString explorerValue;       // {explorer:VALUE}, or empty
    QString labFormat;           // {lab:FORMAT}, or empty; a format's name as engine's parse_format reads it
    int labK = 0;                // {lab:FORMAT@K}: the K the lab's note quotes (0: none named)
    QStringList unknownCharts;   // {chart:KEY} with a KEY no chart has
    QStringList unknownViews;    // {view:NAME} with a NAME no view has (shown as plain text)
    QStringList badSteps;        // {steps:…} that is not A-B with 0 <= A < B
    QStringList unknownFormats;  // {lab:FORMAT} with a FORMAT no format has (shown as plain text)
};
// `views`: the views the window has (MainWindow::lessonViews); a {view:NAME} outside them is unknown.
Lesson parseLesson(const QString& text, const QList<LessonView>& views = {});

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(QWidget* parent = nullptr);
    void setLesson(const QString& title, const Lesson& lesson);
    QString plainText() const;
    QTextBrowser* textBrowser() const { return m_text; }
    // What clicking a link of the lesson does: the signal its scheme names (chart:, view:, steps:,
    // explorer:, lab:). False for a link of no known scheme.
    bool activate(const QUrl& link);
signals:
    void explorerRequested(const QString& value);
    void labRequested(const QString& format);  // a {lab:FORMAT} link was clicked
    void chartRequested(mpx::ui::ChartId chart);        // bring it into view
    void viewRequested(const QString& name);            // open that central view
    void stepsRequested(qint64 first, qint64 last);     // zoom the step axes there
private:
    QLabel* m_title;
    QTextBrowser* m_text;
};

}  // namespace mpx::ui
