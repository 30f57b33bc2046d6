// The format explorer: one value seen in every number format at once (bits you can click, stored
// value, errors, ulp, neighbours, class) above a log2 axis with each format's range as a band, on
// which a drag picks a value. Rule: every figure comes from engine/precision/format_probe.hpp (the encoder
// `mpx-cli format` uses); this file only lays them out.
#pragma once

#include <QWidget>
#include <array>

#include "engine/precision/format_probe.hpp"

class QLabel;
class QLineEdit;
class QScrollArea;

namespace mpx::ui {

// A format's code as coloured cells (sign, exponent, mantissa); a click flips that bit.
class BitStrip : public QWidget {
    Q_OBJECT
public:
    explicit BitStrip(mpx::Format f, QWidget* parent = nullptr);
    void setCode(std::uint32_t code);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return sizeHint(); }  // every bit whole: never squeezed
    QRect cellRect(int codeBit) const;  // where bit `codeBit` (0 = last mantissa bit) is drawn
signals:
    void bitClicked(int codeBit);
protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
private:
    mpx::Format m_format;
    std::uint32_t m_code = 0;
};

// Every format's range on one log2 |x| axis: subnormals faint, normals solid, the current value a
// vertical line. Pressing or dragging picks |x| = 2^position (the sign is kept).
class FormatRangeBar : public QWidget {
    Q_OBJECT
public:
    explicit FormatRangeBar(QWidget* parent = nullptr);
    void setValue(float x);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    double log2At(int x) const;  // the axis position under pixel column x
    int xAt(double log2) const;
signals:
    void valuePicked(double magnitude);
protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
private:
    struct Geometry {
        QRect head, note, plot;  // the heading, the subnormal note (both wrapped), the bands
        int names = 0;           // the formats' names' column
        int tick = 16;           // binades between axis labels
    };
    Geometry geometry() const;
    QString heading() const;
    static QString facts(mpx::Format f);
    QRect plotRect() const;
    float m_value = 1.0f;
};

class FormatExplorer : public QWidget {
    Q_OBJECT
public:
    explicit FormatExplorer(QWidget* parent = nullptr);
    // Decimal or hex-float text, nan, inf. False (and a message shown) when it is not a number.
    bool setText(const QString& text);
    QString text() const;
    // Flips one bit of the value as `f` stores it; the decoded result becomes the typed value.
    void flipBit(mpx::Format f, int codeBit);
    const mpx::FormatProbe& probe(mpx::Format f) const { return m_probes[static_cast<int>(f)]; }
    QString shownText(mpx::Format f, int column) const;  // a cell's text, for tests
    BitStrip* bitStrip(mpx::Format f) const { return m_rows[static_cast<int>(f)].bits; }
    FormatRangeBar* rangeBar() const { return m_range; }
    QLineEdit* input() const { return m_input; }
    // After an entry that is not a number: the rows still show the last valid value, greyed.
    bool stale() const { return m_stale; }

    enum Column { valueColumn, absErrorColumn, relErrorColumn, ulpColumn, nextDownColumn, nextUpColumn, classColumn, columnCount };
    // Whether a column is shown: where the window is too narrow for all (the classroom's text on a
    // laptop), Class, Next up, Next down and ulp give way, last first, and the note under the table names them.
    bool columnShown(Column c) const;
    QString hiddenNote() const;
signals:
    void valueChanged();
private:
    void showValue(const mpx::TypedValue& v);
    void setStale(bool stale);
    void fitColumns();  // shows the columns the scroll area's width has room for
    bool eventFilter(QObject* o, QEvent* e) override;
    void changeEvent(QEvent* e) override;  // a new font (the classroom's): the value cells' monospace follows
    struct Row {
        BitStrip* bits = nullptr;
        std::array<QLabel*, columnCount> cells{};
    };
    QLineEdit* m_input = nullptr;
    QLabel* m_asFloat = nullptr;
    QWidget* m_table = nullptr;
    QScrollArea* m_scroll = nullptr;
    std::array<QLabel*, columnCount> m_heads{};
    QLabel* m_hidden = nullptr;  // "Not shown for lack of width: …"
    bool m_stale = false;
    FormatRangeBar* m_range = nullptr;
    std::array<Row, std::size(mpx::all_formats)> m_rows{};
    std::array<mpx::FormatProbe, std::size(mpx::all_formats)> m_probes{};
    std::array<QString, std::size(mpx::all_formats)> m_classText{}, m_classHtml{};  // plain, coloured
};

}  // namespace mpx::ui
