// NumberEdit: parsing, range check, red when invalid.
#include "ui/kit/number_edit.hpp"

#include <cmath>
#include <limits>

namespace mpx::ui {

NumberEdit::NumberEdit(double min, double max, QWidget* parent) : QLineEdit(parent), m_min(min), m_max(max) {
    connect(this, &QLineEdit::textEdited, this, &NumberEdit::check);
    connect(this, &QLineEdit::editingFinished, this, [this] {
        check();
        if (m_valid) emit valueEdited(m_value);
    });
}

std::optional<double> NumberEdit::parse(const QString& raw) {
    const QString t = raw.trimmed().toLower();
    if (t == QLatin1String("inf") || t == QLatin1String("+inf") || t == QLatin1String("∞"))
        return std::numeric_limits<double>::infinity();
    if (const auto caret = t.indexOf(QLatin1Char('^')); caret > 0) {
        bool okb = false, oke = false;
        const double b = t.left(caret).toDouble(&okb);
        const double e = t.mid(caret + 1).toDouble(&oke);
        if (okb && oke) return std::pow(b, e);
        return std::nullopt;
    }
    bool ok = false;
    const double v = t.toDouble(&ok);
    if (ok) return v;
    return std::nullopt;
}

QString NumberEdit::format(double v) {
    if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(v, 'g', 10);
}

void NumberEdit::setEmptyMeans(double v, const QString& placeholder) {
    m_empty = v;
    setPlaceholderText(placeholder);
}

void NumberEdit::setHelp(const QString& text) {
    m_help = text;
    if (m_valid) setToolTip(text);
}

void NumberEdit::setValue(double v) {
    m_value = v;
    if (m_empty && (v == *m_empty || (std::isinf(v) && std::isinf(*m_empty)))) setText({});
    else setText(format(v));
    m_valid = true;
    setStyleSheet({});
}

void NumberEdit::check() {
    std::optional<double> v = text().trimmed().isEmpty() && m_empty ? m_empty : parse(text());
    m_valid = v && !std::isnan(*v) && *v >= m_min && *v <= m_max;
    if (m_valid) m_value = *v;
    setStyleSheet(m_valid ? QString() : QStringLiteral("QLineEdit { border: 1px solid #c0392b; background: #fdecea; }"));
    setToolTip(m_valid ? m_help : tr("Enter a number between %1 and %2 (e.g. 65536, 2^16, 1e-4)")
                                         .arg(format(m_min), format(m_max)));
}

}  // namespace mpx::ui
