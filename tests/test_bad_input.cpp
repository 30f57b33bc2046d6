// The bad-input catalogue: every row is one hostile command line for mpx-cli (run, bench, format,
// --resume, and issue 41's readers-writers: replay, sweep, trace, quantize, gemm, gemm-error,
// compare, export-torch) or the app, with the exit code it must end with and words its one-line
// message must contain. Rule: each row runs in a fresh temporary HOME and working folder, with its inputs in a
// fixture folder, and neither folder may gain, lose or change a file; no row may hang.
// The rows and the fixtures are in bad_input_rows.cpp, bad_input_rows_41.cpp and bad_input_fixtures.cpp
// (bad_input_rows.hpp); this file launches each row and checks what it left.
#include <QtTest>

#include <QDirIterator>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <csignal>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/base/error.hpp"
#include "engine/io/export.hpp"
#include "bad_input_rows.hpp"

using nlohmann::json;
namespace fs = std::filesystem;
using namespace bad_input;

namespace {

struct Outcome {
    int code = -1;
    bool timed_out = false;
    QString err;
};

// A folder's files by relative path: size, modification time and (for small files) the content.
using Snapshot = std::map<std::string, std::string>;
Snapshot snapshot(const fs::path& root) {
    Snapshot s;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); ++it) {
        const fs::path& p = it->path();
        std::string key = fs::relative(p, root).string(), value;
        if (it->is_symlink()) value = "link";
        else if (it->is_directory()) value = "dir";
        else if (!it->is_regular_file()) value = "special";
        else {
            value = std::to_string(it->file_size()) + "@" +
                    std::to_string(fs::last_write_time(p).time_since_epoch().count());
            if (it->file_size() < (1u << 20)) {
                std::ifstream in(p, std::ios::binary);
                value += ":" + std::string(std::istreambuf_iterator<char>(in), {});
            }
        }
        s[key] = value;
    }
    return s;
}

QString differences(const Snapshot& before, const Snapshot& after) {
    QStringList out;
    for (const auto& [k, v] : after)
        if (!before.count(k)) out << QStringLiteral("created %1").arg(QString::fromStdString(k));
        else if (before.at(k) != v) out << QStringLiteral("changed %1").arg(QString::fromStdString(k));
    for (const auto& [k, v] : before)
        if (!after.count(k)) out << QStringLiteral("removed %1").arg(QString::fromStdString(k));
    return out.join(QStringLiteral(", "));
}

}  // namespace

class TestBadInput : public QObject {
    Q_OBJECT
    QTemporaryDir m_fixtures;
    fs::path F;  // the fixture folder: inputs the rows read, never written

    Outcome launch(Tool tool, QStringList args, const QString& work, Limit limit) {
        for (QString& a : args) a.replace(QStringLiteral("@F"), QString::fromStdString(F.string()));
        QProcess p;
        p.setWorkingDirectory(work);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HOME"), work);
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), work + QStringLiteral("/.config"));
        env.insert(QStringLiteral("XDG_DATA_HOME"), work + QStringLiteral("/.local"));
        env.insert(QStringLiteral("XDG_CACHE_HOME"), work + QStringLiteral("/.cache"));
        env.insert(QStringLiteral("TMPDIR"), work);
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setStandardInputFile(QProcess::nullDevice());
        if (limit == Limit::memory_2g)
            p.setChildProcessModifier([] {
                const rlimit r{rlim_t(2) << 30, rlim_t(2) << 30};
                ::setrlimit(RLIMIT_AS, &r);
            });
        if (limit == Limit::memory_256m)
            p.setChildProcessModifier([] {
                const rlimit r{rlim_t(256) << 20, rlim_t(256) << 20};
                ::setrlimit(RLIMIT_AS, &r);
            });
#ifdef MPX_APP_PATH
        const QString program = tool == Tool::cli ? QStringLiteral(MPX_CLI_PATH) : QStringLiteral(MPX_APP_PATH);
#else
        const QString program = QStringLiteral(MPX_CLI_PATH);
#endif
        env.insert(QStringLiteral("CLI"), QStringLiteral(MPX_CLI_PATH));
#ifdef MPX_APP_PATH
        env.insert(QStringLiteral("APP"), QStringLiteral(MPX_APP_PATH));
#endif
        p.setProcessEnvironment(env);
        if (tool == Tool::shell) p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), args.join(QLatin1Char(' '))});
        else p.start(program, args);
        Outcome o;
        if (!p.waitForFinished(30000)) {
            p.kill();
            p.waitForFinished();
            o.timed_out = true;
        }
        o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        o.err = QString::fromUtf8(p.readAllStandardError());
        return o;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_fixtures.isValid());
        F = m_fixtures.path().toStdString();
        make_fixtures(F);
    }

    void rejects_bad_input_and_leaves_no_file_data() {
        QTest::addColumn<int>("tool");
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("needle");
        QTest::addColumn<int>("limit");
        add_command_line_rows();
        add_reader_writer_rows();
    }

    void rejects_bad_input_and_leaves_no_file() {
        QFETCH(int, tool);
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, needle);
        QFETCH(int, limit);
        needle.replace(QStringLiteral("@F"), QString::fromStdString(F.string()));
#ifndef MPX_APP_PATH
        if (Tool(tool) == Tool::app || QTest::currentDataTag() == QByteArray("app_set_invalid_utf8")) QSKIP("the app is not built (MPX_BUILD_UI=OFF)");
#endif
#if defined(__SANITIZE_ADDRESS__)
        if (Limit(limit) != Limit::none) QSKIP("an address-space limit and AddressSanitizer's shadow memory exclude each other");
#endif
        QTemporaryDir work;
        QVERIFY(work.isValid());
        const fs::path wpath = work.path().toStdString();
        const Snapshot fixtures = snapshot(F), before = snapshot(wpath);
        const Outcome o = launch(Tool(tool), args, work.path(), Limit(limit));
        const QString said = QStringLiteral("args: %1\nexit %2\nstderr: %3").arg(args.join(QLatin1Char(' '))).arg(o.code).arg(o.err);
        QVERIFY2(!o.timed_out, qPrintable(QStringLiteral("hung; ") + said));
        QVERIFY2(o.code == code, qPrintable(said));
        QVERIFY2(o.err.contains(needle), qPrintable(QStringLiteral("no '%1' in the message; ").arg(needle) + said));
        QVERIFY2(!o.err.trimmed().contains(QLatin1Char('\n')), qPrintable(QStringLiteral("more than one line; ") + said));
        const QString changed = differences(before, snapshot(wpath)) + differences(fixtures, snapshot(F));
        QVERIFY2(changed.isEmpty(), qPrintable(changed + QStringLiteral("; ") + said));
    }

    // A signal in the middle of a run: the temporary CSV is removed, nothing else appears.
    void signal_during_run_leaves_no_temporary_data() {
        QTest::addColumn<int>("sig");
        QTest::newRow("SIGINT") << SIGINT;
        QTest::newRow("SIGTERM") << SIGTERM;
        QTest::newRow("SIGHUP") << SIGHUP;
    }
    void signal_during_run_leaves_no_temporary() {
        QFETCH(int, sig);
        QTemporaryDir work;
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--steps", "100000000", "--set", "model.sizes=2-8-2",
                                               "--csv", "a.csv", "--save-state", "s.json"});
        QVERIFY(p.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(!QDir(work.path()).entryList({"a.csv.tmp-*"}, QDir::Files).isEmpty(), 20000);
        ::kill(static_cast<pid_t>(p.processId()), sig);
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitStatus(), QProcess::CrashExit);  // ended by the signal, as without the handler
        QCOMPARE(QDir(work.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot), QStringList());
    }

    // SIGTERM while a command writes its outputs (issue 41, class 4): every temporary is removed and
    // an old pair of outputs stays as it was, byte for byte. To land the signal mid-write every
    // time, the first output's temporary "<name>.tmp-<pid>" is a FIFO made in the child before it
    // runs: the command opens it, fills the pipe (which nobody drains) and blocks in the write.
    // export-torch writes a folder instead: its OUT.tmp-<pid>/ is waited for, then the signal sent.
    void sigterm_mid_write_leaves_what_was_there_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("fifo");    // the output whose temporary becomes a FIFO
        QTest::addColumn<QString>("folder");  // else: the folder whose temporary is waited for
        QTest::addColumn<QStringList>("old");  // outputs that exist before, with old text
        QTest::newRow("quantize") << QStringList{"quantize", "--in", "@F/m128.csv", "--out", "q.csv", "--scales", "s.csv"}
                                  << "q.csv" << "" << QStringList{"q.csv", "s.csv"};
        QTest::newRow("sweep") << QStringList{"sweep", "--trace", "@F/t.csv", "--csv", "w.csv", "--grid",
                                              "scaler.init_scale=1:1500:1"}
                               << "w.csv" << "" << QStringList{"w.csv", "w.json"};
        QTest::newRow("export-torch") << QStringList{"export-torch", "--steps", "60000", "--out", "e"} << "" << "e"
                                      << QStringList{};
    }
    void sigterm_mid_write_leaves_what_was_there() {
        QFETCH(QStringList, args);
        QFETCH(QString, fifo);
        QFETCH(QString, folder);
        QFETCH(QStringList, old);
        QTemporaryDir work;
        const fs::path dir = work.path().toStdString();
        for (const QString& name : old) write(dir / name.toStdString(), "old " + name.toStdString());
        const Snapshot before = snapshot(dir);
        for (QString& a : args) a.replace(QStringLiteral("@F"), QString::fromStdString(F.string()));
        char prefix[4096];
        std::snprintf(prefix, sizeof prefix, "%s.tmp-", (dir / fifo.toStdString()).c_str());
        QProcess p;
        p.setWorkingDirectory(work.path());
        if (!fifo.isEmpty())
            p.setChildProcessModifier([&prefix] {
                char path[4200];
                std::snprintf(path, sizeof path, "%s%d", prefix, static_cast<int>(::getpid()));
                ::mkfifo(path, 0600);
            });
        p.start(QStringLiteral(MPX_CLI_PATH), args);
        QVERIFY(p.waitForStarted());
        const auto pid = static_cast<pid_t>(p.processId());
        const std::string tmp = (dir / (fifo.isEmpty() ? folder : fifo).toStdString()).string() + ".tmp-" + std::to_string(pid);
        if (!fifo.isEmpty()) {
            // Opened here for reading, never read: the command's open succeeds and its write blocks
            // once the pipe is full.
            const int fd = ::open(tmp.c_str(), O_RDONLY | O_NONBLOCK);
            QVERIFY(fd >= 0);
            int queued = 0;
            for (int ms = 0; ms < 20000 && queued < 65536; ++ms) {
                ::usleep(1000);
                ::ioctl(fd, FIONREAD, &queued);
            }
            QVERIFY2(queued >= 65536, "the command did not fill the pipe");
            ::kill(pid, SIGTERM);
            QVERIFY(p.waitForFinished(20000));
            ::close(fd);
        } else {
            bool seen = false;
            for (int ms = 0; ms < 20000 && !seen && p.state() != QProcess::NotRunning; ++ms) {
                seen = fs::exists(tmp);
                if (!seen) ::usleep(1000);
            }
            QVERIFY2(seen, "the command finished before its temporary folder was seen");
            ::kill(pid, SIGTERM);
            QVERIFY(p.waitForFinished(20000));
        }
        QCOMPARE(p.exitStatus(), QProcess::CrashExit);  // ended by the signal
        const QString changed = differences(before, snapshot(dir));
        QVERIFY2(changed.isEmpty(), qPrintable(changed));
    }

    // Outputs that belong together (quantize's values and scales, a sweep's CSV and sidecar) land
    // all or nothing: the second target turned into a directory after both were written fails the
    // pair before either target is touched; a full disk (a file-size limit) while quantize writes
    // leaves the old pair byte for byte and no temporary.
    void a_pair_of_outputs_lands_whole_or_not_at_all() {
        QTemporaryDir work;
        const fs::path dir = work.path().toStdString(), values = dir / "q.csv", scales = dir / "s.csv";
        const auto text = [](const fs::path& f) {
            std::ifstream in(f);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        write(values, "old values");
        {
            mpx::AtomicFile a(values), b(scales);
            a.write("new values");
            b.write("new scales");
            fs::create_directory(scales);
            QVERIFY_THROWS_EXCEPTION(mpx::IoError, mpx::publish_together(a, b));
        }
        QCOMPARE(text(values), std::string("old values"));
        fs::remove(scales);
        write(scales, "old scales");
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.setChildProcessModifier([] {
            const rlimit r{100000, 100000};  // the values (~230 KB) do not fit
            ::setrlimit(RLIMIT_FSIZE, &r);
        });
        p.start(QStringLiteral(MPX_CLI_PATH), {"quantize", "--in", QString::fromStdString((F / "m128.csv").string()),
                                               "--out", "q.csv", "--scales", "s.csv"});
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 1 && err.contains(QStringLiteral("cannot write 'q.csv': File too large")), qPrintable(err));
        QCOMPARE(text(values), std::string("old values"));
        QCOMPARE(text(scales), std::string("old scales"));
        QCOMPARE(QDir(work.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 (QStringList{"q.csv", "s.csv"}));
    }

    // Issue 41, class 9: a character device (/dev/null's numbers, made here in a temporary folder)
    // given to every writer as its output. mpx-cli refuses it before any work; the shipped Python
    // files write into it without replacing it (train.py --csv /dev/null times a run; os.replace
    // once put a regular file at /dev/null). Afterwards it is still the same device, and nothing
    // appeared beside it: no sidecar (DEV.json), temporary (DEV.tmp-PID) or DEV.histograms.csv.
    void special_file_outputs_stay_devices_data() {
        QTest::addColumn<QString>("program");  // mpx-cli, or python3
        QTest::addColumn<QStringList>("args");  // @D: the device, @F: the fixtures
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("needle");
        const auto cli = [](const char* name, QStringList args, int code, const char* flag) {
            QTest::newRow(name) << QStringLiteral(MPX_CLI_PATH) << args << code
                                << QStringLiteral("%1: '@D' is not a regular file and cannot be replaced").arg(QLatin1String(flag));
        };
        cli("run_csv", {"run", "--quiet", "--steps", "1", "--csv", "@D"}, 1, "--csv");
        cli("run_histograms", {"run", "--quiet", "--steps", "1", "--histograms", "@D"}, 1, "--histograms");
        cli("run_fp8_scales", {"run", "--quiet", "--steps", "1", "--precision", "fp8-hybrid", "--fp8-scales", "@D"}, 1,
            "--fp8-scales");
        cli("run_save_state", {"run", "--quiet", "--steps", "1", "--save-state", "@D"}, 1, "--save-state");
        cli("sweep_csv", {"sweep", "--quiet", "--steps", "1", "--csv", "@D", "--grid", "scaler.init_scale=1,2"}, 1, "--csv");
        cli("sweep_trace_csv", {"sweep", "--trace", "@F/t.csv", "--csv", "@D", "--grid", "scaler.init_scale=1,2"}, 1, "--csv");
        cli("sweep_merge", {"sweep", "--merge", "@D", "@F/part.csv"}, 1, "--merge");
        cli("replay_csv", {"replay", "@F/t.csv", "--csv", "@D"}, 1, "--csv");
        cli("trace_out", {"trace", "--from-deepspeed-log", "@F/ds.log", "--out", "@D"}, 1, "--out");
        cli("quantize_out", {"quantize", "--in", "@F/m.csv", "--out", "@D"}, 1, "--out");
        cli("quantize_scales", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "@D"}, 1, "--scales");
        cli("gemm_out", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "@D"}, 1, "--out");
        cli("gemm_error_csv", {"gemm-error", "--k", "16", "--m", "4", "--n", "4", "--csv", "@D"}, 1, "--csv");
        cli("compare_csv", {"compare", "@F/m.csv", "@F/m2.csv", "--csv", "@D"}, 2, "--csv");
        QTest::newRow("export_torch_out") << QStringLiteral(MPX_CLI_PATH) << QStringList{"export-torch", "--out", "@D"} << 2
                                          << QStringLiteral("--out: '@D' exists and is not an empty folder");
        QTest::newRow("train.py_csv") << QStringLiteral("/usr/bin/python3") << QStringList{"@F/torch/train.py", "--csv", "@D"}
                                      << 0 << QStringLiteral("train.py: wrote @D (2 rows)");
        QTest::newRow("mpx_trace.py") << QStringLiteral("/usr/bin/python3")
                                      << QStringList{"-c", "import sys; sys.path.insert(0, '@F'); import torch, mpx_trace; "
                                                           "m = torch.nn.Linear(2, 2); r = mpx_trace.Recorder('@D', m, every=1); "
                                                           "loss = m(torch.ones(1, 2)).sum(); loss.backward(); "
                                                           "r.record(loss, scale=1.0); r.close(); print('recorded', file=sys.stderr)"}
                                      << 0 << QStringLiteral("recorded");
    }
    void special_file_outputs_stay_devices() {
        QFETCH(QString, program);
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, needle);
        QTemporaryDir work;
        const fs::path dir = work.path().toStdString(), dev = dir / "dev";
        if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
            QSKIP("mknod needs root (CAP_MKNOD): no character device to write to");
        if (program.endsWith(QLatin1String("python3"))) {
            QProcess probe;
            probe.start(program, {QStringLiteral("-c"), QStringLiteral("import torch")});
            if (!probe.waitForFinished(60000) || probe.exitCode() != 0) QSKIP("PyTorch is not installed (Debian: python3-torch)");
        }
        struct stat before {};
        QCOMPARE(::stat(dev.c_str(), &before), 0);
        for (QString* s : {&needle}) s->replace(QStringLiteral("@D"), QString::fromStdString(dev.string()));
        for (QString& a : args) {
            a.replace(QStringLiteral("@D"), QString::fromStdString(dev.string()));
            a.replace(QStringLiteral("@F"), QString::fromStdString(F.string()));
        }
        QProcess p;
        p.setWorkingDirectory(work.path());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1"));
        p.setProcessEnvironment(env);
        p.start(program, args);
        QVERIFY(p.waitForFinished(120000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == code, qPrintable(QStringLiteral("exit %1: %2").arg(p.exitCode()).arg(err)));
        QVERIFY2(err.contains(needle), qPrintable(err));
        struct stat after {};
        QCOMPARE(::stat(dev.c_str(), &after), 0);
        QVERIFY2(S_ISCHR(after.st_mode) && after.st_rdev == before.st_rdev && after.st_ino == before.st_ino,
                 "the device was replaced");
        QCOMPARE(QDir(work.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot),
                 QStringList{"dev"});
    }

    // Seeds above 2^63 - 1 are used whole (issue 41, class 7; CLI11 read them into a long long as
    // 2^63 - 1): quantize's stochastic rounding from 2^63 differs from 2^63 - 1's, and gemm-error
    // says the seed it was given.
    void seeds_above_2p63_are_used_whole() {
        QTemporaryDir work;
        const auto quantize = [&](const char* seed) {
            QProcess p;
            p.setWorkingDirectory(work.path());
            p.start(QStringLiteral(MPX_CLI_PATH), {"quantize", "--in", QString::fromStdString((F / "m128.csv").string()),
                                                   "--out", QStringLiteral("q%1.csv").arg(seed), "--sr-seed", seed});
            if (!p.waitForFinished(60000) || p.exitCode() != 0) return QByteArray("failed: ") + p.readAllStandardError();
            QFile f(work.filePath(QStringLiteral("q%1.csv").arg(seed)));
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("unreadable");
        };
        const QByteArray below = quantize("9223372036854775807"), above = quantize("9223372036854775808"),
                         top = quantize("18446744073709551615");
        QVERIFY2(!below.startsWith("failed") && !above.startsWith("failed") && !top.startsWith("failed"), above.constData());
        QVERIFY(below != above);
        QVERIFY(above != top);
        QProcess g;
        g.start(QStringLiteral(MPX_CLI_PATH), {"gemm-error", "--seed", "18446744073709551615", "--k", "16", "--m", "4", "--n", "4"});
        QVERIFY(g.waitForFinished(60000));
        QCOMPARE(g.exitCode(), 0);
        QVERIFY(g.readAllStandardOutput().contains("seed 18446744073709551615,"));
    }

    // Issue 41, class 8: accumulate.bits under a run whose plan is fp8-fast is read by that run's
    // GEMMs, so it is taken (it was refused as "reaches no run") and changes the losses.
    void accumulate_bits_on_a_fast_plan_changes_the_losses() {
        QTemporaryDir work;
        const auto losses = [&](const char* bits) {
            QProcess p;
            p.setWorkingDirectory(work.path());
            const QString csv = QStringLiteral("b%1.csv").arg(bits);
            p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--precision", "fp8-hybrid+acc-fast", "--set",
                                                   QStringLiteral("accumulate.bits=%1").arg(bits), "--steps", "2", "--csv", csv});
            if (!p.waitForFinished(60000) || p.exitCode() != 0) return QStringList{"failed: " + p.readAllStandardError()};
            QFile f(work.filePath(csv));
            if (!f.open(QIODevice::ReadOnly)) return QStringList{"unreadable"};
            const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
            const int column = lines.value(0).split(QLatin1Char(',')).indexOf(QStringLiteral("loss"));
            QStringList out;
            for (int i = 1; i < lines.size(); ++i) out << lines[i].split(QLatin1Char(',')).value(column);
            return out;
        };
        const QStringList three = losses("3"), fourteen = losses("14");
        QVERIFY2(!three.value(0).startsWith(QStringLiteral("failed")), qPrintable(three.join(QLatin1Char(' '))));
        QVERIFY2(!fourteen.value(0).startsWith(QStringLiteral("failed")), qPrintable(fourteen.join(QLatin1Char(' '))));
        QCOMPARE(three.size(), 2);
        QCOMPARE(fourteen.size(), 2);
        QVERIFY(!three[0].isEmpty() && !fourteen[0].isEmpty());
        QVERIFY(three[0] != fourteen[0]);  // the forward pass already reads the 3-bit register
        QVERIFY(three[1] != fourteen[1]);
    }

    // Issue 41, class 10: export-torch --out . in an empty folder (the help allows an empty one)
    // fills that folder and keeps it, the shell's working folder; no temporary is left.
    void export_torch_into_the_working_folder() {
        QTemporaryDir work;
        const fs::path w = work.path().toStdString();
        fs::create_directory(w / "here");
        fs::create_directory(w / "sub");
        struct stat before{};
        QCOMPARE(::stat((w / "here").c_str(), &before), 0);
        const auto export_to = [&](const char* folder, const fs::path& cwd) {
            QProcess p;
            p.setWorkingDirectory(QString::fromStdString(cwd.string()));
            p.start(QStringLiteral(MPX_CLI_PATH), {"export-torch", "--steps", "2", "--precision", "fp32", "--set",
                                                   "model.sizes=2-4-2", "--out", folder});
            if (!p.waitForFinished(60000)) return QByteArray("hung");
            return p.exitCode() == 0 ? QByteArray() : p.readAllStandardError();
        };
        QCOMPARE(export_to(".", w / "here"), QByteArray());
        QCOMPARE(export_to("sub/", w), QByteArray());
        struct stat after{};
        QCOMPARE(::stat((w / "here").c_str(), &after), 0);
        QCOMPARE(after.st_ino, before.st_ino);  // the same folder, filled
        for (const char* dir : {"here", "sub"}) {
            QVERIFY(fs::is_regular_file(w / dir / "train.py"));
            QVERIFY(fs::is_regular_file(w / dir / "session.json"));
            QVERIFY(fs::is_directory(w / dir / "data"));
            QCOMPARE(std::distance(fs::directory_iterator(w / dir), fs::directory_iterator()), 3);  // no temporary
        }
        QCOMPARE(std::distance(fs::directory_iterator(w), fs::directory_iterator()), 2);
        QVERIFY(export_to(".", w / "here").contains("--out: '.' exists and is not an empty folder"));
    }

    // A file-size limit (SIGXFSZ ignored, so the write fails): a one-line message, no file left.
    void file_size_limit_leaves_no_temporary() {
        QTemporaryDir work;
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.setChildProcessModifier([] {
            const rlimit r{20000, 20000};
            ::setrlimit(RLIMIT_FSIZE, &r);
        });
        p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--steps", "400", "--set", "model.sizes=2-8-2",
                                               "--csv", "a.csv"});
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QVERIFY2(p.exitCode() == 1, qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("cannot write 'a.csv': File too large")), qPrintable(err));
        QCOMPARE(QDir(work.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot), QStringList());
    }

    // The CSV's target turned into a directory while the run trained: the commit fails before the
    // sidecar is touched, names the reason (not "Success"), and leaves the old sidecar as it was.
    void csv_target_becoming_a_directory_keeps_the_old_sidecar() {
        QTemporaryDir work;
        const fs::path dir = work.path().toStdString(), csv = dir / "a.csv", side = dir / "a.json";
        write(side, "old sidecar");
        {
            mpx::CsvWriter w(csv);
            fs::create_directory(csv);
            try {
                w.commit(side, "new sidecar");
                QFAIL("the commit over a directory succeeded");
            } catch (const mpx::IoError& e) {
                QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("is a directory")), e.what());
                QVERIFY2(!QString::fromUtf8(e.what()).contains(QStringLiteral("Success")), e.what());
            }
        }
        std::ifstream in(side);
        QCOMPARE(std::string(std::istreambuf_iterator<char>(in), {}), std::string("old sidecar"));
        QCOMPARE(QDir(work.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 (QStringList{"a.csv", "a.json"}));
    }

    // A continued run saved over the state it resumed: allowed, and the old state stays whole
    // until the new one is complete; a run refused before its first step leaves it as it was.
    void resume_saves_over_its_own_state() {
        QTemporaryDir work;
        const fs::path state = fs::path(work.path().toStdString()) / "s.json";
        fs::copy_file(F / "state.json", state);
        const auto state_text = [&] {
            std::ifstream in(state);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        const std::string before = state_text();
        QCOMPARE(json::parse(before).at("step").get<long long>(), 3LL);
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--resume", "s.json", "--steps", "2", "--save-state", "s.json"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);  // --steps below the saved step: refused, nothing written
        QVERIFY(p.readAllStandardError().contains("--steps"));
        QCOMPARE(state_text(), before);
        p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--resume", "s.json", "--steps", "6", "--save-state", "s.json"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QCOMPARE(json::parse(state_text()).at("step").get<long long>(), 6LL);
        QCOMPARE(QDir(work.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot), QStringList{"s.json"});
    }

    // A CSV that cannot be replaced (an immutable file) is refused before the first step, and a
    // commit that meets one after training touches neither the CSV nor its sidecar: a run's outputs
    // are written all or nothing, and a new sidecar never describes an old CSV.
    void an_immutable_csv_is_refused_and_nothing_changes() {
        QTemporaryDir work;
        const fs::path dir = work.path().toStdString(), csv = dir / "a.csv", side = dir / "a.json";
        write(csv, "old csv");
        write(side, "old sidecar");
        const auto immutable = [&](bool on) {
            const int fd = ::open(csv.c_str(), O_RDONLY);
            int flags = 0;
            bool ok = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
            flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
            ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
            if (fd >= 0) ::close(fd);
            return ok;
        };
        const auto text = [](const fs::path& f) {
            std::ifstream in(f);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        // Through the command line: refused before training, exit 1, the reason named.
        if (!immutable(true)) QSKIP("this file system or user cannot set the immutable attribute (chattr +i)");
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.start(QStringLiteral(MPX_CLI_PATH), {"run", "--quiet", "--steps", "3", "--csv", "a.csv"});
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY(immutable(false));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains(QStringLiteral("'a.csv' is immutable (chattr +i) and cannot be replaced")), qPrintable(err));
        QCOMPARE(text(csv), std::string("old csv"));
        QCOMPARE(text(side), std::string("old sidecar"));
        // The CSV turns immutable while the run trains: the commit fails, both files stay old.
        {
            mpx::CsvWriter w(csv);
            QVERIFY(immutable(true));
            bool threw = false;
            try {
                w.commit(side, "new sidecar");
            } catch (const mpx::IoError& e) {
                threw = QString::fromUtf8(e.what()).contains(QStringLiteral("immutable"));
            }
            QVERIFY(immutable(false));
            QVERIFY(threw);
        }
        QCOMPARE(text(csv), std::string("old csv"));
        QCOMPARE(text(side), std::string("old sidecar"));
        QCOMPARE(QDir(work.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot),
                 (QStringList{"a.csv", "a.json"}));
    }
};

QTEST_GUILESS_MAIN(TestBadInput)
#include "test_bad_input.moc"
