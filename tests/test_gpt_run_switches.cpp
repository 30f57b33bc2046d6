// The GPT's switches on a run's label ("amp-fp16+attn-before", "+qk-norm", ...): a run that carries
// one trains bit for bit as the same run in a session whose section sets it for every run, beside
// runs without it; +qk-norm starts from the session's weights with QK-norm's γ = 1 inserted;
// model.qk_init_scale multiplies the q and k rows of c_attn only; bad labels are refused in one line.
#include <QtTest>

#include "engine/base/error.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/io/torch_export.hpp"
#include "engine/model/gpt.hpp"
#include "gpt_test_support.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

constexpr long long k_steps = 6;

// Run `label`'s records (run index `run`) of a session of `runs` with `set` applied.
std::vector<std::vector<StepRecord>> records_of(const std::vector<std::string>& runs, const std::string& set) {
    SessionConfig c = small_gpt(runs, k_steps);
    c.train.lr = 3e-3;
    c.model.gpt.n_embd = 48;  // heads of 24: 1/√24 is no power of two, so where it is applied shows
    if (!set.empty()) apply_override(c, set);
    Session s(c);
    return train(s, k_steps);
}

std::vector<std::vector<StepRecord>> only(const std::vector<std::vector<StepRecord>>& recs, std::size_t run) {
    std::vector<std::vector<StepRecord>> out;
    for (const auto& step : recs) {
        StepRecord r = step[run];
        r.run = 0;
        out.push_back({r});
    }
    return out;
}

}  // namespace

class TestGptRunSwitches : public QObject {
    Q_OBJECT

private slots:
    void a_labels_switch_equals_the_sessions_data() {
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<QString>("set");
        QTest::newRow("attn-before") << "attn-before" << "attention.scale=\"before\"";
        QTest::newRow("attn-split") << "attn-split" << "attention.scale=\"split\"";
        QTest::newRow("softmax-storage") << "softmax-storage" << "attention.softmax=\"storage\"";
        QTest::newRow("norm-storage") << "norm-storage" << "norm.stats=\"storage\"";
        QTest::newRow("autocast-cpu-1.13") << "autocast-cpu-1.13" << "autocast=\"cpu-1.13\"";
    }
    void a_labels_switch_equals_the_sessions() {
        QFETCH(QString, suffix);
        QFETCH(QString, set);
        // amp-fp16 so the scores and softmax are stored in FP16 and each switch changes bits.
        const std::string low = "amp-fp16";
        const auto beside = records_of({low, low + "+" + suffix.toStdString(), "amp-bf16"}, "");
        const auto alone = records_of({low}, set.toStdString());
        const auto plain = records_of({low}, "");
        // The switched run is the session-wide switch's run; the run beside it is the plain one.
        QCOMPARE(differs(only(beside, 1), only(alone, 0)), QString());
        QCOMPARE(differs(only(beside, 0), only(plain, 0)), QString());
        // And the switch changes something (or the comparison above proves nothing).
        QVERIFY2(!differs(only(alone, 0), only(plain, 0)).isEmpty(), qPrintable(suffix));
    }

    void labels_are_canonical_and_refused_in_one_line() {
        const SessionConfig c = small_gpt({"fp32"}, 1);
        QCOMPARE(resolve_run("amp-fp16+qk-norm+attn-split", c).label, std::string("amp-fp16+attn-split+qk-norm+pytorch"));
        QCOMPARE(resolve_run("amp-fp16+attn-before", c).model.attention.scale, AttentionScale::before);
        QVERIFY(resolve_run("amp-fp16+qk-norm", c).model.attention.qk_norm);
        QVERIFY(!resolve_run("amp-fp16", c).model.attention.qk_norm);
        const std::pair<const char*, const char*> bad[] = {
            {"amp-fp16+attn-before+attn-split", "two places for 1/√d"},
            {"amp-fp16+qk-norm+qk-norm", "+qk-norm twice"},
        };
        for (const auto& [label, says] : bad) {
            try {
                resolve_run(label, c);
                QFAIL(label);
            } catch (const ConfigError& e) {
                QCOMPARE(e.field(), std::string("runs"));
                QVERIFY2(std::string(e.what()).find(says) != std::string::npos, e.what());
                QVERIFY(std::string(e.what()).find('\n') == std::string::npos);
            }
        }
        SessionConfig mlp;
        try {
            resolve_run("amp-fp16+attn-before", mlp);
            QFAIL("an MLP took a GPT switch");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("model.kind = gpt") != std::string::npos, e.what());
        }
        // export-torch carries the session's switches only: a run's own is refused, named.
        const std::string why = torch_export_refusal(c, "amp-bf16+attn-before");
        QVERIFY2(why.find("+attn-before") != std::string::npos, why.c_str());
        QVERIFY(torch_export_refusal(c, "amp-bf16").empty());
    }

    void qk_norm_run_starts_from_the_sessions_weights() {
        ModelConfig m;
        m.kind = ModelKind::gpt;
        m.gpt = GptConfig{2, 2, 32, 16, true, 20};
        const InitialWeights without = init_gpt_weights(m, 7);
        const InitialWeights with = gpt_weights_with_qk_norm(m.gpt, without);
        const auto names = gpt_param_names(m.gpt, true);
        QCOMPARE(with.tensors.size(), names.size());
        QCOMPARE(with.tensors.size(), without.tensors.size() + 4);  // q and k γ in each of 2 blocks
        std::size_t k = 0;
        for (std::size_t i = 0; i < names.size(); ++i) {
            const RowMatrix& t = with.tensors[i];
            if (names[i].ends_with("q_norm.weight") || names[i].ends_with("k_norm.weight")) {
                QCOMPARE(t.cols(), 16);
                QVERIFY((t.array() == 1.0f).all());
            } else {
                QVERIFY2(t == without.tensors[k++], names[i].c_str());
            }
        }
        // In a session: +qk-norm trains (its first loss is finite and differs from the plain run's).
        const auto recs = records_of({"amp-fp16", "amp-fp16+qk-norm"}, "");
        QVERIFY(std::isfinite(recs[0][1].loss));
        QVERIFY(recs[0][1].loss != recs[0][0].loss);
    }

    void qk_init_scale_multiplies_q_and_k_rows_only() {
        ModelConfig m;
        m.kind = ModelKind::gpt;
        m.gpt = GptConfig{2, 2, 32, 16, true, 20};
        const InitialWeights plain = init_gpt_weights(m, 5);
        m.gpt.qk_init_scale = 1.0f;
        const InitialWeights one = init_gpt_weights(m, 5);
        m.gpt.qk_init_scale = 300.0f;
        const InitialWeights big = init_gpt_weights(m, 5);
        const auto names = gpt_param_names(m.gpt);
        for (std::size_t i = 0; i < names.size(); ++i) {
            QVERIFY(one.tensors[i] == plain.tensors[i]);
            const RowMatrix& a = plain.tensors[i];
            const RowMatrix& b = big.tensors[i];
            if (!names[i].ends_with("attn.c_attn.weight")) {
                QVERIFY2(a == b, names[i].c_str());
                continue;
            }
            QCOMPARE(a.rows(), 96);  // q, k, v: 32 rows each
            for (Eigen::Index r = 0; r < a.rows(); ++r)
                for (Eigen::Index c = 0; c < a.cols(); ++c) {
                    const float want = r < 64 ? static_cast<float>(static_cast<double>(a(r, c)) * 300.0) : a(r, c);
                    QCOMPARE(b(r, c), want);
                }
        }
        SessionConfig c = small_gpt({"fp32"}, 1);
        for (const char* v : {"model.qk_init_scale=0", "model.qk_init_scale=-2", "model.qk_init_scale=1e7"}) {
            SessionConfig bad = c;
            try {
                apply_override(bad, v);
                Session s(bad);
                QFAIL(v);
            } catch (const ConfigError& e) {
                QCOMPARE(e.field(), std::string("model.qk_init_scale"));
            }
        }
    }
};

QTEST_MAIN(TestGptRunSwitches)
#include "test_gpt_run_switches.moc"
