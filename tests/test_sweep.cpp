// Sweeps: the grid parser (lists, ranges, geometric ranges and the errors that name the problem),
// a sweep row equal bit for bit to its configuration trained alone, shards merged equal to the whole
// sweep, cancellation that keeps finished points, atomic output, and the CLI's --explain line
// reproducing a point through `mpx-cli run`.
#include <QtTest>
#include <thread>
#include <set>
#include <mutex>

#include <QProcess>
#include <QTemporaryDir>

#include <fstream>
#include <sstream>

#include "engine/base/error.hpp"
#include "engine/io/export.hpp"
#include "engine/sweep/sweep.hpp"

using namespace mpx;

namespace {

SessionConfig small_base() {
    SessionConfig c = load_config("default");
    apply_overrides(c, {"steps=60", "runs=[\"amp-fp16\",\"fp32\"]", "data.n_train=512", "data.n_test=128", "train.batch=64",
                        "eval_every=20"});
    return c;
}

SweepGrid grid_of(const std::vector<std::string>& args, const SessionConfig& base) {
    std::vector<GridAxis> axes;
    for (const auto& a : args) axes.push_back(parse_grid_arg(a));
    return SweepGrid(std::move(axes), base);
}

std::string read(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The CSV without its step_time_us column (the last): the one outcome that differs run to run.
std::string without_times(const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
    return out;
}

void compare_outcomes(const SweepOutcome& a, const SweepOutcome& b) {
    QCOMPARE(a.run, b.run);
    QCOMPARE(a.first_loss, b.first_loss);
    QCOMPARE(a.final_loss, b.final_loss);
    QCOMPARE(a.tail_loss, b.tail_loss);
    QCOMPARE(a.eval_loss, b.eval_loss);
    QCOMPARE(a.eval_accuracy, b.eval_accuracy);
    QCOMPARE(a.skipped, b.skipped);
    QCOMPARE(a.backoffs, b.backoffs);
    QCOMPARE(a.growths, b.growths);
    QCOMPARE(a.settled_step, b.settled_step);
    QCOMPARE(a.steps_at_min_scale, b.steps_at_min_scale);
    QCOMPARE(a.final_scale, b.final_scale);
    QCOMPARE(a.diverged, b.diverged);
}

QStringList shell_words(const QString& line) {  // enough for explain_point's quoting
    QStringList out;
    QString cur;
    bool quoted = false, any = false;
    for (QChar ch : line) {
        if (ch == '\'') quoted = !quoted, any = true;
        else if (ch == ' ' && !quoted) {
            if (any) out << cur;
            cur.clear();
            any = false;
        } else cur += ch, any = true;
    }
    if (any) out << cur;
    return out;
}

struct Cli {
    int code = -1;
    QString out, err;
};
Cli cli(const QStringList& args, const QString& dir) {
    QProcess p;
    p.setWorkingDirectory(dir);
    p.start(QStringLiteral(MPX_CLI_PATH), args);
    Cli r;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

}  // namespace

class TestSweep : public QObject {
    Q_OBJECT
private slots:
    void grid_values_data() {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QStringList>("values");
        QTest::newRow("list") << "16,256,65536" << QStringList{"16", "256", "65536"};
        QTest::newRow("list of powers") << "2^4, 2^10" << QStringList{"16", "1024"};
        QTest::newRow("linear") << "0.1:1:0.1"
                                << QStringList{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"};
        QTest::newRow("linear stop not on a step") << "1:10:4" << QStringList{"1", "5", "9"};
        QTest::newRow("linear downwards") << "1:0:-0.5" << QStringList{"1", "0.5", "0"};
        QTest::newRow("geometric") << "2^8..2^32*4"
                                   << QStringList{"256", "1024", "4096", "16384", "65536", "262144", "1048576",
                                                  "4194304", "16777216", "67108864", "268435456", "1073741824",
                                                  "4294967296"};
        QTest::newRow("geometric downwards") << "1..0.001*0.1" << QStringList{"1", "0.1", "0.01", "0.001"};
        QTest::newRow("one value") << "7" << QStringList{"7"};
    }
    void grid_values() {
        QFETCH(QString, spec);
        QFETCH(QStringList, values);
        const GridAxis a = parse_grid_values("scaler.init_scale", spec.toStdString());
        QCOMPARE(a.kind, AxisKind::numeric);
        QStringList got;
        for (const auto& v : a.values) got << QString::fromStdString(v);
        QCOMPARE(got, values);
    }

    void categorical_axis_goes_first() {
        const SweepGrid g = grid_of({"scaler.init_scale=16,256", "scaler.preset=pytorch,deepspeed"}, small_base());
        QCOMPARE(g.axes()[1].kind, AxisKind::categorical);
        QCOMPARE(g.size(), std::size_t(4));
        // point 1: init_scale 16 (slow axis), preset deepspeed (fast axis); the preset is applied first
        const auto s = g.assignments(1);
        QCOMPARE(s, (std::vector<std::string>{"scaler.preset=deepspeed", "scaler.init_scale=16"}));
        const SessionConfig c = g.point_config(small_base(), 1);
        QCOMPARE(c.scaler.preset, std::string("deepspeed"));
        QCOMPARE(c.scaler.init_scale, 16.0);
    }

    void grid_errors_data() {
        QTest::addColumn<QStringList>("grid");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty range") << QStringList{"scaler.init_scale=10:1:1"} << "empty range";
        QTest::newRow("empty geometric") << QStringList{"scaler.init_scale=2^8..2^4*2"} << "empty range";
        QTest::newRow("zero step") << QStringList{"train.lr=0.1:1:0"} << "must not be 0";
        QTest::newRow("factor 1") << QStringList{"train.lr=1..8*1"} << "positive and not 1";
        QTest::newRow("bad number") << QStringList{"train.lr=0.1:x:0.1"} << "'x' is not a number";
        QTest::newRow("empty values") << QStringList{"train.lr="} << "no values";
        QTest::newRow("not key=values") << QStringList{"train.lr"} << "is not FIELD=VALUES";
        QTest::newRow("too many values") << QStringList{"train.lr=1:20000:1"} << "more than 10000 values";
        QTest::newRow("too many points") << QStringList{"train.lr=1:200:1", "scaler.init_scale=1:100:1"}
                                         << "the grid has 20000 points";
        QTest::newRow("unknown field") << QStringList{"scaler.init_scal=1,2"} << "scaler.init_scal: unknown setting";
        QTest::newRow("not numeric") << QStringList{"model.sizes=1,2"} << "model.sizes: is not a numeric setting";
        QTest::newRow("three numeric") << QStringList{"train.lr=1,2", "scaler.init_scale=1,2", "steps=10,20"}
                                       << "at most two numeric fields";
        QTest::newRow("two categorical") << QStringList{"scaler.preset=pytorch,apex", "data.kind=spirals,blobs"}
                                         << "at most one categorical field";
        QTest::newRow("field twice") << QStringList{"train.lr=1,2", "train.lr=3"} << "train.lr: is on the grid twice";
        QTest::newRow("scaler reaching no run") << QStringList{"runs=[\"amp-fp16+deepspeed\",\"fp32\"]", "scaler.init_scale=1,2"}
                                                << "scaler.init_scale: no run follows the session's scaler";
        QTest::newRow("value twice") << QStringList{"train.lr=1,1"} << "comes twice";
    }
    void grid_errors() {
        QFETCH(QStringList, grid);
        QFETCH(QString, message);
        std::vector<std::string> args;
        SessionConfig base = small_base();
        for (const auto& g : grid)  // a row may first change the base: runs=...
            if (g.startsWith("runs=")) apply_override(base, g.toStdString());
            else args.push_back(g.toStdString());
        try {
            grid_of(args, base);
            QFAIL("no error");
        } catch (const ConfigError& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }

    void bad_point_fails_before_any_trains() {
        // growth_factor must exceed 1: the point with 0.5 is refused, naming the field and the point
        const SweepGrid g = grid_of({"scaler.growth_factor=2,0.5"}, small_base());
        std::atomic<int> trained{0};
        SweepOptions o;
        o.on_point = [&](const SweepPoint&, std::size_t, std::size_t) { ++trained; };
        try {
            run_sweep(g, small_base(), o);
            QFAIL("no error");
        } catch (const ConfigError& e) {
            QVERIFY2(QString(e.what()).contains("scaler.growth_factor") && QString(e.what()).contains("grid point 1"),
                     e.what());
        }
        QCOMPARE(trained.load(), 0);
    }

    void every_thread_that_trains_points_is_announced_once() {
        const SweepGrid g = grid_of({"scaler.growth_interval=5,50,500"}, small_base());
        SweepOptions o;
        o.threads = 3;
        std::mutex m;
        std::set<std::thread::id> seen;
        int calls = 0;
        o.on_worker_start = [&] {
            std::lock_guard l(m);
            seen.insert(std::this_thread::get_id());
            ++calls;
        };
        const SweepResult r = run_sweep(g, small_base(), o);
        QCOMPARE(r.threads, 3u);
        QCOMPARE(calls, 3);
        QCOMPARE(seen.size(), std::size_t{3});
        QVERIFY(seen.count(std::this_thread::get_id()));  // the caller trains points too
    }

    void sweep_row_equals_run_alone() {
        const SessionConfig base = small_base();
        const SweepGrid g = grid_of({"scaler.init_scale=2^10..2^30*2^10", "scaler.growth_interval=5,50"}, base);
        SweepOptions o;
        o.threads = 2;
        const SweepResult r = run_sweep(g, base, o);
        QCOMPARE(r.points.size(), std::size_t(6));
        QVERIFY(!r.cancelled);
        long long skipped_somewhere = 0;
        for (const auto& p : r.points) {
            SessionConfig c = base;  // built by hand, as `mpx-cli run --set` builds it
            apply_overrides(c, g.assignments(p.index));
            Session alone(c);
            std::vector<OutcomeTally> tally;
            for (std::size_t i = 0; i < alone.run_count(); ++i) tally.emplace_back(alone.run(i).info(), c.steps);
            double last_loss = 0;
            long long skipped = 0;
            while (!alone.finished()) {
                const auto recs = alone.step();
                for (std::size_t i = 0; i < recs.size(); ++i) tally[i].add(recs[i]);
                last_loss = recs[0].loss;
                skipped += recs[0].skipped;
            }
            QCOMPARE(p.runs.size(), alone.run_count());
            for (std::size_t i = 0; i < p.runs.size(); ++i) compare_outcomes(p.runs[i], tally[i].finish(false));
            QCOMPARE(p.runs[0].final_loss, last_loss);
            QCOMPARE(p.runs[0].skipped, skipped);
            QVERIFY(p.runs[0].eval_loss.has_value());
            skipped_somewhere += skipped;
        }
        QVERIFY2(skipped_somewhere > 0, "the grid should reach scales that overflow");
    }

    void shards_merge_to_the_whole_sweep() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const SessionConfig base = small_base();
        const SweepGrid g = grid_of({"scaler.init_scale=2^8..2^24*2^8", "scaler.preset=pytorch,megatron"}, base);
        const auto path = [&](const QString& n) { return (dir.path() + "/" + n).toStdString(); };
        SweepOptions o;
        write_sweep(path("whole.csv"), g, run_sweep(g, base, o), sweep_sidecar(g, base, "default", 0, 1));
        std::vector<std::filesystem::path> parts;
        for (std::size_t i = 0; i < 4; ++i) {
            o.shard_index = i;
            o.shard_count = 4;
            const SweepResult r = run_sweep(g, base, o);
            QCOMPARE(r.planned, i < 2 ? std::size_t(2) : std::size_t(1));  // 6 points over 4 shards
            parts.push_back(path(QString("part%1.csv").arg(i)));
            write_sweep(parts.back(), g, r, sweep_sidecar(g, base, "default", i, 4));
        }
        std::reverse(parts.begin(), parts.end());  // order of the parts does not matter
        std::size_t missing = 99;
        QCOMPARE(merge_sweeps(path("merged.csv"), parts, missing), std::size_t(6));
        QCOMPARE(missing, std::size_t(0));
        const std::string whole = read(dir.path() + "/whole.csv");
        QCOMPARE(std::count(whole.begin(), whole.end(), '\n'), 1 + 6 * 2);
        QCOMPARE(without_times(read(dir.path() + "/merged.csv")), without_times(whole));
        QCOMPARE(read(dir.path() + "/merged.json"), read(dir.path() + "/whole.json"));

        // A part of another sweep, or a shard given twice, is refused
        parts.push_back(parts.front());
        QVERIFY_THROWS_EXCEPTION(ConfigError, merge_sweeps(path("bad.csv"), parts, missing));
        const SweepGrid other = grid_of({"scaler.init_scale=2^8..2^24*2^8"}, base);
        o.shard_index = 0;
        o.shard_count = 1;
        write_sweep(path("other.csv"), other, run_sweep(other, base, o), sweep_sidecar(other, base, "default", 0, 1));
        QVERIFY_THROWS_EXCEPTION(ConfigError, merge_sweeps(path("bad.csv"), {parts[0], path("other.csv")}, missing));
        QVERIFY(!QFile::exists(dir.path() + "/bad.csv"));
    }

    void cancellation_keeps_finished_points() {
        QTemporaryDir dir;
        const SessionConfig base = small_base();
        const SweepGrid g = grid_of({"scaler.growth_interval=1:6:1"}, base);
        std::atomic<bool> stop{false};
        SweepOptions o;
        o.threads = 1;
        o.stop = &stop;
        o.on_point = [&](const SweepPoint&, std::size_t done, std::size_t) {
            if (done == 2) stop = true;  // as Ctrl-C would, while point 2 is about to start
        };
        const SweepResult r = run_sweep(g, base, o);
        QVERIFY(r.cancelled);
        QCOMPARE(r.planned, std::size_t(6));
        QCOMPARE(r.points.size(), std::size_t(2));
        QCOMPARE(r.points[0].index, std::size_t(0));
        QCOMPARE(r.points[1].index, std::size_t(1));
        const auto csv = (dir.path() + "/cut.csv").toStdString();
        write_sweep(csv, g, r, sweep_sidecar(g, base, "default", 0, 1));
        const std::string text = read(dir.path() + "/cut.csv");
        QCOMPARE(std::count(text.begin(), text.end(), '\n'), 1 + 2 * 2);
        QCOMPARE(read_sweep_sidecar(csv).sidecar.at("points_done").get<int>(), 2);
    }

    void output_is_atomic() {
        QTemporaryDir dir;
        const SessionConfig base = small_base();
        const SweepGrid g = grid_of({"scaler.growth_interval=3"}, base);
        SweepResult r;
        r.planned = 1;
        r.points.push_back({0, {SweepOutcome{"amp-fp16+pytorch"}}});
        // The sidecar's place is taken by a folder: nothing is written, the old CSV stays as it was
        QVERIFY(QDir(dir.path()).mkdir("s.json"));
        { std::ofstream(dir.path().toStdString() + "/s.csv") << "old"; }
        QVERIFY_THROWS_EXCEPTION(IoError, write_sweep(dir.path().toStdString() + "/s.csv", g, r,
                                                      sweep_sidecar(g, base, "default", 0, 1)));
        QCOMPARE(read(dir.path() + "/s.csv"), std::string("old"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot),
                 (QStringList{"s.csv", "s.json"}));
        // A folder that does not exist: IoError, nothing appears
        QVERIFY_THROWS_EXCEPTION(IoError, write_sweep(dir.path().toStdString() + "/no/such/t.csv", g, r,
                                                      sweep_sidecar(g, base, "default", 0, 1)));
        QVERIFY(!QDir(dir.path() + "/no").exists());
    }

    void every_outcome_column_has_a_value() {
        SweepOutcome o{"amp-fp16"};
        o.eval_loss = 0.5;
        o.eval_accuracy = 0.75;
        o.skipped = 3;
        for (const auto& c : sweep_outcome_columns()) QVERIFY2(outcome_value(o, c).has_value(), c.c_str());
        QCOMPARE(*outcome_value(o, "skipped"), 3.0);
        QCOMPARE(*outcome_value(o, "eval_accuracy"), 0.75);
        QVERIFY(!outcome_value(o, "no_such_column"));
    }

    void cli_explain_line_reproduces_a_point() {
        QTemporaryDir dir;
        const Cli s = cli({"sweep", "--config", "default", "--runs", "amp-fp16", "--steps", "40", "--set",
                           "data.n_train=512", "--grid", "scaler.init_scale=2^8..2^28*2^10", "--grid",
                           "scaler.growth_interval=5,20", "--csv", "sw.csv", "--quiet"},
                          dir.path());
        QVERIFY2(s.code == 0, qPrintable(s.err));
        const Cli e = cli({"sweep", "--csv", "sw.csv", "--explain", "5"}, dir.path());
        QVERIFY2(e.code == 0, qPrintable(e.err));
        QStringList args = shell_words(e.out.trimmed());
        QCOMPARE(args.takeFirst(), QString("mpx-cli"));
        QVERIFY2(e.out.contains("--set data.n_train=512 ") && e.out.contains("scaler.init_scale=268435456") &&
                     e.out.contains("scaler.growth_interval=20"),
                 qPrintable(e.out));
        const Cli run = cli(args + QStringList{"--csv", "run.csv", "--quiet"}, dir.path());
        QVERIFY2(run.code == 0, qPrintable(run.err));
        // The sweep's row 5 and the run's last step: the same final loss, to the last bit
        const QStringList sweepRows = QString::fromStdString(read(dir.path() + "/sw.csv")).split("\r\n", Qt::SkipEmptyParts);
        const QStringList runRows = QString::fromStdString(read(dir.path() + "/run.csv")).split("\r\n", Qt::SkipEmptyParts);
        const QStringList row = sweepRows[6].split(',');  // header, then points 0..5
        QCOMPARE(row[0], QString("5"));
        QCOMPARE(row[5], runRows.last().split(',')[4]);  // final_loss, loss

        const Cli bad = cli({"sweep", "--grid", "scaler.nope=1,2", "--csv", "bad.csv"}, dir.path());
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("scaler.nope: unknown setting"), qPrintable(bad.err));
        QVERIFY(!QFile::exists(dir.path() + "/bad.csv"));
    }
};

QTEST_APPLESS_MAIN(TestSweep)
#include "test_sweep.moc"
