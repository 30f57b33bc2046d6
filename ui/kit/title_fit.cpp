// Title fitting (title_fit.hpp): measuring rich text and dropping a title's trailing qualifiers.
#include "ui/kit/title_fit.hpp"

#include <QApplication>
#include <QScrollArea>
#include <QTextDocument>
#include <algorithm>
#include <cmath>

namespace mpx::ui::fit {

QString plainText(const QString& html) {
    QTextDocument doc;
    doc.setHtml(html);
    return doc.toPlainText();
}

// The width a title's rich text takes in `font`, with the margin Qt Charts gives its text items.
double htmlWidth(const QString& html, const QFont& font) {
    QTextDocument doc;
    doc.setDocumentMargin(4);
    doc.setDefaultFont(font);
    doc.setHtml(html);
    return doc.idealWidth();
}

// A title and its shorter forms, each less its last qualifier: "Held-out loss · every 50 steps",
// "Held-out loss"; "Training loss (each step's batch)", "Training loss". A form is never cut inside
// its name, so the last one still says which chart it is.
QStringList titleForms(const QString& html, const QStringList& separators) {
    QStringList out{html};
    QString t = html;
    for (;;) {
        qsizetype at = -1;
        for (const QString& sep : separators) at = std::max(at, t.lastIndexOf(sep));
        if (at <= 0) break;
        QString cut = t.left(at);
        for (bool trimmed = false; !trimmed;) {
            trimmed = true;
            for (const QString& end : {QStringLiteral(" "), QStringLiteral("&nbsp;"), QStringLiteral(" ·")})
                if (cut.endsWith(end)) cut.chop(end.size()), trimmed = false;
        }
        const QString plain = plainText(cut).trimmed();
        if (plain.isEmpty() || plain == QStringLiteral("★")) break;
        out << cut;
        t = cut;
    }
    return out;
}

// The first form that fits `room` pixels; the shortest where none does (Qt elides that one).
QString fitted(const QStringList& forms, const QFont& font, double room) {
    for (const QString& f : forms)
        if (htmlWidth(f, font) <= room) return f;
    return forms.back();
}

Paragraph paragraph(const QStringList& forms, const QFontMetrics& fm, int width) {
    for (const QString& f : forms)
        if (fm.horizontalAdvance(f) <= width) return {f, fm.boundingRect(QRect(0, 0, width, 1 << 20), k_paragraphFlags, f).height(), false};
    const QString last = forms.isEmpty() ? QString() : forms.back();
    return {last, fm.boundingRect(QRect(0, 0, std::max(1, width), 1 << 20), k_paragraphFlags, last).height(), true};
}

bool showsWhole(const QString& text, const QFontMetrics& fm, const QRect& rect) {
    const QRect need = fm.boundingRect(QRect(0, 0, rect.width(), 1 << 20), k_paragraphFlags, text);
    return need.width() <= rect.width() && need.height() <= rect.height();
}

QScrollArea* scrollingPage(QWidget* page) {
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(page);
    return scroll;
}

int chartMinimumHeight(double lines, double fontScale) {
    QFont f = QApplication::font();
    f.setPointSizeF(f.pointSizeF() * fontScale);
    return static_cast<int>(std::ceil(QFontMetrics(f).lineSpacing() * lines)) + 24;
}

}  // namespace mpx::ui::fit
