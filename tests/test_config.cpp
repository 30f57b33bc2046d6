// Configuration (presets, JSON round trip, --set overrides, errors that name the field) and the
// export (CSV columns and number round trip, atomic writes, the sidecar that reproduces a run).
#include "engine/base/error.hpp"
#include "engine/config/device_choice.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/run/session.hpp"

#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

using namespace mpx;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> dir_entries(const fs::path& d) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(d)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// RFC 4180 records of a CSV text: CRLF line ends, quoted fields may hold commas and doubled quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rows.back().back() += '"', ++i;
            else if (c == '"') quoted = false;
            else rows.back().back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            rows.back().emplace_back();
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            rows.emplace_back(1);
            ++i;
        } else {
            rows.back().back() += c;
        }
    }
    if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
    return rows;
}

// The field a ConfigError names ("" when none was thrown is reported as "no error").
template <class F>
QString error_field(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromStdString(e.field());
    }
    return QStringLiteral("no error");
}

// The ConfigError f throws as "field|what" ("no error" when none is thrown; other exceptions escape).
template <class F>
QString config_error(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromStdString(e.field() + "|" + e.what());
    }
    return QStringLiteral("no error");
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

}  // namespace

class TestConfig : public QObject {
    Q_OBJECT

private slots:
    void every_preset_file_loads_and_validates() {
        const fs::path dir = fs::path(MPX_SOURCE_DIR) / "resources" / "presets";
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".json") files.push_back(e.path().stem().string());
        std::sort(files.begin(), files.end());
        QVERIFY(!files.empty());
        QCOMPARE(preset_names(), files);
        for (const auto& name : files) {
            const SessionConfig by_name = load_config(name);
            const SessionConfig by_path = load_config((dir / (name + ".json")).string());
            QCOMPARE(to_json(by_name), to_json(by_path));
            QCOMPARE(by_name.name, name);  // a preset names itself
            Session s(by_name);            // model and data set agree
            QVERIFY(s.run_count() >= 1);
        }
        const SessionConfig d = load_config("default");
        QCOMPARE(d.runs, (std::vector<std::string>{"fp32", "amp-fp16", "amp-bf16"}));
        QCOMPARE(d.model.sizes, (std::vector<int>{2, 64, 64, 2}));
        QCOMPARE(d.scaler, scaler_preset("pytorch"));
    }

    void json_round_trip_is_identity_data() {
        QTest::addColumn<QStringList>("sets");
        QTest::newRow("defaults") << QStringList{};
        QTest::newRow("everything_changed")
            << QStringList{"runs=fp32,half-bf16+apex,selective-fp16", "model.sizes=2-16-8-2",
                           "model.activation=gelu", "model.layernorm=true", "model.dropout=0.25",
                           "model.recompute=true", "train.optimizer=sgd", "train.lr=0.125",
                           "train.clip_norm=1.5", "train.schedule=warmup-cosine", "scaler.preset=deepspeed",
                           "scaler.max_scale=inf", "data.kind=moons", "data.noise=0.3", "seed=42",
                           "selective_layers=fc2", "record_every=3", "eval_every=7", "memory_budget=123456"};
    }
    void json_round_trip_is_identity() {
        QFETCH(QStringList, sets);
        SessionConfig c;
        for (const auto& s : sets) apply_override(c, s.toStdString());
        const json j = to_json(c);
        const SessionConfig back = session_config_from_json(j);
        QCOMPARE(to_json(back), j);
        QCOMPARE(to_json(session_config_from_json(json::parse(j.dump()))), j);  // through text
        QCOMPARE(back.scaler, c.scaler);
        QCOMPARE(back.data, c.data);
    }

    void set_overrides_nested_keys() {
        SessionConfig c;
        apply_override(c, "scaler.growth_interval=50");
        QCOMPARE(c.scaler.growth_interval, 50);
        QCOMPARE(c.scaler.init_scale, 65536.0);  // the rest of the scaler stays
        apply_override(c, "train.lr=0.001");
        QCOMPARE(c.train.lr, 0.001);
        apply_override(c, "runs=fp32,amp-bf16");
        QCOMPARE(c.runs, (std::vector<std::string>{"fp32", "amp-bf16"}));
        apply_override(c, "model.sizes=2-32-2");
        QCOMPARE(c.model.sizes, (std::vector<int>{2, 32, 2}));
        apply_override(c, "scaler.max_scale=inf");
        QVERIFY(std::isinf(c.scaler.max_scale) && c.scaler.max_scale > 0);
        apply_override(c, "scaler.max_scale=1e6");
        QCOMPARE(c.scaler.max_scale, 1e6);
        apply_override(c, "scaler.preset=deepspeed");  // brings all of DeepSpeed's values
        QCOMPARE(c.scaler, scaler_preset("deepspeed"));
        QCOMPARE(c.scaler.hysteresis, 2);
        apply_override(c, "scaler.preset=\"apex\"");  // quoted JSON text works too
        QCOMPARE(c.scaler, scaler_preset("apex"));
        apply_override(c, "data.n_train=512");
        QCOMPARE(c.data.n_train, 512);
    }

    // Each bad setting is a ConfigError naming the field, and the configuration stays as it was.
    void bad_override_names_field_and_changes_nothing_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("field");
        QTest::newRow("negative_lr") << "train.lr=-1" << "train.lr";
        QTest::newRow("lr_wrong_type") << "train.lr=\"fast\"" << "train.lr";
        QTest::newRow("lr_bare_text") << "train.lr=fast" << "train.lr";
        QTest::newRow("growth_factor_1") << "scaler.growth_factor=1" << "scaler.growth_factor";
        QTest::newRow("growth_factor_below_1") << "scaler.growth_factor=0.5" << "scaler.growth_factor";
        QTest::newRow("unknown_scaler_preset") << "scaler.preset=bogus" << "scaler.preset";
        QTest::newRow("unknown_run_label") << "runs=fp32,amp-fp17" << "runs";
        QTest::newRow("unknown_run_scaler") << "runs=amp-fp16+bogus" << "runs";
        QTest::newRow("unknown_selective_layer") << "selective_layers=fc9" << "selective_layers";
        QTest::newRow("absurd_sizes") << "model.sizes=2-100000000-2" << "model.sizes";
        QTest::newRow("sizes_not_a_list") << "model.sizes=two-by-two" << "model.sizes";
        QTest::newRow("batch_larger_than_data") << "train.batch=5000" << "train.batch";
        QTest::newRow("unknown_key_in_section") << "scaler.bogus=1" << "scaler.bogus";
        QTest::newRow("unknown_top_level_path") << "nothing.at.all=1" << "nothing";
        QTest::newRow("not_key_value") << "train.lr" << "--set";
        QTest::newRow("dropout_one") << "model.dropout=1" << "model.dropout";
    }
    void bad_override_names_field_and_changes_nothing() {
        QFETCH(QString, assignment);
        QFETCH(QString, field);
        SessionConfig c;
        c.runs = {"fp32", "selective-fp16"};
        const json before = to_json(c);
        std::string message;
        try {
            apply_override(c, assignment.toStdString());
            QFAIL("no ConfigError");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), field);
            message = e.what();
        }
        QVERIFY2(message.find(field.toStdString()) != std::string::npos, message.c_str());
        QCOMPARE(to_json(c), before);
    }

    void bad_text_is_config_error() {
        try {
            parse_config_text("{\"steps\": 10,", "broken.json");
            QFAIL("no ConfigError");
        } catch (const ConfigError& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("broken.json") != std::string::npos && m.find("not valid JSON") != std::string::npos, m.c_str());
        }
        QCOMPARE(error_field([] { parse_config_text(R"({"stepz": 10})", "typo.json"); }), QStringLiteral("stepz"));
        QCOMPARE(error_field([] { parse_config_text(R"({"train": {"lr": "fast"}})", "t.json"); }), QStringLiteral("train.lr"));
        QCOMPARE(error_field([] { parse_config_text(R"({"steps": 5, "data": {"kind": "spiral"}})", "t.json"); }),
                 QStringLiteral("data.kind"));
        QCOMPARE(parse_config_text(R"({"steps": 5})", "ok.json").steps, 5LL);
        QCOMPARE(error_field([] { load_config("nosuchpreset"); }), QStringLiteral("config"));
        QVERIFY_THROWS_EXCEPTION(IoError, load_config("/nonexistent/dir/x.json"));
    }

    // Integers outside the field's C++ type are errors, never a wrap-around (4294967297 → 1 for an
    // int, -1 → 2^64-1 for the seed) nor an undefined float → int cast.
    void out_of_range_integers_are_errors_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("field");
        QTest::newRow("batch_wraps_to_1") << "train.batch=4294967297" << "train.batch";
        QTest::newRow("negative_seed") << "seed=-1" << "seed";
        QTest::newRow("steps_past_int64") << "steps=9223372036854775809" << "steps";
        QTest::newRow("huge_double_to_int64") << "memory_budget=1e300" << "memory_budget";
        QTest::newRow("huge_double_to_int") << "record_every=1e300" << "record_every";
        QTest::newRow("huge_double_to_uint64") << "seed=1e30" << "seed";
        QTest::newRow("negative_double_to_uint64") << "seed=-2.0" << "seed";
        QTest::newRow("size_wraps") << "model.sizes=[2,4294967298,2]" << "model.sizes";
    }
    void out_of_range_integers_are_errors() {
        QFETCH(QString, assignment);
        QFETCH(QString, field);
        SessionConfig c;
        const json before = to_json(c);
        const QString e = config_error([&] { apply_override(c, assignment.toStdString()); });
        QVERIFY2(e.startsWith(field + "|" + field + ": must be an integer between "), qPrintable(e));
        QCOMPARE(to_json(c), before);
    }
    void in_range_integers_still_read() {
        SessionConfig c;
        apply_override(c, "seed=18446744073709551615");
        QCOMPARE(c.seed, std::numeric_limits<std::uint64_t>::max());
        apply_override(c, "record_every=1e3");  // a whole-valued number is an integer
        QCOMPARE(c.record_every, 1000);
        apply_override(c, "memory_budget=9223372036854775807");
        QCOMPARE(c.memory_budget, std::numeric_limits<std::int64_t>::max());
        QCOMPARE(config_error([&] { apply_override(c, "record_every=2.5"); }).section('|', 0, 0),
                 QStringLiteral("record_every"));
    }

    // All assignments land before anything is validated: settings that only fit together work in
    // either order, and a later assignment to the same key wins.
    void overrides_apply_together_in_any_order() {
        for (const auto& sets : {std::vector<std::string>{"data.n_train=16", "train.batch=8"},
                                 std::vector<std::string>{"train.batch=8", "data.n_train=16"}}) {
            SessionConfig c;
            QCOMPARE(c.train.batch > 16, true);  // one at a time, data.n_train=16 alone is invalid
            apply_overrides(c, sets);
            QCOMPARE(c.data.n_train, 16);
            QCOMPARE(c.train.batch, 8);
        }
        SessionConfig c;
        apply_overrides(c, {"train.lr=0.5", "scaler.preset=deepspeed", "scaler.growth_interval=7", "train.lr=0.25"});
        QCOMPARE(c.train.lr, 0.25);
        ScalerConfig expected = scaler_preset("deepspeed");
        expected.growth_interval = 7;
        QCOMPARE(c.scaler.growth_interval, 7);
        QCOMPARE(c.scaler.hysteresis, expected.hysteresis);  // the preset's values, then the override
        apply_overrides(c, {"scaler_overrides={\"growth_interval\":5}", "scaler_overrides.growth_interval=6"});
        QCOMPARE(c.scaler_overrides, json({{"growth_interval", 6}}));
        // A failure anywhere leaves the configuration as it was.
        const json before = to_json(c);
        QCOMPARE(config_error([&] { apply_overrides(c, {"train.lr=0.125", "data.n_train=1"}); }).section('|', 0, 0),
                 QStringLiteral("train.batch"));
        QCOMPARE(config_error([&] { apply_overrides(c, {"train.lr=0.125", "nope=1"}); }).section('|', 0, 0),
                 QStringLiteral("nope"));
        QCOMPARE(to_json(c), before);
    }

    // An export sidecar is a configuration file: its "config" object reproduces the run.
    void sidecar_loads_as_a_config_file() {
        QTemporaryDir tmp;
        SessionConfig c;
        apply_overrides(c, {"runs=fp32,amp-fp16+deepspeed", "steps=9", "seed=5", "train.lr=0.003"});
        Session s(c);
        std::vector<RunInfo> infos;
        for (std::size_t i = 0; i < s.run_count(); ++i) infos.push_back(s.run(i).info());
        const std::string text = sidecar_json(c, infos, "CPU (Eigen)", 9).dump(2);
        QCOMPARE(to_json(parse_config_text(text, "runs.json")), to_json(c));
        const fs::path path = fs::path(tmp.path().toStdString()) / "runs.json";
        write_file_atomic(path, text);
        QCOMPARE(to_json(load_config(path.string())), to_json(c));
        const QString e = config_error([] { parse_config_text(R"({"format": "mpx-export", "version": "0.1.0"})", "x.json"); });
        QVERIFY2(e.contains("x.json") && e.contains("config"), qPrintable(e));
    }

    // A label resolves once into its policy and its scaler, overrides applied to dynamic scalers
    // only; only runs without "+preset" and with a dynamic default follow live scaler edits.
    void resolve_run_gives_policy_and_scaler_data() {
        QTest::addColumn<QString>("label");
        QTest::addColumn<QString>("unique");
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("growth_interval");
        QTest::addColumn<bool>("follows");
        QTest::newRow("session_scaler") << "amp-fp16" << "amp-fp16+apex" << "apex" << 7 << true;
        QTest::newRow("named_preset") << "half-fp16+deepspeed" << "half-fp16+deepspeed" << "deepspeed" << 7 << false;
        QTest::newRow("bf16_none") << "amp-bf16" << "amp-bf16" << "none" << 2000 << false;
        QTest::newRow("pure_static") << "pure-fp16" << "pure-fp16" << "static" << 2000 << false;
        QTest::newRow("fp32_named") << "fp32+pytorch" << "fp32+pytorch" << "pytorch" << 7 << false;
    }
    void resolve_run_gives_policy_and_scaler() {
        QFETCH(QString, label);
        QFETCH(QString, unique);
        QFETCH(QString, preset);
        QFETCH(int, growth_interval);
        QFETCH(bool, follows);
        const RunInfo info = resolve_run(label.toStdString(), scaler_preset("apex"), json{{"growth_interval", 7}});
        QCOMPARE(QString::fromStdString(info.label), unique);
        QCOMPARE(QString::fromStdString(info.scaler.preset), preset);
        QCOMPARE(info.scaler.growth_interval, growth_interval);
        QCOMPARE(info.follows_session_scaler, follows);
    }
    void resolve_run_names_the_bad_part() {
        QCOMPARE(config_error([] { resolve_run("amp-fp16+pytorh", scaler_preset("pytorch"), json::object()); })
                     .section('|', 0, 0),
                 QStringLiteral("runs"));
        QCOMPARE(config_error([] { resolve_run("amp-fp16", scaler_preset("pytorch"), json{{"growth_interval", "x"}}); }),
                 QStringLiteral("scaler_overrides.growth_interval|scaler_overrides.growth_interval: must be an "
                                "integer between -2147483648 and 2147483647 (got \"x\") (run amp-fp16)"));
        QCOMPARE(config_error([] { resolve_run("amp-fp16", scaler_preset("pytorch"), json{{"backoff_factor", 2}}); }),
                 QStringLiteral("scaler.backoff_factor|scaler.backoff_factor: must lie strictly between 0 and 1 "
                                "(got 2); every framework uses 0.5 (run amp-fp16)"));
    }

    // A live training change takes the fields marked live and keeps the ones that need a reset.
    void set_train_applies_only_live_fields() {
        SessionConfig c;
        c.steps = 3;
        Session s(c);
        TrainConfig t = c.train;
        t.lr = 0.5;
        t.schedule = Schedule::step;
        t.batch = c.train.batch / 2;
        t.optimizer = OptimizerKind::sgd;
        s.set_train(t);
        QCOMPARE(s.train().lr, 0.5);
        QCOMPARE(s.train().schedule, Schedule::step);
        QCOMPARE(s.train().batch, c.train.batch);
        QCOMPARE(s.train().optimizer, c.train.optimizer);
        // The configuration keeps its start and lists the change (engine/config/live_change.hpp).
        QCOMPARE(s.config().train.lr, c.train.lr);
        QCOMPARE(s.config().live_changes.size(), std::size_t(1));
        QCOMPARE(s.config().live_changes[0].train.lr, 0.5);
    }

    // The device decision and its explanations, for the CLI and the app alike.
    void choose_device_explains_the_cpu() {
        const GpuProbe none{false, "", "no NVIDIA driver"};
        const GpuProbe h100{true, "NVIDIA H100", ""};
        QCOMPARE(QString::fromStdString(choose_device("auto", none, "--device").fallback),
                 QStringLiteral("training on the CPU: no NVIDIA driver"));
        QVERIFY(choose_device("auto", h100, "--device").gpu);
        QVERIFY(choose_device("cuda", h100, "--device").gpu);
        const DeviceChoice cpu = choose_device("cpu", h100, "Device");
        QVERIFY(!cpu.gpu && cpu.fallback.empty());
        QCOMPARE(QString::fromStdString(cpu.unused_gpu),
                 QStringLiteral("GPU NVIDIA H100 available (set Device to cuda or auto to use it)"));
        try {
            choose_device("cuda", none, "--device");
            QFAIL("no error");
        } catch (const DeviceError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("cannot train on the GPU: no NVIDIA driver; set --device to cpu"));
        }
        QCOMPARE(config_error([&] { choose_device("gpu", none, "--device"); }).section('|', 0, 0), QStringLiteral("device"));
    }

    // A field is named once: the context goes after the message, not before a second copy.
    void error_messages_name_the_field_once() {
        QCOMPARE(ConfigError("train.lr", "must be positive").message(), std::string("must be positive"));
        QCOMPARE(std::string(ConfigError("train.lr", "must be positive").what()), std::string("train.lr: must be positive"));
        QCOMPARE(config_error([] { parse_config_text(R"({"train": {"lr": "fast"}})", "bad1.json"); }),
                 QStringLiteral("train.lr|train.lr: must be a number, got \"fast\" (in bad1.json)"));
        SessionConfig c;
        c.runs = {"fp32", "amp-fp16"};
        c.scaler_overrides = {{"bogus", 1}};
        QCOMPARE(config_error([&] { validate(c); }),
                 QStringLiteral("scaler_overrides.bogus|scaler_overrides.bogus: unknown scaler setting (run amp-fp16)"));
        // A key inside scaler_overrides that is not there yet: say how to write it.
        SessionConfig d;
        const QString e = config_error([&] { apply_override(d, "scaler_overrides.growth_interval=5"); });
        QVERIFY2(e.startsWith("scaler_overrides.growth_interval|") &&
                     e.contains(R"(write scaler_overrides={"growth_interval":5})"),
                 qPrintable(e));
    }

    // A saved state from another version, or with counts that do not fit together, or with a key
    // missing or mistyped, is a ConfigError for --resume, never a library message or a wrong resume.
    void load_state_rejects_foreign_and_broken_states_data() {
        QTest::addColumn<QString>("patch");  // JSON Patch applied to a good state
        QTest::addColumn<QString>("expected");  // in what()
        QTest::newRow("other_version") << R"([{"op":"replace","path":"/version","value":2}])"
                                       << "another mpx version";
        QTest::newRow("no_version") << R"([{"op":"remove","path":"/version"}])" << "another mpx version";
        QTest::newRow("negative_step") << R"([{"op":"replace","path":"/step","value":-1}])" << "\"step\"";
        QTest::newRow("step_past_config") << R"([{"op":"replace","path":"/step","value":100}])" << "\"step\"";
        QTest::newRow("step_not_sampler") << R"([{"op":"replace","path":"/step","value":3}])" << "batch order";
        QTest::newRow("negative_epoch") << R"([{"op":"replace","path":"/sampler/epoch","value":-1}])" << "\"epoch\"";
        QTest::newRow("step_text") << R"([{"op":"replace","path":"/step","value":"4"}])" << "\"step\"";
        QTest::newRow("negative_applied") << R"([{"op":"replace","path":"/runs/0/applied_steps","value":-2}])"
                                          << "\"applied_steps\" of run 1";
        QTest::newRow("applied_past_step") << R"([{"op":"replace","path":"/runs/1/applied_steps","value":5}])"
                                           << "\"applied_steps\" of run 2";
        QTest::newRow("no_sampler") << R"([{"op":"remove","path":"/sampler"}])" << "\"sampler\" is missing";
        QTest::newRow("no_params") << R"([{"op":"remove","path":"/runs/0/params"}])" << "in the saved state";
        QTest::newRow("label_wrong_type") << R"([{"op":"replace","path":"/runs/1/label","value":7}])"
                                          << "in the saved state";
        QTest::newRow("scaler_state_wrong_type")
            << R"([{"op":"replace","path":"/runs/1/scaler_state","value":[]}])" << "(run 2 in the saved state)";
        QTest::newRow("runs_not_array") << R"([{"op":"replace","path":"/runs","value":{}}])" << "number of runs";
    }
    void load_state_rejects_foreign_and_broken_states() {
        QFETCH(QString, patch);
        QFETCH(QString, expected);
        SessionConfig c;
        apply_overrides(c, {"runs=fp32,amp-fp16", "model.sizes=2-8-2", "steps=10", "train.batch=16", "data.n_train=64"});
        Session s(c);
        for (int i = 0; i < 4; ++i) s.step();
        const json good = save_state(s);
        QCOMPARE(load_session_state(good)->steps_done(), 4LL);  // the unpatched state resumes
        const json bad = good.patch(json::parse(patch.toStdString()));
        QString e;
        try {
            load_session_state(bad);
            e = QStringLiteral("no error");
        } catch (const ConfigError& err) {
            e = QString::fromStdString(err.field() + "|" + err.what());
        } catch (const std::exception& err) {
            e = QStringLiteral("not a ConfigError: ") + err.what();
        }
        QVERIFY2(e.startsWith("--resume|--resume: ") && e.contains(expected), qPrintable(e));
        if (expected == "another mpx version") QVERIFY2(e.contains("sidecar"), qPrintable(e));
    }

    // The header is DESIGN.md's column list, in order.
    void csv_header_is_design_column_list() {
        QCOMPARE(csv_header(),
                 std::string("run,precision,mode,step,loss,loss_scale,found_inf,skipped,scale_event,grad_norm,"
                             "underflow_frac,overflow_count,lost_update_frac,lr,mem_weights,mem_master,mem_grads,"
                             "mem_optimizer,mem_activations,mem_workspace,mem_total,step_time_us,wall_time_s,eval_loss,"
                             "eval_accuracy,first_nonfinite,fp8_saturated_frac,fp8_underflow_frac\r\n"));
    }

    void csv_rows_parse_back_exactly() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const fs::path path = fs::path(tmp.path().toStdString()) / "r.csv";
        const double inf = std::numeric_limits<double>::infinity();
        const std::vector<double> losses{0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, -0.0,
                                         std::nan(""), inf, -inf, 0.6931471805599453};
        RunInfo info;
        info.label = "odd,\"label\"";
        info.precision = "fp16";
        info.mode = "amp";
        std::vector<StepRecord> recs;
        {
            CsvWriter w(path);
            for (std::size_t i = 0; i < losses.size(); ++i) {
                StepRecord r;
                r.step = static_cast<long long>(i);
                r.loss = losses[i];
                r.loss_scale = std::ldexp(1.0, 16 - static_cast<int>(i));
                r.found_inf = i % 2;
                r.skipped = i % 3 == 0;
                r.scale_event = static_cast<std::uint8_t>(i % 4);
                r.grad_norm = i == 2 ? inf : std::sqrt(2.0) * i;
                r.underflow_frac = 1.0 / (i + 7);
                r.overflow_count = 1000000000000LL + i;
                r.lost_update_frac = 0.1 * i;
                r.lr = 1e-3 / (i + 1);
                for (int c = 0; c < k_mem_categories; ++c) r.mem.bytes[static_cast<std::size_t>(c)] = (c + 1) * 1000 + i;
                r.step_time_us = 123.456 + i;
                r.wall_time_s = 0.001 * i;
                if (i % 3 == 1) r.eval_loss = losses[i];      // evaluated on some steps only
                if (i % 3 == 1 && i != 7) r.eval_accuracy = 0.125 * i;  // and without accuracy (regression)
                if (i % 2 == 0) {  // an FP8 run's fractions on some rows, empty cells on the others
                    r.fp8_saturated_frac = 1.0 / (i + 3);
                    r.fp8_underflow_frac = i == 4 ? 0.0 : 1.0 / (i + 11);
                }
                w.write(r, info);
                recs.push_back(r);
            }
            w.commit();
        }
        const auto rows = parse_csv(read_text(path));
        QCOMPARE(rows.size(), losses.size() + 1);
        const char* events[] = {"none", "grow", "backoff", "hysteresis"};
        auto num = [](const std::string& s) { return std::strtod(s.c_str(), nullptr); };
        for (std::size_t i = 0; i < recs.size(); ++i) {
            const auto& f = rows[i + 1];
            const StepRecord& r = recs[i];
            QCOMPARE(f.size(), std::size_t(28));
            QCOMPARE(f[0], info.label);
            QCOMPARE(f[1], std::string("fp16"));
            QCOMPARE(f[2], std::string("amp"));
            QCOMPARE(f[3], std::to_string(i));
            QVERIFY2(same_bits(num(f[4]), r.loss) || (std::isnan(r.loss) && f[4] == "nan"), f[4].c_str());
            for (auto [col, v] : {std::pair{5, r.loss_scale}, {9, r.grad_norm}, {10, r.underflow_frac},
                                  {12, r.lost_update_frac}, {13, r.lr}, {21, r.step_time_us}, {22, r.wall_time_s}})
                QVERIFY2(same_bits(num(f[static_cast<std::size_t>(col)]), v), f[static_cast<std::size_t>(col)].c_str());
            QCOMPARE(f[6], std::string(r.found_inf ? "1" : "0"));
            QCOMPARE(f[7], std::string(r.skipped ? "1" : "0"));
            QCOMPARE(f[8], std::string(events[r.scale_event]));
            QCOMPARE(f[11], std::to_string(r.overflow_count));
            for (int c = 0; c < k_mem_categories; ++c)
                QCOMPARE(f[static_cast<std::size_t>(14 + c)], std::to_string(r.mem.bytes[static_cast<std::size_t>(c)]));
            QCOMPARE(f[20], std::to_string(r.mem.total()));
            // Steps without an evaluation (or without accuracy) leave the cell empty.
            QCOMPARE(f[23].empty(), !r.eval_loss.has_value());
            if (r.eval_loss) QVERIFY2(same_bits(num(f[23]), *r.eval_loss), f[23].c_str());
            QCOMPARE(f[24].empty(), !r.eval_accuracy.has_value());
            if (r.eval_accuracy) QVERIFY2(same_bits(num(f[24]), *r.eval_accuracy), f[24].c_str());
            QCOMPARE(f[26].empty(), !r.fp8_saturated_frac.has_value());
            QCOMPARE(f[27].empty(), !r.fp8_underflow_frac.has_value());
            if (r.fp8_saturated_frac) QVERIFY2(same_bits(num(f[26]), *r.fp8_saturated_frac), f[26].c_str());
            if (r.fp8_underflow_frac) QVERIFY2(same_bits(num(f[27]), *r.fp8_underflow_frac), f[27].c_str());
        }
        QCOMPARE(rows[6][4], std::string("nan"));
        QCOMPARE(rows[7][4], std::string("inf"));
        QCOMPARE(rows[8][4], std::string("-inf"));
        QCOMPARE(rows[5][4], std::string("-0"));
    }

    void csv_commit_renames_and_abandon_leaves_nothing() {
        QTemporaryDir tmp;
        const fs::path dir = tmp.path().toStdString();
        const fs::path path = dir / "out.csv";
        StepRecord r;
        RunInfo info;
        info.label = "fp32";
        {
            CsvWriter w(path);
            w.write(r, info);
            QVERIFY(!fs::exists(path));  // rows go to a temporary until commit
            w.commit();
            QVERIFY(fs::exists(path));
            QCOMPARE(dir_entries(dir), std::vector<std::string>{"out.csv"});
            QVERIFY_THROWS_EXCEPTION(IoError, w.commit());  // only once
        }
        QCOMPARE(parse_csv(read_text(path)).size(), std::size_t(2));
        // An abandoned export neither appears nor touches a file already at the target.
        const fs::path existing = dir / "keep.csv";
        write_file_atomic(existing, "precious\n");
        {
            CsvWriter w(existing);
            for (int i = 0; i < 100; ++i) w.write(r, info);
        }
        QCOMPARE(read_text(existing), std::string("precious\n"));
        {
            CsvWriter w(dir / "never.csv");
            w.write(r, info);
        }
        QCOMPARE(dir_entries(dir), (std::vector<std::string>{"keep.csv", "out.csv"}));
        // Committing over an existing file replaces it whole.
        {
            CsvWriter w(existing);
            w.write(r, info);
            w.commit();
        }
        QCOMPARE(parse_csv(read_text(existing)).size(), std::size_t(2));
    }

    void write_into_missing_directory_throws_and_leaves_nothing() {
        QTemporaryDir tmp;
        const fs::path missing = fs::path(tmp.path().toStdString()) / "no" / "such";
        QVERIFY_THROWS_EXCEPTION(IoError, write_file_atomic(missing / "a.json", "{}"));
        QVERIFY_THROWS_EXCEPTION(IoError, CsvWriter(missing / "a.csv"));
        QVERIFY(!fs::exists(missing.parent_path()));
        QVERIFY(dir_entries(tmp.path().toStdString()).empty());
    }

    void sidecar_reproduces_config_and_records() {
        QTemporaryDir tmp;
        SessionConfig c;
        for (const char* s : {"runs=fp32,amp-fp16+deepspeed,half-bf16", "model.sizes=2-16-2", "steps=7",
                              "seed=9", "data.n_train=256", "train.batch=32", "scaler.growth_interval=3",
                              "model.dropout=0.1", "scaler.max_scale=inf"})
            apply_override(c, s);
        Session a(c);
        std::vector<RunInfo> infos;
        for (std::size_t i = 0; i < a.run_count(); ++i) infos.push_back(a.run(i).info());
        const fs::path csv = fs::path(tmp.path().toStdString()) / "run.csv";
        QCOMPARE(sidecar_path(csv), csv.parent_path() / "run.json");
        const json side = sidecar_json(c, infos, "CPU (Eigen)", 7);
        QCOMPARE(side.at("seed").get<std::uint64_t>(), std::uint64_t(9));
        QCOMPARE(side.at("runs").size(), std::size_t(3));
        QCOMPARE(side.at("runs")[1].at("label").get<std::string>(), std::string("amp-fp16+deepspeed"));
        QCOMPARE(side.at("columns").size(), std::size_t(28));
        QVERIFY(side.contains("version") && side.contains("device"));
        write_file_atomic(sidecar_path(csv), side.dump(2));
        const SessionConfig back = config_from_sidecar(sidecar_path(csv));
        QCOMPARE(to_json(back), to_json(c));
        Session b(back);
        for (int step = 0; step < 3; ++step) {
            const auto ra = a.step(), rb = b.step();
            for (std::size_t k = 0; k < ra.size(); ++k) {
                QVERIFY(same_bits(ra[k].loss, rb[k].loss));
                QVERIFY(same_bits(ra[k].grad_norm, rb[k].grad_norm));
                QVERIFY(same_bits(ra[k].loss_scale, rb[k].loss_scale));
            }
        }
        QVERIFY_THROWS_EXCEPTION(IoError, config_from_sidecar(csv.parent_path() / "absent.json"));
    }
};

QTEST_APPLESS_MAIN(TestConfig)
#include "test_config.moc"
