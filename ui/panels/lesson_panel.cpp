// The lesson panel and its markup (see lesson_panel.hpp).
#include "ui/panels/lesson_panel.hpp"

#include <QLabel>
#include <algorithm>
#include <QRegularExpression>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

#include "engine/precision/format.hpp"

namespace mpx::ui {
namespace {

// Links read as the text around them: no underline, a colour of their own.
const char* const k_chart_link = "<a href='chart:%1' style='color:#d35400; text-decoration:none'><b>★ %2</b></a>";
const char* const k_view_link = "<a href='view:%1' style='text-decoration:none'><b>%2</b></a>";
const char* const k_steps_link = "<a href='steps:%1-%2'>steps %1–%2</a>";

std::optional<StepRange> stepRange(const QString& arg) {
    static const QRegularExpression form(QStringLiteral("^(\\d{1,12})\\s*[-–]\\s*(\\d{1,12})$"));
    const QRegularExpressionMatch m = form.match(arg);
    if (!m.hasMatch()) return std::nullopt;
    const StepRange r{m.captured(1).toLongLong(), m.captured(2).toLongLong()};
    if (r.first >= r.last) return std::nullopt;
    return r;
}

}  // namespace

Lesson parseLesson(const QString& text, const QList<LessonView>& views) {
    Lesson out;
    static const QRegularExpression marker(QStringLiteral("\\{(chart|view|steps|explorer|lab):([^}]*)\\}"));
    QString html;
    qsizetype at = 0;
    for (auto it = marker.globalMatch(text); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        html += text.mid(at, m.capturedStart() - at).toHtmlEscaped();
        at = m.capturedEnd();
        const QString kind = m.captured(1), arg = m.captured(2).trimmed();
        if (kind == QLatin1String("chart")) {
            const auto id = chartFromKey(arg);
            if (!id) {
                out.unknownCharts << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            if (!out.charts.contains(*id)) out.charts << *id;
            html += QString::fromUtf8(k_chart_link).arg(QString::fromLatin1(chartKey(*id)), chartPlainTitle(*id).toHtmlEscaped());
        } else if (kind == QLatin1String("view")) {
            const auto v = std::find_if(views.begin(), views.end(), [&](const LessonView& lv) { return lv.name == arg; });
            if (v == views.end()) {
                out.unknownViews << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            if (!out.views.contains(arg)) out.views << arg;
            html += QString::fromUtf8(k_view_link).arg(arg.toHtmlEscaped(), v->title.toHtmlEscaped());
        } else if (kind == QLatin1String("steps")) {
            const auto r = stepRange(arg);
            if (!r) {
                out.badSteps << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            out.stepRanges << *r;
            html += QString::fromUtf8(k_steps_link).arg(r->first).arg(r->last);
        } else if (kind == QLatin1String("lab")) {  // {lab:FORMAT} or {lab:FORMAT@K}: K the lab's note quotes
            bool kRead = true;
            const int k = arg.contains(QLatin1Char('@')) ? arg.section(QLatin1Char('@'), 1).toInt(&kRead) : 0;
            if (!mpx::parse_format(arg.section(QLatin1Char('@'), 0, 0).toLower().toStdString()) || !kRead || k < 0) {
                out.unknownFormats << arg;
                html += arg.toHtmlEscaped();
                continue;
            }
            out.labFormat = arg.section(QLatin1Char('@'), 0, 0).toLower();
            out.labK = k;
            html += QStringLiteral("<a href='lab:%1'>the accumulator lab</a>").arg(arg.toLower().toHtmlEscaped());
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
    connect(m_text, &QTextBrowser::anchorClicked, this, &LessonPanel::activate);
    v->addWidget(m_text, 1);
}

bool LessonPanel::activate(const QUrl& link) {
    const QString scheme = link.scheme(), arg = link.path();
    if (scheme == QLatin1String("explorer")) emit explorerRequested(arg);
    else if (scheme == QLatin1String("lab")) emit labRequested(arg);
    else if (scheme == QLatin1String("view")) emit viewRequested(arg);
    else if (scheme == QLatin1String("chart")) {
        const auto id = chartFromKey(arg);
        if (!id) return false;
        emit chartRequested(*id);
    } else if (scheme == QLatin1String("steps")) {
        const auto r = stepRange(arg);
        if (!r) return false;
        emit stepsRequested(r->first, r->last);
    } else {
        return false;
    }
    return true;
}

void LessonPanel::setLesson(const QString& title, const Lesson& lesson) {
    m_title->setText(tr("<h3>Lesson: %1</h3>").arg(title.toHtmlEscaped()));
    m_text->setHtml(lesson.html);
}

QString LessonPanel::plainText() const { return m_text->toPlainText(); }

}  // namespace mpx::ui
