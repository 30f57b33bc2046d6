// `mpx-cli format` end to end: runs the built binary and checks its CSV rows and its table against
// values worked out by hand from the bit layouts (REFERENCE.md, "Number formats"), the exit code
// and message for a bad value, and exact hex-float input. Rule: every expected bit pattern has its
// derivation beside it; the engine is never asked for the answer.
#include <QtTest>

#include <QProcess>
#include <QRegularExpression>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace {

struct CliRun {
    int exit_code = -1;
    QString out, err;
};

CliRun run_cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(MPX_CLI_PATH), args);
    CliRun r;
    if (!p.waitForStarted(10000)) {
        r.err = QStringLiteral("could not start ") + QStringLiteral(MPX_CLI_PATH);
        return r;
    }
    if (!p.waitForFinished(30000)) {
        p.kill();
        p.waitForFinished(5000);
        r.err = QStringLiteral("timed out");
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

// CSV output as one map per row, keyed by the header's column names.
struct Csv {
    QStringList header;
    QList<QHash<QString, QString>> rows;
    const QHash<QString, QString>* find(const QString& input, const QString& format) const {
        for (const auto& r : rows)
            if (r.value(QStringLiteral("input")) == input &&
                r.value(QStringLiteral("format")) == format)
                return &r;
        return nullptr;
    }
};

Csv parse_csv(const QString& text) {
    Csv csv;
    const QStringList lines = text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (lines.isEmpty()) return csv;
    csv.header = lines.front().split(QLatin1Char(','));
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QStringList cells = lines[i].split(QLatin1Char(','));  // no quoting in these inputs
        QHash<QString, QString> row;
        for (qsizetype c = 0; c < csv.header.size() && c < cells.size(); ++c)
            row[csv.header[c]] = cells[c];
        row[QStringLiteral("#cells")] = QString::number(cells.size());
        csv.rows.push_back(row);
    }
    return csv;
}

float to_float(const QString& s) { return std::strtof(s.toLatin1().constData(), nullptr); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

const QStringList k_formats = {"fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1"};
const QStringList k_sample = {"format", "--csv", "65519.996", "65520", "1e-8", "3.0e38", "nan"};

}  // namespace

class TestCliFormat : public QObject {
    Q_OBJECT

private slots:
    void csv_header_and_one_row_per_format();
    void csv_rows_data();
    void csv_rows();
    void hex_float_input_parses_exactly_data();
    void hex_float_input_parses_exactly();
    void table_shows_value_class_and_note();
    void bad_value_is_named_and_the_rest_still_print_data();
    void bad_value_is_named_and_the_rest_still_print();
    void input_beyond_fp32_range_overflows_or_underflows();
    void saturate_option_clamps_to_max_finite();
    void formats_option_selects_and_rejects_names();
    void e2m1_notes_say_no_nan_no_inf_and_saturation();
};

void TestCliFormat::csv_header_and_one_row_per_format() {
    const CliRun r = run_cli(k_sample);
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.err, QString());
    QVERIFY(r.out.startsWith(QStringLiteral("input,format,bits,value,abs_error,rel_error,class")));
    const Csv csv = parse_csv(r.out);
    QVERIFY(csv.header.contains(QStringLiteral("overflow")));
    QVERIFY(csv.header.contains(QStringLiteral("underflow")));
    QCOMPARE(csv.rows.size(), qsizetype(5 * k_formats.size()));
    const QStringList inputs = {"65519.996", "65520", "1e-8", "3.0e38", "nan"};
    for (qsizetype i = 0; i < csv.rows.size(); ++i) {
        const auto& row = csv.rows[i];
        QCOMPARE(row.value(QStringLiteral("#cells")).toInt(), int(csv.header.size()));
        QCOMPARE(row.value(QStringLiteral("input")), inputs[i / k_formats.size()]);
        QCOMPARE(row.value(QStringLiteral("format")), k_formats[i % k_formats.size()]);
    }
}

void TestCliFormat::csv_rows_data() {
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("bits");  // empty: not checked
    QTest::addColumn<float>("value");   // NaN: expect nan
    QTest::addColumn<QString>("cls");
    QTest::addColumn<int>("overflow");
    QTest::addColumn<int>("underflow");
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto row = [](const char* name, const char* input, const char* format, const char* bits,
                        float value, const char* cls, int overflow, int underflow) {
        QTest::newRow(name) << QString::fromLatin1(input) << QString::fromLatin1(format)
                            << QString::fromLatin1(bits) << value << QString::fromLatin1(cls)
                            << overflow << underflow;
    };

    // 65519.996 is FP32 0x477FEFFF = 65519.99609375, the nearest multiple of FP32's spacing 2^-8.
    row("65519.996_fp32_exact_float", "65519.996", "fp32", "0x477FEFFF", 65519.99609375f, "normal",
        0, 0);
    // Below FP16's threshold 65520: rounds to max finite 65504 (REFERENCE.md).
    row("65519.996_fp16_65504", "65519.996", "fp16", "0x7BFF", 65504.0f, "normal", 0, 0);
    // BF16 keeps the top 16 bits 0x477F; the dropped 0xEFFF is over half: up to 0x4780 = 65536.
    row("65519.996_bf16_65536", "65519.996", "bf16", "0x4780", 65536.0f, "normal", 0, 0);
    row("65519.996_e4m3_saturates", "65519.996", "e4m3", "0x7E", 448.0f, "normal", 1, 0);
    row("65519.996_e5m2_inf", "65519.996", "e5m2", "0x7C", inf, "inf", 1, 0);
    row("65520_fp16_inf", "65520", "fp16", "0x7C00", inf, "inf", 1, 0);
    // 65520 = 0x477FF000: the 13 dropped bits are exactly half (0x1000) and the kept LSB is odd.
    row("65520_tf32_ties_to_even_65536", "65520", "tf32", "0x47800000", 65536.0f, "normal", 0, 0);
    row("65520_e5m2_inf", "65520", "e5m2", "0x7C", inf, "inf", 1, 0);
    // 1e-8 lies below 2^-25, half of FP16's smallest subnormal: zero, an underflow.
    row("1e-8_fp16_underflows", "1e-8", "fp16", "0x0000", 0.0f, "zero", 0, 1);
    row("1e-8_e4m3_underflows", "1e-8", "e4m3", "0x00", 0.0f, "zero", 0, 1);
    row("1e-8_e5m2_underflows", "1e-8", "e5m2", "0x00", 0.0f, "zero", 0, 1);
    // 1e-8 is FP32 0x322BCC77; BF16 drops 0xCC77 (over half): 0x322C.
    row("1e-8_bf16_normal", "1e-8", "bf16", "0x322C", float_of(0x322C0000u), "normal", 0, 0);
    // 3.0e38 is FP32 0x7F61B1E6; BF16 drops 0xB1E6 (over half): 0x7F62. TF32 drops 0x11E6 (over
    // half of 0x2000): 0x7F61A000 + 0x2000.
    row("3.0e38_fp32", "3.0e38", "fp32", "0x7F61B1E6", 3.0e38f, "normal", 0, 0);
    row("3.0e38_bf16", "3.0e38", "bf16", "0x7F62", float_of(0x7F620000u), "normal", 0, 0);
    row("3.0e38_tf32", "3.0e38", "tf32", "0x7F61C000", float_of(0x7F61C000u), "normal", 0, 0);
    row("3.0e38_fp16_inf", "3.0e38", "fp16", "0x7C00", inf, "inf", 1, 0);
    row("3.0e38_e4m3_saturates", "3.0e38", "e4m3", "0x7E", 448.0f, "normal", 1, 0);
    // E2M1 (one hex digit: a 4-bit code) saturates at 6 and has no NaN: NaN becomes +0, as TE's cast.
    row("65519.996_e2m1_saturates", "65519.996", "e2m1", "0x7", 6.0f, "normal", 1, 0);
    row("1e-8_e2m1_underflows", "1e-8", "e2m1", "0x0", 0.0f, "zero", 0, 1);
    row("3.0e38_e2m1_saturates", "3.0e38", "e2m1", "0x7", 6.0f, "normal", 1, 0);
    row("nan_e2m1_is_+0", "nan", "e2m1", "0x0", 0.0f, "zero", 0, 0);
    // NaN stays NaN everywhere else; BF16's is the canonical 0x7FC0, E4M3's the only positive NaN 0x7F.
    for (const QString& f : k_formats) {
        if (f == "e2m1") continue;
        const QString bits = f == "bf16" ? "0x7FC0" : f == "e4m3" ? "0x7F" : "";
        QTest::addRow("nan_%s", qPrintable(f)) << "nan" << f << bits << nan << "nan" << 0 << 0;
    }
}

void TestCliFormat::csv_rows() {
    QFETCH(QString, input);
    QFETCH(QString, format);
    QFETCH(QString, bits);
    QFETCH(float, value);
    QFETCH(QString, cls);
    QFETCH(int, overflow);
    QFETCH(int, underflow);

    static const CliRun r = run_cli(k_sample);  // one run serves every row
    QCOMPARE(r.exit_code, 0);
    const Csv csv = parse_csv(r.out);
    const auto* row = csv.find(input, format);
    QVERIFY2(row, "row missing");
    if (!bits.isEmpty()) QCOMPARE(row->value("bits"), bits);
    const float got = to_float(row->value("value"));
    if (std::isnan(value)) {
        QVERIFY(std::isnan(got));
    } else {
        QCOMPARE(got, value);
    }
    QCOMPARE(row->value("class"), cls);
    QCOMPARE(row->value("overflow").toInt(), overflow);
    QCOMPARE(row->value("underflow").toInt(), underflow);

    // Errors against the decimal input read as a double: |stored - input| and that over |input|.
    const QString abs = row->value("abs_error"), rel = row->value("rel_error");
    if (std::isnan(value)) {
        QCOMPARE(abs, QStringLiteral("0"));  // NaN stored for NaN given: nothing lost
    } else if (std::isinf(value)) {
        QCOMPARE(abs, QStringLiteral("inf"));
        QCOMPARE(rel, QStringLiteral("inf"));
    } else {
        const double exact = std::strtod(input.toLatin1().constData(), nullptr);
        const double want_abs = std::fabs(static_cast<double>(value) - exact);
        QCOMPARE(std::strtod(abs.toLatin1().constData(), nullptr), want_abs);
        QCOMPARE(std::strtod(rel.toLatin1().constData(), nullptr), want_abs / std::fabs(exact));
    }
}

void TestCliFormat::hex_float_input_parses_exactly_data() {
    QTest::addColumn<QString>("input");
    QTest::addColumn<float>("fp32_value");
    QTest::addColumn<QString>("fp32_bits");
    QTest::addColumn<QString>("fp16_bits");
    QTest::addColumn<QString>("fp16_class");
    QTest::addColumn<int>("overflow");
    QTest::addColumn<int>("underflow");
    // 2^-24 is FP16's smallest subnormal, code 1; 2^-25 is half of it, a tie to even zero;
    // 1.5·2^-24 is a tie between codes 1 and 2, to 2; 0x1.ffep15 = 65520 is FP16's threshold.
    const auto row = [](const char* name, const char* input, float value, const char* fp32_bits,
                        const char* fp16_bits, const char* fp16_class, int overflow,
                        int underflow) {
        QTest::newRow(name) << QString::fromLatin1(input) << value << QString::fromLatin1(fp32_bits)
                            << QString::fromLatin1(fp16_bits) << QString::fromLatin1(fp16_class)
                            << overflow << underflow;
    };
    // FP32 bits: the exponent field e + 127 sits at bit 23 (2^-24: 103 = 0x67, so 0x33800000).
    row("2^-24_min_subnormal", "0x1p-24", 0x1p-24f, "0x33800000", "0x0001", "subnormal", 0, 0);
    row("2^-25_ties_to_zero", "0x1p-25", 0x1p-25f, "0x33000000", "0x0000", "zero", 0, 1);
    row("3x2^-25_ties_to_2^-23", "0x1.8p-24", 0x1.8p-24f, "0x33C00000", "0x0002", "subnormal", 0,
        0);
    row("65520_overflows", "0x1.ffep15", 65520.0f, "0x477FF000", "0x7C00", "inf", 1, 0);
}

void TestCliFormat::hex_float_input_parses_exactly() {
    QFETCH(QString, input);
    QFETCH(float, fp32_value);
    QFETCH(QString, fp32_bits);
    QFETCH(QString, fp16_bits);
    QFETCH(QString, fp16_class);
    QFETCH(int, overflow);
    QFETCH(int, underflow);
    const CliRun r = run_cli({"format", "--csv", input});
    QCOMPARE(r.exit_code, 0);
    const Csv csv = parse_csv(r.out);
    const auto* fp32 = csv.find(input, "fp32");
    const auto* fp16 = csv.find(input, "fp16");
    QVERIFY(fp32 && fp16);
    QCOMPARE(fp32->value("bits"), fp32_bits);
    QCOMPARE(to_float(fp32->value("value")), fp32_value);
    QCOMPARE(fp32->value("abs_error"), QStringLiteral("0"));  // exact input: FP32 loses nothing
    QCOMPARE(fp16->value("bits"), fp16_bits);
    QCOMPARE(fp16->value("class"), fp16_class);
    QCOMPARE(fp16->value("overflow").toInt(), overflow);
    QCOMPARE(fp16->value("underflow").toInt(), underflow);
}

void TestCliFormat::table_shows_value_class_and_note() {
    const CliRun r = run_cli({"format", "65519.996", "65520", "1e-8"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.err, QString());
    const auto has = [&](const char* pattern) {
        return QRegularExpression(QString::fromLatin1(pattern), QRegularExpression::MultilineOption)
            .match(r.out)
            .hasMatch();
    };
    QVERIFY(r.out.contains(QStringLiteral("65519.996  (as FP32: 65519.996)\n")));
    QVERIFY(r.out.contains(QStringLiteral("65520  (as FP32: 65520)\n")));
    QVERIFY(r.out.contains(QStringLiteral("1e-8  (as FP32: 1e-08)\n")));
    QCOMPARE(r.out.count(QRegularExpression(
                 QStringLiteral("^\\s+fmt\\s+bits\\s+value\\s+abs_error\\s+rel_error\\s+"
                                "class\\s+note$"),
                 QRegularExpression::MultilineOption)),
             qsizetype(3));
    QVERIFY(has(R"(^\s+fp16\s+0x7BFF\s+65504\s+15\.99\d*\s+\S+\s+normal\s*$)"));  // no note
    QVERIFY(has(R"(^\s+fp16\s+0x7C00\s+inf\s+inf\s+inf\s+inf\s+overflow$)"));
    QVERIFY(has(R"(^\s+e4m3\s+0x7E\s+448\s+\S+\s+\S+\s+normal\s+overflow \(saturated\)$)"));
    QVERIFY(has(R"(^\s+e5m2\s+0x7C\s+inf\s+inf\s+inf\s+inf\s+overflow$)"));
    QVERIFY(has(R"(^\s+fp16\s+0x0000\s+0\s+1e-08\s+1\s+zero\s+underflow$)"));
    QVERIFY(has(R"(^\s+tf32\s+0x47800000\s+65536\s+16\s+\S+\s+normal\s*$)"));
}

void TestCliFormat::bad_value_is_named_and_the_rest_still_print_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("row_pattern");  // one line per (value, format)
    QTest::newRow("table") << QStringList{"format", "1.5", "abc", "2"}
                           << R"(^\s+(fp32|tf32|fp16|bf16|e4m3|e5m2|e2m1)\s+0x[0-9A-F]+\s)";
    QTest::newRow("csv") << QStringList{"format", "--csv", "1.5", "abc", "2"}
                         << R"(^(1\.5|2),(fp32|tf32|fp16|bf16|e4m3|e5m2|e2m1),0x[0-9A-F]+,)";
}

void TestCliFormat::bad_value_is_named_and_the_rest_still_print() {
    QFETCH(QStringList, args);
    QFETCH(QString, row_pattern);
    const CliRun r = run_cli(args);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("'abc'")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("not a number")), qPrintable(r.err));
    QVERIFY(!r.out.contains(QStringLiteral("abc")));
    QCOMPARE(r.out.count(QRegularExpression(row_pattern, QRegularExpression::MultilineOption)),
             qsizetype(2 * k_formats.size()));
    // 1.5 = 1.1b·2^0 and 2 = 2^1 are exact in every format: FP16 0x3E00, E4M3 0x40 for 2.
    QVERIFY(QRegularExpression(R"(^\s*(1\.5,)?fp16[\s,]+0x3E00[\s,]+1\.5[\s,])",
                               QRegularExpression::MultilineOption)
                .match(r.out)
                .hasMatch());
    QVERIFY(QRegularExpression(R"(^\s*(2,)?e4m3[\s,]+0x40[\s,]+2[\s,])",
                               QRegularExpression::MultilineOption)
                .match(r.out)
                .hasMatch());
}

// 1e39 is finite but beyond FP32: it overflows on the way in, in every format; 1e-50 underflows.
void TestCliFormat::input_beyond_fp32_range_overflows_or_underflows() {
    const CliRun r = run_cli({"format", "--csv", "1e39", "1e-50"});
    QCOMPARE(r.exit_code, 0);
    const Csv csv = parse_csv(r.out);
    for (const QString& f : k_formats) {
        const auto* big = csv.find("1e39", f);
        const auto* tiny = csv.find("1e-50", f);
        QVERIFY(big && tiny);
        QCOMPARE(big->value("overflow"), QStringLiteral("1"));
        QCOMPARE(tiny->value("underflow"), QStringLiteral("1"));
        QCOMPARE(tiny->value("class"), QStringLiteral("zero"));
    }
    QCOMPARE(csv.find("1e39", "fp32")->value("bits"), QStringLiteral("0x7F800000"));
    QCOMPARE(csv.find("1e39", "e4m3")->value("bits"), QStringLiteral("0x7E"));  // saturated
    QCOMPARE(csv.find("1e39", "e2m1")->value("bits"), QStringLiteral("0x7"));   // saturated
}

void TestCliFormat::saturate_option_clamps_to_max_finite() {
    const CliRun r = run_cli({"format", "--csv", "--overflow", "saturate", "65520"});
    QCOMPARE(r.exit_code, 0);
    const Csv csv = parse_csv(r.out);
    const auto* fp16 = csv.find("65520", "fp16");
    const auto* e5m2 = csv.find("65520", "e5m2");
    QVERIFY(fp16 && e5m2);
    QCOMPARE(fp16->value("bits"), QStringLiteral("0x7BFF"));
    QCOMPARE(to_float(fp16->value("value")), 65504.0f);
    QCOMPARE(fp16->value("overflow"), QStringLiteral("1"));
    QCOMPARE(e5m2->value("bits"), QStringLiteral("0x7B"));
    QCOMPARE(to_float(e5m2->value("value")), 57344.0f);
}

void TestCliFormat::formats_option_selects_and_rejects_names() {
    const CliRun ok = run_cli({"format", "--csv", "--formats", "fp16,bf16", "1"});
    QCOMPARE(ok.exit_code, 0);
    const Csv csv = parse_csv(ok.out);
    QCOMPARE(csv.rows.size(), qsizetype(2));
    QCOMPARE(csv.rows[0].value("format"), QStringLiteral("fp16"));
    QCOMPARE(csv.rows[1].value("format"), QStringLiteral("bf16"));

    const CliRun bad = run_cli({"format", "--formats", "fp16,fp42", "1"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains(QStringLiteral("'fp42'")), qPrintable(bad.err));
}

// E2M1 has neither NaN nor inf: the table says what became of them, and "fp4" names it too.
void TestCliFormat::e2m1_notes_say_no_nan_no_inf_and_saturation() {
    const CliRun r = run_cli({"format", "--formats", "fp4", "nan", "-inf", "7", "0.75"});
    QCOMPARE(r.exit_code, 0);
    const auto has = [&](const char* pattern) {
        return QRegularExpression(QString::fromLatin1(pattern), QRegularExpression::MultilineOption)
            .match(r.out)
            .hasMatch();
    };
    QVERIFY2(has(R"(^\s+e2m1\s+0x0\s+0\s+nan\s+nan\s+zero\s+no NaN in e2m1: \+0$)"), qPrintable(r.out));
    QVERIFY2(has(R"(^\s+e2m1\s+0xF\s+-6\s+inf\s+inf\s+normal\s+no inf in e2m1: saturated$)"), qPrintable(r.out));
    QVERIFY2(has(R"(^\s+e2m1\s+0x7\s+6\s+1\s+\S+\s+normal\s+overflow \(saturated\)$)"), qPrintable(r.out));
    QVERIFY2(has(R"(^\s+e2m1\s+0x2\s+1\s+0\.25\s+\S+\s+normal\s*$)"), qPrintable(r.out));  // a tie, to even
}

// QProcess needs an event dispatcher, hence a QCoreApplication (not QTEST_APPLESS_MAIN).
QTEST_GUILESS_MAIN(TestCliFormat)
#include "test_cli_format.moc"
