// `mpx-cli compare --expect` and engine/io/run_expect.hpp: the per-format rule as docs/pytorch.md
// derives it, the settings that differ by dotted key, one training compared with itself, a pandas
// copy and a changed setting, and the bad input that exits 2 with one line.
// Rule: every expected number is worked out beside its row; the comparison is never asked for it.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "engine/base/error.hpp"
#include "engine/io/run_expect.hpp"
#include "compare_test_support.hpp"

class TestCompareExpect : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(QFileInfo::exists(QStringLiteral(MPX_CLI_PATH)),
                 "mpx-cli is not built: build the mpx-cli target before this test");
    }

    // --- the library ---

    // The per-format rule as docs/pytorch.md derives it: FP32 by summation order (rel plus a share of
    // the initial size), 16-bit formats strict on steps 0-2 and then BF16's spacing at the initial loss.
    void expect_rule_per_format_data() {
        QTest::addColumn<QString>("precision");
        QTest::addColumn<double>("loss0");
        QTest::addColumn<QString>("column");
        QTest::addColumn<int>("strict_last");  // -1: none
        QTest::addColumn<double>("strict_tol");
        QTest::addColumn<double>("tol");
        QTest::addColumn<double>("abs");
        QTest::addColumn<int>("judged_last");  // -1: every step
        // 1e-5 · 0.6867 = 6.867e-6, printed and applied as 6.9e-6; 1e-4 · 0.209 = 2.09e-5 -> 2.1e-5.
        QTest::newRow("fp32_loss") << "fp32" << 0.6867 << "loss" << -1 << 0.0 << 1e-5 << 6.9e-6 << -1;
        QTest::newRow("fp32_eval_loss") << "fp32" << 0.6867 << "eval_loss" << -1 << 0.0 << 1e-5 << 6.9e-6 << -1;
        QTest::newRow("fp32_grad_norm") << "fp32" << 0.6867 << "grad_norm" << -1 << 0.0 << 1e-4 << 2.1e-5 << -1;
        // BF16 spacing at 0.6867 (in [0.5, 1)): 2^-1 · 2^-7 = 2^-8.
        QTest::newRow("bf16_loss") << "bf16" << 0.6867 << "loss" << 2 << 1e-5 << 0.0 << 0.00390625 << -1;
        QTest::newRow("fp16_loss") << "fp16" << 0.6867 << "loss" << 2 << 1e-5 << 0.0 << 0.00390625 << -1;
        // gpt-classroom's initial loss 4.6, in [4, 8): 2^2 · 2^-7 = 2^-5.
        QTest::newRow("bf16_gpt_loss") << "bf16" << 4.6 << "loss" << 2 << 1e-5 << 0.0 << 0.03125 << -1;
        // BF16's unit roundoff 2^-8: one flipped rounding moves the norm by at most that share.
        QTest::newRow("bf16_grad_norm") << "bf16" << 0.6867 << "grad_norm" << -1 << 0.0 << 0.00390625 << 0.0 << 2;
        QTest::newRow("bf16_eval_accuracy") << "bf16" << 0.6867 << "eval_accuracy" << -1 << 0.0 << 0.0 << 0.0 << 2;
        QTest::newRow("tf32_eval_loss") << "tf32" << 0.6867 << "eval_loss" << 2 << 1e-5 << 0.0 << 0.00390625 << -1;
    }
    void expect_rule_per_format() {
        QFETCH(QString, precision);
        QFETCH(double, loss0);
        QFETCH(QString, column);
        QFETCH(int, strict_last);
        QFETCH(double, strict_tol);
        QFETCH(double, tol);
        QFETCH(double, abs);
        QFETCH(int, judged_last);
        const mpx::ExpectedRule rule = mpx::expected_rule(precision.toStdString(), loss0, 0.209);
        const mpx::ColumnPlan* plan = nullptr;
        for (const mpx::ColumnPlan& p : rule.plans)
            if (p.column == column.toStdString()) plan = &p;
        QVERIFY2(plan, rule.text.c_str());
        QCOMPARE(plan->rule.kind, mpx::CompareKind::relative);
        QCOMPARE(plan->strict_last.value_or(-1), static_cast<long long>(strict_last));
        QCOMPARE(plan->strict_tolerance, strict_tol);
        QCOMPARE(plan->rule.tolerance, tol);
        QCOMPARE(plan->absolute, abs);
        QCOMPARE(plan->judged_last.value_or(-1), static_cast<long long>(judged_last));
    }
    void expect_rule_for_other_formats_is_the_defaults() {
        QVERIFY(mpx::expected_rule("e4m3", 0.69, 0.2).plans.empty());
        QVERIFY(mpx::expected_rule("", 0.69, 0.2).text.starts_with("no rule derived"));
        QCOMPARE(mpx::bf16_spacing(1.0), 0.0078125);
        QCOMPARE(mpx::bf16_spacing(0.0), 0.00390625);
    }

    // Every leaf that differs, by dotted key; what is only recorded is marked so; the run sets are
    // lined up by label, not compared as a setting.
    void settings_differences_name_the_key() {
        const auto a = nlohmann::json::parse(R"({"train": {"lr": 0.01, "optimizer": "adam"}, "record_every": 1,
            "runs": ["fp32"], "model": {"sizes": [2, 32, 2]}, "instruments": {"every": 10}})");
        const auto b = nlohmann::json::parse(R"({"train": {"lr": 0.0101, "optimizer": "adam"}, "record_every": 10,
            "runs": ["fp32", "amp-bf16"], "model": {"sizes": [2, 64, 2]}, "instruments": {"every": 10}, "seed": 2})");
        const auto d = mpx::setting_differences(a, b);
        QCOMPARE(d.size(), std::size_t(4));
        const auto is = [&](std::size_t i, const char* key, const char* va, const char* vb, bool training) {
            return d[i].key == key && d[i].a == va && d[i].b == vb && d[i].training == training;
        };
        QVERIFY(is(0, "model.sizes", "[2,32,2]", "[2,64,2]", true));
        QVERIFY(is(1, "record_every", "1", "10", false));
        QVERIFY(is(2, "seed", "absent", "2", true));
        QVERIFY(is(3, "train.lr", "0.01", "0.0101", true));
    }

    // mpx against itself through --expect: recorded every 5th step on one side (the common steps
    // compared, record_every shown as not trained), a pandas copy, then a 1 % lr change and a
    // backoff of 0.25 each named as the setting and the column where the runs part.
    void expect_compares_one_training_and_names_what_changed() {
        QTemporaryDir tmp;
        const auto run = [&](const QString& name, const QStringList& flags) {
            const CliRun r = cli(QStringList{"run", "--csv", tmp.filePath(name), "--quiet"} + flags);
            QVERIFY2(r.code == 0, qPrintable(describe(r)));
        };
        const QStringList base{"--config", "default", "--steps", "12"};
        run("A.csv", base);
        run("every5.csv", base + QStringList{"--set", "record_every=5"});
        CliRun r = compare({"--expect", tmp.filePath("A.csv"), tmp.filePath("every5.csv")});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains("\nsettings: the same\n") && r.out.contains("  record_every: 1 vs 5\n"), qPrintable(r.out));
        QVERIFY2(r.out.contains("run fp32: 4 steps (0-11); not compared: 8 steps only in A, 0 steps only in B"), qPrintable(r.out));
        QCOMPARE(last_line(r.out), QStringLiteral("agree: the same settings, and every run within its format's rule (3 runs, 12 steps)"));

        // The same file through pandas (index column, True/False), its sidecar named.
        QStringList lines = read(tmp.filePath("A.csv")).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        for (int i = 0; i < lines.size(); ++i)
            lines[i] = (i ? QString::number(i - 1) : QString()) + "," + lines[i].replace(",0,0,", ",False,False,");
        const QString pandas = write(tmp, "pandas.csv", lines.join("\n") + "\n");
        r = compare({"--expect", tmp.filePath("A.csv"), pandas, "--sidecar-b", tmp.filePath("A.json")});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));

        run("lr.csv", base + QStringList{"--set", "train.lr=0.0101"});
        r = compare({"--expect", tmp.filePath("A.csv"), tmp.filePath("lr.csv")});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        QVERIFY2(r.out.contains("settings that differ (A vs B):\n  train.lr: 0.01 vs 0.0101\n"), qPrintable(r.out));
        QVERIFY2(last_line(r.out).startsWith("differ: setting train.lr (0.01 vs 0.0101); fp32 parts at step 0, lr: rel 0.0099 > 1e-6; "),
                 qPrintable(r.out));

        const QStringList storm{"--config", "overflow-storm", "--precision", "amp-fp16", "--steps", "6"};
        run("storm.csv", storm);
        run("backoff.csv", storm + QStringList{"--set", "scaler.backoff_factor=0.25"});
        r = compare({"--expect", tmp.filePath("storm.csv"), tmp.filePath("backoff.csv")});
        QVERIFY2(r.code == 1, qPrintable(describe(r)));
        // Step 0 overflows from 2^24: the next scale is 2^23 with backoff 0.5, 2^22 with 0.25.
        QCOMPARE(last_line(r.out), QStringLiteral("differ: setting scaler.backoff_factor (0.5 vs 0.25); amp-fp16+pytorch parts at "
                                                  "step 1, loss_scale: 8388608 vs 4194304"));
        QVERIFY2(r.out.contains("; a scaler decision parts first, the loss from step "), qPrintable(r.out));
    }

    void expect_bad_input_exits_2_with_one_line_data() {
        QTest::addColumn<QStringList>("args");  // %A, %B and %D: the files and their folder
        QTest::addColumn<QString>("message");
        QTest::newRow("no_sidecar") << QStringList{"--expect", "%A", "%D/copy.csv"}
                                    << "--sidecar-b: %D/copy.csv has no sidecar (%D/copy.json or session.json beside it); name it, e.g. "
                                       "--sidecar-b torch-run/session.json";
        QTest::newRow("not_json") << QStringList{"--expect", "%A", "%B", "--sidecar-b", "%A"}
                                  << "%A is not valid JSON; give mpx-cli run --csv's sidecar or export-torch's session.json";
        QTest::newRow("own_tolerance") << QStringList{"--expect", "%A", "%B", "--tol", "loss=1e-3"}
                                       << "--tol: not with --expect, which judges each run by its format's rule";
        QTest::newRow("sidecar_without_expect") << QStringList{"%A", "%B", "--sidecar-b", "%D"}
                                                << "--sidecar-b: only with --expect, which reads the sidecars";
    }
    void expect_bad_input_exits_2_with_one_line() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        QTemporaryDir tmp;
        const QString a = tmp.filePath("A.csv"), b = tmp.filePath("B.csv");
        const CliRun run = cli({"run", "--config", "default", "--steps", "3", "--csv", a, "--quiet"});
        QVERIFY2(run.code == 0, qPrintable(describe(run)));
        QVERIFY(QFile::copy(a, b) && QFile::copy(tmp.filePath("A.json"), tmp.filePath("B.json")) && QFile::copy(a, tmp.filePath("copy.csv")));
        for (QString& s : args) s.replace("%A", a).replace("%B", b).replace("%D", tmp.path());
        const CliRun r = compare(args);
        QVERIFY2(r.code == 2, qPrintable(describe(r)));
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        message.replace("%A", a).replace("%B", b).replace("%D", tmp.path());
        QVERIFY2(r.err.startsWith("mpx-cli compare: " + message), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCompareExpect)
#include "test_compare_expect.moc"
