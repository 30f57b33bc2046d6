// MainWindow and the lesson panel: a lesson's text, its highlighted charts and where its links lead
// (a chart brought into view, a view opened, the step axes zoomed, the explorer or the lab); and
// which central views' tabs a session shows.
#include <QDockWidget>
#include <QTabWidget>

#include "engine/precision/policy.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/lesson_panel.hpp"
#include "ui/window/main_window.hpp"

namespace mpx::ui {

QList<LessonView> MainWindow::lessonViews() const {
    QList<LessonView> out;
    const QStringList names = centralViewNames();
    for (int i = 0; i < m_views->count() && i < names.size(); ++i) out.push_back({names[i], m_views->tabText(i)});
    return out;
}

void MainWindow::updateViewTabs() {
    const auto s = m_store->session();
    if (!s) return;
    const bool gpt = s->config.model.kind == mpx::ModelKind::gpt;
    bool fp8 = false, fp4 = false;
    for (const gui::RunDescription& r : s->runs) {
        fp8 = fp8 || mpx::is_fp8(r.spec.mode);
        fp4 = fp4 || mpx::is_fp4(r.spec.mode);
    }
    const std::pair<View, bool> shown[] = {{View::boundaries, !gpt}, {View::fp8, fp8},       {View::fp4, fp4},
                                           {View::samples, gpt},     {View::attention, gpt}, {View::mismatch, gpt && s->config.mismatch.enabled()}};
    for (const auto& [v, on] : shown)
        m_views->setTabVisible(static_cast<int>(v), on || static_cast<int>(v) == m_views->currentIndex());
}

void MainWindow::connectLesson() {
    connect(m_lesson, &LessonPanel::explorerRequested, this, [this](const QString& v) { showFormatExplorer(v); });
    connect(m_lesson, &LessonPanel::labRequested, this, [this](const QString& f) { showAccumulatorLab(f); });
    connect(m_lesson, &LessonPanel::viewRequested, this, [this](const QString& name) {
        if (const int i = centralViewNames().indexOf(name); i >= 0) setView(static_cast<View>(i));
    });
    connect(m_lesson, &LessonPanel::chartRequested, this, [this](ChartId c) {
        setView(View::charts);
        m_charts->showChart(c);
    });
    connect(m_lesson, &LessonPanel::stepsRequested, this, [this](qint64 first, qint64 last) {
        setView(View::charts);
        m_charts->zoomTo(static_cast<double>(first), static_cast<double>(last));
    });
}

void MainWindow::showLesson(const mpx::SessionConfig& cfg) {
    const Lesson lesson = parseLesson(QString::fromStdString(cfg.lesson), lessonViews());
    m_lesson->setLesson(QString::fromStdString(cfg.name), lesson);
    m_lessonDock->setVisible(!cfg.lesson.empty());
    m_charts->setHighlighted(lesson.charts);
    if (!lesson.explorerValue.isEmpty()) showFormatExplorer(lesson.explorerValue);
}

}  // namespace mpx::ui
