// Title fitting, the one rule every chart title follows: a title too wide for its room loses its
// trailing qualifiers (" (…)", " · …", a legend after "&nbsp;"), one at a time, before anything would
// cut it mid-word. Titles are rich text (HTML), measured as Qt Charts lays them out.
// Rule: a shorter form is never cut inside the title's name, so the last form still says which chart
// it is; where even that does not fit, the caller gets it whole and Qt elides it.
// Text a view paints itself (a canvas's title, legend, captions) follows the same rule and is never
// elided: the first form that fits one line, else the last form word-wrapped onto the lines it needs.
#pragma once

#include <QFont>
#include <QFontMetrics>
#include <QRect>
#include <QScrollArea>
#include <QString>
#include <QStringList>

namespace mpx::ui::fit {

QString plainText(const QString& html);
// The width a title's rich text takes in `font`, with the margin Qt Charts gives its text items.
double htmlWidth(const QString& html, const QFont& font);
// `html` and its shorter forms, longest first, each less its last part after one of `separators`.
QStringList titleForms(const QString& html, const QStringList& separators);
// The first form that fits `room` pixels; the shortest where none does (Qt elides that one).
QString fitted(const QStringList& forms, const QFont& font, double room);

// Painted plain text: the form chosen for `width` and the height it takes there.
struct Paragraph {
    QString text;
    int height = 0;
    bool wrapped = false;  // no form fits one line: the last one, word-wrapped
};
Paragraph paragraph(const QStringList& forms, const QFontMetrics& fm, int width);
// Whether `text`, drawn with Qt::TextWordWrap in `rect`, shows whole: every line within the rect's
// width, all lines within its height (a word wider than the rect is cut by its edge).
bool showsWhole(const QString& text, const QFontMetrics& fm, const QRect& rect);
// The least height a Qt Charts chart keeps its tick labels in (below it Qt shortens every tick label
// and the x title to "…"): `lines` lines of the application font at `fontScale` — title, plot, tick
// labels, axis title and legend row together — plus the chart's margins. A view's page scrolls
// rather than squeeze a chart below it.
int chartMinimumHeight(double lines, double fontScale);
// `page` in a frameless scroll area that scrolls up and down only: a view's page below its minimum
// height scrolls instead of squeezing its charts.
QScrollArea* scrollingPage(QWidget* page);
// The flags a fitted paragraph is drawn with.
constexpr int k_paragraphFlags = Qt::TextWordWrap;

}  // namespace mpx::ui::fit
