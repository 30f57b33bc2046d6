// The classroom view: for a projector, it hides the controls a class does not need (the settings
// panel, the preset and file actions, the event log, the menu and status bars) and enlarges the
// window's fonts; Run/Pause/Step/Reset, the charts and the lesson stay. A chosen set of controls can
// be kept visible, as TF Playground's hidden-controls list does. Rule: the control keys here are the
// ones a configuration's "classroom" list names; an unknown key is reported, never guessed. The
// window's own windows (the format explorer, the accumulator lab) follow it too, opened before or after.
#pragma once

#include <QFont>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QStringList>

class QAction;
class QWidget;

namespace mpx::ui {

class Classroom : public QObject {
    Q_OBJECT
public:
    explicit Classroom(QWidget* window);
    // A control classroom hides unless kept: its widgets and actions, shown and hidden together.
    void addControl(const QString& key, const QString& label, const QList<QWidget*>& widgets,
                    const QList<QAction*>& actions = {});
    QStringList keys() const;
    QString label(const QString& key) const;

    void setOn(bool on);
    bool isOn() const { return m_on; }
    // The controls kept visible in classroom; returns the keys it did not know (and ignored).
    QStringList setKept(const QStringList& keys);
    QStringList kept() const { return m_kept; }
    bool isKept(const QString& key) const { return m_kept.contains(key); }

    static constexpr double k_fontScale = 1.45;  // window text on a projector
    static constexpr double k_chartScale = 1.6;  // chart fonts and line widths

signals:
    void changed();

protected:
    bool eventFilter(QObject* watched, QEvent* e) override;  // a window of the window's, shown: scaled too

private:
    void applyTo(QWidget* w);  // the explorer's and the lab's text, as the window's
    struct Control {
        QString key, label;
        QList<QPointer<QWidget>> widgets;
        QList<QPointer<QAction>> actions;
    };
    void apply();
    QWidget* m_window;
    QFont m_baseFont;
    QList<Control> m_controls;
    QStringList m_kept;
    bool m_on = false;
};

}  // namespace mpx::ui
