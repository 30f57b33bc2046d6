// mpx-cli as a user runs it (QProcess): run writes the CSV and sidecar DESIGN.md describes, --set and
// shortcut flags reach the session, bad input exits 2 with the field named and writes nothing, a
// sidecar with live edits replays them, and the snippet, bench and selftest commands print what they
// promise.
#include <QtTest>

#include <QRegularExpression>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine/io/export.hpp"
#include "engine/run/session.hpp"
#include "cli_test_support.hpp"

using nlohmann::json;

namespace {

using Result = mpx::test::CliRun;
using mpx::test::cli;
using mpx::test::describe;

// CSV rows (header included) as fields; run labels never need quoting here.
QList<QStringList> read_csv(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QList<QStringList> rows;
    for (const auto& line : QString::fromUtf8(f.readAll()).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts))
        rows << line.split(QLatin1Char(','));
    return rows;
}

}  // namespace

class TestCliRun : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(QFileInfo::exists(QStringLiteral(MPX_CLI_PATH)),
                 "mpx-cli is not built: build the mpx-cli target before this test");
    }

    void run_default_writes_csv_and_sidecar() {
        QTemporaryDir tmp;
        const QString csv = tmp.filePath(QStringLiteral("a.csv"));
        const Result r = cli({"run", "--config", "default", "--steps", "20", "--csv", csv, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        const auto rows = read_csv(csv);
        QCOMPARE(rows.size(), 1 + 20 * 3);
        QCOMPARE(rows[0].size(), 34);
        QCOMPARE(rows[0].first(), QStringLiteral("run"));
        QCOMPARE(rows[0].mid(23), (QStringList{"eval_loss", "eval_accuracy", "first_nonfinite",
                                               "fp8_saturated_frac", "fp8_underflow_frac", "small_update_frac",
                                               "small_kept_frac", "compensation_max", "mem_compensation", "headroom_log2",
                                               "penalty"}));
        const QStringList labels{"fp32", "amp-fp16+pytorch", "amp-bf16"};
        const QStringList precisions{"fp32", "fp16", "bf16"};
        for (int i = 1; i < rows.size(); ++i) {
            const QStringList& f = rows[i];
            QCOMPARE(f.size(), 34);
            QCOMPARE(f[25], QString());  // nothing overflowed in the default preset
            // headroom: FP16's range left above the largest backward value, FP32's and BF16's far more
            bool has_headroom = false;
            const double headroom = f[32].toDouble(&has_headroom);
            QVERIFY(has_headroom && headroom > 0.0);
            QCOMPARE(headroom > 100.0, f[1] != QStringLiteral("fp16"));
            QCOMPARE(f[26], QString());  // no FP8 run: the FP8 columns are empty
            QCOMPARE(f[27], QString());
            QCOMPARE(f[0], labels[(i - 1) % 3]);
            QCOMPARE(f[1], precisions[(i - 1) % 3]);
            const int step = (i - 1) / 3;
            QCOMPARE(f[3].toInt(), step);
            bool ok = false;
            const double loss = f[4].toDouble(&ok);
            QVERIFY(ok && loss > 0.0 && loss < 2.0);
            // eval_every 50: the held-out split is evaluated at step 0 and at the last step only.
            const bool evaluated = step == 0 || step == 19;
            QCOMPARE(f[23].isEmpty(), !evaluated);
            QCOMPARE(f[24].isEmpty(), !evaluated);
            if (evaluated) {
                const double eval_loss = f[23].toDouble(&ok);
                QVERIFY(ok && eval_loss > 0.0 && eval_loss < 2.0);
                const double accuracy = f[24].toDouble(&ok);
                QVERIFY(ok && accuracy >= 0.0 && accuracy <= 1.0);
            }
        }
        QCOMPARE(rows[2][5], QStringLiteral("65536"));  // PyTorch's initial scale
        // Sidecar beside it: parses, holds the configuration and the runs.
        QFile side(tmp.filePath(QStringLiteral("a.json")));
        QVERIFY(side.open(QIODevice::ReadOnly));
        const json j = json::parse(side.readAll().toStdString());
        QCOMPARE(j.at("config").at("steps").get<long long>(), 20LL);
        QCOMPARE(j.at("steps_recorded").get<long long>(), 20LL);
        QCOMPARE(j.at("runs").size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(j.at("runs")[1].at("label").get<std::string>()), labels[1]);
        QCOMPARE(QDir(tmp.path()).entryList(QDir::Files), (QStringList{"a.csv", "a.json"}));
        QVERIFY(r.out.contains(QStringLiteral("amp-bf16")));  // the summary table
    }

    // growth_interval 5: five clean steps 0..4, so amp-fp16's scale grows at step 4.
    void set_and_precision_flags_reach_the_run() {
        QTemporaryDir tmp;
        const QString csv = tmp.filePath(QStringLiteral("g.csv"));
        const Result r = cli({"run", "--set", "scaler.growth_interval=5", "--precision", "fp32,amp-fp16",
                              "--steps", "12", "--csv", csv, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        const auto rows = read_csv(csv);
        QCOMPARE(rows.size(), 1 + 12 * 2);
        QStringList grow_steps;
        for (int i = 1; i < rows.size(); ++i) {
            QCOMPARE(rows[i][0], (i % 2) ? QStringLiteral("fp32") : QStringLiteral("amp-fp16+pytorch"));
            if (rows[i][8] == QLatin1String("grow")) {
                QCOMPARE(rows[i][0], QStringLiteral("amp-fp16+pytorch"));
                grow_steps << rows[i][3];
            }
        }
        QCOMPARE(grow_steps, (QStringList{"4", "9"}));
        QCOMPARE(rows[2 * 5 + 2][5], QStringLiteral("131072"));  // step 5 runs at the grown scale
    }

    // --fp8-scales writes exactly the engine's record: the same comparison trained in-process and
    // written with write_fp8_scales_csv gives the same bytes; one row per step, layer and tensor.
    void fp8_scales_file_equals_the_engine_record() {
        using namespace mpx;
        QTemporaryDir tmp;
        const QString path = tmp.filePath("scales.csv");
        const Result r = cli({"run", "--precision", "fp8-hybrid+delayed,mxfp8,amp-bf16", "--steps", "6",
                              "--fp8-scales", path, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        SessionConfig cfg = load_config("default");
        cfg.runs = {"fp8-hybrid+delayed", "mxfp8", "amp-bf16"};
        cfg.steps = 6;
        Session s(cfg);
        while (!s.finished()) s.step();
        std::vector<RunInfo> infos;
        std::vector<const std::vector<Fp8ScaleRow>*> rows;
        for (std::size_t i = 0; i < s.run_count(); ++i) {
            infos.push_back(s.run(i).info());
            rows.push_back(&s.run(i).fp8_scales());
        }
        const QString want = tmp.filePath("want.csv");
        write_fp8_scales_csv(want.toStdString(), infos, rows);
        QFile a(path), b(want);
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        const QByteArray got = a.readAll();
        QCOMPARE(got, b.readAll());
        const auto csv = read_csv(path);
        QCOMPARE(csv[0], (QStringList{"run", "step", "layer", "tensor", "format", "amax", "scale"}));
        QCOMPARE(csv.size(), 1 + 6 * 3 * 3 * 2);  // steps × layers × {x, w, dy} × FP8 runs
        QCOMPARE(csv[1], (QStringList{"fp8-hybrid+delayed", "0", "fc1", "x", "e4m3", csv[1][5], "1"}));
        QCOMPARE(csv[3][3], QStringLiteral("dy"));
        QCOMPARE(csv[3][4], QStringLiteral("e5m2"));
        QCOMPARE(csv.last()[4], QStringLiteral("mxfp8"));
        QCOMPARE(csv.last()[6], QString());  // per-block scales: no per-tensor scale
    }

    // The Transformer Engine recipe of the first FP8 run, from its resolved settings.
    void snippet_transformer_engine_prints_the_fp8_recipe() {
        Result r = cli({"run", "--precision", "amp-bf16,fp8-hybrid+delayed", "--set", "fp8.margin=1", "--set",
                        "fp8.amax_history_len=16", "--snippet", "transformer-engine"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("recipe = DelayedScaling(margin=1, fp8_format=Format.HYBRID, "
                                               "amax_history_len=16, amax_compute_algo=\"max\")")),
                 qPrintable(r.out));
        r = cli({"run", "--precision", "fp8-e4m3+current", "--snippet", "transformer-engine"});
        QVERIFY2(r.out.contains(QStringLiteral("recipe = Float8CurrentScaling(fp8_format=Format.E4M3)")),
                 qPrintable(describe(r)));
        r = cli({"run", "--precision", "mxfp8", "--snippet", "transformer-engine"});
        QVERIFY2(r.out.contains(QStringLiteral("recipe = MXFP8BlockScaling(fp8_format=Format.E4M3)")),
                 qPrintable(describe(r)));
        r = cli({"run", "--precision", "fp32", "--snippet", "transformer-engine"});
        QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("--snippet")), qPrintable(describe(r)));
    }

    void fp8_scales_refused_without_an_fp8_run() {
        QTemporaryDir tmp;
        const QString path = tmp.filePath("scales.csv");
        const Result r = cli({"run", "--precision", "fp32,amp-bf16", "--steps", "2", "--fp8-scales", path, "--quiet"});
        QVERIFY2(r.code != 0 && r.err.contains("--fp8-scales") && r.err.contains("no run trains in FP8"),
                 qPrintable(describe(r)));
        QVERIFY(!QFile::exists(path));
    }

    void bad_lr_exits_2_names_field_writes_nothing() {
        QTemporaryDir tmp;
        const QString csv = tmp.filePath(QStringLiteral("bad.csv"));
        const Result r = cli({"run", "--set", "train.lr=-1", "--steps", "5", "--csv", csv});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("train.lr")), qPrintable(describe(r)));
        QVERIFY(QDir(tmp.path()).entryList(QDir::Files).isEmpty());
    }

    // A shortcut flag given with an impossible value is an error naming it, not silently ignored.
    void bad_shortcut_flag_exits_2_names_flag_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("flag");
        QTest::newRow("steps_0") << QStringList{"--steps", "0"} << "--steps";
        QTest::newRow("steps_negative") << QStringList{"--steps", "-5"} << "--steps";
        QTest::newRow("steps_huge") << QStringList{"--steps", "1000000000"} << "--steps";
        QTest::newRow("seed_negative") << QStringList{"--seed", "-7"} << "--seed";
        QTest::newRow("precision_empty") << QStringList{"--precision", ""} << "--precision";
        QTest::newRow("scaler_empty") << QStringList{"--scaler", ""} << "--scaler";
        QTest::newRow("device_empty") << QStringList{"--device", ""} << "--device";
    }
    void bad_shortcut_flag_exits_2_names_flag() {
        QFETCH(QStringList, args);
        QFETCH(QString, flag);
        QTemporaryDir tmp;
        const QString csv = tmp.filePath(QStringLiteral("bad.csv"));
        const Result r = cli(QStringList{"run", "--csv", csv, "--quiet"} + args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(flag + QStringLiteral(": ")), qPrintable(describe(r)));
        QVERIFY(QDir(tmp.path()).entryList(QDir::Files).isEmpty());
    }

    // --set assignments are validated together: settings that only fit together work in any order.
    void set_order_does_not_matter() {
        for (const QStringList& sets : {QStringList{"--set", "data.n_train=16", "--set", "train.batch=8"},
                                        QStringList{"--set", "train.batch=8", "--set", "data.n_train=16"}}) {
            const Result r = cli(QStringList{"run", "--steps", "2", "--quiet", "--print-config"} + sets);
            QVERIFY2(r.code == 0, qPrintable(describe(r)));
            const json j = json::parse(r.out.toStdString());
            QCOMPARE(j.at("data").at("n_train").get<int>(), 16);
            QCOMPARE(j.at("train").at("batch").get<int>(), 8);
        }
    }

    // The sidecar a run writes is a configuration: --config <sidecar> trains the same run again.
    void run_from_sidecar_reproduces_the_run() {
        QTemporaryDir tmp;
        const QString a = tmp.filePath(QStringLiteral("a.csv")), b = tmp.filePath(QStringLiteral("b.csv"));
        Result r = cli({"run", "--precision", "fp32,amp-fp16", "--steps", "8", "--seed", "3", "--set",
                        "train.lr=0.02", "--csv", a, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        r = cli({"run", "--config", tmp.filePath(QStringLiteral("a.json")), "--csv", b, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        const auto ra = read_csv(a), rb = read_csv(b);
        QCOMPARE(ra.size(), 1 + 8 * 2);
        QCOMPARE(rb.size(), ra.size());
        for (int i = 0; i < ra.size(); ++i)
            QCOMPARE(ra[i].mid(0, 21) + ra[i].mid(23), rb[i].mid(0, 21) + rb[i].mid(23));  // all but the timings
    }

    // Issue 12 item 6: a session edited live (DeepSpeed's hysteresis 2 → 4 at step 250 of the
    // hysteresis lesson, through the engine call the app makes) exports its CSV and sidecar as the app
    // does; mpx-cli run --config <sidecar> replays the edit at step 250, says so, and writes the same
    // CSV but for the timing columns, with a sidecar that lists the edit again.
    void run_from_a_sidecar_replays_its_live_edits() {
        QTemporaryDir tmp;
        const QString live = tmp.filePath(QStringLiteral("live.csv")), replay = tmp.filePath(QStringLiteral("replay.csv"));
        mpx::SessionConfig c = mpx::load_config("hysteresis");
        c.steps = 340;
        mpx::Session s(c);
        std::vector<mpx::RunInfo> infos;
        for (std::size_t i = 0; i < s.run_count(); ++i) infos.push_back(s.run(i).info());
        mpx::CsvWriter w(live.toStdString());
        while (!s.finished()) {
            if (s.steps_done() == 250) {
                mpx::ScalerConfig edited = s.run(1).scaler().config();
                edited.hysteresis = 4;
                s.set_scaler({"amp-fp16+deepspeed"}, edited);
            }
            const auto recs = s.step();
            for (std::size_t i = 0; i < recs.size(); ++i) w.write(recs[i], infos[i]);
        }
        w.commit(mpx::sidecar_path(live.toStdString()), mpx::sidecar_json(s.config(), infos, "CPU", 340).dump(2) + "\n");
        const Result r = cli({"run", "--config", tmp.filePath(QStringLiteral("live.json")), "--csv", replay});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("mpx-cli: step 250: amp-fp16+deepspeed scaler edited: hysteresis 2 → 4\n")),
                 qPrintable(describe(r)));
        const auto a = read_csv(live), b = read_csv(replay);
        QCOMPARE(a.size(), 1 + 340 * 3);
        QCOMPARE(b.size(), a.size());
        QCOMPARE(a[0].mid(21, 2), (QStringList{"step_time_us", "wall_time_s"}));
        for (int i = 0; i < a.size(); ++i)
            QCOMPARE(a[i].mid(0, 21) + a[i].mid(23), b[i].mid(0, 21) + b[i].mid(23));  // all but the timings
        // The edit changed the run: at step 310 DeepSpeed absorbs the overflow (scale kept, 2^23).
        const QStringList& row = a[1 + 310 * 3 + 1];  // run, precision, mode, step, loss, loss_scale, found_inf, skipped, scale_event
        QCOMPARE(row[0], QStringLiteral("amp-fp16+deepspeed"));
        QCOMPARE(row[3], QStringLiteral("310"));
        QCOMPARE(row[5], QStringLiteral("8388608"));
        QCOMPARE(row.mid(6, 3), (QStringList{"1", "1", "hysteresis"}));
        QFile side(tmp.filePath(QStringLiteral("replay.json")));
        QVERIFY(side.open(QIODevice::ReadOnly));
        const json j = json::parse(side.readAll().toStdString());
        QVERIFY(j.at("config").at("live_changes") == to_json(s.config()).at("live_changes"));
    }

    void unknown_preset_exits_2_and_lists_choices() {
        const Result r = cli({"run", "--config", "nosuchpreset", "--steps", "5"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("nosuchpreset")), qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("default")), qPrintable(describe(r)));  // a choice
    }

    void missing_config_file_fails_clearly() {
        const Result r = cli({"run", "--config", "/nonexistent.json", "--steps", "5"});
        QVERIFY(r.code != 0 && r.code != -1);
        QVERIFY2(r.err.contains(QStringLiteral("/nonexistent.json")) && r.err.contains(QStringLiteral("cannot read")),
                 qPrintable(describe(r)));
    }

    void deepspeed_snippet_prints_fp16_block() {
        const Result r = cli({"run", "--snippet", "deepspeed", "--scaler", "deepspeed"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        const int key = r.out.indexOf(QStringLiteral("\"fp16\":"));
        QVERIFY2(key >= 0, qPrintable(r.out));
        const int open = r.out.indexOf(QLatin1Char('{'), key), close = r.out.lastIndexOf(QLatin1Char('}'));
        QVERIFY(open > key && close > open);
        const json block = json::parse(r.out.mid(open, close - open + 1).toStdString());
        QCOMPARE(block.at("enabled").get<bool>(), true);
        QCOMPARE(block.at("loss_scale").get<double>(), 0.0);  // 0 = dynamic
        QCOMPARE(block.at("initial_scale_power").get<int>(), 16);
        QCOMPARE(block.at("loss_scale_window").get<int>(), 1000);
        QCOMPARE(block.at("hysteresis").get<int>(), 2);
        QCOMPARE(block.at("min_loss_scale").get<double>(), 1.0);
    }

    void bench_csv_prints_header_and_positive_rate() {
        const Result r = cli({"bench", "--model", "2-16-2", "--batch", "32", "--precision", "fp32",
                              "--seconds", "0.2", "--csv", "--threads", "2"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines[0], QStringLiteral("model,batch,precision,device,steps_per_s,threads,gflop_per_s,peak_fraction"));
        const QStringList f = lines[1].split(QLatin1Char(','));
        QCOMPARE(f.size(), 8);
        QCOMPARE(f[0], QStringLiteral("2-16-2"));
        QCOMPARE(f[1], QStringLiteral("32"));
        QCOMPARE(f[2], QStringLiteral("fp32"));
        QCOMPARE(f[5], QStringLiteral("2"));
        bool ok = false;
        const double sps = f[4].toDouble(&ok);
        QVERIFY2(ok && sps > 0.0 && std::isfinite(sps), qPrintable(lines[1]));
        // GFLOP/s is the steps' rate times the model's GEMM work: 2-16-2 at batch 32 is
        // 2·32·(2·16·2 + 3·16·2) = 10,240 FLOP a step.
        const double gflops = f[6].toDouble(&ok);
        QVERIFY2(ok, qPrintable(lines[1]));
        QVERIFY2(std::abs(gflops - sps * 10240 / 1e9) <= 1e-6 * gflops + 1e-9, qPrintable(lines[1]));
        if (!f[7].isEmpty()) {  // the share of the measured peak
            const double share = f[7].toDouble(&ok);
            QVERIFY2(ok && share > 0.0 && share < 1.0, qPrintable(lines[1]));
        }
        // The peak is measured: within what a core can do at all (64 FLOP a cycle, two 512-bit FMA
        // units, at 6 GHz) and at least a scalar FMA chain's worth at 0.5 GHz. A kernel the compiler
        // folded away measured 1,086,770 GFLOP/s on 2 threads.
        const Result plain = cli({"bench", "--model", "2-16-2", "--batch", "32", "--precision", "fp32", "--seconds", "0.2",
                                  "--threads", "2"});
        QVERIFY2(plain.code == 0, qPrintable(describe(plain)));
        const QRegularExpression peak(QStringLiteral("peak: (\\d+) GFLOP/s FP32 measured on (\\d+) threads? \\((.+?),"));
        const QRegularExpressionMatch m = peak.match(plain.out);
        QVERIFY2(m.hasMatch(), qPrintable(plain.out));
        const double measured = m.captured(1).toDouble(), on = m.captured(2).toDouble();
        QVERIFY2(measured <= on * 6.0 * 64 && measured >= on * 0.5 * 2, qPrintable(plain.out));
        QVERIFY2(m.captured(3).contains(QStringLiteral("FMA")) || m.captured(3).contains(QStringLiteral("fmaf")), qPrintable(plain.out));
    }

    // Threads split the runs, the GEMMs by output rows and the loops by element pieces, all cut
    // by shape alone: every preset's CSV, histograms and FP8 scales are the same bytes for any
    // thread count (timing columns aside).
    void every_preset_gives_the_same_bits_on_any_thread_count_data() {
        QTest::addColumn<QString>("preset");
        for (const std::string& p : mpx::preset_names()) QTest::newRow(p.c_str()) << QString::fromStdString(p);
    }
    void every_preset_gives_the_same_bits_on_any_thread_count() {
        QFETCH(QString, preset);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        // A step of over 1 GFLOP (gpt-nanogpt-cpu: 7.4 for its two runs) takes seconds a run under a
        // sanitizer; the Release suite runs it, and gpt-classroom and test_gpt cover the GPT here.
        const mpx::SessionConfig p = mpx::load_config(preset.toStdString());
        if (mpx::gemm_flops_per_step(p.model, p.train.batch) * static_cast<double>(p.runs.size()) > 1e9)
            QSKIP("over 1 GFLOP a step: the Release build checks this preset (sanitizers make it take minutes)");
#endif
        QTemporaryDir tmp;
        const auto without_timings = [](const QString& path) {
            QList<QStringList> rows = read_csv(path);
            if (rows.isEmpty()) return rows;
            QList<int> drop;
            for (int c = 0; c < rows[0].size(); ++c)
                if (rows[0][c] == QStringLiteral("step_time_us") || rows[0][c] == QStringLiteral("wall_time_s")) drop.prepend(c);
            for (QStringList& row : rows)
                for (int c : drop)
                    if (c < row.size()) row.removeAt(c);
            return rows;
        };
        QList<QStringList> first_csv, first_hist, first_fp8;
        QByteArray first_samples;  // a GPT's samples beside the CSV (engine/io/samples_csv.hpp)
        for (const QString threads : {QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3")}) {
            const QString csv = tmp.filePath(threads + ".csv"), hist = tmp.filePath(threads + ".hist.csv"),
                          fp8 = tmp.filePath(threads + ".fp8.csv");
            // accumulation's runs model every GEMM product by product (about 27x slower): fewer steps.
            // The GPT presets' steps cost 10–1,000× an MLP's (gpt-nanogpt-cpu: 53 ms a run in Release,
            // about 4 s under ASan): 3 steps, the first of which collects histograms.
            // The GPT presets (the gpt- ones and the GPT lessons) write samples.
            const bool gpt = preset.startsWith(QStringLiteral("gpt-")) || preset == QStringLiteral("attention-overflow") ||
                             preset == QStringLiteral("keep-ends-in-bf16") || preset == QStringLiteral("softmax-and-norms") ||
                             preset == QStringLiteral("fp16-for-rl");
            const QString steps = preset == QStringLiteral("accumulation") ? QStringLiteral("40")
                                  : gpt ? QStringLiteral("3")
                                                                              : QStringLiteral("300");
            QStringList args{"run", "--config", preset, "--steps", steps, "--threads", threads, "--quiet",
                             "--csv", csv, "--histograms", hist};
            // Short samples: each character is a forward pass of the whole batch (160 would be 5,000
            // passes for attention-overflow's five runs, minutes under a sanitizer); 24 still show
            // whether the draws agree.
            if (gpt) args << "--set" << "sample.length=24";
            if (preset == QStringLiteral("fp8")) args << "--fp8-scales" << fp8;
            const Result r = cli(args, 180000);
            QVERIFY2(r.code == 0, qPrintable(describe(r)));
            const auto rows = without_timings(csv), h = read_csv(hist), f = read_csv(fp8);
            QFile samples_file(tmp.filePath(threads + ".samples.csv"));
            const QByteArray samples = samples_file.open(QIODevice::ReadOnly) ? samples_file.readAll() : QByteArray();
            QCOMPARE(samples.isEmpty(), !gpt);
            QVERIFY(rows.size() > steps.toInt());
            QVERIFY(h.size() > 1);
            if (threads == QStringLiteral("1")) {
                first_csv = rows, first_hist = h, first_fp8 = f, first_samples = samples;
                continue;
            }
            QCOMPARE(rows.size(), first_csv.size());
            for (int i = 0; i < rows.size(); ++i)
                QVERIFY2(rows[i] == first_csv[i], qPrintable(QStringLiteral("--threads %1, CSV row %2:\n%3\nvs --threads 1:\n%4")
                                                                 .arg(threads).arg(i).arg(rows[i].join(','), first_csv[i].join(','))));
            QVERIFY2(h == first_hist, qPrintable(QStringLiteral("--threads %1: the histograms differ").arg(threads)));
            QVERIFY2(f == first_fp8, qPrintable(QStringLiteral("--threads %1: the FP8 scales differ").arg(threads)));
            QVERIFY2(samples == first_samples, qPrintable(QStringLiteral("--threads %1: the samples differ").arg(threads)));
        }
    }

    void selftest_passes() {
        const Result r = cli({"selftest"});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY(r.out.count(QStringLiteral("PASS")) >= 4);
        QVERIFY(!r.out.contains(QStringLiteral("FAIL")));
        QVERIFY(r.out.contains(QStringLiteral("0 failed")));
    }
};

QTEST_APPLESS_MAIN(TestCliRun)
#include "test_cli_run.moc"
