// The lesson panel and its markup (see lesson_panel.hpp).
#include "ui/panels/lesson_panel.hpp"

#include <QLabel>
#include <QRegularExpression>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

#include "engine/precision/format.hpp"

namespace mpx::ui {

Lesson parseLesson(const QString& text) {
    Lesson out;
    static const QRegularExpression marker(QStringLiteral("\\{(chart|explorer|lab):([^}]*)\\}"));
    QString html;
    qsizetype at = 0;
    for (auto it = marker.globalMatch(text); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        html += text.mid(at, m.capturedStart() - at).toHtmlEscaped();
        at = m.capturedEnd();
        const QString arg = m.captured(2).trimmed();
        if (m.captured(1) == QLatin1String("chart")) {
            const auto id = chartFromKey(arg);
            if (!id) {
                out.unknownCharts << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            if (!out.charts.contains(*id)) out.charts << *id;
            html += QStringLiteral("<b style='color:#d35400'>★ %1</b>").arg(chartPlainTitle(*id).toHtmlEscaped());
        } else if (m.captured(1) == QLatin1String("lab")) {
            if (!mpx::parse_format(arg.toLower().toStdString())) {
                out.unknownFormats << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            out.labFormat = arg.toLower();
            html += QStringLiteral("<a href='lab:%1'>the accumulator lab</a>").arg(out.labFormat.toHtmlEscaped());
        } else {
            out.explorerValue = arg;
            html += QStringLiteral("<a href='explorer:%1'>the format explorer</a>").arg(arg.toHtmlEscaped());
        }
    }
    html += text.mid(at).toHtmlEscaped();
    html.replace(QStringLiteral("\n\n"), QStringLiteral("<p>"));
    out.html = html;
    return out;
}

LessonPanel::LessonPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 6, 6, 6);
    m_title = new QLabel;
    m_title->setWordWrap(true);
    v->addWidget(m_title);
    m_text = new QTextBrowser;
    m_text->setOpenLinks(false);
    m_text->setFrameShape(QFrame::NoFrame);
    connect(m_text, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() == QLatin1String("explorer")) emit explorerRequested(url.path());
        else if (url.scheme() == QLatin1String("lab")) emit labRequested(url.path());
    });
    v->addWidget(m_text, 1);
}

void LessonPanel::setLesson(const QString& title, const Lesson& lesson) {
    m_title->setText(tr("<h3>Lesson: %1</h3>").arg(title.toHtmlEscaped()));
    m_text->setHtml(lesson.html);
}

QString LessonPanel::plainText() const { return m_text->toPlainText(); }

}  // namespace mpx::ui
