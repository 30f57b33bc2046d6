// The classroom view (see classroom.hpp).
#include "ui/panels/classroom.hpp"

#include <QAction>
#include <QChildEvent>
#include <QWidget>

#include "ui/views/accumulator_lab.hpp"
#include "ui/views/format_explorer.hpp"

namespace mpx::ui {

Classroom::Classroom(QWidget* window) : QObject(window), m_window(window), m_baseFont(window->font()) {
    window->installEventFilter(this);
}

bool Classroom::eventFilter(QObject* watched, QEvent* e) {
    // Polished: shown for the first time, so built whole (a ChildAdded comes mid-constructor).
    if (watched == m_window && e->type() == QEvent::ChildPolished)
        if (auto* w = qobject_cast<QWidget*>(static_cast<QChildEvent*>(e)->child())) applyTo(w);
    return QObject::eventFilter(watched, e);
}

void Classroom::applyTo(QWidget* w) {
    auto* explorer = qobject_cast<FormatExplorer*>(w);
    auto* lab = qobject_cast<AccumulatorLab*>(w);
    if (!explorer && !lab) return;
    // Windows of their own do not inherit the window's font: given it, as its own widgets are.
    w->setFont(m_window->font());
    if (lab) lab->setPresentationScale(m_on ? k_chartScale : 1.0);
}

void Classroom::addControl(const QString& key, const QString& label, const QList<QWidget*>& widgets,
                           const QList<QAction*>& actions) {
    Control c{key, label, {}, {}};
    for (QWidget* w : widgets) c.widgets << w;
    for (QAction* a : actions) c.actions << a;
    m_controls << c;
}

QStringList Classroom::keys() const {
    QStringList out;
    for (const Control& c : m_controls) out << c.key;
    return out;
}

QString Classroom::label(const QString& key) const {
    for (const Control& c : m_controls)
        if (c.key == key) return c.label;
    return {};
}

void Classroom::setOn(bool on) {
    if (on == m_on) return;
    m_on = on;
    apply();
}

QStringList Classroom::setKept(const QStringList& keys) {
    QStringList unknown;
    m_kept.clear();
    for (const QString& k : keys) {
        if (!this->keys().contains(k)) unknown << k;
        else if (!m_kept.contains(k)) m_kept << k;
    }
    apply();
    return unknown;
}

void Classroom::apply() {
    for (const Control& c : m_controls) {
        const bool show = !m_on || m_kept.contains(c.key);
        for (QWidget* w : c.widgets)
            if (w) w->setVisible(show);
        for (QAction* a : c.actions)
            if (a) a->setVisible(show);
    }
    QFont f = m_baseFont;
    if (m_on) f.setPointSizeF(f.pointSizeF() * k_fontScale);
    m_window->setFont(f);
    for (QObject* child : m_window->children())
        if (auto* w = qobject_cast<QWidget*>(child)) applyTo(w);
    emit changed();
}

}  // namespace mpx::ui
