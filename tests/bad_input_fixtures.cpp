// The bad-input catalogue's fixture folder (bad_input_rows.hpp): every file a row reads (good and
// broken configurations, saved states with one field wrong, traces, matrices, special files).
// Rule: the rows only read these; test_bad_input checks after each row that none changed.
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

namespace bad_input {

void make_fixtures(const fs::path& F) {
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

}  // namespace bad_input
