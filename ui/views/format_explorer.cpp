// The format explorer (see format_explorer.hpp).
#include "ui/views/format_explorer.hpp"

#include <QCoreApplication>
#include <QFontDatabase>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QTextDocumentFragment>
#include <QShortcut>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/base/text.hpp"
#include "ui/kit/concepts.hpp"

namespace mpx::ui {
namespace {

// px per bit: the bit's digit with room round it, in the strip's font (the classroom's is larger)
int cellSize(const QWidget* w) { return std::max(15, QFontMetrics(w->font()).height() - 2); }
constexpr double k_axisLo = -152, k_axisHi = 132;  // log2 |x|: FP32's subnormals to past its max

const QColor k_sign(142, 68, 173), k_exponent(39, 150, 80), k_mantissa(41, 110, 185);

QString formatTitle(Format f) {
    const QString n = QString::fromLatin1(to_string(f).data(), int(to_string(f).size())).toUpper();
    if (f == Format::e4m3 || f == Format::e5m2) return QStringLiteral("FP8 ") + n;
    return f == Format::e2m1 ? QStringLiteral("FP4 ") + n : n;
}

// What the format does at its ends, from its facts: "no inf, no NaN: saturates at ±6" (E2M1),
// "no inf: saturates at ±448" (E4M3), empty for the IEEE-like formats.
QString specials(const FormatInfo& d) {
    const QString max = QString::number(d.max_finite, 'g', 5);
    if (!d.has_nan) return QCoreApplication::translate("FormatExplorer", "no inf, no NaN: saturates at ±%1").arg(max);
    if (!d.has_inf) return QCoreApplication::translate("FormatExplorer", "no inf: saturates at ±%1").arg(max);
    return {};
}

QString number(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("+inf") : QStringLiteral("−inf");
    return QString::number(v, 'g', 9);
}

QString shortNumber(double v) {
    if (std::isnan(v)) return QStringLiteral("—");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("−inf");
    return QString::number(v, 'g', 4);
}

QString power(double v) {  // 2^-24 for exact powers of two, the number otherwise
    int e = 0;
    if (v > 0 && std::frexp(v, &e) == 0.5) return QStringLiteral("2^%1").arg(e - 1);
    return QString::number(v, 'g', 6);
}

}  // namespace

// ---- BitStrip ------------------------------------------------------------------------------------

BitStrip::BitStrip(Format f, QWidget* parent) : QWidget(parent), m_format(f) {
    setCursor(Qt::PointingHandCursor);
    setToolTip(tr("Sign (purple), exponent (green), mantissa (blue). Click a bit to flip it."));
}

void BitStrip::setCode(std::uint32_t code) {
    m_code = code;
    QWidget::update();
}

QSize BitStrip::sizeHint() const { return {code_bit_count(m_format) * cellSize(this) + 8 + 8, cellSize(this) + 6}; }

QRect BitStrip::cellRect(int codeBit) const {
    const FormatInfo& d = info(m_format);
    const int n = code_bit_count(m_format);
    const int i = n - 1 - codeBit;  // left to right
    int gap = 0;                    // a small gap after the sign and after the exponent
    if (i >= 1) gap += 4;
    if (i >= 1 + d.exponent_bits) gap += 4;
    const int cell = cellSize(this);
    return {i * cell + gap, 3, cell - 1, cell};
}

void BitStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const FormatInfo& d = info(m_format);
    const int n = code_bit_count(m_format);
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    p.setFont(f);
    for (int b = n - 1; b >= 0; --b) {
        QColor c = b == n - 1 ? k_sign : (b >= d.mantissa_bits ? k_exponent : k_mantissa);
        if (!isEnabled()) c = QColor(160, 160, 160);  // stale: the bits of the last valid value
        const bool set = (m_code >> b) & 1u;
        const QRect r = cellRect(b);
        p.fillRect(r, set ? c : c.lighter(185));
        p.setPen(set ? Qt::white : c.darker(130));
        p.drawText(r, Qt::AlignCenter, set ? QStringLiteral("1") : QStringLiteral("0"));
    }
}

void BitStrip::mousePressEvent(QMouseEvent* e) {
    for (int b = 0; b < code_bit_count(m_format); ++b)
        if (cellRect(b).adjusted(0, -3, 1, 3).contains(e->position().toPoint())) {
            emit bitClicked(b);
            return;
        }
}

// ---- FormatRangeBar ------------------------------------------------------------------------------

FormatRangeBar::FormatRangeBar(QWidget* parent) : QWidget(parent) {
    setCursor(Qt::SizeHorCursor);
    setToolTip(tr("Each format's range of magnitudes on a log₂ axis: faint = subnormal, solid = normal. Press or "
                  "drag to pick a value.") + QStringLiteral("\n\n") + concepts::subnormal());
}

QString FormatRangeBar::heading() const {
    return tr("Which format can hold it?  log₂ |x| — faint: subnormal, solid: normal, beyond the band: 0 (underflow) "
              "or inf (overflow)");
}

QString FormatRangeBar::facts(Format f) {
    const FormatInfo& d = info(f);
    return tr("smallest: subnormal %1, normal %2\nlargest %3 · ε (ulp at 1) %4")
               .arg(power(d.min_subnormal), power(d.min_normal), QString::number(d.max_finite, 'g', 5), power(d.epsilon)) +
           (specials(d).isEmpty() ? QString() : tr(" · saturates"));  // the whole rule in the title's tooltip
}

// Everything placed from the font: the names' column, the facts' column, the wrapped heading, the
// rows of two lines each, the axis labels under them (the classroom's larger text takes more room).
FormatRangeBar::Geometry FormatRangeBar::geometry() const {
    Geometry g;
    const QFontMetrics fm(font());
    const int line = fm.lineSpacing(), w = std::max(1, width() - 12);
    int names = 0, facts = 0;
    for (Format f : all_formats) {
        names = std::max(names, fm.horizontalAdvance(formatTitle(f)));
        for (const QString& l : FormatRangeBar::facts(f).split(QLatin1Char('\n'))) facts = std::max(facts, fm.horizontalAdvance(l));
    }
    g.head = QRect(6, 2, w, fm.boundingRect(QRect(0, 0, w, 10'000), Qt::TextWordWrap, heading()).height());
    g.note = QRect(6, g.head.bottom() + 2, w, fm.boundingRect(QRect(0, 0, w, 10'000), Qt::TextWordWrap, concepts::subnormal()).height());
    g.names = names + 12;
    g.plot = QRect(g.names, g.note.bottom() + line + 8, std::max(60, width() - g.names - facts - 20),
                   std::max(int(std::size(all_formats)) * (2 * line + 6), height() - g.note.bottom() - 2 * line - 16));
    // A label every 16, 32 or 64 binades: as many as fit their width with a gap.
    const int label = fm.horizontalAdvance(QStringLiteral("2^-144")) + fm.averageCharWidth() * 2;
    g.tick = 16;
    while (g.tick < 64 && g.plot.width() * g.tick / (k_axisHi - k_axisLo) < label) g.tick *= 2;
    return g;
}

QSize FormatRangeBar::sizeHint() const { return {1200, minimumSizeHint().height()}; }

QSize FormatRangeBar::minimumSizeHint() const {
    const QFontMetrics fm(font());
    const Geometry g = geometry();
    return {600, g.note.bottom() + 2 * fm.lineSpacing() + 16 + int(std::size(all_formats)) * (2 * fm.lineSpacing() + 6)};
}

QRect FormatRangeBar::plotRect() const { return geometry().plot; }

int FormatRangeBar::xAt(double l) const {
    const QRect r = plotRect();
    return r.left() + int(std::lround((l - k_axisLo) / (k_axisHi - k_axisLo) * r.width()));
}

double FormatRangeBar::log2At(int x) const {
    const QRect r = plotRect();
    return k_axisLo + double(x - r.left()) / r.width() * (k_axisHi - k_axisLo);
}

void FormatRangeBar::setValue(float x) {
    m_value = x;
    QWidget::update();
}

void FormatRangeBar::mousePressEvent(QMouseEvent* e) {
    const double l = std::clamp(log2At(int(e->position().x())), -149.0, 127.9);
    emit valuePicked(std::exp2(l));
}

void FormatRangeBar::mouseMoveEvent(QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) mousePressEvent(e);
}

void FormatRangeBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const Geometry g = geometry();
    const QRect r = g.plot;
    const QFontMetrics fm(font());
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(g.head, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, heading());
    p.setPen(isEnabled() ? palette().color(QPalette::PlaceholderText) : palette().color(QPalette::Disabled, QPalette::WindowText));
    p.drawText(g.note, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, concepts::subnormal());
    // Axis: a tick every 16 binades (32 or 64 where their labels would touch), with 2^0 = 1 marked.
    p.setPen(QColor(150, 150, 150));
    const int tickW = fm.horizontalAdvance(QStringLiteral("2^-144")) + 4;
    for (int l = int(std::ceil(k_axisLo / g.tick)) * g.tick; l <= 128; l += g.tick) {
        const int x = xAt(l);
        p.drawLine(x, r.top(), x, r.bottom());
        p.drawText(QRect(x - tickW / 2, r.bottom() + 4, tickW, fm.height()), Qt::AlignCenter, QStringLiteral("2^%1").arg(l));
    }
    const int rowH = r.height() / int(std::size(all_formats));
    int row = 0;
    const double v = std::fabs(double(m_value));
    for (Format f : all_formats) {
        const FormatInfo& d = info(f);
        const int y = r.top() + row * rowH + 3, h = rowH - 6;
        const int xs = xAt(std::log2(d.min_subnormal)), xn = xAt(std::log2(d.min_normal)),
                  xm = xAt(std::log2(d.max_finite));
        const QColor c = QColor::fromHsv(row * 55 % 360, 150, 200);
        p.fillRect(QRect(xs, y, std::max(1, xn - xs), h), c.lighter(160));
        p.fillRect(QRect(xn, y, std::max(1, xm - xn), h), c);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(0, y, g.names - 6, h), Qt::AlignRight | Qt::AlignVCenter, formatTitle(f));
        p.drawText(QRect(r.right() + 10, y, width() - r.right() - 10, h), Qt::AlignLeft | Qt::AlignVCenter, facts(f));
        // Where the current value falls for this format: green normal, orange subnormal, red lost.
        if (isEnabled() && v > 0 && std::isfinite(v)) {
            const float s = round_to(f, float(v));
            QColor dot(39, 174, 96);
            if (s == 0.0f || !std::isfinite(s) || (!d.has_inf && v > d.max_finite)) dot = QColor(192, 57, 43);
            else if (s < d.min_normal) dot = QColor(230, 126, 34);
            p.setBrush(dot);
            p.setPen(Qt::white);
            p.drawEllipse(QPoint(std::clamp(xAt(std::log2(v)), r.left(), r.right()), y + h / 2), 6, 6);
        }
        ++row;
    }
    if (isEnabled() && v > 0 && std::isfinite(v)) {
        const int x = std::clamp(xAt(std::log2(v)), r.left(), r.right());
        p.setPen(QPen(QColor(40, 40, 40), 2));
        p.drawLine(x, r.top() - 2, x, r.bottom());
        const QString at = QStringLiteral("|x| ≈ 2^%1").arg(std::log2(v), 0, 'f', 1);
        const int aw = fm.horizontalAdvance(at) + 8;
        p.drawText(QRect(std::clamp(x - aw / 2, r.left(), std::max(r.left(), r.right() - aw)), r.top() - fm.height() - 4, aw, fm.height()),
                      Qt::AlignCenter, at);
    }
}

// ---- FormatExplorer ------------------------------------------------------------------------------

FormatExplorer::FormatExplorer(QWidget* parent) : QWidget(parent) {
    // The platform appends the application's display name ("… — mpx — Mixed-Precision Explorer"):
    // a title of its own that named mpx read "mpx — Format explorer — mpx — …".
    setWindowTitle(tr("Format explorer"));
    // A window of its own: Esc or Ctrl+W closes it, as a dialog would (the main window has neither).
    for (const QKeySequence& k : {QKeySequence(Qt::Key_Escape), QKeySequence(Qt::CTRL | Qt::Key_W)}) {
        auto* close = new QShortcut(k, this);
        close->setContext(Qt::WindowShortcut);
        connect(close, &QShortcut::activated, this, &QWidget::close);
    }
    // In a scroll area: the classroom's larger text may need more than a laptop's screen.
    auto* page = new QWidget;
    auto* scroll = m_scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->viewport()->installEventFilter(this);  // a new width shows the columns it has room for
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);
    auto* v = new QVBoxLayout(page);
    auto* head = new QHBoxLayout;
    head->addWidget(new QLabel(tr("Value:")));
    m_input = new QLineEdit;
    m_input->setPlaceholderText(tr("a decimal (0.1, 65520, 1e-8), hex-float (0x1p-24), nan or inf"));
    m_input->setToolTip(m_input->placeholderText());
    m_input->setMaximumWidth(320);
    head->addWidget(m_input);
    m_asFloat = new QLabel;
    head->addWidget(m_asFloat, 1);
    v->addLayout(head);

    // The table in a widget of its own: a bad entry greys it at once (stale).
    m_table = new QWidget;
    auto* grid = new QGridLayout(m_table);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setHorizontalSpacing(14);
    const QStringList heads = {tr("Format"), tr("Bits: sign · exponent · mantissa (click to flip)"), tr("Stored value"),
                               tr("Abs. error"), tr("Rel. error"), tr("ulp here"), tr("Next down"), tr("Next up"),
                               tr("Class")};
    const QStringList tips = {{}, {}, tr("The value the format actually keeps: the nearest it can represent (ties to even)."),
                              tr("|stored − typed|"), tr("|stored − typed| / |typed|"),
                              tr("Unit in the last place: the gap between neighbouring values at this size."),
                              tr("The representable value just below"), tr("The representable value just above"),
                              tr("zero, subnormal, normal, inf or nan.") + QStringLiteral("\n\n") + concepts::subnormal()};
    for (int c = 0; c < heads.size(); ++c) {
        auto* l = new QLabel(QStringLiteral("<b>%1</b>").arg(heads[c]));
        l->setToolTip(tips[c]);
        grid->addWidget(l, 0, c);
        if (c >= 2) m_heads[static_cast<std::size_t>(c - 2)] = l;
    }
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    int r = 1;
    for (Format f : all_formats) {
        Row& row = m_rows[static_cast<int>(f)];
        auto* name = new QLabel(QStringLiteral("<b>%1</b>").arg(formatTitle(f)));
        const FormatInfo& d = info(f);
        const QString ends = specials(d);
        name->setToolTip(tr("1 sign, %1 exponent, %2 mantissa bits; bias %3").arg(d.exponent_bits).arg(d.mantissa_bits).arg(d.bias) +
                         (ends.isEmpty() ? QString() : QStringLiteral("; ") + ends));
        grid->addWidget(name, r, 0);
        row.bits = new BitStrip(f);
        grid->addWidget(row.bits, r, 1);
        connect(row.bits, &BitStrip::bitClicked, this, [this, f](int b) { flipBit(f, b); });
        for (int c = 0; c < columnCount; ++c) {
            row.cells[c] = new QLabel;
            row.cells[c]->setFont(mono);
            row.cells[c]->setTextInteractionFlags(Qt::TextSelectableByMouse);
            grid->addWidget(row.cells[c], r, c + 2);
        }
        ++r;
    }
    grid->setColumnStretch(int(columnCount) + 2, 1);
    v->addWidget(m_table);
    m_hidden = new QLabel;
    m_hidden->setWordWrap(true);
    QPalette grey = m_hidden->palette();  // a palette, not a style sheet: the classroom's font still reaches it
    grey.setColor(QPalette::WindowText, QColor(0x66, 0x66, 0x66));
    m_hidden->setPalette(grey);
    m_hidden->hide();
    v->addWidget(m_hidden);
    m_range = new FormatRangeBar;
    v->addWidget(m_range, 1);
    scroll->setWidget(page);
    connect(m_range, &FormatRangeBar::valuePicked, this, [this](double magnitude) {
        const double sign = std::signbit(probe(Format::fp32).value) ? -1.0 : 1.0;
        // Three significant digits: a value a student can read aloud (1020, 6.1e-05).
        setText(QString::number(QString::number(sign * magnitude, 'g', 3).toDouble(), 'g', 6));
    });
    connect(m_input, &QLineEdit::textEdited, this, [this](const QString& t) { setText(t); });
    setText(QStringLiteral("0.1"));
}

QString FormatExplorer::text() const { return m_input->text(); }

bool FormatExplorer::setText(const QString& text) {
    if (m_input->text() != text) m_input->setText(text);
    const auto v = parse_typed_value(text.trimmed().toStdString());
    if (!v) {
        m_input->setStyleSheet(QStringLiteral("QLineEdit { border: 2px solid #c0392b; }"));
        // The rows keep the last valid value (a flipped bit or a drag starts from it) but say so:
        // greyed, the range bar without its marks, the class without its colour.
        setStale(true);
        m_asFloat->setText(tr("<span style='color:#c0392b'>Not a number: type a decimal, a hex-float, nan or inf.</span> "
                              "<span style='color:#777'>Greyed below: still %1, the last valid value.</span>")
                               .arg(number(probe(Format::fp32).value).toHtmlEscaped()));
        return false;
    }
    m_input->setStyleSheet({});
    showValue(*v);
    return true;
}

void FormatExplorer::flipBit(Format f, int codeBit) {
    const float x = decode(f, flip_code_bit(f, probe(f).bits, codeBit));
    m_input->setText(QString::fromStdString(format_number(x)));
    showValue(typed_value(x));
}

void FormatExplorer::setStale(bool stale) {
    m_stale = stale;
    m_table->setEnabled(!stale);
    m_range->setEnabled(!stale);
    for (Format f : all_formats) {
        QLabel* cls = m_rows[static_cast<int>(f)].cells[classColumn];
        cls->setText(stale ? QStringLiteral("<span style='color:#999'>%1</span>").arg(m_classText[static_cast<int>(f)])
                           : m_classHtml[static_cast<int>(f)]);
    }
}

void FormatExplorer::showValue(const TypedValue& v) {
    for (Format f : all_formats) {
        const FormatProbe p = mpx::probe(f, v);
        m_probes[static_cast<int>(f)] = p;
        Row& row = m_rows[static_cast<int>(f)];
        row.bits->setCode(p.code);
        row.cells[valueColumn]->setText(number(p.value));
        row.cells[absErrorColumn]->setText(shortNumber(p.abs_error));
        row.cells[relErrorColumn]->setText(shortNumber(p.rel_error));
        row.cells[ulpColumn]->setText(shortNumber(p.ulp));
        row.cells[nextDownColumn]->setText(number(p.next_down));
        row.cells[nextUpColumn]->setText(number(p.next_up));
        QString klass = QString::fromLatin1(to_string(p.cls).data(), int(to_string(p.cls).size()));
        QString colour = QStringLiteral("inherit");
        const FormatInfo& d = info(f);
        if (!d.has_nan && std::isnan(v.as_float)) {  // E2M1: TE's cast gives +0
            klass += tr(" (no NaN: +0)");
            colour = QStringLiteral("#c0392b");
        } else if (!d.has_nan && std::isinf(v.as_float)) {
            klass += tr(" (no inf: saturated)");
            colour = QStringLiteral("#c0392b");
        } else if (p.overflow) {
            klass += std::isfinite(p.value) ? tr(" (saturated)") : tr(" (overflow)");
            colour = QStringLiteral("#c0392b");
        } else if (p.underflow) {
            klass += tr(" (underflow)");
            colour = QStringLiteral("#c0392b");
        } else if (p.cls == FpClass::subnormal) {
            colour = QStringLiteral("#d35400");
        }
        m_classText[static_cast<int>(f)] = klass;
        m_classHtml[static_cast<int>(f)] = QStringLiteral("<span style='color:%1'>%2</span>").arg(colour, klass);
        row.cells[classColumn]->setToolTip(p.cls == FpClass::subnormal ? concepts::subnormal() : QString());
    }
    setStale(false);
    m_asFloat->setText(tr("  read as FP32 first (as every value in the engine): %1").arg(number(v.as_float)));
    m_range->setValue(v.as_float);
    emit valueChanged();
}

QString FormatExplorer::shownText(Format f, int column) const {
    return m_rows[static_cast<int>(f)].cells[column]->text();
}

bool FormatExplorer::columnShown(Column c) const { return !m_heads[c]->isHidden(); }

QString FormatExplorer::hiddenNote() const { return m_hidden->isHidden() ? QString() : m_hidden->text(); }

void FormatExplorer::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() != QEvent::FontChange) return;
    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    if (font().pointSizeF() > 0) mono.setPointSizeF(font().pointSizeF() * 0.9);  // as large as the text around it reads
    else mono.setPixelSize(std::max(1, font().pixelSize() * 9 / 10));
    for (Row& row : m_rows)
        for (QLabel* cell : row.cells) cell->setFont(mono);
    fitColumns();
}

bool FormatExplorer::eventFilter(QObject* o, QEvent* e) {
    if (o == m_scroll->viewport() && e->type() == QEvent::Resize) fitColumns();
    return QWidget::eventFilter(o, e);
}

void FormatExplorer::fitColumns() {
    const auto show = [this](int c, bool on) {
        m_heads[static_cast<std::size_t>(c)]->setVisible(on);
        for (Row& row : m_rows) row.cells[static_cast<std::size_t>(c)]->setVisible(on);
    };
    for (int c = 0; c < columnCount; ++c) show(c, true);
    QStringList hidden;
    const int room = m_scroll->viewport()->width() - 2 * m_table->parentWidget()->layout()->contentsMargins().left();
    for (int c = classColumn; c >= ulpColumn; --c) {
        m_table->layout()->invalidate();
        if (m_table->layout()->minimumSize().width() <= room) break;
        show(c, false);
        hidden.prepend(QTextDocumentFragment::fromHtml(m_heads[static_cast<std::size_t>(c)]->text()).toPlainText());
    }
    m_hidden->setText(tr("Not shown for lack of width: %1 (a wider window shows them).").arg(hidden.join(QStringLiteral(", "))));
    m_hidden->setVisible(!hidden.isEmpty());
}

}  // namespace mpx::ui
