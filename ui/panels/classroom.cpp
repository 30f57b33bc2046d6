// The classroom view (see classroom.hpp).
#include "ui/panels/classroom.hpp"

#include <QAction>
#include <QWidget>

namespace mpx::ui {

Classroom::Classroom(QWidget* window) : QObject(window), m_window(window), m_baseFont(window->font()) {}

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
    emit changed();
}

}  // namespace mpx::ui
