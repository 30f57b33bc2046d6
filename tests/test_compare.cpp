// `mpx-cli compare` and engine/io/run_compare.hpp: the reader (RFC 4180, '#' lines, CRLF), the rule
// of a step's agreement per column kind, the exit status (0 agree, 1 differ, 2 bad input, with one
// line on stderr), a real `mpx-cli run --csv` export compared with itself and a perturbed copy.
// --expect (engine/io/run_expect.hpp) is tested in test_compare_expect.cpp.
// Rule: every expected number is worked out beside its row; the comparison is never asked for it.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <limits>

#include "engine/base/error.hpp"
#include "engine/io/run_compare.hpp"
#include "engine/io/run_expect.hpp"
#include "compare_test_support.hpp"

namespace {

// A run CSV as a PyTorch script writes it: mpx's column names, a subset of its columns, step-major
// rows like mpx's export. Values are simple functions of (run, step).
struct Table {
    QStringList header{"run", "precision", "mode", "step", "loss", "loss_scale", "found_inf", "skipped",
                       "scale_event", "grad_norm", "lr", "eval_loss", "eval_accuracy"};
    QList<QStringList> rows;

    QString& at(const QString& run, long long step, const QString& column) {
        const auto c = header.indexOf(column);
        for (auto& row : rows)
            if (row[0] == run && row[3].toLongLong() == step) return row[c];
        qFatal("no row %s/%lld", qPrintable(run), step);
    }
    void drop_column(const QString& column) {
        const auto c = header.indexOf(column);
        header.removeAt(c);
        for (auto& row : rows) row.removeAt(c);
    }
    QString text(const char* eol = "\n") const {
        QString s = header.join(QLatin1Char(',')) + QLatin1String(eol);
        for (const auto& row : rows) s += row.join(QLatin1Char(',')) + QLatin1String(eol);
        return s;
    }
};

Table make_table(const QStringList& runs = {"fp32", "amp-bf16"}, int steps = 10) {
    Table t;
    for (int step = 0; step < steps; ++step)
        for (int r = 0; r < runs.size(); ++r) {
            const bool evaluated = step == 0 || step == steps - 1;
            t.rows.push_back({runs[r], r ? "bf16" : "fp32", r ? "amp" : "fp32", QString::number(step),
                              QString::number(0.7 * std::exp(-0.01 * step) + 0.001 * r, 'g', 17), "65536", "0", "0",
                              step % 10 == 9 ? "grow" : "none", QString::number(1.5 / (1 + step), 'g', 17), "0.001",
                              evaluated ? "0.69" : "", evaluated ? "0.5" : ""});
        }
    return t;
}

// The table row of `column` in the report block of `run`.
QString report_row(const QString& out, const QString& run, const QString& column) {
    const auto block = out.indexOf(QStringLiteral("\nrun ") + run + QStringLiteral(":"));
    if (block < 0) return {};
    const auto end = out.indexOf(QStringLiteral("\n\n"), block + 1);
    for (const QString& line : out.mid(block, end < 0 ? -1 : end - block).split(QLatin1Char('\n')))
        if (line.startsWith(QStringLiteral("  ") + column + QLatin1Char(' '))) return line.simplified();
    return {};
}

mpx::RunTable table_of(const Table& t, const std::string& name) {
    return mpx::RunTable::parse(t.text().toStdString(), name);
}

// The message of the ConfigError `f` throws, or "" when it throws none.
template <class F>
QString error_of(F&& f) {
    try {
        f();
    } catch (const mpx::ConfigError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(QFileInfo::exists(QStringLiteral(MPX_CLI_PATH)),
                 "mpx-cli is not built: build the mpx-cli target before this test");
    }

    // --- the library ---

    void reader_unquotes_rfc4180_fields_and_counts_lines() {
        // Line 1 a comment, 2 the header; the row on line 3 holds a quoted comma, a doubled quote
        // and a line break, so the next row starts on line 5.
        const std::string text = "# torch.amp.GradScaler mirror\r\nrun,step,loss\r\n"
                                 "\"a,\"\"b\"\"\nc\",0,1.5\r\nplain,1,\r\n";
        const mpx::RunTable t = mpx::RunTable::parse(text, "t.csv");
        QCOMPARE(t.columns(), (std::vector<std::string>{"run", "step", "loss"}));
        QCOMPARE(t.row_count(), std::size_t(2));
        QCOMPARE(t.cell(0, 0), std::string_view("a,\"b\"\nc"));
        QCOMPARE(t.cell(0, 2), std::string_view("1.5"));
        QCOMPARE(t.cell(1, 2), std::string_view(""));
        QCOMPARE(t.line(0), 3);
        QCOMPARE(t.line(1), 5);
        QCOMPARE(t.runs(), (std::vector<std::string>{"a,\"b\"\nc", "plain"}));
        QCOMPARE(t.steps_of("plain").begin()->first, 1LL);
        QCOMPARE(t.column("loss"), 2);
        QCOMPARE(t.column("lr"), -1);
    }

    void reader_errors_name_file_and_line_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty") << "" << "t.csv is empty";
        QTest::newRow("only_comments") << "# a\n\n# b\n" << "t.csv has no header row";
        QTest::newRow("header_only") << "run,step,loss\n" << "t.csv has a header but no rows";
        QTest::newRow("no_step_column") << "run,loss\nx,1\n" << "t.csv:1: the header has no 'step' column";
        QTest::newRow("fewer_fields") << "run,step,loss\nx,0,1\nx,1\n" << "t.csv:3: 2 fields, but the header has 3 columns";
        QTest::newRow("more_fields") << "run,step,loss\nx,0,1,2\n" << "t.csv:2: 4 fields, but the header has 3 columns";
        QTest::newRow("quote_inside_unquoted") << "run,step,loss\nx,0,1\"5\n"
                                               << "t.csv:2: field 3 has a quote but does not start with one";
        QTest::newRow("text_after_quote") << "run,step,loss\n\"x\"y,0,1\n" << "t.csv:2: field 1 has text after its closing quote";
        QTest::newRow("quote_never_closed") << "run,step,loss\nx,0,1\n\"y,1,2\n"
                                            << "t.csv:3: field 1 opens a quote that is never closed";
        QTest::newRow("duplicate_step") << "run,step,loss\nx,0,1\ny,0,1\nx,0,2\n"
                                        << "t.csv:4: run 'x' step 0 appears twice (first on line 2)";
        QTest::newRow("step_not_integer") << "run,step,loss\nx,0.5,1\n" << "t.csv:2: step '0.5' is not a whole number";
        QTest::newRow("empty_run") << "run,step,loss\n,0,1\n" << "t.csv:2: the run cell is empty";
        QTest::newRow("duplicate_column") << "run,step,loss,loss\nx,0,1,1\n" << "t.csv:1: the header names 'loss' twice";
    }
    void reader_errors_name_file_and_line() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        const QString got = error_of([&] { mpx::RunTable::parse(text.toStdString(), "t.csv"); });
        QVERIFY2(got.startsWith(message), qPrintable(got));
    }

    void column_rules_follow_the_brief() {
        using mpx::CompareKind;
        const auto rule = [](const char* c) { return mpx::column_rule(c); };
        QCOMPARE(rule("loss")->kind, CompareKind::relative);
        QCOMPARE(rule("loss")->tolerance, 1e-5);
        QCOMPARE(rule("grad_norm")->tolerance, 1e-4);
        QCOMPARE(rule("lr")->tolerance, 1e-6);
        QCOMPARE(rule("eval_loss")->tolerance, 1e-5);
        QCOMPARE(rule("eval_accuracy")->tolerance, 0.0);
        for (const char* c : {"loss_scale", "found_inf", "skipped"}) {
            QCOMPARE(rule(c)->kind, CompareKind::exact);
            QCOMPARE(rule(c)->tolerance, 0.0);
        }
        QCOMPARE(rule("scale_event")->kind, CompareKind::text);
        QCOMPARE(rule("underflow_frac")->kind, CompareKind::relative);
        QVERIFY(!rule("run"));
        QVERIFY(!rule("step"));
        QVERIFY(!rule("losss"));
        QStringList defaults;
        for (const auto& d : mpx::default_compared_columns())
            defaults << QString::fromLatin1(d.name.data(), qsizetype(d.name.size())) + (d.optional ? "*" : "");
        QCOMPARE(defaults, (QStringList{"loss", "loss_scale", "found_inf", "skipped", "scale_event*", "grad_norm*", "lr",
                                        "eval_loss*", "eval_accuracy*"}));
        QCOMPARE(QString::fromStdString(mpx::default_columns_text()),
                 QStringLiteral("loss (rel 1e-5), loss_scale (exact), found_inf (exact), skipped (exact), "
                                "scale_event* (text), grad_norm* (rel 1e-4), lr (rel 1e-6), eval_loss* (rel 1e-5), "
                                "eval_accuracy* (rel 0); * where both files have it"));
    }

    void tolerance_and_range_options_parse_or_say_why_data() {
        QTest::addColumn<QString>("option");  // tol, steps or runs
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");  // empty: accepted
        QTest::newRow("tol_ok") << "tol" << "loss=1e-4" << "";
        QTest::newRow("tol_share_ok") << "tol" << "found_inf=0.02" << "";
        QTest::newRow("tol_negative") << "tol" << "loss=-1e-4" << "--tol: loss=-1e-4: the tolerance must be a number >= 0";
        QTest::newRow("tol_nan") << "tol" << "loss=nan" << "--tol: loss=nan: the tolerance must be a number >= 0";
        QTest::newRow("tol_word") << "tol" << "loss=small" << "--tol: loss=small: the tolerance must be a number >= 0";
        QTest::newRow("tol_no_equals") << "tol" << "loss" << "--tol: 'loss' is not COLUMN=X";
        QTest::newRow("tol_unknown") << "tol" << "losss=1" << "--tol: 'losss' is not a column of a run CSV";
        QTest::newRow("tol_key") << "tol" << "step=1" << "--tol: 'step' is how rows are lined up";
        QTest::newRow("tol_share_above_one") << "tol" << "skipped=2" << "--tol: skipped=2: for this column";
        QTest::newRow("steps_ok") << "steps" << "3-7" << "";
        QTest::newRow("steps_one_number") << "steps" << "5" << "--steps: '5' is not FIRST-LAST";
        QTest::newRow("steps_reversed") << "steps" << "7-3" << "--steps: '7-3': FIRST must be at least 0 and at most LAST";
        QTest::newRow("steps_negative") << "steps" << "-1-3" << "--steps: '-1-3': FIRST must be at least 0";
        QTest::newRow("runs_ok") << "runs" << "fp32,amp-bf16" << "";
        QTest::newRow("runs_empty_label") << "runs" << "fp32,,x" << "--runs: 'fp32,,x' has an empty run label";
    }
    void tolerance_and_range_options_parse_or_say_why() {
        QFETCH(QString, option);
        QFETCH(QString, text);
        QFETCH(QString, message);
        const std::string s = text.toStdString();
        const QString got = error_of([&] {
            if (option == "tol") mpx::parse_tolerance(s);
            else if (option == "steps") mpx::parse_step_range(s);
            else mpx::parse_run_list(s);
        });
        QVERIFY2(message.isEmpty() ? got.isEmpty() : got.startsWith(message), qPrintable(got));
        if (text == "loss=1e-4") QCOMPARE(mpx::parse_tolerance(s), (std::pair<std::string, double>{"loss", 1e-4}));
        if (text == "3-7") QCOMPARE(mpx::parse_step_range(s), (std::pair<long long, long long>{3, 7}));
        if (text == "fp32,amp-bf16") QCOMPARE(mpx::parse_run_list(s), (std::vector<std::string>{"fp32", "amp-bf16"}));
    }

    // One loss cell per side at step 4 of amp-bf16 (every other cell equal), default tolerance 1e-5.
    void a_step_agrees_by_the_rule_data() {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::addColumn<bool>("agree");
        QTest::addColumn<double>("max_abs");  // NaN: not checked
        QTest::addColumn<QString>("note");   // at the first parting step
        QTest::newRow("nan_nan") << "nan" << "nan" << true << 0.0 << "";
        QTest::newRow("nan_one") << "nan" << "1" << false << qInf() << "nan vs 1";
        QTest::newRow("empty_empty") << "" << "" << true << 0.0 << "";
        QTest::newRow("empty_value") << "" << "0.5" << false << qInf() << "empty vs 0.5";
        QTest::newRow("inf_inf") << "inf" << "inf" << true << 0.0 << "";
        QTest::newRow("inf_minus_inf") << "inf" << "-inf" << false << qInf() << "inf vs -inf";
        QTest::newRow("inf_huge") << "inf" << "1e308" << false << qInf() << "inf vs 1e308";
        QTest::newRow("zero_minus_zero") << "0" << "-0" << true << 0.0 << "";
        // |2 - 2.00002| = 2e-5 (to rounding) <= 1e-5 * 2.00002: agree.
        QTest::newRow("within_relative") << "2" << "2.00002" << true << qQNaN() << "";
        // |1 - 1.00002| / 1.00002 = 1.99996e-5 > 1e-5.
        QTest::newRow("beyond_relative") << "1" << "1.00002" << false << qQNaN() << "rel 2e-5 > 1e-5";
        QTest::newRow("written_differently") << "0.5" << "5e-1" << true << 0.0 << "";
    }
    void a_step_agrees_by_the_rule() {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QFETCH(bool, agree);
        QFETCH(double, max_abs);
        QFETCH(QString, note);
        Table ta = make_table(), tb = make_table();
        ta.at("amp-bf16", 4, "loss") = a;
        tb.at("amp-bf16", 4, "loss") = b;
        const auto report = mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), {});
        QCOMPARE(report.agree(), agree);
        const mpx::ColumnResult& loss = report.runs[1].columns[0];
        QCOMPARE(report.runs[1].run, std::string("amp-bf16"));
        QCOMPARE(loss.column, std::string("loss"));
        QCOMPARE(loss.steps, 10LL);
        QCOMPARE(loss.differing, agree ? 0LL : 1LL);
        QCOMPARE(loss.first_apart.has_value(), !agree);
        if (!agree) QCOMPARE(*loss.first_apart, 4LL);
        if (!std::isnan(max_abs)) QCOMPARE(loss.max_abs, max_abs);
        QCOMPARE(QString::fromStdString(loss.first_note), note);
        QVERIFY(report.runs[0].columns[0].ok);  // fp32's loss untouched
    }

    void relative_column_reports_largest_differences() {
        Table ta = make_table(), tb = make_table();
        // Step 2: a = 4, b = 4.0001 (rel 2.5e-5); step 6: a = 0.001, b = 0.00100003 (rel 3e-5, abs 3e-8).
        ta.at("fp32", 2, "loss") = "4";
        tb.at("fp32", 2, "loss") = "4.0001";
        ta.at("fp32", 6, "loss") = "0.001";
        tb.at("fp32", 6, "loss") = "0.00100003";
        const auto report = mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), {});
        const mpx::ColumnResult& loss = report.runs[0].columns[0];
        QCOMPARE(loss.differing, 2LL);
        QCOMPARE(*loss.first_apart, 2LL);
        QVERIFY(std::fabs(loss.max_abs - 1e-4) < 1e-12);
        QVERIFY(std::fabs(loss.max_rel - 3e-5 / 1.00003) < 1e-12);
        QVERIFY(!loss.ok);
        QCOMPARE(QString::fromStdString(loss.first_note), QStringLiteral("rel 2.5e-5 > 1e-5"));
    }

    // loss_scale is read as a number: 65536 and 6.5536e4 are the same scale.
    void scaler_columns_are_exact_with_a_share_of_steps() {
        Table ta = make_table({"amp-fp16"}, 100), tb = make_table({"amp-fp16"}, 100);
        tb.at("amp-fp16", 0, "loss_scale") = "6.5536e4";
        tb.at("amp-fp16", 37, "found_inf") = "1";
        tb.at("amp-fp16", 38, "scale_event") = "backoff";
        for (const double share : {0.0, 0.01, 0.02}) {
            mpx::CompareOptions o;
            o.tolerances = {{"found_inf", share}};
            const auto report = mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), o);
            const auto& cols = report.runs[0].columns;
            QCOMPARE(cols[1].column, std::string("loss_scale"));
            QCOMPARE(cols[1].differing, 0LL);
            QCOMPARE(cols[2].column, std::string("found_inf"));
            QCOMPARE(cols[2].differing, 1LL);
            QCOMPARE(*cols[2].first_apart, 37LL);
            QCOMPARE(cols[2].ok, share >= 0.01);  // 1/100 differs: the share itself is allowed
            QCOMPARE(QString::fromStdString(cols[2].first_note), QStringLiteral("0 vs 1"));
            QCOMPARE(cols[4].column, std::string("scale_event"));
            QCOMPARE(QString::fromStdString(cols[4].first_note), QStringLiteral("none vs backoff"));
            QVERIFY(!cols[4].ok);
        }
    }

    void report_names_each_failing_run_and_column() {
        Table ta = make_table(), tb = make_table();
        tb.at("amp-bf16", 3, "loss") = QString::number(ta.at("amp-bf16", 3, "loss").toDouble() * 1.0004, 'g', 17);
        tb.at("fp32", 5, "skipped") = "1";
        const auto report = mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), {});
        // rel = 4e-4 / 1.0004 = 3.998e-4, printed with two digits.
        QCOMPARE(QString::fromStdString(mpx::summary_line(report)),
                 QStringLiteral("differ: skipped of fp32 from step 5 (0 vs 1; 1/10 steps differ > share 0); "
                                "loss of amp-bf16 from step 3 (rel 4e-4 > 1e-5)"));
        const QString csv = QString::fromStdString(mpx::report_csv(report));
        QVERIFY(csv.startsWith("run,column,kind,tolerance,steps,differing,max_abs,max_rel,first_apart,note,ok\r\n"));
        QVERIFY2(csv.contains("\r\nfp32,skipped,exact,0,10,1,1,1,5,0 vs 1,0\r\n"), qPrintable(csv));
        QVERIFY2(csv.contains("\r\nfp32,loss,relative,1e-05,10,0,0,0,,,1\r\n"), qPrintable(csv));
    }

    void incomparable_tables_are_errors_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("message");
        QTest::newRow("run_only_in_b") << "extra_run" << "the files hold different runs: only in B.csv: amp-fp16";
        QTest::newRow("step_only_in_a") << "drop_step" << "run 'fp32': step 7 is in A.csv (line 16) but not in B.csv";
        QTest::newRow("required_column") << "drop_lr" << "B.csv has no 'lr' column, which is compared";
        QTest::newRow("not_a_number") << "bad_number" << "B.csv:5: loss 'abc' is not a number";
        QTest::newRow("runs_option") << "runs_missing" << "--runs: run 'amp-fp16' is not in A.csv (its runs: fp32, amp-bf16)";
        QTest::newRow("steps_outside") << "steps_outside" << "--steps: run 'fp32' has no step in 50-60 (its steps: 0-9)";
    }
    void incomparable_tables_are_errors() {
        QFETCH(QString, change);
        QFETCH(QString, message);
        Table ta = make_table(), tb = make_table();
        mpx::CompareOptions o;
        if (change == "extra_run") tb = make_table({"fp32", "amp-bf16", "amp-fp16"});
        if (change == "drop_step") tb.rows.removeAt(7 * 2);  // fp32's row of step 7
        if (change == "drop_lr") tb.drop_column("lr");
        if (change == "bad_number") tb.at("amp-bf16", 1, "loss") = "abc";  // line 5: the header, then rows 0, 0, 1
        if (change == "runs_missing") o.runs = {"fp32", "amp-fp16"};
        if (change == "steps_outside") o.steps = {{50, 60}};
        const QString got = error_of([&] { mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), o); });
        QVERIFY2(got.startsWith(message), qPrintable(got));
    }

    // --- the command ---

    void identical_files_agree() {
        QTemporaryDir tmp;
        const QString a = write(tmp, "A.csv", make_table().text()), b = write(tmp, "B.csv", make_table().text());
        const CliRun r = compare({a, b});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QCOMPARE(r.err, QString());
        QCOMPARE(last_line(r.out), QStringLiteral("agree: every column within tolerance (2 runs, 20 steps)"));
        QCOMPARE(report_row(r.out, "amp-bf16", "found_inf"), QStringLiteral("found_inf 0 0 — share 0 10/10 ok"));
        QCOMPARE(report_row(r.out, "fp32", "loss"), QStringLiteral("loss 0 0 — rel 1e-5 — ok"));
    }

    void loss_beyond_tolerance_names_its_step() {
        QTemporaryDir tmp;
        Table tb = make_table();
        QString& cell = tb.at("amp-bf16", 3, "loss");
        cell = QString::number(cell.toDouble() * (1 + 2e-5), 'g', 17);  // rel 2e-5 / (1 + 2e-5) ≈ 2.0e-5
        const QString a = write(tmp, "A.csv", make_table().text()), b = write(tmp, "B.csv", tb.text());
        CliRun r = compare({a, b});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        QCOMPARE(r.err, QString());
        QCOMPARE(last_line(r.out), QStringLiteral("differ: loss of amp-bf16 from step 3 (rel 2e-5 > 1e-5)"));
        QVERIFY2(report_row(r.out, "amp-bf16", "loss").endsWith(" 2e-5 3 rel 1e-5 — FAIL"), qPrintable(r.out));
        QVERIFY(report_row(r.out, "fp32", "loss").endsWith(" ok"));

        r = compare({"--tol", "loss=1e-4", a, b});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY(report_row(r.out, "amp-bf16", "loss").endsWith(" 2e-5 — rel 1e-4 — ok"));

        r = compare({a, b, "--steps", "4-9"});  // the step that differs left out
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QCOMPARE(last_line(r.out), QStringLiteral("agree: every column within tolerance (2 runs, 12 steps)"));
        r = compare({a, b, "--steps", "0-3"});
        QCOMPARE(r.code, 1);
        r = compare({a, b, "--runs", "fp32"});  // the run that differs left out
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QCOMPARE(last_line(r.out), QStringLiteral("agree: every column within tolerance (1 run, 10 steps)"));
    }

    void found_inf_flip_is_a_share_of_steps() {
        QTemporaryDir tmp;
        Table tb = make_table({"amp-fp16"}, 100);
        tb.at("amp-fp16", 42, "found_inf") = "1";
        const QString a = write(tmp, "A.csv", make_table({"amp-fp16"}, 100).text()), b = write(tmp, "B.csv", tb.text());
        CliRun r = compare({a, b});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        QCOMPARE(report_row(r.out, "amp-fp16", "found_inf"), QStringLiteral("found_inf 1 1 42 share 0 99/100 FAIL"));
        QCOMPARE(last_line(r.out),
                 QStringLiteral("differ: found_inf of amp-fp16 from step 42 (0 vs 1; 1/100 steps differ > share 0)"));
        r = compare({"--tol", "found_inf=0.02", a, b});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QCOMPARE(report_row(r.out, "amp-fp16", "found_inf"), QStringLiteral("found_inf 1 1 42 share 0.02 99/100 ok"));
    }

    void nan_and_empty_cells_compare_as_values_data() {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::addColumn<int>("code");
        QTest::newRow("nan_nan") << "nan" << "nan" << 0;
        QTest::newRow("nan_one") << "nan" << "1" << 1;
        QTest::newRow("empty_empty") << "" << "" << 0;
        QTest::newRow("empty_one") << "" << "1" << 1;
    }
    void nan_and_empty_cells_compare_as_values() {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QFETCH(int, code);
        QTemporaryDir tmp;
        Table ta = make_table(), tb = make_table();
        ta.at("fp32", 5, "grad_norm") = a;
        tb.at("fp32", 5, "grad_norm") = b;
        const CliRun r = compare({write(tmp, "A.csv", ta.text()), write(tmp, "B.csv", tb.text())});
        QVERIFY2(r.code == code, qPrintable(describe(r)));
        if (code == 1)
            QCOMPARE(last_line(r.out), QStringLiteral("differ: grad_norm of fp32 from step 5 (%1 vs 1)")
                                           .arg(a.isEmpty() ? QStringLiteral("empty") : a));
    }

    // A PyTorch script's file: a comment naming its scaler mirror, CRLF, a byte-order mark, quoted
    // labels, and no grad_norm, scale_event or evaluation columns.
    void script_file_with_comments_crlf_and_fewer_columns() {
        QTemporaryDir tmp;
        Table tb = make_table();
        for (const char* c : {"eval_accuracy", "eval_loss", "grad_norm", "scale_event", "precision"}) tb.drop_column(c);
        for (auto& row : tb.rows) row[0] = '"' + row[0] + '"';
        const QString text = QStringLiteral("\uFEFF# scaler mirror: torch.amp.GradScaler\r\n#\r\n") + tb.text("\r\n");
        const QString a = write(tmp, "A.csv", make_table().text()), b = write(tmp, "B.csv", text);
        const CliRun r = compare({a, b});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("not compared: scale_event (only in %1), grad_norm (only in %1), "
                                               "eval_loss (only in %1), eval_accuracy (only in %1)\n").arg(a)),
                 qPrintable(r.out));
        QCOMPARE(last_line(r.out), QStringLiteral("agree: every column within tolerance (2 runs, 20 steps)"));
        QCOMPARE(report_row(r.out, "fp32", "grad_norm"), QString());
    }

    void csv_option_writes_the_table() {
        QTemporaryDir tmp;
        Table tb = make_table();
        tb.at("fp32", 2, "lr") = "0.0011";
        const QString a = write(tmp, "A.csv", make_table().text()), b = write(tmp, "B.csv", tb.text());
        const QString out = tmp.filePath("report.csv");
        const CliRun r = compare({a, b, "--csv", out});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        const QStringList rows = read(out).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(rows.size(), 1 + 2 * 9);  // two runs, nine default columns
        // |0.001 - 0.0011| = 1e-4 (to rounding), rel 1e-4 / 0.0011.
        const QString lr = rows[7];
        QVERIFY2(lr.startsWith("fp32,lr,relative,1e-06,10,1,"), qPrintable(lr));
        QVERIFY2(lr.endsWith(",2,rel 0.091 > 1e-6,0"), qPrintable(lr));
        QCOMPARE(compare({a, b, "--csv", a}).code, 2);  // never over an input
    }

    void bad_input_exits_2_with_one_line_data() {
        QTest::addColumn<QString>("case_");
        QTest::addColumn<QString>("message");  // on stderr after "mpx-cli compare: "; %A and %B the paths
        QTest::newRow("different_runs") << "runs" << "the files hold different runs: only in %A: amp-bf16 (";
        QTest::newRow("different_steps") << "steps" << "run 'fp32': step 9 is in %A (line 20) but not in %B;";
        QTest::newRow("missing_column") << "column" << "%B has no 'loss_scale' column, which is compared";
        QTest::newRow("bad_tol") << "tol" << "--tol: loss=-1: the tolerance must be a number >= 0";
        QTest::newRow("unknown_tol_column") << "tol_column" << "--tol: 'los' is not a column of a run CSV";
        QTest::newRow("truncated_row") << "truncated" << "%B:21: 10 fields, but the header has 13 columns";
        QTest::newRow("missing_file") << "missing" << "cannot read the run CSV '%B': No such file or directory";
        QTest::newRow("empty_file") << "empty" << "%B is empty";
        QTest::newRow("bad_quote") << "quote" << "%B:3: field 1 has a quote but does not start with one";
        QTest::newRow("duplicate_step") << "duplicate" << "%B:4: run 'fp32' step 0 appears twice (first on line 2)";
        QTest::newRow("not_a_number") << "nan_word" << "%B:2: loss 'NaNx' is not a number";
        QTest::newRow("bad_steps") << "steps_option" << "--steps: '9' is not FIRST-LAST";
        QTest::newRow("unknown_run") << "runs_option" << "--runs: run 'x' is not in %A (its runs: fp32, amp-bf16)";
    }
    void bad_input_exits_2_with_one_line() {
        QFETCH(QString, case_);
        QFETCH(QString, message);
        QTemporaryDir tmp;
        Table tb = make_table();
        QStringList extra;
        QString text;
        if (case_ == "runs") tb = make_table({"fp32"});
        if (case_ == "steps") tb = make_table({"fp32", "amp-bf16"}, 9);
        if (case_ == "column") tb.drop_column("loss_scale");
        if (case_ == "tol") extra = {"--tol", "loss=-1"};
        if (case_ == "tol_column") extra = {"--tol", "los=1"};
        if (case_ == "duplicate") tb.rows[2][3] = "0";
        if (case_ == "nan_word") tb.rows[0][4] = "NaNx";
        if (case_ == "quote") tb.rows[1][0] = "amp\"bf16";
        if (case_ == "steps_option") extra = {"--steps", "9"};
        if (case_ == "runs_option") extra = {"--runs", "fp32,x"};
        text = tb.text();
        if (case_ == "truncated") text = text.left(text.lastIndexOf(",0.001,"));  // the last row cut short
        if (case_ == "empty") text.clear();
        const QString a = write(tmp, "A.csv", make_table().text());
        const QString b = case_ == "missing" ? tmp.filePath("B.csv") : write(tmp, "B.csv", text);
        const CliRun r = compare(QStringList{a, b} + extra);
        QVERIFY2(r.code == 2, qPrintable(describe(r)));
        QCOMPARE(r.out, QString());
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        message.replace("%A", a).replace("%B", b);
        QVERIFY2(r.err.startsWith("mpx-cli compare: " + message), qPrintable(r.err));
    }

    void help_states_the_rules() {
        const CliRun r = compare({"--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains(QString::fromStdString(mpx::default_columns_text())), qPrintable(r.out));
        QVERIFY(r.out.contains("|a-b| <= tol*max(|a|,|b|)"));
        QVERIFY(r.out.contains("Exit 0: agree; 1: differ; 2: bad input."));
    }

    void needs_two_files() {
        const CliRun r = compare({});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("A is required"), qPrintable(r.err));
    }

    // The real export: itself agrees; one loss cell moved by 1e-3 relative is named by run and step.
    void real_run_export_against_itself_and_a_perturbed_copy() {
        QTemporaryDir tmp;
        const QString a = tmp.filePath("A.csv");
        const CliRun run = cli({"run", "--config", "default", "--steps", "20", "--csv", a, "--quiet"});
        QVERIFY2(run.code == 0, qPrintable(describe(run)));
        CliRun r = compare({a, a});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QCOMPARE(last_line(r.out), QStringLiteral("agree: every column within tolerance (3 runs, 60 steps)"));
        QVERIFY(!r.out.contains("not compared"));

        QStringList lines = read(a).split(QStringLiteral("\r\n"));
        const QStringList header = lines[0].split(',');
        const auto loss = header.indexOf("loss"), step = header.indexOf("step");
        bool changed = false;
        for (QString& line : lines) {
            QStringList f = line.split(',');
            if (f.size() < 5 || f[0] != "amp-bf16" || f[step] != "7") continue;
            f[loss] = QString::number(f[loss].toDouble() * 1.001, 'g', 17);
            line = f.join(',');
            changed = true;
        }
        QVERIFY(changed);
        const QString b = write(tmp, "B.csv", lines.join("\r\n"));
        r = compare({a, b});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        // rel = 1e-3 / 1.001 = 9.99e-4, printed with two digits.
        QCOMPARE(last_line(r.out), QStringLiteral("differ: loss of amp-bf16 from step 7 (rel 1e-3 > 1e-5)"));
        QVERIFY(report_row(r.out, "fp32", "loss").endsWith(" ok"));
        QVERIFY(report_row(r.out, "amp-bf16", "loss").endsWith(" 7 rel 1e-5 — FAIL"));
    }

    // --- what a pandas round trip writes, a summary's length (--expect: test_compare_expect.cpp) ---

    // df.to_csv() writes an index column (no name; "Unnamed: 0" once read and written back) and a
    // bool column as True/False: both read as the file mpx wrote.
    void pandas_index_column_and_booleans_are_read_data() {
        QTest::addColumn<QString>("index_name");
        QTest::newRow("to_csv") << "";
        QTest::newRow("read_then_to_csv") << "Unnamed: 0";
    }
    void pandas_index_column_and_booleans_are_read() {
        QFETCH(QString, index_name);
        Table ta = make_table(), tb = make_table();
        ta.at("fp32", 4, "found_inf") = "1";
        for (auto& row : tb.rows) row[6] = "False";  // found_inf
        tb.at("fp32", 4, "found_inf") = "True";
        tb.header.prepend(index_name);
        for (int i = 0; i < tb.rows.size(); ++i) tb.rows[i].prepend(QString::number(i));
        const mpx::RunTable a = table_of(ta, "A.csv"), b = table_of(tb, "B.csv");
        QCOMPARE(b.columns().size(), a.columns().size());
        QCOMPARE(b.columns().front(), std::string("run"));
        QCOMPARE(b.number(b.steps_of("fp32").at(4), b.column("found_inf")), std::optional<double>(1.0));
        QCOMPARE(b.number(b.steps_of("fp32").at(5), b.column("found_inf")), std::optional<double>(0.0));
        QCOMPARE(std::string(b.cell(b.steps_of("amp-bf16").at(9), b.column("eval_accuracy"))), std::string("0.5"));
        const auto report = mpx::compare_runs(a, b, {});
        QVERIFY2(report.agree(), mpx::summary_line(report).c_str());
        // A tolerance is no bool.
        QVERIFY(error_of([] { mpx::parse_tolerance("found_inf=True"); }).contains("must be a number"));
    }

    // Four columns of six runs part: per run the first (with its note), the others by name, four
    // runs named and the rest counted.
    void summary_is_one_short_line() {
        const QStringList runs{"r1", "r2", "r3", "r4", "r5", "r6"};
        Table ta = make_table(runs), tb = make_table(runs);
        for (const QString& run : runs) {
            tb.at(run, 1, "found_inf") = "1";
            tb.at(run, 3, "loss") = "1";
            tb.at(run, 5, "lr") = "0.002";
            tb.at(run, 6, "grad_norm") = "9";
        }
        const auto report = mpx::compare_runs(table_of(ta, "A.csv"), table_of(tb, "B.csv"), {});
        QString expected = "differ: ";
        for (int i = 0; i < 4; ++i)
            expected += QStringLiteral("%1found_inf of r%2 from step 1 (0 vs 1; 1/10 steps differ > share 0; also loss, grad_norm, lr)")
                            .arg(i ? "; " : "")
                            .arg(i + 1);
        QCOMPARE(QString::fromStdString(mpx::summary_line(report)), expected + "; and 2 more runs");
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "test_compare.moc"
