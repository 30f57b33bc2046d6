// Title fitting, the one rule every chart title follows: a title too wide for its room loses its
// trailing qualifiers (" (…)", " · …", a legend after "&nbsp;"), one at a time, before anything would
// cut it mid-word. Titles are rich text (HTML), measured as Qt Charts lays them out.
// Rule: a shorter form is never cut inside the title's name, so the last form still says which chart
// it is; where even that does not fit, the caller gets it whole and Qt elides it.
#pragma once

#include <QFont>
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

}  // namespace mpx::ui::fit
