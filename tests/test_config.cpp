// Configuration: presets, JSON round trip, --set overrides, errors that name the field. The export and
// the checkpoint format are in test_export.cpp.
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

    // The app's pace (engine/config/pace.hpp): each text reads to its rate and events switch, and
    // writes back as a preset keeps it (a plain rate as its number); a bad one names "pace".
    void pace_reads_and_round_trips_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("rate");
        QTest::addColumn<bool>("events");
        QTest::addColumn<QString>("json");  // what to_json writes ("" : no key, the default)
        QTest::newRow("fast") << "fast" << 0.0 << false << "";
        QTest::newRow("five") << "5" << 5.0 << false << "5";
        QTest::newRow("half") << "0.5" << 0.5 << false << "0.5";
        QTest::newRow("twenty_events") << "20,events" << 20.0 << true << "\"20,events\"";
        QTest::newRow("spaced_case") << " 20 , Events " << 20.0 << true << "\"20,events\"";
        QTest::newRow("fast_events") << "fast,events" << 0.0 << true << "\"fast,events\"";
    }
    void pace_reads_and_round_trips() {
        QFETCH(QString, text);
        QFETCH(double, rate);
        QFETCH(bool, events);
        QFETCH(QString, json);
        const Pace p = parse_pace(text.toStdString());
        QCOMPARE(p.steps_per_second, rate);
        QCOMPARE(p.events, events);
        QCOMPARE(parse_pace(to_string(p)), p);
        SessionConfig c = load_config("default");
        c.pace = p;
        const nlohmann::json j = to_json(c);
        QCOMPARE(QString::fromStdString(j.contains("pace") ? j.at("pace").dump() : ""), json);
        QCOMPARE(session_config_from_json(nlohmann::json::parse(j.dump())).pace, p);  // a saved session reads back
        SessionConfig set = load_config("default");
        apply_override(set, "pace=" + text.toStdString());  // --set reaches it, though the preset has no key
        QCOMPARE(set.pace, p);
    }

    void bad_pace_is_refused_naming_it_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("says");
        QTest::newRow("zero") << "0" << "would never step";
        QTest::newRow("negative") << "-2" << "would never step";
        QTest::newRow("too_fast") << "5000" << "outside 0.1 to 1000";
        QTest::newRow("too_slow") << "0.01" << "outside 0.1 to 1000";
        QTest::newRow("word") << "\"slow\"" << "is not a pace";
        QTest::newRow("other_switch") << "\"5,pauses\"" << "is not a pace";
        QTest::newRow("empty") << "\"\"" << "is not a pace";
        QTest::newRow("object") << "{\"rate\": 5}" << "must be steps per second";
    }
    void bad_pace_is_refused_naming_it() {
        QFETCH(QString, json);
        QFETCH(QString, says);
        nlohmann::json j = to_json(load_config("default"));
        j["pace"] = nlohmann::json::parse(json.toStdString());
        const QString e = config_error([&] { session_config_from_json(j); });
        QVERIFY2(e.startsWith(QStringLiteral("pace|pace: ")) && e.contains(says), qPrintable(e));
        SessionConfig c = load_config("default");
        QCOMPARE(error_field([&] { apply_override(c, "pace=" + json.toStdString()); }), QStringLiteral("pace"));
        QCOMPARE(c.pace, load_config("default").pace);  // unchanged
    }

    // The GPT's switches reach the JSON by --set and come back.
    void gpt_switches_round_trip() {
        SessionConfig c;
        c.model.kind = ModelKind::gpt;
        c.data.kind = DatasetKind::text;
        apply_overrides(c, {"norm.stats=storage", "train.z_loss=0.0001", "attention.qk_norm=true"});
        QVERIFY(c.model.attention.qk_norm);
        QCOMPARE(c.model.norm_stats, NormStats::storage);
        QCOMPARE(c.train.z_loss, 1e-4);
        const json j = to_json(c);
        QCOMPARE(j.at("norm").at("stats"), json("storage"));
        QCOMPARE(to_json(session_config_from_json(j)), j);
        QCOMPARE(to_json(session_config_from_json(json::parse(j.dump()))), j);
    }

    void set_overrides_nested_keys() {
        SessionConfig c;
        apply_override(c, "scaler.growth_interval=50");
        QCOMPARE(c.scaler.growth_interval, 50);
        QCOMPARE(c.scaler.init_scale, 65536.0);  // the rest of the scaler stays
        apply_override(c, "train.lr=0.001");
        QCOMPARE(c.train.lr, 0.001);
        apply_override(c, "runs=fp32,amp-fp16");
        QCOMPARE(c.runs, (std::vector<std::string>{"fp32", "amp-fp16"}));
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
        QTest::newRow("norm_stats_on_mlp") << "norm.stats=storage" << "norm.stats";
        QTest::newRow("z_loss_on_mlp") << "train.z_loss=0.0001" << "train.z_loss";
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

};

QTEST_APPLESS_MAIN(TestConfig)
#include "test_config.moc"
