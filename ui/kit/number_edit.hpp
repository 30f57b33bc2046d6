// A text field for one number that may span many orders of magnitude: "65536", "2^16", "1e-4",
// "inf". Rule: a value that does not parse or lies outside [min, max] is shown in red and never
// reported; valueEdited fires only for a valid value the user finished typing.
#pragma once

#include <QLineEdit>
#include <optional>

namespace mpx::ui {

class NumberEdit : public QLineEdit {
    Q_OBJECT
public:
    explicit NumberEdit(double min, double max, QWidget* parent = nullptr);
    void setValue(double v);     // no signal
    double value() const { return m_value; }
    bool valid() const { return m_valid; }
    void setEmptyMeans(double v, const QString& placeholder);  // e.g. +inf, "none"
    void setHelp(const QString& text);                         // the tooltip while valid
    static std::optional<double> parse(const QString& text);
    static QString format(double v);

signals:
    void valueEdited(double v);

private:
    void check();

    double m_min, m_max;
    double m_value = 0;
    bool m_valid = true;
    std::optional<double> m_empty;
    QString m_help;
};

}  // namespace mpx::ui
