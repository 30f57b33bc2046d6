// The format explorer shows what the engine's encoder does: every format's bits, value, class and
// neighbours equal engine/precision/format.hpp's for typed values, clicked bits and dragged positions.
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTest>
#include <cmath>

#include "engine/precision/format.hpp"
#include "engine/precision/format_probe.hpp"
#include "ui/kit/concepts.hpp"
#include "ui/panels/classroom.hpp"
#include "ui/views/format_explorer.hpp"

using namespace mpx;
using mpx::ui::FormatExplorer;

Q_DECLARE_METATYPE(mpx::Format)

namespace {

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

}  // namespace

class TestFormatExplorer : public QObject {
    Q_OBJECT
private slots:
    void typed_values_match_the_engine_data() {
        QTest::addColumn<QString>("text");
        for (const char* t : {"65520", "65519.996", "0.1", "-2.5", "0x1p-24", "0x1p-25", "3e-8", "1e-40",
                              "448", "465", "57344", "61440", "1e39", "0", "-0", "nan", "inf", "-inf",
                              "0.25", "0.75", "5", "7"})
            QTest::newRow(t) << QString::fromLatin1(t);
    }
    void typed_values_match_the_engine() {
        QFETCH(QString, text);
        FormatExplorer ex;
        QVERIFY(ex.setText(text));
        const float x = std::strtof(text.toLatin1().constData(), nullptr);
        for (Format f : all_formats) {
            const FormatProbe& p = ex.probe(f);
            QCOMPARE(p.bits, encode(f, x));
            QVERIFY(same(p.value, decode(f, encode(f, x))));
            QCOMPARE(p.cls, classify(f, encode(f, x)));
            QVERIFY(same(p.next_up, decode(f, next_up(f, p.bits))));
            QVERIFY(same(p.next_down, decode(f, next_down(f, p.bits))));
            QVERIFY(same(p.ulp, ulp(f, p.value)));
            QVERIFY(!ex.shownText(f, FormatExplorer::valueColumn).isEmpty());
        }
    }

    // REFERENCE.md's corner cases, as the rows show them.
    void fp16_rounds_65520_to_inf_and_e4m3_saturates() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("65520")));
        QCOMPARE(ex.probe(Format::fp16).bits, 0x7C00u);
        QCOMPARE(ex.probe(Format::fp16).cls, FpClass::inf);
        QVERIFY(ex.probe(Format::fp16).overflow);
        QVERIFY(ex.shownText(Format::fp16, FormatExplorer::classColumn).contains(QStringLiteral("overflow")));
        QCOMPARE(ex.probe(Format::e4m3).value, 448.0f);
        QVERIFY(ex.shownText(Format::e4m3, FormatExplorer::classColumn).contains(QStringLiteral("saturated")));
        QCOMPARE(ex.probe(Format::bf16).value, 65536.0f);
        QCOMPARE(ex.probe(Format::fp32).abs_error, 0.0);
        QCOMPARE(ex.probe(Format::bf16).abs_error, 16.0);
        QVERIFY(ex.setText(QStringLiteral("65519.996")));
        QCOMPARE(ex.probe(Format::fp16).value, 65504.0f);
    }

    void subnormals_and_underflow() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("0x1p-24")));
        QCOMPARE(ex.probe(Format::fp16).bits, 0x0001u);
        QCOMPARE(ex.probe(Format::fp16).cls, FpClass::subnormal);
        QCOMPARE(ex.probe(Format::fp16).next_down, 0.0f);
        QCOMPARE(ex.probe(Format::e5m2).cls, FpClass::zero);  // below E5M2's 2^-16: flushed
        QVERIFY(ex.probe(Format::e5m2).underflow);
        QCOMPARE(ex.probe(Format::bf16).cls, FpClass::normal);
        QVERIFY(ex.setText(QStringLiteral("0x1p-25")));  // a tie: to even, zero
        QCOMPARE(ex.probe(Format::fp16).value, 0.0f);
        QVERIFY(ex.shownText(Format::fp16, FormatExplorer::classColumn).contains(QStringLiteral("underflow")));
        QVERIFY(ex.setText(QStringLiteral("0x3p-25")));
        QCOMPARE(ex.probe(Format::fp16).value, 0x1p-23f);
        QCOMPARE(ex.probe(Format::fp16).rel_error, std::fabs(0x1p-23 - 0x3p-25) / 0x3p-25);
    }

    // E2M1 (REFERENCE.md, "FP4"): its row says it has no NaN or inf and saturates at ±6.
    void e2m1_row_saturates_and_has_no_nan_or_inf() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("0.75")));  // a tie between 0.5 and 1: to the even code 0010
        QCOMPARE(ex.probe(Format::e2m1).code, 0x2u);
        QCOMPARE(ex.probe(Format::e2m1).value, 1.0f);
        QCOMPARE(ex.probe(Format::e2m1).next_up, 1.5f);
        QVERIFY(ex.setText(QStringLiteral("100")));
        QCOMPARE(ex.probe(Format::e2m1).value, 6.0f);
        QCOMPARE(ex.probe(Format::e2m1).next_up, 6.0f);  // nothing past 6
        QVERIFY(ex.shownText(Format::e2m1, FormatExplorer::classColumn).contains(QStringLiteral("saturated")));
        QVERIFY(ex.setText(QStringLiteral("nan")));
        QCOMPARE(ex.probe(Format::e2m1).cls, FpClass::zero);
        QVERIFY(ex.shownText(Format::e2m1, FormatExplorer::classColumn).contains(QStringLiteral("no NaN: +0")));
        QVERIFY(ex.setText(QStringLiteral("-inf")));
        QCOMPARE(ex.probe(Format::e2m1).value, -6.0f);
        QVERIFY(ex.shownText(Format::e2m1, FormatExplorer::classColumn).contains(QStringLiteral("no inf: saturated")));
        bool told = false;
        for (const QLabel* l : ex.findChildren<QLabel*>())
            if (l->text().contains(QStringLiteral("FP4 E2M1")))
                told = l->toolTip().contains(QStringLiteral("no inf, no NaN: saturates at ±6"));
        QVERIFY(told);
    }

    void not_a_number_is_refused_and_the_rows_stay() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("2")));
        QVERIFY(!ex.setText(QStringLiteral("two")));
        QCOMPARE(ex.probe(Format::fp32).value, 2.0f);
    }

    // After a bad entry the rows still hold the last valid value, but greyed and said to be stale:
    // bits, cells and range bar disabled, the class without its colour, the message naming the value.
    void a_bad_entry_marks_the_rows_stale_until_a_number_comes() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("1e-6")));  // FP16: subnormal, shown in orange
        QVERIFY(!ex.stale());
        QVERIFY(ex.bitStrip(Format::fp16)->isEnabled());
        QVERIFY(ex.shownText(Format::fp16, FormatExplorer::classColumn).contains(QStringLiteral("#d35400")));
        QVERIFY(!ex.setText(QStringLiteral("1e-6x")));
        QVERIFY(ex.stale());
        for (Format f : all_formats) QVERIFY(!ex.bitStrip(f)->isEnabled());
        QVERIFY(!ex.rangeBar()->isEnabled());
        QVERIFY(!ex.shownText(Format::fp16, FormatExplorer::classColumn).contains(QStringLiteral("#d35400")));
        QVERIFY(ex.shownText(Format::fp16, FormatExplorer::classColumn).contains(QStringLiteral("subnormal")));
        bool named = false;
        for (const QLabel* l : ex.findChildren<QLabel*>())
            named = named || (l->text().contains(QStringLiteral("Not a number")) &&
                              l->text().contains(QStringLiteral("still 9.99999997e-07, the last valid value")));
        QVERIFY(named);
        QVERIFY(ex.setText(QStringLiteral("3")));
        QVERIFY(!ex.stale());
        QVERIFY(ex.bitStrip(Format::fp16)->isEnabled());
        QVERIFY(ex.rangeBar()->isEnabled());
        QCOMPARE(ex.probe(Format::fp16).value, 3.0f);
    }

    // "Subnormal" is explained in a sentence where it is drawn (the range bar) and where it is a
    // value's class, not only as "faint".
    void subnormal_is_explained_in_a_sentence() {
        FormatExplorer ex;
        QVERIFY(ex.setText(QStringLiteral("1e-6")));
        QCOMPARE(ex.probe(Format::fp16).cls, FpClass::subnormal);
        const QString sentence = mpx::ui::concepts::subnormal();
        QVERIFY(sentence.contains(QStringLiteral("smallest normal")) && sentence.contains(QStringLiteral("fewer significant bits")));
        QVERIFY(ex.rangeBar()->toolTip().contains(sentence));
        const QLabel* fp16Class = nullptr;
        for (const QLabel* l : ex.findChildren<QLabel*>())
            if (l->text() == ex.shownText(Format::fp16, FormatExplorer::classColumn)) fp16Class = l;
        QVERIFY(fp16Class);
        QCOMPARE(fp16Class->toolTip(), sentence);
        QVERIFY(ex.setText(QStringLiteral("1")));
        QCOMPARE(fp16Class->toolTip(), QString());  // a normal value: nothing to explain
    }

    // A click on a bit flips it in that format; the decoded result becomes the value of every row.
    void clicking_a_bit_flips_it_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("start");
        QTest::addColumn<int>("bit");
        for (Format f : all_formats) {
            const int n = code_bit_count(f), m = info(f).mantissa_bits;
            const QByteArray name(to_string(f).data(), int(to_string(f).size()));
            QTest::newRow(name + " sign") << f << QStringLiteral("1.5") << n - 1;
            QTest::newRow(name + " top exponent bit") << f << QStringLiteral("1") << n - 2;
            QTest::newRow(name + " last mantissa bit") << f << QStringLiteral("1") << 0;
            QTest::newRow(name + " inf to nan") << f << QStringLiteral("inf") << m - 1;
        }
    }
    void clicking_a_bit_flips_it() {
        QFETCH(Format, format);
        QFETCH(QString, start);
        QFETCH(int, bit);
        FormatExplorer ex;
        ex.resize(1400, 600);
        ex.show();
        QVERIFY(QTest::qWaitForWindowExposed(&ex));
        QVERIFY(ex.setText(start));
        const std::uint32_t before = ex.probe(format).bits;
        QSignalSpy changed(&ex, &FormatExplorer::valueChanged);
        ui::BitStrip* strip = ex.bitStrip(format);
        QTest::mouseClick(strip, Qt::LeftButton, {}, strip->cellRect(bit).center());
        QCOMPARE(changed.count(), 1);
        const float flipped = decode(format, before ^ (format == Format::tf32 ? 1u << (bit + 13) : 1u << bit));
        QVERIFY(same(ex.probe(format).value, flipped));
        for (Format g : all_formats) QCOMPARE(ex.probe(g).bits, encode(g, flipped));
        if (start == QStringLiteral("inf")) QCOMPARE(ex.probe(format).cls, info(format).has_inf ? FpClass::nan : classify(format, ex.probe(format).bits));
    }

    void dragging_on_the_range_bar_picks_a_power_of_two() {
        FormatExplorer ex;
        ex.resize(1400, 600);
        ex.show();
        QVERIFY(QTest::qWaitForWindowExposed(&ex));
        ui::FormatRangeBar* bar = ex.rangeBar();
        const int x = bar->xAt(-20.0);
        QTest::mousePress(bar, Qt::LeftButton, {}, QPoint(x, bar->height() / 2));
        QTest::mouseRelease(bar, Qt::LeftButton, {}, QPoint(x, bar->height() / 2));
        const double expect = std::exp2(bar->log2At(x));
        QVERIFY2(std::fabs(ex.probe(Format::fp32).value / expect - 1.0) < 0.01, qPrintable(ex.text()));
        QCOMPARE(ex.probe(Format::fp16).cls, FpClass::subnormal);  // 2^-20 is below FP16's 2^-14
    }

    // Issue 47 items 11 and 15: in the classroom's text on a 1280-wide laptop the table ran past the
    // window (a sideways scroll bar, "Next down" cut, the range bar's facts cut at the edge). The last
    // columns give way, named under the table; the rest fits; a wide window shows every column.
    void a_narrow_window_drops_the_last_columns_and_names_them() {
        FormatExplorer ex;
        QFont f = ex.font();
        f.setPointSizeF(f.pointSizeF() * ui::Classroom::k_fontScale);
        ex.setFont(f);
        ex.resize(1270, 620);
        ex.show();
        QVERIFY(QTest::qWaitForWindowExposed(&ex));
        QVERIFY(ex.setText(QStringLiteral("65520")));
        auto* scroll = ex.findChild<QScrollArea*>();
        QTRY_VERIFY(scroll->widget()->width() <= scroll->viewport()->width());  // no sideways scroll
        QVERIFY(scroll->widget()->minimumSizeHint().width() <= scroll->viewport()->width());
        QVERIFY(ex.columnShown(FormatExplorer::valueColumn) && ex.columnShown(FormatExplorer::relErrorColumn));
        QVERIFY(!ex.columnShown(FormatExplorer::classColumn));
        QVERIFY2(ex.hiddenNote().contains(QStringLiteral("Class")), qPrintable(ex.hiddenNote()));
        const QStringList heads = {"Stored value", "Abs. error", "Rel. error", "ulp here", "Next down", "Next up", "Class"};
        for (int c = FormatExplorer::valueColumn; c < FormatExplorer::columnCount; ++c)  // each hidden column named
            if (!ex.columnShown(static_cast<FormatExplorer::Column>(c)))
                QVERIFY2(ex.hiddenNote().contains(heads[c]), qPrintable(heads[c] + QStringLiteral(": ") + ex.hiddenNote()));
        ex.resize(2400, 620);
        for (int c = FormatExplorer::valueColumn; c < FormatExplorer::columnCount; ++c)
            QTRY_VERIFY(ex.columnShown(static_cast<FormatExplorer::Column>(c)));
        QCOMPARE(ex.hiddenNote(), QString());
    }
};

QTEST_MAIN(TestFormatExplorer)
#include "test_format_explorer.moc"
