// The bad-input catalogue: every row is one hostile command line for mpx-cli (run, bench, format,
// --resume, and issue 41's readers-writers: replay, sweep, trace, quantize, gemm, gemm-error,
// compare, export-torch) or the app, with the exit code it must end with and words its one-line
// message must contain. Rule: each row runs in a fresh temporary HOME and working folder, with its inputs in a
// fixture folder, and neither folder may gain, lose or change a file; no row may hang.
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

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// shell: args[0] is a /bin/sh script run with $CLI and $APP set, for bytes QProcess cannot pass
// (invalid UTF-8 in an argument).
enum class Tool { cli, app, shell };
// memory_256m: no room for 64 threads' stacks, so the system refuses a thread start.
enum class Limit { none, memory_2g, memory_256m };

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

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
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
        fs::create_directory(F / "dir");
        fs::create_directory(F / "dir.json");
        QCOMPARE(::mkfifo((F / "fifo.json").c_str(), 0600), 0);
        fs::copy_file(fs::path(MPX_SOURCE_DIR) / "resources/presets/default.json", F / "good.json");
        write(F / "bad.json", "{\"steps\": ");
        std::ifstream g(F / "good.json");
        const std::string good((std::istreambuf_iterator<char>(g)), {});
        write(F / "trailing.json", good + "\n}garbage");
        write(F / "array.json", "[1, 2, 3]");
        write(F / "empty.json", "");
        write(F / "unknown_key.json", "{\"stepz\": 10}");
        write(F / "wrong_type.json", "{\"steps\": \"many\"}");
        write(F / "sizes_trailing.json", "{\"model\": {\"sizes\": \"2-64-2-\"}}");
        // Every dynamic run names its scaler: the file's session scaler reaches none (issue 32, item 4).
        write(F / "scaler_unused.json",
              "{\"runs\": [\"amp-fp16+deepspeed\"], \"scaler\": {\"preset\": \"pytorch\", \"init_scale\": 1048576}}");
        write(F / "invalid_utf8.json", "{\"name\": \"\xff\xfe\"}");
        write(F / "number_overflow.json", "{\"steps\": 1e400}");
        write(F / "sidecar_noconfig.json", "{\"format\": \"mpx-export\"}");
        write(F / "huge.json", std::string((16u << 20) + 1, ' '));
        // A real saved state, then one hostile edit of it per file.
        QTemporaryDir work;
        QProcess p;
        p.setWorkingDirectory(work.path());
        p.start(QStringLiteral(MPX_CLI_PATH),
                {"run", "--steps", "3", "--set", "model.sizes=2-8-2", "--quiet", "--save-state",
                 QString::fromStdString((F / "state.json").string())});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        std::ifstream in(F / "state.json");
        const json state = json::parse(in);
        const auto edit = [&](const char* name, auto&& change) {
            json j = state;
            change(j);
            write(F / name, j.dump());
        };
        edit("state_inf_scale.json", [](json& j) { j["runs"][1]["scaler_state"]["scale"] = "inf"; });
        edit("state_nan_scale.json", [](json& j) { j["runs"][1]["scaler_state"]["scale"] = "nan"; });
        edit("state_neg_scale.json", [](json& j) { j["runs"][1]["scaler_state"]["scale"] = -1.0; });
        edit("state_1e300.json", [](json& j) { j["runs"][0]["params"][0][0] = 1e300; });
        edit("state_param_text.json", [](json& j) { j["runs"][0]["params"][0][0] = "x"; });
        edit("state_params_short.json", [](json& j) { j["runs"][0]["params"][0].erase(0); });
        edit("state_params_number.json", [](json& j) { j["runs"][0]["params"] = 5; });
        write(F / "state_number_overflow.json", state.dump().substr(0, state.dump().size() - 1) + ", \"x\": 1e400}");
        edit("state_version.json", [](json& j) { j["version"] = 2; });
        edit("state_format.json", [](json& j) { j["format"] = "something"; });
        edit("state_step.json", [](json& j) { j["step"] = 2; });
        edit("state_neg_step.json", [](json& j) { j["step"] = -1; });
        edit("state_big_step.json", [](json& j) { j["step"] = 1e30; });
        edit("state_no_runs.json", [](json& j) { j.erase("runs"); });
        edit("state_run_count.json", [](json& j) { j["runs"].erase(0); });
        edit("state_label.json", [](json& j) { j["runs"][0]["label"] = "tf32"; });
        edit("state_unknown_key.json", [](json& j) { j["runs"][0]["extra"] = 1; });
        edit("state_applied.json", [](json& j) { j["runs"][0]["applied_steps"] = 99; });
        edit("state_tracker.json", [](json& j) { j["runs"][1]["scaler_state"]["growth_tracker"] = 99999; });
        edit("state_bad_config.json", [](json& j) { j["config"]["train"]["lr"] = -1; });
        edit("state_no_config.json", [](json& j) { j.erase("config"); });
        edit("state_sampler.json", [](json& j) { j["sampler"]["position"] = 7; });
        write(F / "state_trailing.json", state.dump() + " {}");
        write(F / "state_cut.json", state.dump().substr(0, state.dump().size() / 2));
        fs::copy_file(F / "state.json", F / "state_copy.json");
        // Issue 41, class 5: a state with the new fields (FP8 delayed scaling's amax histories, a
        // Kahan run's compensation and compensation_max), then one hostile edit of each field.
        p.start(QStringLiteral(MPX_CLI_PATH),
                {"run", "--steps", "3", "--set", "model.sizes=2-8-2", "--precision", "fp8-hybrid,pure-bf16+kahan",
                 "--quiet", "--save-state", QString::fromStdString((F / "state_new.json").string())});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        std::ifstream in_new(F / "state_new.json");
        const json state_new = json::parse(in_new);
        const auto edit_new = [&](const char* name, auto&& change) {
            json j = state_new;
            change(j);
            write(F / name, j.dump());
        };
        edit_new("state_fp8_scale_nan.json", [](json& j) { j["runs"][0]["fp8_amax"][0][0] = "nan"; });
        edit_new("state_fp8_scale_zero.json", [](json& j) { j["runs"][0]["fp8_amax"][0][0] = 0; });
        edit_new("state_fp8_scale_negative.json", [](json& j) { j["runs"][0]["fp8_amax"][2][0] = -1; });
        edit_new("state_fp8_next_fraction.json", [](json& j) { j["runs"][0]["fp8_amax"][1][1] = 1.5; });
        edit_new("state_fp8_next_beyond.json", [](json& j) { j["runs"][0]["fp8_amax"][1][1] = 1024; });
        edit_new("state_fp8_amax_negative.json", [](json& j) { j["runs"][0]["fp8_amax"][1][3] = -2; });
        edit_new("state_fp8_amax_text.json", [](json& j) { j["runs"][0]["fp8_amax"][1][3] = "x"; });
        edit_new("state_fp8_history_short.json", [](json& j) { j["runs"][0]["fp8_amax"][1].erase(4); });
        edit_new("state_fp8_tensor_missing.json", [](json& j) { j["runs"][0]["fp8_amax"].erase(5); });
        edit_new("state_fp8_on_kahan.json", [](json& j) { j["runs"][1]["fp8_amax"] = j["runs"][0]["fp8_amax"]; });
        edit_new("state_comp_max_negative.json", [](json& j) { j["runs"][1]["compensation_max"] = -5; });
        edit_new("state_comp_max_sign_bit.json", [](json& j) { j["runs"][1]["compensation_max"] = 4294967291u; });
        edit_new("state_comp_max_text.json", [](json& j) { j["runs"][1]["compensation_max"] = "big"; });
        edit_new("state_comp_max_missing.json", [](json& j) { j["runs"][1].erase("compensation_max"); });
        edit_new("state_comp_max_alone.json", [](json& j) { j["runs"][0]["compensation_max"] = 0; });
        edit_new("state_comp_value_text.json", [](json& j) { j["runs"][1]["compensation"][0][0] = "y"; });
        edit_new("state_comp_short.json", [](json& j) { j["runs"][1]["compensation"][0].erase(0); });
        edit_new("state_label_missing.json", [](json& j) { j["runs"][1].erase("label"); });
        edit_new("state_failure_number.json", [](json& j) { j["runs"][1]["failure"] = 5; });
        edit_new("state_params_missing.json", [](json& j) { j["runs"][1].erase("params"); });
        edit_new("state_scaler_state_missing.json", [](json& j) { j["runs"][1].erase("scaler_state"); });
        edit_new("state_tracker_beyond_int.json", [](json& j) { j["runs"][1]["scaler_state"]["growth_tracker"] = 4294967296ll; });
        edit_new("state_last_overflow_wraps.json",
                 [](json& j) { j["runs"][1]["scaler_state"]["last_overflow_iteration"] = 18446744073709551615ull; });
        edit_new("state_iteration_beyond_step.json", [](json& j) { j["runs"][1]["scaler_state"]["iteration"] = 99; });
        edit_new("state_top_unknown.json", [](json& j) { j["extra"] = 1; });
        edit_new("state_sampler_unknown.json", [](json& j) { j["sampler"]["extra"] = 1; });
        // Class 10: inputs holding terminal control characters (erase the line, back to its start)
        // and a Latin-1 file name; each echo of them must come back escaped.
        const std::string esc = "\x1b[2K\rEVIL";
        edit_new("state_label_control.json", [&](json& j) { j["runs"][0]["label"] = esc; });
        write(F / "esc.csv", "1,2\n3," + esc + "\n");
        write(F / "esc_key.json", "{\"st\\u001b[2Keps\": 3}");
        write(F / "te.csv", "# mpx-trace 1; amax unknown\n"
                            "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                            "1," + esc + ",0,0,nan,,,0,0,,,\n");
        write(F / "te.histograms.csv", "run,step,layer,tensor,bin_log2,count\n");
        write(F / "mg_esc.log", " iteration 1/ 99 | loss scale: " + esc + " | number of skipped iterations: 0 |\n");
        write(F / "run_a.csv", "run,step,loss\nfp32,0,0.5\n");
        write(F / "run_esc_cell.csv", "run,step,loss\nfp32,0," + esc + "\n");
        write(F / "run_esc_label.csv", "run,step,loss\n" + esc + ",0,0.5\n");
        write(F / "t\xe9.csv", "");  // Latin-1 names
        write(F / "n\xe9.csv", "1,x\n");
        fs::copy_file(F / "good.json", F / "c\xe9.json");
        // Issue 41's inputs, each also reachable through a hard link and a symbolic link.
        write(F / "m.csv", "1,2\n3,4\n");
        write(F / "m2.csv", "1,0\n0,1\n");
        write(F / "t.csv", "# mpx-trace 1; amax unknown\n"
                           "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                           "1,65536,0,0,nan,,,0,0,,,\n2,65536,0,0,nan,,,0,0,,,\n");
        write(F / "t.histograms.csv", "run,step,layer,tensor,bin_log2,count\n");
        // Class 6: 19 counts of 10^18 in one step's histograms add up past 2^64 - 1.
        fs::copy_file(F / "t.csv", F / "tw.csv");
        std::string wrap = "run,step,layer,tensor,bin_log2,count\n";
        for (int i = 0; i < 19; ++i) wrap += "trace,1,fc" + std::to_string(i % 3) + ",grad_output,-40,1000000000000000000\n";
        write(F / "tw.histograms.csv", wrap);
        write(F / "ds.log", "[Rank 0] step=1, skipped=0, lr=[0.0001]\n[Rank 0] step=2, skipped=0, lr=[0.0001]\n");
        const auto megatron_line = [](long long iteration) {
            return " iteration " + std::to_string(iteration) + "/ 99999999 | loss scale: 65536.0 | "
                   "number of skipped iterations: 0 |\n";
        };
        write(F / "mg.log", megatron_line(1) + megatron_line(2));
        write(F / "mg_huge.log", megatron_line(1ll << 24));  // one line claiming 2^24 iterations
        write(F / "mg_many.log", megatron_line(1ll << 21) + megatron_line(2ll << 21) + megatron_line(3ll << 21));
        write(F / "part.csv", "point,run\r\n");
        write(F / "part.json", "{}");
        for (const char* name : {"m", "m2", "t", "good"}) {
            const std::string ext = std::string(name) == "good" ? ".json" : ".csv";
            fs::create_hard_link(F / (name + ext), F / (name + std::string("_hard") + ext));
            fs::create_symlink(F / (name + ext), F / (name + std::string("_sym") + ext));
        }
        fs::create_hard_link(F / "mg.log", F / "mg_hard.log");
        // Class 9: the shipped Python writers, as a user has them (an export's train.py, the recorder).
        p.start(QStringLiteral(MPX_CLI_PATH), {"export-torch", "--steps", "2", "--precision", "fp32", "--set",
                                               "model.sizes=2-4-2", "--out", QString::fromStdString((F / "torch").string())});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        p.start(QStringLiteral(MPX_CLI_PATH), {"trace", "--script"});
        QVERIFY(p.waitForFinished(60000));
        write(F / "mpx_trace.py", p.readAllStandardOutput().toStdString());
        std::string big;  // 128 x 128: quantize's values (~230 KB of hex floats) overfill a pipe
        for (int i = 0; i < 128; ++i)
            for (int j = 0; j < 128; ++j) big += std::to_string((i * 128 + j) % 97 - 48) + (j == 127 ? "\n" : ",");
        write(F / "m128.csv", big);
    }

    void rejects_bad_input_and_leaves_no_file_data() {
        QTest::addColumn<int>("tool");
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("needle");
        QTest::addColumn<int>("limit");
        const auto cli = [](const char* name, QStringList args, int code, const char* needle,
                            Limit limit = Limit::none) {
            QTest::newRow(name) << int(Tool::cli) << args << code << QString::fromUtf8(needle) << int(limit);
        };
        const auto run = [&](const char* name, QStringList args, int code, const char* needle) {
            cli(name, QStringList{"run", "--quiet"} + args, code, needle);
        };
        const auto set = [&](const char* name, const char* assignment, const char* needle) {
            run(name, {"--steps", "2", "--set", assignment}, 2, needle);
        };
        const auto resume = [&](const char* name, QStringList args, int code, const char* needle) {
            run(name, QStringList{"--resume"} + args, code, needle);
        };
        const auto bench = [&](const char* name, QStringList args, int code, const char* needle) {
            cli(name, QStringList{"bench", "--seconds", "0.01"} + args, code, needle);
        };
        const auto format = [&](const char* name, QStringList args, int code, const char* needle) {
            cli(name, QStringList{"format"} + args, code, needle);
        };
        const auto app = [](const char* name, QStringList args, const char* needle) {
            QTest::newRow(name) << int(Tool::app) << args << 2 << QString::fromUtf8(needle) << int(Limit::none);
        };

        // --- the command line itself
        cli("no_command", {}, 2, "a command is required");
        cli("unknown_command", {"trian"}, 2, "unknown command 'trian'");
        cli("unknown_command_case", {"RUN"}, 2, "unknown command 'RUN'");
        cli("unknown_top_option", {"--bogus"}, 2, "--bogus");
        run("unknown_option", {"--bogus"}, 2, "--bogus");
        run("extra_argument", {"extra"}, 2, "extra");
        run("steps_missing_value", {"--steps"}, 2, "--steps");
        run("steps_not_number", {"--steps", "many"}, 2, "--steps");
        run("steps_empty", {"--steps", ""}, 2, "--steps");
        run("steps_zero", {"--steps", "0"}, 2, "--steps: must be between 1");
        run("steps_negative", {"--steps", "-1"}, 2, "--steps");
        run("steps_too_many", {"--steps", "100000001"}, 2, "--steps: must be between 1");
        run("steps_huge", {"--steps", "99999999999999999999"}, 2, "--steps");
        run("steps_fraction", {"--steps", "1.5"}, 2, "--steps");
        run("threads_too_many", {"--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
        run("threads_negative", {"--threads", "-1"}, 2, "--threads");
        bench("threads_not_number", {"--threads", "x"}, 2, "--threads");
        run("seed_negative", {"--seed", "-1"}, 2, "--seed");
        run("seed_not_number", {"--seed", "x"}, 2, "--seed");
        // --- shortcut flags
        run("precision_empty", {"--precision", ""}, 2, "--precision");
        run("precision_commas", {"--precision", ",,"}, 2, "--precision");
        run("precision_unknown", {"--precision", "fp64"}, 2, "fp64");
        run("precision_fp8", {"--precision", "amp-fp8"}, 2, "amp-fp8");
        run("precision_twice", {"--precision", "fp32,fp32"}, 2, "twice");
        run("precision_bad_scaler", {"--precision", "amp-fp16+nosuch"}, 2, "nosuch");
        run("scaler_empty", {"--scaler", ""}, 2, "--scaler");
        run("scaler_unknown", {"--scaler", "tensorflow1"}, 2, "tensorflow1");
        run("model_empty", {"--model", ""}, 2, "--model");
        run("model_trailing_dash", {"--model", "2-64-2-"}, 2, "2-64-2-");
        run("model_leading_dash", {"--model", "-2-64-2"}, 2, "model.sizes");
        run("model_double_dash", {"--model", "2--64-2"}, 2, "2--64-2");
        run("model_letters", {"--model", "2-x-2"}, 2, "2-x-2");
        run("model_zero_width", {"--model", "2-0-2"}, 2, "model.sizes");
        run("model_overflow", {"--model", "2-99999999999-2"}, 2, "model.sizes");
        run("model_wrong_input", {"--model", "3-64-2"}, 2, "input size");
        run("model_wrong_output", {"--model", "2-64-3"}, 2, "output size");
        run("model_one_layer", {"--model", "2"}, 2, "model.sizes");
        run("dataset_empty", {"--dataset", ""}, 2, "--dataset");
        run("dataset_unknown", {"--dataset", "mnist"}, 2, "data.kind");
        run("device_empty", {"--device", ""}, 2, "--device");
        run("device_unknown", {"--device", "tpu"}, 2, "device");
        run("snippet_empty", {"--snippet", ""}, 2, "--snippet");
        run("snippet_unknown", {"--snippet", "jax"}, 2, "--snippet");
        // --- --config
        run("config_empty", {"--config", ""}, 2, "--config");
        run("config_unknown_preset", {"--config", "nosuch"}, 2, "unknown preset 'nosuch'");
        run("config_missing_file", {"--config", "@F/missing.json"}, 1, "missing.json");
        run("config_directory", {"--config", "@F/dir"}, 1, "is a directory");
        run("config_directory_json", {"--config", "@F/dir.json"}, 1, "is a directory");
        run("config_fifo", {"--config", "@F/fifo.json"}, 1, "not a regular file");
        run("config_dev_zero", {"--config", "/dev/zero"}, 1, "not a regular file");
        run("config_dev_null", {"--config", "/dev/null"}, 1, "not a regular file");
        run("config_huge", {"--config", "@F/huge.json"}, 1, "at most");
        run("config_not_json", {"--config", "@F/bad.json"}, 2, "bad.json is not valid JSON");
        run("config_trailing", {"--config", "@F/trailing.json"}, 2, "trailing.json is not valid JSON");
        run("config_empty_file", {"--config", "@F/empty.json"}, 2, "empty.json is not valid JSON");
        run("config_array", {"--config", "@F/array.json"}, 2, "must be a JSON object");
        run("config_unknown_key", {"--config", "@F/unknown_key.json"}, 2, "stepz: unknown setting");
        run("config_wrong_type", {"--config", "@F/wrong_type.json"}, 2, "steps");
        run("config_sizes_trailing", {"--config", "@F/sizes_trailing.json"}, 2, "2-64-2-");
        run("config_invalid_utf8", {"--config", "@F/invalid_utf8.json"}, 2, "invalid_utf8.json is not valid JSON");
        run("config_sidecar_without_config", {"--config", "@F/sidecar_noconfig.json"}, 2, "without its \"config\"");
        run("config_number_overflow", {"--config", "@F/number_overflow.json"}, 2, "number_overflow.json is not valid JSON");
        run("config_is_state", {"--config", "@F/state.json"}, 2, "--resume");
        // --- --set
        run("set_no_equals", {"--set", "steps"}, 2, "not key=value");
        run("set_empty_key", {"--set", "=5"}, 2, "not key=value");
        run("set_empty", {"--set", ""}, 2, "--set");
        set("set_unknown_key", "stepz=5", "stepz: unknown setting");
        set("set_unknown_nested", "train.lrr=0.1", "train.lrr");
        set("set_unknown_section", "trainer.lr=0.1", "trainer");
        set("set_lr_negative", "train.lr=-1", "train.lr");
        set("set_lr_nan", "train.lr=nan", "train.lr");
        set("set_lr_inf", "train.lr=inf", "train.lr");
        set("set_lr_text", "train.lr=fast", "train.lr");
        set("set_lr_beyond_double", "train.lr=1e400", "train.lr");
        set("set_steps_beyond_double", "steps=1e400", "steps");
        set("set_lr_object", "train.lr={}", "train.lr");
        set("set_batch_zero", "train.batch=0", "train.batch");
        set("set_batch_huge", "train.batch=1e12", "train.batch");
        set("set_batch_fraction", "train.batch=1.5", "train.batch");
        set("set_batch_over_data", "train.batch=4096", "train.batch");
        set("set_accumulation_zero", "train.accumulation=0", "train.accumulation");
        set("set_accumulation_huge", "train.accumulation=5000", "train.accumulation");
        set("set_optimizer_unknown", "train.optimizer=rmsprop", "train.optimizer");
        set("set_clip_negative", "train.clip_norm=-1", "train.clip_norm");
        set("set_growth_factor_one", "scaler.growth_factor=1", "scaler.growth_factor");
        set("set_backoff_one", "scaler.backoff_factor=1", "scaler.backoff_factor");
        set("set_backoff_zero", "scaler.backoff_factor=0", "scaler.backoff_factor");
        set("set_growth_interval_zero", "scaler.growth_interval=0", "scaler.growth_interval");
        set("set_growth_interval_huge", "scaler.growth_interval=1e20", "scaler.growth_interval");
        set("set_hysteresis_zero", "scaler.hysteresis=0", "scaler.hysteresis");
        set("set_init_scale_nan", "scaler.init_scale=nan", "scaler.init_scale");
        set("set_init_scale_negative", "scaler.init_scale=-8", "scaler.init_scale");
        set("set_scaler_kind", "scaler.kind=weird", "scaler.kind");
        set("set_scaler_preset", "scaler.preset=nosuch", "nosuch");
        set("set_at_min", "scaler.at_min=explode", "scaler.at_min");
        set("set_scaler_unknown", "scaler.growth=2", "scaler.growth");
        set("set_sizes_trailing", "model.sizes=2-64-2-", "2-64-2-");
        set("set_sizes_empty_list", "model.sizes=[]", "model.sizes");
        set("set_sizes_floats", "model.sizes=[2.5,2]", "model.sizes");
        set("set_dropout_two", "model.dropout=2", "model.dropout");
        set("set_activation", "model.activation=swish", "model.activation");
        set("set_layernorm_text", "model.layernorm=maybe", "model.layernorm");
        // The GPT's switches (docs/gpt.md): a bad value, and the switch on an MLP, which it reaches no run of.
        set("set_norm_stats_on_mlp", "norm.stats=storage", "norm.stats: is set but the MLP's LayerNorm keeps FP32 statistics");
        run("set_norm_stats_unknown", {"--config", "gpt-classroom", "--steps", "2", "--set", "norm.stats=bf16"}, 2,
            "norm.stats: must be one of");
        set("set_z_loss_on_mlp", "train.z_loss=0.0001", "train.z_loss: is the GPT's");
        run("set_qk_norm_text", {"--config", "gpt-classroom", "--steps", "2", "--set", "attention.qk_norm=maybe"}, 2,
            "attention.qk_norm");
        run("set_z_loss_negative", {"--config", "gpt-classroom", "--steps", "2", "--set", "train.z_loss=-1"}, 2, "train.z_loss");
        // The gradient penalty (docs/penalty.md): λ's range, switches that reach no run, what it refuses.
        set("set_penalty_negative", "train.gradient_penalty=-1", "train.gradient_penalty: must be between 0");
        set("set_penalty_nan", "train.gradient_penalty=nan", "train.gradient_penalty: must be between 0");
        set("set_penalty_inf", "train.gradient_penalty=inf", "train.gradient_penalty: must be between 0");
        set("set_penalty_unscale_without_penalty", "train.penalty_unscale=false", "train.penalty_unscale: reaches no run");
        set("set_penalty_form_without_penalty", "train.penalty=squared_norm", "train.penalty: reaches no run");
        run("set_penalty_two_mistakes", {"--steps", "2", "--set", "train.gradient_penalty=1", "--set",
            "train.penalty_unscale=false", "--set", "train.penalty_scaled_grads=false"}, 2, "keep one mistake at a time");
        run("run_penalty_mistake_without_penalty", {"--steps", "2", "--precision", "amp-fp16+no-unscale"}, 2,
            "+no-unscale is a gradient-penalty mistake, and train.gradient_penalty is 0");
        run("run_penalty_mistake_without_scale", {"--steps", "2", "--precision", "fp32+unscaled-grads", "--set",
            "train.gradient_penalty=1"}, 2, "+unscaled-grads changes nothing without a loss scale");
        run("set_penalty_on_fp8", {"--steps", "2", "--precision", "fp8-hybrid", "--set", "train.gradient_penalty=1"}, 2,
            "train.gradient_penalty: run 'fp8-hybrid': FP8/FP4 recipes scale the three GEMMs");
        run("set_penalty_on_fp4", {"--steps", "2", "--precision", "nvfp4", "--set", "train.gradient_penalty=1"}, 2,
            "train.gradient_penalty: run 'nvfp4': FP8/FP4 recipes");
        run("set_penalty_on_gpt", {"--config", "gpt-classroom", "--steps", "2", "--set", "train.gradient_penalty=1"}, 2,
            "train.gradient_penalty: the GPT has no Hessian-vector products");
        run("set_penalty_with_recompute", {"--steps", "2", "--set", "train.gradient_penalty=1", "--set",
            "model.recompute=true"}, 2, "set model.recompute = false");
        run("set_gpt_dropout_one", {"--config", "gpt-classroom", "--steps", "2", "--set", "model.dropout=1"}, 2,
            "model.dropout: must be in [0, 1)");
        // FP4's first/last count the GPT's Linear layers: gpt-classroom's 2 blocks have 9.
        run("set_gpt_fp4_keeps_every_linear", {"--config", "gpt-classroom", "--steps", "2", "--precision",
            "nvfp4+bf16-first-5+bf16-last-4"}, 2, "and this model has 9: no layer would train in FP4");
        // The GPT's samples (engine/config/sample_config.hpp).
        const auto gpt = [&](const char* name, const char* assignment, const char* needle) {
            run(name, {"--config", "gpt-classroom", "--steps", "2", "--set", assignment}, 2, needle);
        };
        gpt("set_sample_every_negative", "sample.every=-1", "sample.every: must be 0");
        gpt("set_sample_length_zero", "sample.length=0", "sample.length: must be 1 to 4096");
        gpt("set_sample_length_huge", "sample.length=5000", "sample.length: must be 1 to 4096");
        gpt("set_sample_prompt_empty", "sample.prompt=\"\"", "sample.prompt: is empty");
        gpt("set_sample_prompt_foreign", "sample.prompt=\"Жук\"", "sample.prompt: 'Ж' is not one of the 99 symbols");
        gpt("set_sample_prompt_number", "sample.prompt=5", "sample.prompt: must be text");
        gpt("set_sample_unknown", "sample.temperature=2", "sample.temperature");
        set("set_n_train_zero", "data.n_train=0", "data.n_train");
        set("set_n_train_huge", "data.n_train=2000000", "data.n_train");
        set("set_n_test_negative", "data.n_test=-1", "data.n_test");
        set("set_noise_negative", "data.noise=-1", "data.noise");
        set("set_data_kind", "data.kind=nope", "data.kind");
        set("set_classes_many", "data.classes=99", "data.classes");
        set("set_steps_zero", "steps=0", "steps");
        set("set_steps_fraction", "steps=1.5", "steps");
        set("set_steps_text", "steps=ten", "steps");
        set("set_seed_negative", "seed=-1", "seed");
        set("set_record_every_zero", "record_every=0", "record_every");
        set("set_eval_every_negative", "eval_every=-1", "eval_every");
        set("set_device", "device=tpu", "device");
        set("set_runs_empty", "runs=", "runs");
        set("set_runs_twice", "runs=fp32,fp32", "twice");
        set("set_runs_too_many", "runs=fp32,tf32,amp-fp16,amp-bf16,half-fp16,pure-fp16,selective-fp16,"
            "adaptive-fp16,scaling-only,amp-fp16+deepspeed,amp-fp16+apex,amp-fp16+keras,amp-fp16+megatron,"
            "amp-fp16+nemo,amp-fp16+static,amp-fp16+none,amp-fp16+tf-keras-legacy", "runs");
        const auto shell = [](const char* name, const char* script, const char* needle) {
            QTest::newRow(name) << int(Tool::shell) << QStringList{script} << 2 << QString::fromUtf8(needle) << int(Limit::none);
        };
        shell("set_name_invalid_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"name=$(printf '\\377\\376')\"",
              "--set: an assignment is not valid UTF-8");
        shell("set_description_invalid_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"description=caf$(printf '\\303')\"",
              "--set: an assignment is not valid UTF-8");
        shell("set_name_overlong_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"name=$(printf '\\300\\257')\"",
              "--set: an assignment is not valid UTF-8");
        run("set_selective_unknown_layer",
            {"--steps", "2", "--set", "runs=selective-fp16", "--set", "selective_layers=fc9"}, 2, "fc9");
        set("set_adaptive_zero", "adaptive_threshold=0", "adaptive_threshold");
        set("set_memory_budget_zero", "memory_budget=0", "memory_budget");
        set("set_overrides_dotted", "scaler_overrides.growth_interval=5", "scaler_overrides");
        set("set_overrides_kind", "scaler_overrides={\"kind\":\"none\"}", "scaler_overrides");
        set("set_overrides_not_object", "scaler_overrides=5", "scaler_overrides");
        set("set_overrides_bad_value", "scaler_overrides={\"growth_interval\":0}", "growth_interval");
        cli("data_too_large_for_memory",
            {"run", "--quiet", "--steps", "2", "--set", "data.kind=digits", "--set", "model.sizes=784-10",
             "--set", "data.n_train=1000000", "--set", "data.n_test=1000000"},
            2, "data.n_train", Limit::memory_2g);
        // --- outputs: checked before a step is trained
        run("csv_empty", {"--steps", "2", "--csv", ""}, 2, "--csv");
        run("csv_directory", {"--steps", "2", "--csv", "@F/dir"}, 1, "is a directory");
        run("csv_dot", {"--steps", "2", "--csv", "."}, 1, "is a directory");
        run("csv_missing_directory", {"--steps", "2", "--csv", "no/such/a.csv"}, 1, "does not exist");
        run("csv_device", {"--steps", "2", "--csv", "/dev/null"}, 1, "not a regular file");
        run("csv_sidecar_directory", {"--steps", "2", "--csv", "@F/dir.csv"}, 1, "sidecar");
        run("save_state_empty", {"--steps", "2", "--save-state", ""}, 2, "--save-state");
        run("save_state_directory", {"--steps", "2", "--save-state", "@F/dir"}, 1, "is a directory");
        run("save_state_is_csv", {"--steps", "2", "--csv", "a.csv", "--save-state", "a.csv"}, 2, "--save-state");
        run("save_state_is_sidecar", {"--steps", "2", "--csv", "a.csv", "--save-state", "a.json"}, 2, "sidecar");
        run("save_state_is_config", {"--steps", "2", "--config", "@F/good.json", "--save-state", "@F/good.json"},
            2, "--config file");
        run("csv_sidecar_is_config", {"--steps", "2", "--config", "@F/good.json", "--csv", "@F/good.csv"}, 2,
            "--config file");
        run("save_state_missing_directory", {"--steps", "2", "--save-state", "no/s.json"}, 1, "does not exist");
        // --- --resume: the state is validated like a configuration; flags that cannot apply are refused
        resume("resume_empty", {""}, 2, "--resume");
        resume("resume_missing", {"@F/missing.json"}, 1, "missing.json");
        resume("resume_directory", {"@F/dir"}, 1, "is a directory");
        resume("resume_fifo", {"@F/fifo.json"}, 1, "not a regular file");
        resume("resume_dev_zero", {"/dev/zero"}, 1, "not a regular file");
        resume("resume_not_json", {"@F/bad.json"}, 2, "not valid JSON");
        resume("resume_empty_file", {"@F/empty.json"}, 2, "not valid JSON");
        resume("resume_cut_short", {"@F/state_cut.json"}, 2, "not valid JSON");
        resume("resume_trailing", {"@F/state_trailing.json"}, 2, "not valid JSON");
        resume("resume_number_overflow", {"@F/state_number_overflow.json"}, 2, "not valid JSON");
        resume("resume_a_config", {"@F/good.json"}, 2, "not an mpx session state");
        resume("resume_array", {"@F/array.json"}, 2, "not an mpx session state");
        resume("resume_inf_scale", {"@F/state_inf_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
        resume("resume_nan_scale", {"@F/state_nan_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
        resume("resume_negative_scale", {"@F/state_neg_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
        resume("resume_param_1e300", {"@F/state_1e300.json", "--steps", "5"}, 2, "FP32 range");
        resume("resume_param_text", {"@F/state_param_text.json", "--steps", "5"}, 2, "params[0][0]: the saved state holds \"x\", not a number");
        resume("resume_params_short", {"@F/state_params_short.json", "--steps", "5"}, 2, "does not match");
        resume("resume_params_number", {"@F/state_params_number.json", "--steps", "5"}, 2, "params");
        resume("resume_version", {"@F/state_version.json", "--steps", "5"}, 2, "version");
        resume("resume_format", {"@F/state_format.json", "--steps", "5"}, 2, "not an mpx session state");
        resume("resume_step_mismatch", {"@F/state_step.json", "--steps", "5"}, 2, "batch order");
        resume("resume_negative_step", {"@F/state_neg_step.json", "--steps", "5"}, 2, "\"step\"");
        resume("resume_huge_step", {"@F/state_big_step.json", "--steps", "5"}, 2, "\"step\"");
        resume("resume_no_runs", {"@F/state_no_runs.json", "--steps", "5"}, 2, "\"runs\" is missing");
        resume("resume_run_count", {"@F/state_run_count.json", "--steps", "5"}, 2, "number of runs");
        resume("resume_label", {"@F/state_label.json", "--steps", "5"}, 2, "does not match");
        resume("resume_unknown_key", {"@F/state_unknown_key.json", "--steps", "5"}, 2, "extra");
        resume("resume_applied_steps", {"@F/state_applied.json", "--steps", "5"}, 2, "applied_steps");
        resume("resume_growth_tracker", {"@F/state_tracker.json", "--steps", "5"}, 2, "growth_tracker");
        resume("resume_bad_config", {"@F/state_bad_config.json", "--steps", "5"}, 2, "train.lr");
        resume("resume_no_config", {"@F/state_no_config.json", "--steps", "5"}, 2, "\"config\" is missing");
        resume("resume_sampler", {"@F/state_sampler.json", "--steps", "5"}, 2, "batch order");
        resume("resume_finished", {"@F/state.json"}, 2, "trained all its 3 steps");
        resume("resume_steps_equal", {"@F/state.json", "--steps", "3"}, 2, "--steps: the saved state is already at step 3");
        resume("resume_steps_below", {"@F/state.json", "--steps", "1"}, 2, "--steps");
        resume("resume_steps_zero", {"@F/state.json", "--steps", "0"}, 2, "--steps");
        resume("resume_with_set", {"@F/state.json", "--steps", "5", "--set", "train.lr=0.1"}, 2, "--set: cannot apply to a resumed run");
        resume("resume_with_precision", {"@F/state.json", "--steps", "5", "--precision", "fp32"}, 2, "--precision: cannot apply");
        resume("resume_with_config", {"@F/state.json", "--steps", "5", "--config", "default"}, 2, "--config: cannot apply");
        resume("resume_with_scaler", {"@F/state.json", "--steps", "5", "--scaler", "apex"}, 2, "--scaler: cannot apply");
        resume("resume_with_model", {"@F/state.json", "--steps", "5", "--model", "2-8-2"}, 2, "--model: cannot apply");
        resume("resume_with_dataset", {"@F/state.json", "--steps", "5", "--dataset", "moons"}, 2, "--dataset: cannot apply");
        resume("resume_with_seed", {"@F/state.json", "--steps", "5", "--seed", "3"}, 2, "--seed: cannot apply");
        resume("resume_with_print_config", {"@F/state.json", "--print-config"}, 2, "--print-config: cannot apply");
        resume("resume_with_snippet", {"@F/state.json", "--snippet", "pytorch"}, 2, "--snippet: cannot apply");
        resume("resume_csv_over_state", {"@F/state_copy.json", "--steps", "5", "--csv", "@F/state_copy.json"}, 2,
               "the state given to --resume");
        // --- issue 41, class 5: every field of a saved state range-checked, the field named
        // (FP8 delayed scaling's scale, next slot and amaxes; a Kahan run's compensation and
        // compensation_max; the scaler state's counters, which would wrap; every key's presence)
        const auto resume_new = [&](const char* name, const char* file, const char* needle) {
            resume(name, {QStringLiteral("@F/") + file, "--steps", "5"}, 2, needle);
        };
        resume_new("resume_fp8_scale_nan", "state_fp8_scale_nan.json",
                   "--resume: fp8_amax[0][0]: the FP8 scale is nan; a saved scale is > 0 (or \"inf\") (run 1");
        resume_new("resume_fp8_scale_zero", "state_fp8_scale_zero.json", "fp8_amax[0][0]: the FP8 scale is 0;");
        resume_new("resume_fp8_scale_negative", "state_fp8_scale_negative.json", "fp8_amax[2][0]: the FP8 scale is -1;");
        resume_new("resume_fp8_next_fraction", "state_fp8_next_fraction.json",
                   "fp8_amax[1][1]: the next slot of the amax history is 1.5, not a whole number from 0 to 1023");
        resume_new("resume_fp8_next_beyond", "state_fp8_next_beyond.json", "fp8_amax[1][1]: the next slot");
        resume_new("resume_fp8_amax_negative", "state_fp8_amax_negative.json", "fp8_amax[1][3]: an amax is -2");
        resume_new("resume_fp8_amax_text", "state_fp8_amax_text.json", "fp8_amax[1][3]: the saved state holds \"x\", not a number");
        resume_new("resume_fp8_history_short", "state_fp8_history_short.json",
                   "fp8_amax[1]: holds 1025 values, not the scale, the next slot and 1024 amaxes");
        resume_new("resume_fp8_tensor_missing", "state_fp8_tensor_missing.json", "fp8_amax: the saved state has 5 FP8 tensors");
        resume_new("resume_fp8_on_kahan_run", "state_fp8_on_kahan.json", "fp8_amax: the saved state's FP8 scaling does not match");
        resume_new("resume_compensation_max_negative", "state_comp_max_negative.json",
                   "compensation_max: is -5, not a whole number from 0 to 2147483647 (run 2");
        resume_new("resume_compensation_max_sign_bit", "state_comp_max_sign_bit.json", "compensation_max: is 4294967291");
        resume_new("resume_compensation_max_text", "state_comp_max_text.json", "compensation_max: is \"big\"");
        resume_new("resume_compensation_max_missing", "state_comp_max_missing.json", "compensation_max: is missing");
        resume_new("resume_compensation_max_alone", "state_comp_max_alone.json", "compensation_max: belongs to a Kahan run's");
        resume_new("resume_compensation_text", "state_comp_value_text.json", "compensation[0][0]: the saved state holds \"y\"");
        resume_new("resume_compensation_short", "state_comp_short.json", "compensation: the saved state does not match this model");
        resume_new("resume_label_missing", "state_label_missing.json", "label: is missing from a run's saved state (run 2");
        resume_new("resume_failure_number", "state_failure_number.json", "failure: must be text, got 5");
        resume_new("resume_params_missing", "state_params_missing.json", "params: is missing");
        resume_new("resume_scaler_state_missing", "state_scaler_state_missing.json", "scaler_state: is missing");
        resume_new("resume_growth_tracker_beyond_int", "state_tracker_beyond_int.json",
                   "scaler.state.growth_tracker: is 4294967296, not a whole number");
        resume_new("resume_last_overflow_wraps", "state_last_overflow_wraps.json",
                   "scaler.state.last_overflow_iteration: is 18446744073709551615");
        resume_new("resume_iteration_beyond_step", "state_iteration_beyond_step.json",
                   "\"iteration\" of the scaler state of run 2 is 99, not a whole number from 0 to 3");
        resume_new("resume_unknown_top_key", "state_top_unknown.json", "\"extra\" is an unknown key in the saved state");
        resume_new("resume_sampler_unknown_key", "state_sampler_unknown.json", "\"extra\" of the sampler is an unknown key");
        // --- bench
        bench("bench_seconds_inf", {"--seconds", "inf"}, 2, "--seconds");
        bench("bench_seconds_minus_inf", {"--seconds", "-inf"}, 2, "--seconds");
        bench("bench_seconds_1e308", {"--seconds", "1e308"}, 2, "--seconds");
        bench("bench_seconds_1e9", {"--seconds", "1e9"}, 2, "--seconds");
        bench("bench_seconds_601", {"--seconds", "601"}, 2, "--seconds");
        bench("bench_seconds_negative", {"--seconds", "-1"}, 2, "--seconds");
        bench("bench_seconds_zero", {"--seconds", "0"}, 2, "--seconds");
        bench("bench_seconds_nan", {"--seconds", "nan"}, 2, "--seconds");
        bench("bench_seconds_text", {"--seconds", "long"}, 2, "--seconds");
        bench("bench_seconds_empty", {"--seconds", ""}, 2, "--seconds");
        bench("bench_batch_zero", {"--batch", "0"}, 2, "--batch");
        bench("bench_batch_negative", {"--batch", "-1"}, 2, "--batch");
        bench("bench_batch_1500000000", {"--batch", "1500000000"}, 2, "--batch: must be between 1 and 500000");
        bench("bench_batch_beyond_int", {"--batch", "99999999999"}, 2, "--batch");
        bench("bench_batch_500001", {"--batch", "500001"}, 2, "--batch");
        bench("bench_batch_text", {"--batch", "big"}, 2, "--batch");
        bench("bench_batch_too_wide", {"--batch", "500000", "--model", "2-4096-2"}, 2, "--batch");
        bench("bench_precision_empty", {"--precision", ""}, 2, "--precision");
        bench("bench_precision_commas", {"--precision", ",,"}, 2, "--precision");
        bench("bench_precision_inner_empty", {"--precision", "fp32,,amp-fp16"}, 2, "--precision");
        bench("bench_precision_trailing_comma", {"--precision", "fp32,"}, 2, "--precision");
        bench("bench_precision_unknown", {"--precision", "fp64"}, 2, "--precision");
        bench("bench_precision_bad_late", {"--precision", "fp32,fp128"}, 2, "fp128");
        bench("bench_model_empty", {"--model", ""}, 2, "--model");
        bench("bench_model_trailing_dash", {"--model", "2-64-2-"}, 2, "--model");
        bench("bench_model_inputs", {"--model", "3-64-2"}, 2, "--model");
        bench("bench_model_digits_outputs", {"--model", "784-512-9"}, 2, "--model");
        bench("bench_model_zero", {"--model", "2-0-2"}, 2, "--model");
        bench("bench_model_text", {"--model", "abc"}, 2, "--model");
        bench("bench_device_unknown", {"--device", "tpu"}, 2, "--device");
        bench("bench_device_empty", {"--device", ""}, 2, "--device");
        bench("bench_optimizer_unknown", {"--optimizer", "rmsprop"}, 2, "--optimizer");
        bench("bench_unknown_option", {"--bogus"}, 2, "--bogus");
        bench("bench_extra_argument", {"extra"}, 2, "extra");
        // --- format
        format("format_no_values", {}, 2, "give at least one value");
        format("format_formats_missing_value", {"1", "--formats"}, 2, "--formats: needs a value");
        format("format_overflow_missing_value", {"1", "--overflow"}, 2, "--overflow: needs a value");
        format("format_formats_unknown", {"--formats", "fp64", "1"}, 2, "fp64");
        format("format_formats_empty", {"--formats", "", "1"}, 2, "--formats");
        format("format_formats_trailing_comma", {"--formats", "fp16,", "1"}, 2, "--formats");
        format("format_formats_inner_empty", {"--formats", "fp16,,bf16", "1"}, 2, "unknown format ''");
        format("format_overflow_unknown", {"--overflow", "wrap", "1"}, 2, "--overflow");
        format("format_value_text", {"abc"}, 2, "'abc' is not a number");
        format("format_value_empty", {""}, 2, "'' is not a number");
        format("format_value_hex_cut", {"0x1p"}, 2, "'0x1p' is not a number");
        format("format_value_two_dots", {"1.2.3"}, 2, "'1.2.3' is not a number");
        format("format_value_trailing", {"1e5x"}, 2, "'1e5x' is not a number");
        format("format_unknown_option", {"--bogus", "1"}, 2, "unknown option '--bogus'");
        format("format_unknown_option_alone", {"--zzz"}, 2, "unknown option '--zzz'; format takes --csv");
        format("format_unknown_short_option", {"-x", "1"}, 2, "unknown option '-x'");
        // --- issue 41, class 1: an output that is an input, or two outputs on one path, by file
        // identity (hard links, symbolic links, ./ spellings, a file not written yet by its folder
        // and name), refused before any work: every input byte-identical, no file created
        cli("replay_csv_is_trace", {"replay", "@F/t.csv", "--csv", "@F/t.csv"}, 2,
            "--csv: '@F/t.csv' is the trace given to replay; write to another file");
        cli("replay_csv_is_trace_hard_link", {"replay", "@F/t.csv", "--csv", "@F/t_hard.csv"}, 2,
            "--csv: '@F/t_hard.csv' is the trace given to replay");
        cli("replay_csv_is_trace_symlink", {"replay", "@F/t.csv", "--csv", "@F/t_sym.csv"}, 2,
            "--csv: '@F/t_sym.csv' is the trace given to replay");
        cli("replay_csv_is_trace_dot", {"replay", "@F/t.csv", "--csv", "@F/./t.csv"}, 2,
            "--csv: '@F/./t.csv' is the trace given to replay");
        cli("replay_csv_is_histograms", {"replay", "@F/t.csv", "--csv", "@F/t.histograms.csv"}, 2,
            "--csv: '@F/t.histograms.csv' is the trace's histograms");
        cli("sweep_trace_csv_is_trace", {"sweep", "--trace", "@F/t.csv", "--csv", "@F/t_sym.csv", "--grid",
                                         "scaler.init_scale=1,2"}, 2, "--csv: '@F/t_sym.csv' is the trace given to --trace");
        cli("sweep_trace_csv_is_histograms", {"sweep", "--trace", "@F/t.csv", "--csv", "@F/t.histograms.csv", "--grid",
                                              "scaler.init_scale=1,2"}, 2, "is the histograms of --trace");
        cli("sweep_sidecar_is_config", {"sweep", "--config", "@F/good.json", "--csv", "@F/good.csv", "--grid",
                                        "scaler.init_scale=1,2"}, 2,
            "the sidecar of --csv: '@F/good.json' is the --config file");
        cli("sweep_merge_out_is_part", {"sweep", "--merge", "@F/part.csv", "@F/part.csv"}, 2,
            "--merge: '@F/part.csv' is a part given to --merge");
        cli("sweep_merge_out_is_part_sidecar", {"sweep", "--merge", "@F/part.json", "@F/part.csv"}, 2,
            "--merge: '@F/part.json' is the sidecar of a part given to --merge");
        cli("trace_deepspeed_out_is_log", {"trace", "--from-deepspeed-log", "@F/ds.log", "--out", "@F/ds.log"}, 2,
            "--out: '@F/ds.log' is the log given to --from-deepspeed-log");
        cli("trace_megatron_out_is_log_hard_link", {"trace", "--from-megatron-log", "@F/mg.log", "--out", "@F/mg_hard.log"},
            2, "--out: '@F/mg_hard.log' is the log given to --from-megatron-log");
        cli("quantize_out_is_in", {"quantize", "--in", "@F/m.csv", "--out", "@F/m.csv"}, 2, "--out: '@F/m.csv' is --in");
        cli("quantize_scales_is_in_symlink", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "@F/m_sym.csv"},
            2, "--scales: '@F/m_sym.csv' is --in");
        cli("quantize_scales_is_out", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "q.csv"}, 2,
            "--scales: 'q.csv' is also --out; give each output its own file");
        cli("quantize_scales_is_out_dot", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "./q.csv"}, 2,
            "--scales: './q.csv' is also --out");
        cli("gemm_out_is_a", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "@F/m.csv"}, 2,
            "--out: '@F/m.csv' is --a");
        cli("gemm_out_is_b_hard_link", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "@F/m2_hard.csv"}, 2,
            "--out: '@F/m2_hard.csv' is --b");
        cli("compare_csv_is_b_symlink", {"compare", "@F/m.csv", "@F/m2.csv", "--csv", "@F/m2_sym.csv"}, 2,
            "--csv: '@F/m2_sym.csv' is B, one of the files compared");
        run("csv_is_config_hard_link", {"--steps", "2", "--config", "@F/good.json", "--csv", "@F/good_hard.json"}, 2,
            "--csv: '@F/good_hard.json' is the --config file");
        cli("export_torch_out_is_config", {"export-torch", "--config", "@F/good.json", "--out", "@F/good.json"}, 2,
            "--out: '@F/good.json' exists and is not an empty folder");
        // --- class 2: every --threads refused outside 0-64; a thread the system refuses (no room
        // for 64 stacks in 256 MiB) ends in one line, the started threads joined, nothing written
        cli("sweep_threads_100000", {"sweep", "--threads", "100000", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"},
            2, "--threads: Value 100000 not in range 0 to 64");
        cli("quantize_threads_65", {"quantize", "--threads", "65", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
            "--threads: Value 65 not in range 0 to 64");
        cli("gemm_threads_65", {"gemm", "--threads", "65", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 2,
            "--threads: Value 65 not in range 0 to 64");
        cli("gemm_error_threads_65", {"gemm-error", "--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
        bench("bench_threads_65", {"--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
        cli("sweep_thread_refused", {"sweep", "--threads", "64", "--csv", "s.csv", "--quiet", "--steps", "1", "--set",
                                     "model.sizes=2-8-2", "--grid", "scaler.init_scale=1:64:1"},
            1, "of 64 (Resource temporarily unavailable); ask for fewer threads (--threads)", Limit::memory_256m);
        cli("run_thread_refused", {"run", "--quiet", "--threads", "64", "--steps", "1", "--set", "model.sizes=2-8-2",
                                   "--csv", "a.csv"},
            1, "ask for fewer threads (--threads)", Limit::memory_256m);
        cli("quantize_thread_refused", {"quantize", "--threads", "64", "--in", "@F/m.csv", "--out", "q.csv"}, 1,
            "ask for fewer threads (--threads)", Limit::memory_256m);
        cli("gemm_thread_refused", {"gemm", "--threads", "64", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 1,
            "ask for fewer threads (--threads)", Limit::memory_256m);
        // --- class 3: a request's size estimated before it is allocated, refused with the setting
        // and the size (under a 2 GiB limit it would otherwise end as std::bad_alloc)
        cli("export_torch_steps_huge", {"export-torch", "--steps", "100000000", "--out", "e"}, 2,
            "steps: an export of 100000000 steps (", Limit::memory_2g);
        cli("export_torch_masks_huge", {"export-torch", "--steps", "100000", "--set", "model.dropout=0.5", "--out", "e"},
            2, "of batches and dropout masks) is more than the 2.0 GiB an export may write; lower steps (--steps)",
            Limit::memory_2g);
        cli("export_torch_gpt_dropout", {"export-torch", "--config", "gpt-classroom", "--steps", "2", "--set",
                                         "model.dropout=0.1", "--out", "e"},
            2, "model.dropout: the GPT's dropout masks come from mpx's counter-based RNG");
        cli("export_torch_gpt_run_switch", {"export-torch", "--config", "gpt-classroom", "--steps", "2",
                                            "--precision", "fp32,amp-bf16+attn-before", "--out", "e"},
            2, "amp-bf16+attn-before: its GPT switch +attn-before is not carried by this exporter");
        run("gpt_switch_on_an_mlp", {"--steps", "2", "--precision", "amp-fp16+qk-norm"}, 2,
            "+qk-norm is a GPT switch and the model is an MLP; set model.kind = gpt or drop it");
        run("gpt_two_scale_places", {"--config", "gpt-classroom", "--steps", "2", "--precision", "amp-fp16+attn-before+attn-split"}, 2,
            "names two places for 1/√d (+attn-before, +attn-split); keep one");
        run("gpt_qk_init_scale_zero", {"--config", "gpt-classroom", "--steps", "2", "--set", "model.qk_init_scale=0"}, 2,
            "model.qk_init_scale: must be a positive factor up to 1e6");
        cli("export_torch_over_memory", {"export-torch", "--steps", "1000000", "--out", "e"}, 2,
            "this process may use; lower steps (--steps)", Limit::memory_2g);
        cli("megatron_log_2p24_iterations", {"trace", "--from-megatron-log", "@F/mg_huge.log", "--out", "t.csv"}, 2,
            "--from-megatron-log: @F/mg_huge.log:1: the trace would hold 16777216 steps", Limit::memory_2g);
        cli("megatron_log_lines_add_up", {"trace", "--from-megatron-log", "@F/mg_many.log", "--out", "t.csv"}, 2,
            "--from-megatron-log: @F/mg_many.log:2: the trace would hold 4194304 steps (1.5 GiB), more than the "
            "2796202 (1.0 GiB) a trace may hold in this process's memory", Limit::memory_2g);
        cli("gemm_error_65536_cubed", {"gemm-error", "--m", "65536", "--n", "65536", "--k", "65536"}, 2,
            "--k: a 65536 x 65536 by 65536 x 65536 point needs", Limit::memory_2g);
        cli("gemm_error_second_k_huge", {"gemm-error", "--m", "4096", "--n", "4096", "--k", "256,65536"}, 2,
            "--k: a 4096 x 65536 by 65536 x 4096 point needs", Limit::memory_2g);
        // --- class 6: histogram counts whose sum passes 2^64 - 1 refused by their line, in every
        // command that reads a trace's histograms (a share is never outside [0, 1])
        cli("replay_histogram_counts_wrap", {"replay", "@F/tw.csv", "--csv", "r.csv"}, 2,
            "@F/tw.histograms.csv:20: the counts add up past 2^64 - 1 (18446744073709551615)");
        cli("sweep_trace_histogram_counts_wrap", {"sweep", "--trace", "@F/tw.csv", "--csv", "s.csv", "--grid",
                                                  "scaler.init_scale=1,2"},
            2, "@F/tw.histograms.csv:20: the counts add up past 2^64 - 1");
        // --- class 7: a flag either changes the result or is refused with one line, naming it
        // (trace --script takes no log and no --out; a sweep over a trace takes only scaler settings;
        // --merge and --explain take nothing else; a parameter no model or format reads; seeds are
        // read whole to 2^64 - 1, not clamped at 2^63 - 1; a format's largest value is finite)
        cli("trace_script_with_out", {"trace", "--script", "--out", "o.csv"}, 2,
            "--out: does nothing with --script, which prints the recorder to standard output");
        cli("trace_script_with_scaler", {"trace", "--script", "--scaler", "deepspeed"}, 2, "--scaler: does nothing with --script");
        cli("trace_script_with_set", {"trace", "--script", "--set", "scaler.init_scale=2"}, 2, "--set: does nothing with --script");
        cli("trace_script_with_deepspeed_log", {"trace", "--script", "--from-deepspeed-log", "@F/ds.log", "--out", "o.csv"}, 2,
            "--script: does nothing when a log is rebuilt into a trace");
        cli("trace_script_with_megatron_log", {"trace", "--script", "--from-megatron-log", "@F/mg.log", "--out", "o.csv"}, 2,
            "--script: does nothing when a log is rebuilt into a trace");
        const auto trace_sweep = [&](const char* name, QStringList extra, const char* needle) {
            cli(name, QStringList{"sweep", "--trace", "@F/t.csv", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"} + extra,
                2, needle);
        };
        trace_sweep("sweep_trace_steps", {"--steps", "5"}, "--steps: does nothing in a sweep over a trace (--trace replays the recorded steps");
        trace_sweep("sweep_trace_model", {"--model", "2-8-2"}, "--model: does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_dataset", {"--dataset", "moons"}, "--dataset: does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_seed", {"--seed", "3"}, "--seed: does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_device", {"--device", "cpu"}, "--device: does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_threads", {"--threads", "2"}, "--threads: does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_set_model", {"--set", "model.sizes=2-8-2"},
                    "--set: 'model.sizes=2-8-2' does nothing in a sweep over a trace");
        trace_sweep("sweep_trace_runs", {"--runs", "amp-fp16"}, "--trace: a sweep over a trace has one run");
        cli("sweep_merge_with_grid", {"sweep", "--merge", "o.csv", "@F/part.csv", "--grid", "scaler.init_scale=1,2"}, 2,
            "--grid: does nothing with --merge");
        cli("sweep_merge_with_steps", {"sweep", "--merge", "o.csv", "@F/part.csv", "--steps", "3"}, 2,
            "--steps: does nothing with --merge");
        cli("sweep_explain_with_steps", {"sweep", "--explain", "1", "--csv", "@F/part.csv", "--steps", "3"}, 2,
            "--steps: does nothing with --explain");
        cli("quantize_nvfp4_mx_scale_rule", {"quantize", "--format", "nvfp4", "--mx-scale-rule", "floor", "--in", "@F/m.csv",
                                             "--out", "q.csv"},
            2, "--mx-scale-rule: is MXFP4's scale rule; NVFP4's block scales are E4M3");
        cli("quantize_metric_without_4over6", {"quantize", "--4over6-metric", "mae", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
            "--4over6-metric: measures 4over6's choice of block scale; give --4over6 too");
        cli("quantize_mxfp4_metric", {"quantize", "--format", "mxfp4", "--4over6-metric", "mae", "--in", "@F/m.csv", "--out",
                                      "q.csv"},
            2, "--4over6-metric");
        cli("quantize_sr_seed_2p64", {"quantize", "--sr-seed", "18446744073709551616", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
            "--sr-seed: '18446744073709551616' is not a whole number from 0 to 18446744073709551615 (2^64 - 1)");
        cli("quantize_sr_seed_negative", {"quantize", "--sr-seed", "-1", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
            "--sr-seed: '-1' is not a whole number");
        cli("quantize_sr_seed_hex", {"quantize", "--sr-seed", "0x10", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
            "--sr-seed: '0x10' is not a whole number");
        cli("gemm_error_seed_2p64", {"gemm-error", "--seed", "18446744073709551616"}, 2,
            "--seed: '18446744073709551616' is not a whole number from 0 to 18446744073709551615");
        run("seed_2p64", {"--seed", "18446744073709551616"}, 2, "--seed: '18446744073709551616' is not a whole number");
        cli("sweep_seed_2p64", {"sweep", "--seed", "99999999999999999999", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"},
            2, "--seed: '99999999999999999999' is not a whole number");
        cli("export_torch_seed_2p64", {"export-torch", "--seed", "18446744073709551616", "--out", "e"}, 2,
            "--seed: '18446744073709551616' is not a whole number");
        cli("replay_max_finite_inf", {"replay", "@F/t.csv", "--max-finite", "inf"}, 2,
            "--max-finite: must be a finite number > 0, the largest finite value of the gradients' format");
        cli("replay_max_finite_nan", {"replay", "@F/t.csv", "--max-finite", "nan"}, 2, "--max-finite: must be a finite number");
        cli("gemm_bits_under_exact", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv", "--bits", "3"}, 2,
            "--bits: does nothing under --accumulate exact");
        cli("gemm_promote_every_under_fast", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv", "--accumulate",
                                              "fp8-fast", "--promote-every", "64"},
            2, "--promote-every: is read by the promote model only");
        cli("gemm_error_bits_under_exact", {"gemm-error", "--accumulate", "exact", "--bits", "3"}, 2,
            "--bits: does nothing under --accumulate exact");
        // The session's accumulate.* and fp4.* fields reach a run only where the engine, resolving
        // it, reads them (classes 7 and 8: bits under a +acc-fast run is taken, see
        // accumulate_bits_on_a_fast_plan_changes_the_losses); two labels of one resolved run are refused.
        run("accumulate_bits_under_exact_plan", {"--steps", "2", "--precision", "fp8-hybrid", "--set", "accumulate.bits=3"}, 2,
            "accumulate.bits: 3 reaches no run");
        run("fp4_set_reaches_no_run", {"--steps", "2", "--precision", "fp32", "--set", "fp4.bf16_last=1"}, 2,
            "fp4.bf16_last: 1 reaches no run");
        run("fp4_mx_rule_on_nvfp4", {"--steps", "2", "--precision", "nvfp4", "--set", "fp4.mx_scale_rule=floor"}, 2,
            "fp4.mx_scale_rule: \"floor\" reaches no run");
        run("fp4_switch_every_label_names", {"--steps", "2", "--precision", "nvfp4+no-sr", "--set", "fp4.sr=false"}, 2,
            "fp4.sr: false reaches no run");
        run("nvfp4_twice_by_switch", {"--steps", "2", "--precision", "nvfp4,nvfp4+sr"}, 2, "run 'nvfp4+sr' is run 'nvfp4' again");
        run("mxfp4_twice_by_rule", {"--steps", "2", "--precision", "mxfp4,mxfp4+rceil"}, 2,
            "run 'mxfp4+rceil' is run 'mxfp4' again");
        // --- class 10: every echoed input quoted with escapes (a cell that erases the terminal's
        // line, a Latin-1 file name), so the one-line message stays one readable line
        cli("gemm_cell_control_characters", {"gemm", "--a", "@F/esc.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 2,
            "--a: @F/esc.csv:2: cell 2 '\\x1b[2K\\rEVIL' is not a number");
        cli("quantize_cell_control_characters", {"quantize", "--in", "@F/esc.csv", "--out", "q.csv"}, 2,
            "--in: @F/esc.csv:2: cell 2 '\\x1b[2K\\rEVIL' is not a number");
        cli("replay_cell_control_characters", {"replay", "@F/te.csv"}, 2, "@F/te.csv:3: scale '\\x1b[2K\\rEVIL' is not a number");
        cli("sweep_trace_cell_control_characters", {"sweep", "--trace", "@F/te.csv", "--csv", "s.csv", "--grid",
                                                    "scaler.init_scale=1,2"},
            2, "--trace: @F/te.csv:3: scale '\\x1b[2K\\rEVIL' is not a number");
        cli("megatron_log_control_characters", {"trace", "--from-megatron-log", "@F/mg_esc.log", "--out", "t.csv"}, 2,
            "--from-megatron-log: @F/mg_esc.log:1: the loss scale '\\x1b[2K");
        cli("compare_cell_control_characters", {"compare", "@F/run_a.csv", "@F/run_esc_cell.csv", "--columns", "loss"}, 2,
            "@F/run_esc_cell.csv:2: loss '\\x1b[2K\\rEVIL' is not a number");
        cli("compare_run_label_control_characters", {"compare", "@F/run_a.csv", "@F/run_esc_label.csv", "--columns", "loss"}, 2,
            "only in @F/run_esc_label.csv: '\\x1b[2K\\rEVIL'");
        resume("resume_label_control_characters", {"@F/state_label_control.json", "--steps", "4"}, 2,
               "saved run '\\x1b[2K\\rEVIL' does not match run");
        run("config_key_control_characters", {"--config", "@F/esc_key.json"}, 2, "'st\\x1b[2Keps': unknown setting");
        run("set_key_control_characters", {"--set", "st\x1b[2K\rEVIL=1", "--steps", "2"}, 2,
            "'st\\x1b[2K\\rEVIL': unknown setting (in --set 'st\\x1b[2K\\rEVIL=1')");
        run("precision_label_control_characters", {"--precision", "amp-fp16\x1b[2K\rEVIL", "--steps", "2"}, 2,
            "run 'amp-fp16\\x1b[2K\\rEVIL'");
        cli("gemm_format_control_characters", {"gemm", "--format", "\x1b[2K\rEVIL", "--a", "@F/m.csv", "--b", "@F/m2.csv",
                                               "--out", "c.csv"},
            2, "unknown format '\\x1b[2K\\rEVIL'");
        shell("sweep_trace_latin1_name",
              "exec \"$CLI\" sweep --trace \"@F/t$(printf '\\351').csv\" --csv s.csv --grid scaler.init_scale=1,2",
              "--trace: the name '@F/t\\xe9.csv' is not UTF-8 text");
        shell("sweep_config_latin1_name",
              "exec \"$CLI\" sweep --config \"@F/c$(printf '\\351').json\" --csv s.csv --grid scaler.init_scale=1,2",
              "--config: the name '@F/c\\xe9.json' is not UTF-8 text");
        shell("gemm_latin1_name",
              "exec \"$CLI\" gemm --a \"@F/n$(printf '\\351').csv\" --b @F/m2.csv --out c.csv",
              "--a: '@F/n\\xe9.csv':1: cell 2 'x' is not a number");
        // --- the app's command line: refused before any window opens, nothing written
        app("app_unknown_preset", {"--config", "nosuch"}, "nosuch");
        app("app_config_directory", {"--config", "@F/dir.json"}, "is a directory");
        app("app_config_fifo", {"--config", "@F/fifo.json"}, "not a regular file");
        app("app_config_dev_zero", {"--config", "/dev/zero"}, "not a regular file");
        app("app_config_huge", {"--config", "@F/huge.json"}, "at most");
        app("app_config_not_json", {"--config", "@F/bad.json"}, "not valid JSON");
        app("app_config_trailing", {"--config", "@F/trailing.json"}, "not valid JSON");
        app("app_config_state", {"--config", "@F/state.json"}, "saved session state");
        app("app_set_unknown", {"--set", "stepz=5"}, "stepz");
        // A scaler setting that reaches no run (every dynamic run names its own preset, or none has
        // one) is refused naming the field and the way that reaches a +preset run, not dropped.
        run("scaler_set_reaches_no_run", {"--precision", "amp-fp16+deepspeed", "--set", "scaler.init_scale=1048576"}, 2,
            "scaler.init_scale: reaches no run: every run with a dynamic scaler names its own preset");
        run("scaler_flag_reaches_no_run", {"--precision", "amp-fp16+deepspeed", "--scaler", "megatron"}, 2,
            "scaler.preset: reaches no run");
        run("scaler_set_no_dynamic_run", {"--precision", "fp32,amp-bf16", "--set", "scaler.growth_interval=10"}, 2,
            "scaler.growth_interval: reaches no run: no run has a dynamic loss scaler");
        run("config_scaler_reaches_no_run", {"--config", "@F/scaler_unused.json"}, 2,
            "set scaler_overrides={\"init_scale\":1048576}");
        run("check_claims_with_resume", {"--resume", "@F/state.json", "--check-claims"}, 2,
            "--check-claims: judges a whole session from its first step");
        app("app_scaler_reaches_no_run", {"--config", "@F/scaler_unused.json"}, "scaler.init_scale: reaches no run");
        app("app_set_range", {"--set", "train.lr=-1"}, "train.lr");
        app("app_set_sizes_trailing", {"--set", "model.sizes=2-64-2-"}, "2-64-2-");
        app("app_set_no_equals", {"--set", "steps"}, "key=value");
        shell("app_set_invalid_utf8", "[ -n \"$APP\" ] || exit 2; exec \"$APP\" --set \"name=$(printf '\\377')\"", "UTF-8");
        app("app_after_steps_negative", {"--after-steps", "-1", "--screenshot", "s.png"}, "--after-steps");
        app("app_after_steps_text", {"--after-steps", "x", "--screenshot", "s.png"}, "--after-steps");
        app("app_after_steps_alone", {"--after-steps", "5"}, "--screenshot");
        app("app_screenshot_directory", {"--screenshot", "@F/dir"}, "is a directory");
        app("app_screenshot_missing_directory", {"--screenshot", "no/such/s.png"}, "does not exist");
        app("app_view_unknown", {"--view", "graphs"}, "--view takes charts, boundaries, range, where, updates");
        app("app_unknown_option", {"--bogus"}, "bogus");
        app("app_extra_argument", {"extra"}, "extra");
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
