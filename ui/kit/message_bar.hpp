// A banner above the charts for what the user must see without a modal dialog: an error from the
// engine or a bad file (red), a pending reset (amber), a finished export (green).
// Rule: never blocks; the app stays usable while it shows.
#pragma once

#include <QFrame>

class QLabel;
class QPushButton;

namespace mpx::ui {

class MessageBar : public QFrame {
    Q_OBJECT
public:
    enum class Kind { error, warning, success };
    explicit MessageBar(QWidget* parent = nullptr);
    // An action button is shown when actionText is not empty; it emits actionClicked.
    void showMessage(Kind kind, const QString& text, const QString& actionText = {});
    QString text() const;
    Kind kind() const { return m_kind; }

signals:
    void actionClicked();

private:
    QLabel* m_text;
    QPushButton* m_action;
    Kind m_kind = Kind::success;
};

}  // namespace mpx::ui
