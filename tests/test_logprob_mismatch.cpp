// The log-probability mismatch (engine/run/logprob_mismatch.hpp): a token's log p against a softmax
// worked in double; the reference read by itself differs by exactly 0; each policy's Δ equals the one
// a run of that policy computes on the same weights by its own forward pass; the counts sum to the
// tokens; training bit-identical with and without it; the same on 1, 2 and 3 threads; the config's
// refusals and mismatch.csv.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <map>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/config/session_json.hpp"
#include "engine/io/mismatch_csv.hpp"
#include "engine/run/claims_check.hpp"
#include "gpt_test_support.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

SessionConfig mismatch_gpt(std::vector<std::string> runs, long long steps, std::vector<std::string> policies, int every = 4) {
    SessionConfig c = small_gpt(std::move(runs), steps);
    c.train.lr = 3e-3;
    c.sample.every = 0;
    c.mismatch.policies = std::move(policies);
    c.mismatch.every = every;
    return c;
}

// The session's held-out windows, as Session gathers them (eval_window_starts, whole batches).
std::vector<EvalChunk> held_out(const Session& s) {
    const SessionConfig& c = s.config();
    const int T = c.model.gpt.block_size, B = c.train.batch;
    const auto starts = eval_window_starts(*s.dataset().text, T, B, c.data.n_test);
    std::vector<EvalChunk> out;
    for (std::size_t k = 0; k < starts.size(); k += static_cast<std::size_t>(B)) {
        EvalChunk ch;
        ch.rows = B;
        gather_windows(*s.dataset().text, std::span(starts).subspan(k, static_cast<std::size_t>(B)), T, ch.data.x, ch.data.labels);
        out.push_back(std::move(ch));
    }
    return out;
}

// Every held-out token's log p from a run's own forward pass (Run::forward_text), in double.
std::vector<double> own_logprobs(Run& run, const std::vector<EvalChunk>& split, int vocab) {
    std::vector<double> out;
    for (const EvalChunk& ch : split) {
        std::vector<float> logits(ch.data.labels.size() * static_cast<std::size_t>(vocab));
        run.forward_text(ch.data.x, logits);
        for (std::size_t r = 0; r < ch.data.labels.size(); ++r) {
            const float* row = logits.data() + r * static_cast<std::size_t>(vocab);
            double mx = row[0], sum = 0.0;
            for (int c = 1; c < vocab; ++c) mx = std::max(mx, static_cast<double>(row[c]));
            for (int c = 0; c < vocab; ++c) sum += std::exp(row[c] - mx);
            out.push_back(row[ch.data.labels[r]] - mx - std::log(sum));
        }
    }
    return out;
}

std::vector<MismatchResult> all_results(Session& s) {
    std::vector<MismatchResult> out;
    while (!s.finished()) {
        s.step();
        for (auto& r : s.take_mismatches()) out.push_back(std::move(r));
    }
    return out;
}

bool same(const MismatchResult& a, const MismatchResult& b) {
    return a.step == b.step && a.policy == b.policy && a.tokens == b.tokens && same_bits(a.mean_abs, b.mean_abs) &&
           same_bits(a.max_abs, b.max_abs) && same_bits(a.mean, b.mean) &&
           std::equal(std::begin(a.bins.n), std::end(a.bins.n), std::begin(b.bins.n));
}

}  // namespace

class TestLogprobMismatch : public QObject {
    Q_OBJECT
private slots:
    void token_logprob_is_the_log_softmax_of_the_label() {
        const std::vector<float> logits{1.0f, 2.0f, 3.0f, -1.5f};
        const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-1.5));
        for (int label = 0; label < 4; ++label)
            QVERIFY(std::fabs(token_logprob(logits, label) - (logits[static_cast<std::size_t>(label)] - lse)) < 1e-6);
    }

    void the_reference_against_itself_differs_by_exactly_zero() {
        // Validation refuses a policy equal to the reference; the class itself takes it.
        Session s(mismatch_gpt({"fp32"}, 3, {}));
        s.step();
        SessionConfig c = s.config();
        c.mismatch.policies = {"fp32"};
        LogprobMismatch m(c, init_weights(c.model, c.seed), [] { return make_cpu_backend(); });
        const auto split = held_out(s);
        const auto& res = m.measure(s.run(0), split, 0);
        QCOMPARE(res.size(), std::size_t(1));
        QCOMPARE(res[0].tokens, 32LL * 16);
        QCOMPARE(res[0].bins.n[core::k_slot_zero], 32ULL * 16);
        QCOMPARE(res[0].mean_abs, 0.0);
        QCOMPARE(res[0].max_abs, 0.0);
        // The reference's log p are the run's own: its FP32 forward pass, worked in double after it.
        const auto own = own_logprobs(s.run(0), split, s.config().model.gpt.vocab);
        const auto ref = m.reference_logprobs();
        QCOMPARE(ref.size(), own.size());
        for (std::size_t t = 0; t < own.size(); ++t) QVERIFY2(std::fabs(ref[t] - own[t]) < 2e-6, qPrintable(QString::number(t)));
    }

    void each_delta_is_what_a_run_of_that_policy_computes_on_the_same_weights() {
        // Before any step every run holds the session's initial weights: a run of amp-fp16 and one of
        // amp-bf16 compute their own log p by their own forward pass; the mismatch, reading the fp32
        // run's weights into its own models, must give the same Δ token by token.
        SessionConfig c = mismatch_gpt({"fp32", "amp-fp16", "amp-bf16"}, 3, {"amp-fp16", "amp-bf16"});
        Session s(c);
        LogprobMismatch m(s.config(), init_weights(s.config().model, s.config().seed), [] { return make_cpu_backend(); });
        const auto split = held_out(s);
        const auto& res = m.measure(s.run(0), split, -1);
        const int V = s.config().model.gpt.vocab;
        const auto ref = own_logprobs(s.run(0), split, V);
        double mean_abs[2] = {0.0, 0.0};
        for (std::size_t p = 0; p < 2; ++p) {
            const auto own = own_logprobs(s.run(p + 1), split, V);
            const auto d = m.deltas(p);
            QCOMPARE(d.size(), own.size());
            unsigned long long counted = 0;
            for (unsigned long long n : res[p].bins.n) counted += n;
            QCOMPARE(counted, static_cast<unsigned long long>(d.size()));
            double sum = 0.0, mx = 0.0;
            for (std::size_t t = 0; t < d.size(); ++t) {
                QVERIFY2(std::fabs(d[t] - (own[t] - ref[t])) < 4e-6, qPrintable(QStringLiteral("%1 token %2: %3 vs %4")
                    .arg(QString::fromStdString(res[p].policy)).arg(t).arg(d[t]).arg(own[t] - ref[t])));
                sum += std::fabs(d[t]);
                mx = std::max(mx, std::fabs(static_cast<double>(d[t])));
            }
            QCOMPARE(res[p].mean_abs, sum / static_cast<double>(d.size()));
            QCOMPARE(res[p].max_abs, mx);
            mean_abs[p] = res[p].mean_abs;
        }
        QVERIFY(mean_abs[0] > 0.0);
        QVERIFY2(mean_abs[1] > 2.0 * mean_abs[0], qPrintable(QStringLiteral("fp16 %1 bf16 %2").arg(mean_abs[0]).arg(mean_abs[1])));
    }

    void training_is_bit_identical_with_and_without_it() {
        const std::vector<std::string> runs{"fp32", "amp-fp16", "amp-bf16"};
        Session with(mismatch_gpt(runs, 9, {"amp-fp16", "amp-bf16", "pure-bf16"}, 2));
        Session without(mismatch_gpt(runs, 9, {}));
        const auto a = train(with, 9), b = train(without, 9);
        QVERIFY2(differs(a, b).isEmpty(), qPrintable(differs(a, b)));
        const auto res = with.take_mismatches();
        QCOMPARE(res.size(), std::size_t(3 * 5));  // steps 0, 2, 4, 6, 8
        QCOMPARE(res.back().step, 8LL);
        QCOMPARE(res.back().weights, std::string("fp32"));
        QVERIFY(without.take_mismatches().empty());
    }

    void the_same_on_1_2_and_3_threads() {
        std::vector<MismatchResult> first;
        for (int t : {1, 2, 3}) {
            set_thread_count(t);
            Session s(mismatch_gpt({"fp32", "amp-bf16"}, 6, {"amp-fp16", "amp-bf16"}, 3));
            const auto got = all_results(s);
            QCOMPARE(got.size(), std::size_t(2 * 3));  // steps 0, 3, 5
            if (first.empty()) first = got;
            for (std::size_t k = 0; k < got.size(); ++k) QVERIFY2(same(got[k], first[k]), qPrintable(QString::number(t)));
        }
        set_thread_count(0);
    }

    void reads_the_named_run() {
        SessionConfig c = mismatch_gpt({"fp32", "amp-bf16"}, 2, {"amp-fp16"}, 0);
        c.mismatch.run = "amp-bf16";
        Session s(c);
        const auto got = all_results(s);
        QCOMPARE(got.size(), std::size_t(1));  // every 0: the last step only
        QCOMPARE(got[0].step, 1LL);
        QCOMPARE(got[0].weights, std::string("amp-bf16"));
    }

    void bad_settings_are_refused_naming_the_field_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("field");
        const QString gpt = R"("model": {"kind": "gpt", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 8}, "data": {"kind": "text"}, "runs": ["fp32"], )";
        QTest::newRow("on an MLP") << R"({"mismatch": {"policies": ["amp-bf16"]}})" << "mismatch.policies";
        QTest::newRow("every below 0") << "{" + gpt + R"("mismatch": {"policies": ["amp-bf16"], "every": -1}})" << "mismatch.every";
        QTest::newRow("not a label") << "{" + gpt + R"("mismatch": {"policies": ["amp-bf17"]}})" << "mismatch.policies";
        QTest::newRow("an FP8 recipe") << "{" + gpt + R"("mismatch": {"policies": ["fp8-hybrid"]}})" << "mismatch.policies";
        QTest::newRow("qk-norm") << "{" + gpt + R"("mismatch": {"policies": ["amp-bf16+qk-norm"]}})" << "mismatch.policies";
        QTest::newRow("twice") << "{" + gpt + R"("mismatch": {"policies": ["amp-bf16", "amp-bf16"]}})" << "mismatch.policies";
        QTest::newRow("the reference") << "{" + gpt + R"("mismatch": {"policies": ["fp32"]}})" << "mismatch.policies";
        QTest::newRow("a bad reference") << "{" + gpt + R"("mismatch": {"reference": "fp33", "policies": ["amp-bf16"]}})" << "mismatch.reference";
        QTest::newRow("no such run") << "{" + gpt + R"("mismatch": {"run": "amp-fp16", "policies": ["amp-bf16"]}})" << "mismatch.run";
        QTest::newRow("policies not a list") << "{" + gpt + R"("mismatch": {"policies": "amp-bf16"}})" << "mismatch.policies";
        QTest::newRow("unknown key") << "{" + gpt + R"("mismatch": {"policy": ["amp-bf16"]}})" << "mismatch.policy";
    }
    void bad_settings_are_refused_naming_the_field() {
        QFETCH(QString, json);
        QFETCH(QString, field);
        try {
            validate(session_config_from_json(nlohmann::json::parse(json.toStdString())));
            QFAIL("accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), field);
        }
    }

    void the_section_reads_back_from_its_json() {
        SessionConfig c = mismatch_gpt({"fp32"}, 2, {"amp-fp16", "pure-bf16"}, 7);
        c.mismatch.run = "fp32";
        c.mismatch.reference = "tf32";
        const SessionConfig back = session_config_from_json(to_json(c));
        QVERIFY(back.mismatch == c.mismatch);
    }

    void mismatch_csv_has_one_row_per_non_empty_bin() {
        MismatchResult r;
        r.step = 5;
        r.policy = "amp-bf16";
        r.reference = "fp32";
        r.weights = "fp32";
        r.tokens = 4;
        r.mean_abs = 0.25;
        r.max_abs = 0.5;
        r.mean = -0.125;
        r.bins.n[core::bin_slot(0.5f)] = 1;
        r.bins.n[core::bin_slot(0.25f)] = 2;
        r.bins.n[core::k_slot_zero] = 1;
        QCOMPARE(QString::fromStdString(mismatch_csv({r})),
                 QStringLiteral("step,policy,reference,weights,tokens,mean_abs,max_abs,mean,bin,count\r\n"
                                "5,amp-bf16,fp32,fp32,4,0.25,0.5,-0.125,-2,2\r\n"
                                "5,amp-bf16,fp32,fp32,4,0.25,0.5,-0.125,-1,1\r\n"
                                "5,amp-bf16,fp32,fp32,4,0.25,0.5,-0.125,zero,1\r\n"));
        QCOMPARE(QString::fromStdString(mismatch_path("/tmp/a.csv").string()), QStringLiteral("/tmp/a.mismatch.csv"));
    }

    void claims_read_the_policies_results() {
        SessionConfig c;
        c.lesson = "a b c";
        c.claims.push_back({.says = "a", .metric = ClaimMetric::mismatch_mean_abs, .run = "amp-bf16", .stat = ClaimStat::last,
                            .relative_to = "amp-fp16", .min = 7.9, .max = 8.1});
        c.claims.push_back({.says = "b", .metric = ClaimMetric::mismatch_max_abs, .run = "amp-fp16", .stat = ClaimStat::max,
                            .min = 0.5, .max = 0.5});
        c.claims.push_back({.says = "c", .metric = ClaimMetric::mismatch_mean_abs, .run = "fp32", .stat = ClaimStat::last});
        std::vector<MismatchResult> m;
        for (long long step : {0LL, 9LL})
            for (const char* p : {"amp-fp16", "amp-bf16"}) {
                MismatchResult r;
                r.step = step;
                r.policy = p;
                r.mean_abs = (p[4] == 'b' ? 8.0 : 1.0) * (step ? 0.001 : 0.01);  // the last step's ratio is 8
                r.max_abs = step ? 0.25 : 0.5;
                m.push_back(r);
            }
        // "fp32" is a run of the session but not a policy: the mismatch metrics read the policies only.
        const auto r = check_claims(c, {"fp32"}, {{}}, 9, m);
        QVERIFY2(r[0].holds && std::fabs(*r[0].value - 8.0) < 1e-12, describe(r[0]).c_str());
        QVERIFY2(r[1].holds && *r[1].value == 0.5, describe(r[1]).c_str());
        QVERIFY(!r[2].value);
        QCOMPARE(QString::fromStdString(r[2].note), QStringLiteral("no mismatch policy 'fp32' in this session"));
    }

    // mpx-cli run: one line a policy, and A.mismatch.csv beside A.csv, named in the sidecar.
    void the_cli_prints_and_writes_it() {
        QTemporaryDir dir;
        QProcess p;
        p.setWorkingDirectory(dir.path());
        p.start(QStringLiteral(MPX_CLI_PATH),
                {"run", "--config", "fp16-for-rl", "--quiet", "--steps", "3", "--set", "mismatch.every=2", "--set", "data.n_test=8",
                 "--csv", dir.filePath("a.csv")});
        QVERIFY(p.waitForFinished(120000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
        QVERIFY2(p.exitCode() == 0, qPrintable(out));
        QVERIFY2(out.contains(QRegularExpression(QStringLiteral("log p mismatch, fp32's weights at step 2, amp-bf16 vs fp32 over 256 "
                                                                "tokens: mean \\|Δ\\| [0-9.e-]+, max [0-9.e-]+ nats \\([0-9.]+× amp-fp16's\\)"))),
                 qPrintable(out));
        QFile csv(dir.filePath("a.mismatch.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(csv.readAll()).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(lines.front(), QStringLiteral("step,policy,reference,weights,tokens,mean_abs,max_abs,mean,bin,count"));
        // Steps 0 and 2 (the last), four policies, each one's counts summing to its 256 tokens.
        std::map<QString, long long> counted;
        for (int i = 1; i < lines.size(); ++i) {
            const QStringList f = lines[i].split(',');
            counted[f[0] + " " + f[1]] += f[9].toLongLong();
        }
        QCOMPARE(counted.size(), std::size_t(8));
        for (const auto& [key, n] : counted) QVERIFY2(n == 256, qPrintable(key));
        QFile sidecar(dir.filePath("a.json"));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        QVERIFY(sidecar.readAll().contains("\"mismatch\": \"a.mismatch.csv\""));
    }
};

QTEST_APPLESS_MAIN(TestLogprobMismatch)
#include "test_logprob_mismatch.moc"
