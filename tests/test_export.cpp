// The export and the checkpoint (engine/io/): CSV columns and number round trip, atomic writes, the
// sidecar that reproduces a run, saved states that are refused.
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

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

}  // namespace

class TestExport : public QObject {
    Q_OBJECT

private slots:
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
                             "eval_accuracy,first_nonfinite,fp8_saturated_frac,fp8_underflow_frac,small_update_frac,small_kept_frac,"
                             "compensation_max,mem_compensation,headroom_log2,penalty\r\n"));
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
        info.spec = parse_run_spec("amp-fp16");  // precision fp16, mode amp
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
                if (i % 4 == 1) r.penalty = 1.0 / (i + 5);  // a penalty run's term, empty elsewhere
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
            QCOMPARE(f.size(), std::size_t(34));
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
            for (int c = 0; c <= static_cast<int>(MemCategory::workspace); ++c)
                QCOMPARE(f[static_cast<std::size_t>(14 + c)], std::to_string(r.mem.bytes[static_cast<std::size_t>(c)]));
            QCOMPARE(f[31], std::to_string(r.mem[MemCategory::compensation]));
            QCOMPARE(f[32].empty(), !r.headroom_log2.has_value());
            if (r.headroom_log2) QCOMPARE(num(f[32]), *r.headroom_log2);
            QCOMPARE(f[33].empty(), !r.penalty.has_value());
            if (r.penalty) QVERIFY2(same_bits(num(f[33]), *r.penalty), f[33].c_str());
            QVERIFY2(same_bits(num(f[28]), r.small_update_frac), f[28].c_str());
            QVERIFY2(same_bits(num(f[29]), r.small_kept_frac), f[29].c_str());
            QCOMPARE(f[30].empty(), !r.compensation_max.has_value());
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
                              "seed=9", "data.n_train=256", "train.batch=32",
                              R"(scaler_overrides={"growth_interval":3,"max_scale":null})", "model.dropout=0.1"})
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
        QCOMPARE(side.at("columns").size(), std::size_t(34));
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

QTEST_APPLESS_MAIN(TestExport)
#include "test_export.moc"
