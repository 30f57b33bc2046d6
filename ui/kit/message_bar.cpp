// MessageBar: a styled frame with text, an optional action and a close button.
#include "ui/kit/message_bar.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>

namespace mpx::ui {

MessageBar::MessageBar(QWidget* parent) : QFrame(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 5, 6, 5);
    m_text = new QLabel;
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_text, 1);
    m_action = new QPushButton;
    layout->addWidget(m_action);
    auto* close = new QToolButton;
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    layout->addWidget(close);
    connect(close, &QToolButton::clicked, this, &QWidget::hide);
    connect(m_action, &QPushButton::clicked, this, &MessageBar::actionClicked);
    hide();
}

void MessageBar::showMessage(Kind kind, const QString& text, const QString& actionText) {
    m_kind = kind;
    m_text->setText(text);
    m_action->setText(actionText);
    m_action->setVisible(!actionText.isEmpty());
    const char* style = kind == Kind::error     ? "background:#fdecea; border:1px solid #e6a19a; color:#7b1f16;"
                        : kind == Kind::warning ? "background:#fff3cd; border:1px solid #e0c060; color:#5c4400;"
                                                : "background:#e8f5e9; border:1px solid #9ccc9f; color:#1b5e20;";
    setStyleSheet(QStringLiteral("mpx--ui--MessageBar { %1 border-radius: 4px; } QLabel { border: none; background: transparent; }")
                      .arg(QLatin1String(style)));
    show();
}

QString MessageBar::text() const { return isHidden() ? QString() : m_text->text(); }

}  // namespace mpx::ui
