// The loss scaler against hand-worked trajectories of every framework's rule (REFERENCE.md): each row
// feeds a scripted overflow pattern ('.' clean, 'X' inf) and compares scale, growth tracker,
// hysteresis counter and event after every step with a table written out by hand from the rules.
#include "engine/base/error.hpp"
#include "engine/base/text.hpp"
#include "engine/scaler/scaler.hpp"

#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

using namespace mpx;
using nlohmann::json;

namespace {

ScalerConfig config_from(const QString& preset, const QString& overrides) {
    json j = overrides.isEmpty() ? json::object() : json::parse(overrides.toStdString());
    j["preset"] = preset.toStdString();
    return scaler_config_from_json(j);
}

QString step_line(int i, const ScalerState& s, ScaleEvent e) {
    return QStringLiteral("step %1: %2 %3 %4 %5")
        .arg(i)
        .arg(QString::fromStdString(format_number(s.scale)))
        .arg(s.growth_tracker)
        .arg(s.hysteresis_left)
        .arg(QString::fromStdString(std::string(to_string(e))));
}

QStringList run_pattern(LossScaler& scaler, const QString& pattern, int first_step = 0) {
    QStringList out;
    for (int i = 0; i < pattern.size(); ++i) {
        const auto u = scaler.update(pattern[i] == QLatin1Char('X'));
        out << step_line(first_step + i, scaler.state(), u.event);
    }
    return out;
}

// "scale T H event; ..." with scale as a number, "inf" or "2^k".
QStringList expected_lines(const QString& table) {
    QStringList out;
    const auto steps = table.split(QLatin1Char(';'), Qt::SkipEmptyParts);
    for (int i = 0; i < steps.size(); ++i) {
        const auto f = steps[i].simplified().split(QLatin1Char(' '));
        if (f.size() != 4) return {QStringLiteral("bad expected step: ") + steps[i]};
        double scale = f[0].startsWith(QLatin1String("2^"))
                           ? std::ldexp(1.0, f[0].mid(2).toInt())
                           : std::strtod(f[0].toStdString().c_str(), nullptr);
        ScalerState s;
        s.scale = scale;
        s.growth_tracker = f[1].toInt();
        s.hysteresis_left = f[2].toInt();
        out << step_line(i, s, *parse_scale_event(f[3].toStdString()));
    }
    return out;
}

template <class F>
QString config_error_field(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        // The message must carry the field too: that is what a user sees.
        if (std::string(e.what()).find(e.field()) == std::string::npos) return "field not in message";
        return QString::fromStdString(e.field());
    }
    return QStringLiteral("no error");
}

}  // namespace

class TestScaler : public QObject {
    Q_OBJECT

private slots:
    void trajectory_matches_framework_rule_data();
    void trajectory_matches_framework_rule();
    void deepspeed_raises_at_minimum_and_leaves_state();
    void deepspeed_spends_hysteresis_before_checking_minimum();
    void kinds_none_and_static_skip_rules();
    void save_restore_continues_identically_data();
    void save_restore_continues_identically();
    void restore_rejects_state_of_other_config();
    void config_json_round_trip_data();
    void config_json_round_trip();
    void state_json_round_trip_keeps_infinite_scale();
    void validation_names_field_data();
    void validation_names_field();
    void unknown_preset_lists_choices();
    void every_preset_is_valid_and_named();
    void reconfigure_keeps_state_within_new_limits();
    void reconfigure_kind_change_restarts_scale();
    void enum_names_round_trip();
    void snippet_contains_values_data();
    void snippet_contains_values();
};

void TestScaler::trajectory_matches_framework_rule_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("expected");  // after each step: scale T H event

    // PyTorch: inf → S×0.5, T=0; clean → T+=1, at T == 3: T=0, S×2.
    QTest::newRow("pytorch") << "pytorch" << R"({"init_scale": 8, "growth_interval": 3})"
                             << "....X..XX...."
                             << "8 1 1 none; 8 2 1 none; 16 0 1 grow; 16 1 1 none; 8 0 1 backoff;"
                                "8 1 1 none; 8 2 1 none; 4 0 1 backoff; 2 0 1 backoff; 2 1 1 none;"
                                "2 2 1 none; 4 0 1 grow; 4 1 1 none";
    // Apex: growth min(max, 2S) (held at max 16: "none"), backoff max(min, S/2) (held at 2: still
    // "backoff").
    QTest::newRow("apex") << "apex"
                          << R"({"init_scale": 8, "growth_interval": 3, "min_scale": 2, "max_scale": 16})"
                          << "......XXXX..."
                          << "8 1 1 none; 8 2 1 none; 16 0 1 grow; 16 1 1 none; 16 2 1 none;"
                             "16 0 1 none; 8 0 1 backoff; 4 0 1 backoff; 2 0 1 backoff;"
                             "2 0 1 backoff; 2 1 1 none; 2 2 1 none; 4 0 1 grow";
    // Keras 3: no floor, the scale halves below 1.
    QTest::newRow("keras") << "keras" << R"({"init_scale": 2, "growth_interval": 2})" << "XXXX..."
                           << "1 0 1 backoff; 0.5 0 1 backoff; 0.25 0 1 backoff;"
                              "0.125 0 1 backoff; 0.125 1 1 none; 0.25 0 1 grow; 0.25 1 1 none";
    // Legacy tf.keras: maximum(S / 2, 1).
    QTest::newRow("tf-keras-legacy")
        << "tf-keras-legacy" << R"({"init_scale": 2, "growth_interval": 2})" << "XXXX..."
        << "1 0 1 backoff; 1 0 1 backoff; 1 0 1 backoff; 1 0 1 backoff; 1 1 1 none;"
           "2 0 1 grow; 2 1 1 none";
    // DeepSpeed >= 0.17.1, window 3, hysteresis 2, consecutive_hysteresis false: growth when
    // stable = iter - last_overflow - 1 is > 0 and % 3 == 0, T = stable % 3. Three clean steps after
    // the overflow at iter 2 are not enough (stable is 2 at iter 5), so no growth refills H and
    // every later overflow backs off.
    QTest::newRow("deepspeed") << "deepspeed" << R"({"init_scale": 16, "growth_interval": 3})"
                               << "..X...X.X..X.."
                               << "16 0 2 none; 16 1 2 none; 16 0 1 hysteresis; 16 0 1 none;"
                                  "16 1 1 none; 16 2 1 none; 8 0 1 backoff; 8 0 1 none;"
                                  "4 0 1 backoff; 4 0 1 none; 4 1 1 none; 2 0 1 backoff;"
                                  "2 0 1 none; 2 1 1 none";
    // DeepSpeed <= 0.17.0 on the same pattern: growth when (iter - last_overflow) % 3 == 0 (first
    // at iter 2, since last_overflow starts at -1); the three clean steps after iter 2 grow at
    // iter 5 and refill H; H is refilled only by a growth, so the overflow at iter 8 backs off
    // although iter 7 was clean.
    QTest::newRow("deepspeed-legacy") << "deepspeed-legacy" << R"({"init_scale": 16, "growth_interval": 3})"
                                      << "..X...X.X..X.."
                                      << "16 1 2 none; 16 2 2 none; 16 0 1 hysteresis; 16 1 1 none;"
                                         "16 2 1 none; 32 0 2 grow; 32 0 1 hysteresis; 32 1 1 none;"
                                         "16 0 1 backoff; 16 1 1 none; 16 2 1 none; 8 0 1 backoff;"
                                         "8 1 1 none; 8 2 1 none";
    // From the very first step (last_overflow -1): >= 0.17.1 grows at iter 3 and 6 (the first
    // growth after window + 1 clean steps, then every window); <= 0.17.0 at iter 2 and 5.
    QTest::newRow("deepspeed-from-start") << "deepspeed" << R"({"init_scale": 16, "growth_interval": 3})"
                                          << "........"
                                          << "16 0 2 none; 16 1 2 none; 16 2 2 none; 32 0 2 grow;"
                                             "32 1 2 none; 32 2 2 none; 64 0 2 grow; 64 1 2 none";
    QTest::newRow("deepspeed-legacy-from-start")
        << "deepspeed-legacy" << R"({"init_scale": 16, "growth_interval": 3})" << "........"
        << "16 1 2 none; 16 2 2 none; 32 0 2 grow; 32 1 2 none; 32 2 2 none; 64 0 2 grow;"
           "64 1 2 none; 64 2 2 none";
    // After a backoff: >= 0.17.1 grows on the 4th clean step (window + 1), <= 0.17.0 on the 3rd.
    QTest::newRow("deepspeed-after-overflow")
        << "deepspeed" << R"({"init_scale": 16, "growth_interval": 3, "hysteresis": 1})" << "X......."
        << "8 0 1 backoff; 8 0 1 none; 8 1 1 none; 8 2 1 none; 16 0 1 grow; 16 1 1 none;"
           "16 2 1 none; 32 0 1 grow";
    QTest::newRow("deepspeed-legacy-after-overflow")
        << "deepspeed-legacy" << R"({"init_scale": 16, "growth_interval": 3, "hysteresis": 1})"
        << "X......."
        << "8 0 1 backoff; 8 1 1 none; 8 2 1 none; 16 0 1 grow; 16 1 1 none; 16 2 1 none;"
           "32 0 1 grow; 32 1 1 none";
    // DeepSpeed >= 0.17.1 with consecutive_hysteresis true: every clean step refills H, only XX
    // backs off; three clean steps after the backoff at iter 3 are one too few to grow.
    QTest::newRow("deepspeed-consecutive")
        << "deepspeed"
        << R"({"init_scale": 16, "growth_interval": 3, "hysteresis_reset": "on_clean_step"})"
        << "X.XX...X"
        << "16 0 1 hysteresis; 16 0 2 none; 16 0 1 hysteresis; 8 0 1 backoff; 8 0 2 none;"
           "8 1 2 none; 8 2 2 none; 8 0 1 hysteresis";
    // The same under DeepSpeed <= 0.17.0: the three clean steps grow at iter 6.
    QTest::newRow("deepspeed-legacy-consecutive")
        << "deepspeed-legacy"
        << R"({"init_scale": 16, "growth_interval": 3, "hysteresis_reset": "on_clean_step"})"
        << "X.XX...X"
        << "16 0 1 hysteresis; 16 1 2 none; 16 0 1 hysteresis; 8 0 1 backoff; 8 1 2 none;"
           "8 2 2 none; 16 0 2 grow; 16 0 1 hysteresis";
    // Megatron on DeepSpeed's pattern: the same scales, but H keeps falling (0, -1) until a growth.
    QTest::newRow("megatron") << "megatron" << R"({"init_scale": 16, "growth_interval": 3})"
                              << "..X...X.X..X.."
                              << "16 1 2 none; 16 2 2 none; 16 0 1 hysteresis; 16 1 1 none;"
                                 "16 2 1 none; 32 0 2 grow; 32 0 1 hysteresis; 32 1 1 none;"
                                 "16 0 0 backoff; 16 1 0 none; 16 2 0 none; 8 0 -1 backoff;"
                                 "8 1 -1 none; 8 2 -1 none";
    // Megatron clamps at min 1 (no error) and a growth refills H to 1.
    QTest::newRow("megatron-min") << "megatron"
                                  << R"({"init_scale": 4, "growth_interval": 3, "hysteresis": 1})"
                                  << "XXXX..."
                                  << "2 0 0 backoff; 1 0 -1 backoff; 1 0 -2 backoff; 1 0 -3 backoff;"
                                     "1 1 -3 none; 1 2 -3 none; 2 0 1 grow";
    // NeMo: an inf spends H first (T=0); H refilled on every clean step; only XX backs off.
    QTest::newRow("nemo") << "nemo" << R"({"init_scale": 16, "growth_interval": 3})" << "X.XX...XXX."
                          << "16 0 1 hysteresis; 16 1 2 none; 16 0 1 hysteresis; 8 0 0 backoff;"
                             "8 1 2 none; 8 2 2 none; 16 0 2 grow; 16 0 1 hysteresis;"
                             "8 0 0 backoff; 4 0 -1 backoff; 4 1 2 none";
    QTest::newRow("static") << "static" << R"({"init_scale": 128})" << "..X.X"
                            << "128 0 1 none; 128 0 1 none; 128 0 1 none; 128 0 1 none; 128 0 1 none";
    QTest::newRow("none") << "none" << "" << "X.X" << "1 0 1 none; 1 0 1 none; 1 0 1 none";
    // PyTorch's kernel: float(2^127 · 2) is inf, so the growth is refused but T still resets.
    QTest::newRow("pytorch-refuses-inf") << "pytorch" << R"({"init_scale": 1.7014118346046923e38, "growth_interval": 2})"
                                         << "....X.."
                                         << "2^127 1 1 none; 2^127 0 1 none; 2^127 1 1 none;"
                                            "2^127 0 1 none; 2^126 0 1 backoff; 2^126 1 1 none;"
                                            "2^127 0 1 grow";
    // Keras 3 assigns scale * 2 with no check: the float32 scale becomes inf and stays there.
    QTest::newRow("keras-grows-to-inf") << "keras" << R"({"init_scale": 1.7014118346046923e38, "growth_interval": 1})"
                                        << "..X" << "inf 0 1 grow; inf 0 1 none; inf 0 1 backoff";
    // Apex keeps a Python float: 2^128 is an ordinary double.
    QTest::newRow("apex-double") << "apex" << R"({"init_scale": 1.7014118346046923e38, "max_scale": null, "growth_interval": 1})"
                                 << "." << "2^128 0 1 grow";
    // A float32 scale rounds 1 × 0.3 to float(0.3); a double keeps 0.3.
    QTest::newRow("fp32-rounds-backoff") << "pytorch" << R"({"init_scale": 1, "backoff_factor": 0.3})"
                                         << "X" << "0.30000001192092896 0 1 backoff";
    QTest::newRow("fp64-keeps-backoff") << "apex" << R"({"init_scale": 1, "backoff_factor": 0.3})"
                                        << "X" << "0.3 0 1 backoff";
}

void TestScaler::trajectory_matches_framework_rule() {
    QFETCH(QString, preset);
    QFETCH(QString, overrides);
    QFETCH(QString, pattern);
    QFETCH(QString, expected);
    LossScaler scaler(config_from(preset, overrides));
    QCOMPARE(run_pattern(scaler, pattern), expected_lines(expected));
    QCOMPARE(scaler.state().iteration, static_cast<long long>(pattern.size()));
    const auto last = pattern.lastIndexOf(QLatin1Char('X'));
    const bool dynamic = scaler.config().kind == ScalerKind::dynamic;
    QCOMPARE(scaler.state().last_overflow_iteration, dynamic ? static_cast<long long>(last) : -1LL);
}

void TestScaler::deepspeed_raises_at_minimum_and_leaves_state() {
    LossScaler scaler(config_from("deepspeed", R"({"init_scale": 2, "hysteresis": 1, "growth_interval": 100})"));
    QCOMPARE(scaler.update(true).event, ScaleEvent::backoff);
    QCOMPARE(scaler.scale(), 1.0);
    const ScalerState before = scaler.state();
    bool raised = false;
    try {
        scaler.update(true);
    } catch (const ScalerAtMinimumError& e) {
        raised = true;
        QVERIFY(std::string(e.what()).find(
                    "Current loss scale already at minimum - cannot decrease scale anymore") == 0);
        QCOMPARE(e.scale(), 1.0);
    }
    QVERIFY(raised);
    QVERIFY(scaler.state() == before);  // DeepSpeed raises before touching its counters
    QCOMPARE(before.iteration, 1LL);
    QCOMPARE(before.last_overflow_iteration, 0LL);

    // at_min clamp: DeepSpeed with raise_error_at_min_scale=False stays at the minimum.
    LossScaler clamped(config_from("deepspeed", R"({"init_scale": 1, "hysteresis": 1, "at_min": "clamp"})"));
    const auto u = clamped.update(true);
    QCOMPARE(u.event, ScaleEvent::backoff);
    QCOMPARE(u.new_scale, 1.0);
}

void TestScaler::deepspeed_spends_hysteresis_before_checking_minimum() {
    LossScaler scaler(config_from("deepspeed", R"({"init_scale": 1, "growth_interval": 100})"));
    QCOMPARE(scaler.update(true).event, ScaleEvent::hysteresis);  // H 2 → 1, no check yet
    QCOMPARE(scaler.state().hysteresis_left, 1);
    QVERIFY_THROWS_EXCEPTION(ScalerAtMinimumError, scaler.update(true));
}

void TestScaler::kinds_none_and_static_skip_rules() {
    QVERIFY(!LossScaler(scaler_preset("none")).skips_on_inf());
    QVERIFY(LossScaler(scaler_preset("static")).skips_on_inf());
    QVERIFY(LossScaler(scaler_preset("pytorch")).skips_on_inf());
    QCOMPARE(LossScaler(scaler_preset("none")).scale(), 1.0);
    QCOMPARE(LossScaler(scaler_preset("megatron")).scale(), 4294967296.0);
}

void TestScaler::save_restore_continues_identically_data() {
    QTest::addColumn<QString>("preset");
    for (const auto& name : scaler_preset_names())
        QTest::newRow(name.c_str()) << QString::fromStdString(name);
}

void TestScaler::save_restore_continues_identically() {
    QFETCH(QString, preset);
    const ScalerConfig config = config_from(preset, R"({"growth_interval": 3})");
    const QString before = "X..X....XX.";
    const QString after = "..X.XX......X..";
    LossScaler original(config);
    run_pattern(original, before);
    const json saved = original.state();
    LossScaler resumed(config);
    resumed.restore(scaler_state_from_json(json::parse(saved.dump())));
    QVERIFY(resumed.state() == original.state());
    const auto a = run_pattern(original, after, before.size());
    const auto b = run_pattern(resumed, after, before.size());
    QCOMPARE(b, a);
    QVERIFY(resumed.state() == original.state());
    if (config.kind == ScalerKind::dynamic) QVERIFY(a.join("").contains("grow"));
}

void TestScaler::restore_rejects_state_of_other_config() {
    LossScaler scaler(config_from("pytorch", R"({"growth_interval": 3})"));
    ScalerState s = scaler.state();
    s.growth_tracker = 3;
    QCOMPARE(config_error_field([&] { scaler.restore(s); }), QStringLiteral("scaler.state.growth_tracker"));
    s = scaler.state();
    s.hysteresis_left = 2;
    QCOMPARE(config_error_field([&] { scaler.restore(s); }), QStringLiteral("scaler.state.hysteresis_left"));
    s = scaler.state();
    s.last_overflow_iteration = 0;  // no step has run yet
    QCOMPARE(config_error_field([&] { scaler.restore(s); }),
             QStringLiteral("scaler.state.last_overflow_iteration"));
    QCOMPARE(config_error_field([] { scaler_state_from_json(json{{"scale", 1.0}}); }),
             QStringLiteral("scaler.state.growth_tracker"));
}

void TestScaler::config_json_round_trip_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("overrides");
    for (const auto& name : scaler_preset_names())
        QTest::newRow(name.c_str()) << QString::fromStdString(name) << QString();
    QTest::newRow("custom-every-field")
        << "custom"
        << R"({"kind": "dynamic", "init_scale": 1000, "growth_factor": 1.5, "backoff_factor": 0.25,
              "growth_interval": 7, "min_scale": 0.125, "max_scale": 4096, "hysteresis": 3,
              "hysteresis_reset": "on_clean_step", "growth_count": "since_last_overflow",
              "at_min": "error", "scale_storage": "fp64", "non_finite_growth": "apply",
              "hysteresis_decrement": "always"})";
}

void TestScaler::config_json_round_trip() {
    QFETCH(QString, preset);
    QFETCH(QString, overrides);
    const ScalerConfig c = config_from(preset, overrides);
    QCOMPARE(QString::fromStdString(c.preset), preset);
    const json j = c;
    const ScalerConfig back = scaler_config_from_json(json::parse(j.dump()));
    QVERIFY2(back == c, j.dump().c_str());
    if (preset == "custom") {
        QCOMPARE(back.growth_factor, 1.5);
        QCOMPARE(back.max_scale, 4096.0);
        QCOMPARE(back.hysteresis_decrement, HysteresisDecrement::always);
    }
    if (std::isinf(c.max_scale)) QVERIFY(j.at("max_scale").is_null());
}

void TestScaler::state_json_round_trip_keeps_infinite_scale() {
    const ScalerState s{std::numeric_limits<double>::infinity(), 5, -2, 12345678901LL, 99};
    const json j = s;
    QCOMPARE(j.at("scale").get<std::string>(), std::string("inf"));
    QVERIFY(scaler_state_from_json(json::parse(j.dump())) == s);
    const ScalerState t{0.30000001192092896, 0, 1, 3, -1};
    QVERIFY(scaler_state_from_json(json::parse(json(t).dump())) == t);
}

void TestScaler::validation_names_field_data() {
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("field");
    QTest::newRow("growth 1") << R"({"growth_factor": 1.0})" << "scaler.growth_factor";
    QTest::newRow("growth nan") << R"({"growth_factor": "2"})" << "scaler.growth_factor";
    QTest::newRow("backoff 1") << R"({"backoff_factor": 1.0})" << "scaler.backoff_factor";
    QTest::newRow("backoff 0") << R"({"backoff_factor": 0})" << "scaler.backoff_factor";
    QTest::newRow("interval 0") << R"({"growth_interval": 0})" << "scaler.growth_interval";
    QTest::newRow("interval 2.5") << R"({"growth_interval": 2.5})" << "scaler.growth_interval";
    QTest::newRow("hysteresis 0") << R"({"preset": "megatron", "hysteresis": 0})" << "scaler.hysteresis";
    QTest::newRow("init 0") << R"({"init_scale": 0})" << "scaler.init_scale";
    QTest::newRow("init -1") << R"({"init_scale": -1})" << "scaler.init_scale";
    QTest::newRow("init beyond fp32") << R"({"init_scale": 1e39})" << "scaler.init_scale";
    QTest::newRow("min above init") << R"({"init_scale": 4, "min_scale": 8})" << "scaler.min_scale";
    QTest::newRow("max below init") << R"({"preset": "apex", "init_scale": 1e8})" << "scaler.max_scale";
    QTest::newRow("error needs min") << R"({"preset": "deepspeed", "min_scale": 0})" << "scaler.at_min";
    QTest::newRow("bad kind") << R"({"kind": "dynamc"})" << "scaler.kind";
    QTest::newRow("bad at_min") << R"({"at_min": 1})" << "scaler.at_min";
    QTest::newRow("unknown key") << R"({"grow_factor": 2})" << "scaler.grow_factor";
    QTest::newRow("unknown preset") << R"({"preset": "pytorh"})" << "scaler.preset";
}

void TestScaler::validation_names_field() {
    QFETCH(QString, input);
    QFETCH(QString, field);
    const auto j = json::parse(input.toStdString());
    QCOMPARE(config_error_field([&] { scaler_config_from_json(j); }), field);
}

void TestScaler::unknown_preset_lists_choices() {
    try {
        scaler_preset("pytorh");
        QFAIL("no error");
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        QVERIFY2(m.find("unknown preset 'pytorh'") != std::string::npos, m.c_str());
        for (const auto& n : scaler_preset_names()) QVERIFY2(m.find("'" + n + "'") != std::string::npos, m.c_str());
    }
    try {
        scaler_config_from_json(json{{"grow_factor", 2}});
        QFAIL("no error");
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        QVERIFY2(m.find("unknown setting; known: ") != std::string::npos, m.c_str());
        QVERIFY2(m.find("growth_factor") != std::string::npos, m.c_str());
    }
    ScalerConfig bad = scaler_preset("pytorch");
    bad.backoff_factor = std::nan("");
    QCOMPARE(config_error_field([&] { LossScaler s(bad); }), QStringLiteral("scaler.backoff_factor"));
}

void TestScaler::every_preset_is_valid_and_named() {
    const auto names = scaler_preset_names();
    QCOMPARE(names.size(), std::size_t{10});
    for (const auto& n : names) {
        const ScalerConfig c = scaler_preset(n);
        QCOMPARE(c.preset, n);
        validate(c);
        // Every preset says which release it reproduces and which source it follows.
        const ScalerPresetSource src = scaler_preset_source(n);
        QVERIFY2(!src.framework.empty() && !src.source.empty(), n.c_str());
    }
    QCOMPARE(config_error_field([] { scaler_preset_source("deepspeed-0.16"); }), QStringLiteral("scaler.preset"));
    QCOMPARE(scaler_preset_source("deepspeed").framework.substr(0, 20), std::string_view("DeepSpeed >= 0.17.1 "));
    QCOMPARE(scaler_preset_source("deepspeed-legacy").framework.substr(0, 20), std::string_view("DeepSpeed <= 0.17.0 "));
    // The two DeepSpeed rules are one setting apart, not a branch on the preset's name.
    ScalerConfig legacy = scaler_preset("deepspeed-legacy");
    QCOMPARE(legacy.growth_count, GrowthCount::since_last_overflow);
    QCOMPARE(scaler_preset("deepspeed").growth_count, GrowthCount::stable_interval);
    legacy.preset = "deepspeed";
    legacy.growth_count = GrowthCount::stable_interval;
    QVERIFY(legacy == scaler_preset("deepspeed"));
    QCOMPARE(scaler_preset("deepspeed").growth_interval, 1000);
    QCOMPARE(scaler_preset("apex").max_scale, 16777216.0);
    QCOMPARE(scaler_preset("keras").init_scale, 32768.0);
    QCOMPARE(scaler_config_from_json(json::object()).preset, std::string("pytorch"));
}

void TestScaler::reconfigure_keeps_state_within_new_limits() {
    ScalerConfig c = config_from("pytorch", R"({"init_scale": 16, "growth_interval": 4})");
    LossScaler scaler(c);
    run_pattern(scaler, "...");
    QCOMPARE(scaler.state().growth_tracker, 3);
    c.growth_interval = 2;  // T = 3 would never equal 2 again: clamped to 1, next clean step grows
    c.max_scale = 8;
    c.init_scale = 8;
    scaler.reconfigure(c);
    QCOMPARE(scaler.scale(), 8.0);
    QCOMPARE(scaler.state().growth_tracker, 1);
    QCOMPARE(scaler.state().iteration, 3LL);
    c.max_scale = 64;
    scaler.reconfigure(c);
    QCOMPARE(scaler.update(false).event, ScaleEvent::grow);
    QCOMPARE(scaler.scale(), 16.0);

    // DeepSpeed >= 0.17.1 counts from the last overflow: a shorter window re-derives the tracker
    // (stable = 1 after "X..") and the growth comes when stable reaches the new window.
    ScalerConfig d = config_from("deepspeed", R"({"init_scale": 16, "growth_interval": 4, "hysteresis": 1})");
    LossScaler ds(d);
    run_pattern(ds, "X..");
    QCOMPARE(ds.state().growth_tracker, 1);
    d.growth_interval = 3;
    ds.reconfigure(d);
    QCOMPARE(ds.state().growth_tracker, 1);
    QCOMPARE(ds.update(false).event, ScaleEvent::none);  // stable 2
    QCOMPARE(ds.state().growth_tracker, 2);
    QCOMPARE(ds.update(false).event, ScaleEvent::grow);  // stable 3
    QCOMPARE(ds.scale(), 16.0);

    ScalerConfig m = config_from("megatron", R"({"hysteresis": 3})");
    LossScaler meg(m);
    meg.update(true);
    QCOMPARE(meg.state().hysteresis_left, 2);
    m.hysteresis = 1;
    meg.reconfigure(m);
    QCOMPARE(meg.state().hysteresis_left, 1);
    QCOMPARE(meg.update(true).event, ScaleEvent::backoff);
}

void TestScaler::reconfigure_kind_change_restarts_scale() {
    LossScaler scaler(config_from("pytorch", R"({"init_scale": 16})"));
    scaler.update(true);
    ScalerConfig s = config_from("static", R"({"init_scale": 128})");
    scaler.reconfigure(s);
    QCOMPARE(scaler.scale(), 128.0);
    QCOMPARE(scaler.state().iteration, 1LL);
    s.init_scale = 64;  // a static scale is its init_scale: a live change applies at once
    scaler.reconfigure(s);
    QCOMPARE(scaler.scale(), 64.0);
    scaler.reconfigure(scaler_preset("none"));
    QCOMPARE(scaler.scale(), 1.0);
    QVERIFY(!scaler.skips_on_inf());
}

void TestScaler::enum_names_round_trip() {
    for (auto e : {ScaleEvent::none, ScaleEvent::grow, ScaleEvent::backoff, ScaleEvent::hysteresis})
        QCOMPARE(parse_scale_event(to_string(e)), std::optional<ScaleEvent>(e));
    QCOMPARE(to_string(ScalerKind::fixed), std::string_view("static"));
    QCOMPARE(parse_scaler_kind("static"), std::optional<ScalerKind>(ScalerKind::fixed));
    QCOMPARE(to_string(ScaleEvent::hysteresis), std::string_view("hysteresis"));
    QCOMPARE(parse_growth_count("since_last_overflow"),
             std::optional<GrowthCount>(GrowthCount::since_last_overflow));
    QCOMPARE(parse_growth_count("stable_interval"), std::optional<GrowthCount>(GrowthCount::stable_interval));
    QCOMPARE(parse_hysteresis_reset("on_growth"), std::optional<HysteresisReset>(HysteresisReset::on_growth));
    QCOMPARE(parse_at_min("error"), std::optional<AtMin>(AtMin::error));
    QCOMPARE(parse_framework("megatron"), std::optional<Framework>(Framework::megatron));
    QVERIFY(!parse_scaler_kind("fixed").has_value());
}

void TestScaler::snippet_contains_values_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("overrides");
    QTest::addColumn<QString>("framework");
    QTest::addColumn<QStringList>("contains");
    QTest::addColumn<bool>("exact");  // true: the framework expresses every setting (no notes)

    QTest::newRow("pytorch") << "pytorch" << "" << "pytorch"
        << QStringList{"torch.amp.GradScaler(init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)"} << true;
    QTest::newRow("deepspeed as pytorch") << "deepspeed" << "" << "pytorch"
        << QStringList{"growth_interval=1000)", "# not expressible in PyTorch: hysteresis = 2",
                       "# not expressible in PyTorch: min_scale = 1", "at_min = 'error'",
                       "# not expressible in PyTorch: growth_count = 'stable_interval' (DeepSpeed >= "
                       "0.17.1 grows first after 1000 + 1 clean steps; PyTorch after 1000)",
                       "# preset 'deepspeed' follows DeepSpeed >= 0.17.1"} << false;
    QTest::newRow("deepspeed") << "deepspeed" << "" << "deepspeed"
        << QStringList{"\"fp16\": {", "\"loss_scale\": 0,", "\"initial_scale_power\": 16,",
                       "\"loss_scale_window\": 1000,", "\"hysteresis\": 2,",
                       "\"consecutive_hysteresis\": false,", "\"min_loss_scale\": 1",
                       "// preset 'deepspeed' follows DeepSpeed >= 0.17.1 (ZeRO stages 1-3",
                       "deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale",
                       "// the rule of DeepSpeed >= 0.17.1: the first growth after an overflow",
                       "without ZeRO, FP16_Optimizer has always grown after loss_scale_window + 1 "
                       "clean steps, has no hysteresis and never raises at the minimum"} << true;
    // The legacy block is the same JSON; only DeepSpeed <= 0.17.0 grows after window clean steps.
    QTest::newRow("deepspeed-legacy") << "deepspeed-legacy" << "" << "deepspeed"
        << QStringList{"\"loss_scale_window\": 1000,", "\"hysteresis\": 2,",
                       "// preset 'deepspeed-legacy' follows DeepSpeed <= 0.17.0",
                       "// not expressible in DeepSpeed: growth after 1000 clean steps following an "
                       "overflow (DeepSpeed >= 0.17.1 waits loss_scale_window + 1); this block grows "
                       "as set only in DeepSpeed <= 0.17.0 with ZeRO"} << false;
    QTest::newRow("deepspeed as megatron") << "deepspeed" << "" << "megatron"
        << QStringList{"--loss-scale-window 1000 --hysteresis 2",
                       "# not expressible in Megatron-LM: growth_count = 'stable_interval'"} << false;
    QTest::newRow("pytorch as deepspeed") << "pytorch" << R"({"init_scale": 1000, "growth_interval": 50})" << "deepspeed"
        << QStringList{"\"initial_scale_power\": 10,", "\"loss_scale_window\": 50,", "10 is the nearest",
                       "// not expressible in DeepSpeed: min_scale = 0", "raise_error_at_min_scale = False",
                       "// not expressible in DeepSpeed: growth after 50 clean steps following an overflow",
                       "\"hysteresis\": 1,"} << false;
    QTest::newRow("megatron") << "megatron" << "" << "megatron"
        << QStringList{"--fp16 --initial-loss-scale 4294967296 --min-loss-scale 1 --loss-scale-window 1000 --hysteresis 2"} << true;
    QTest::newRow("nemo as megatron") << "nemo" << R"({"growth_factor": 3})" << "megatron"
        << QStringList{"hysteresis_reset = 'on_clean_step'", "growth_factor = 3 (Megatron-LM fixes it at 2)",
                       "non_finite_growth = 'refuse'", "min_scale = 0"} << false;
    QTest::newRow("keras") << "keras" << "" << "keras"
        << QStringList{"keras.optimizers.LossScaleOptimizer(inner, initial_scale=32768.0, dynamic_growth_steps=2000)"} << true;
    QTest::newRow("tf-keras-legacy") << "tf-keras-legacy" << "" << "keras"
        << QStringList{"tf.keras.mixed_precision.LossScaleOptimizer(inner, dynamic=True, initial_scale=32768.0, dynamic_growth_steps=2000)"} << true;
    QTest::newRow("apex") << "apex" << "" << "apex"
        << QStringList{"loss_scale=\"dynamic\", min_loss_scale=None, max_loss_scale=16777216.0)",
                       "# preset 'apex' follows Apex amp up to 25.05"} << true;
    QTest::newRow("megatron as apex") << "megatron" << "" << "apex"
        << QStringList{"min_loss_scale=1.0, max_loss_scale=float(\"inf\"))", "init_scale = 4294967296",
                       "growth_interval = 1000", "hysteresis = 2"} << false;
    QTest::newRow("static megatron") << "static" << R"({"init_scale": 128})" << "megatron"
        << QStringList{"--fp16 --loss-scale 128"} << true;
    QTest::newRow("static deepspeed") << "static" << R"({"init_scale": 128})" << "deepspeed"
        << QStringList{"\"loss_scale\": 128"} << true;
    QTest::newRow("static apex") << "static" << R"({"init_scale": 128})" << "apex"
        << QStringList{"loss_scale=128.0)", "neither checks for inf/NaN nor skips"} << false;
    QTest::newRow("none pytorch") << "none" << "" << "pytorch"
        << QStringList{"torch.amp.GradScaler(enabled=False)"} << true;
}

void TestScaler::snippet_contains_values() {
    QFETCH(QString, preset);
    QFETCH(QString, overrides);
    QFETCH(QString, framework);
    QFETCH(QStringList, contains);
    QFETCH(bool, exact);
    const auto fw = parse_framework(framework.toStdString());
    QVERIFY(fw.has_value());
    const QString text = QString::fromStdString(framework_snippet(config_from(preset, overrides), *fw));
    for (const auto& want : contains) QVERIFY2(text.contains(want), qPrintable(want + "\n---\n" + text));
    QCOMPARE(text.contains("not expressible"), !exact);
}

QTEST_APPLESS_MAIN(TestScaler)
#include "test_scaler.moc"
