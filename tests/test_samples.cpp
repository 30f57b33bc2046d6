// What each precision writes (engine/run/sample.hpp): the draw from a softmax, the prompt's ids,
// samples on their steps with the held-out loss of the same weights, the same uniforms for every run,
// training unchanged by sampling, the same text on 1, 2 and 3 threads and across a save and resume,
// and samples.csv (engine/io/samples_csv.hpp).
#include <QtTest>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/samples_csv.hpp"
#include "gpt_test_support.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

// gpt_test_support's small GPT at lr 3e-3, with samples of 40 characters every `every` steps.
SessionConfig sampling_gpt(std::vector<std::string> runs, long long steps, int every = 3) {
    SessionConfig c = mpx::test::small_gpt(std::move(runs), steps);
    c.train.lr = 3e-3;
    c.sample.every = every;
    c.sample.length = 40;
    c.sample.prompt = "The ";
    return c;
}

std::vector<TextSample> samples_of(Session& s, std::vector<std::vector<StepRecord>>* records = nullptr) {
    std::vector<TextSample> out;
    while (!s.finished()) {
        auto recs = s.step();
        if (records) records->push_back(std::move(recs));
        for (TextSample& t : s.take_samples()) out.push_back(std::move(t));
    }
    return out;
}

std::size_t code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

QString differs(const TextSample& a, const TextSample& b) {
    if (a.run != b.run || a.step != b.step || a.text != b.text || a.nonfinite != b.nonfinite ||
        !same_bits(a.eval_loss, b.eval_loss))
        return QStringLiteral("run %1 step %2: '%3' vs run %4 step %5: '%6'")
            .arg(a.run).arg(a.step).arg(QString::fromStdString(a.text)).arg(b.run).arg(b.step).arg(QString::fromStdString(b.text));
    return {};
}

}  // namespace

class TestSamples : public QObject {
    Q_OBJECT

private slots:
    // p = (1/4, 1/2, 1/4) from logits (0, ln 2, 0): u below 0.25 draws 0, below 0.75 draws 1.
    void draw_follows_the_softmax_data() {
        QTest::addColumn<double>("u");
        QTest::addColumn<int>("id");
        QTest::newRow("0") << 0.0 << 0;
        QTest::newRow("0.2499") << 0.2499 << 0;
        QTest::newRow("0.2501") << 0.2501 << 1;
        QTest::newRow("0.7499") << 0.7499 << 1;
        QTest::newRow("0.7501") << 0.7501 << 2;
        QTest::newRow("just below 1") << 0.9999999999 << 2;
    }
    void draw_follows_the_softmax() {
        QFETCH(double, u);
        QFETCH(int, id);
        const float logits[3] = {0.0f, std::log(2.0f), 0.0f};
        float probs[3];
        QCOMPARE(draw_character(logits, u, probs), id);
        QVERIFY(std::abs(probs[0] - 0.25f) < 1e-7f && std::abs(probs[1] - 0.5f) < 1e-7f);
    }

    void draw_refuses_nonfinite_logits() {
        float probs[3];
        const float with_nan[3] = {0.0f, NAN, 1.0f}, with_inf[3] = {INFINITY, 0.0f, 1.0f};
        QCOMPARE(draw_character(with_nan, 0.5, probs), -1);
        QCOMPARE(draw_character(with_inf, 0.5, probs), -1);
    }

    void prompt_is_spelled_in_the_texts_symbols() {
        TextCorpus t = parse_text(std::string(2000, 'a') + "The cat.\n", "probe", 10);
        const auto ids = prompt_ids(t, "The\n");
        QCOMPARE(ids.size(), std::size_t{4});
        QCOMPARE(t.vocab[ids[0]], std::string("T"));
        QCOMPARE(t.vocab[ids[3]], std::string("\n"));
        try {
            prompt_ids(t, "Thé");
            QFAIL("a symbol the text lacks was taken");
        } catch (const ConfigError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains("sample.prompt") && QString::fromUtf8(e.what()).contains("é"), e.what());
        }
    }

    // Steps 0, 3, 6 and the last (7), every run; the prompt then 40 characters; the held-out loss
    // is that step's evaluation (step 0, 5's … are evaluation steps; 3 and 6 are not: their loss is
    // the one a session evaluating every step records for the same weights).
    void samples_come_on_their_steps_with_their_held_out_loss() {
        Session s(sampling_gpt({"fp32", "amp-bf16"}, 8));
        std::vector<std::vector<StepRecord>> recs;
        const auto samples = samples_of(s, &recs);
        QCOMPARE(samples.size(), std::size_t{8});
        SessionConfig every = sampling_gpt({"fp32", "amp-bf16"}, 8, 0);
        every.eval_every = 1;
        Session e(every);
        const auto evaluated = train(e, 8);
        const long long steps[] = {0, 3, 6, 7};
        for (std::size_t k = 0; k < samples.size(); ++k) {
            const TextSample& t = samples[k];
            QCOMPARE(t.step, steps[k / 2]);
            QCOMPARE(t.run, static_cast<int>(k % 2));
            QVERIFY2(t.text.rfind("The ", 0) == 0, t.text.c_str());
            QCOMPARE(code_points(t.text), std::size_t{44});
            QVERIFY(!t.nonfinite);
            QVERIFY(t.eval_loss.has_value());
            const auto& rec = evaluated[static_cast<std::size_t>(t.step)][static_cast<std::size_t>(t.run)];
            QVERIFY2(same_bits(t.eval_loss, rec.eval_loss), qPrintable(QString::number(*t.eval_loss, 'g', 17)));
            if (t.step == 0) QVERIFY(same_bits(t.eval_loss, recs[0][static_cast<std::size_t>(t.run)].eval_loss));
        }
    }

    // Every run draws with the same uniforms: after one step both runs' probabilities are nearly
    // uniform and alike, so their texts agree for a long stretch (with their own uniforms two runs
    // would part at the first character 98 times in 99); two steps' keys differ, and so do their texts.
    void every_run_draws_with_the_same_uniforms() {
        Session s(sampling_gpt({"fp32", "amp-bf16"}, 4));
        const auto samples = samples_of(s);
        const std::string& a = samples[0].text;
        const std::string& b = samples[1].text;
        std::size_t common = 0;
        while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
        QVERIFY2(common >= 24, qPrintable(QStringLiteral("'%1' vs '%2'").arg(QString::fromStdString(a), QString::fromStdString(b))));
        QVERIFY(sample_key(1, 0) != sample_key(1, 3) && sample_key(1, 0) != sample_key(2, 0));
    }

    void sampling_leaves_training_bit_identical() {
        const std::vector<std::string> runs{"fp32", "amp-fp16", "amp-bf16"};
        Session with(sampling_gpt(runs, 8, 1)), without(sampling_gpt(runs, 8, 0));
        std::vector<std::vector<StepRecord>> a, b;
        QCOMPARE(samples_of(with, &a).size(), std::size_t{24});
        QCOMPARE(samples_of(without, &b).size(), std::size_t{0});
        for (std::size_t k = 0; k < a.size(); ++k)
            for (std::size_t r = 0; r < runs.size(); ++r) QVERIFY2(differs(a[k][r], b[k][r]).isEmpty(), qPrintable(differs(a[k][r], b[k][r])));
    }

    // Session::set_interrupt: while the flag is up a sample stops at its next character and is
    // dropped, training goes on bit for bit; lowered, the next step's samples are whole again.
    void an_interrupted_sample_is_dropped_and_training_goes_on() {
        const std::vector<std::string> runs{"fp32", "amp-bf16"};
        Session cut(sampling_gpt(runs, 6, 1)), whole(sampling_gpt(runs, 6, 1));
        std::atomic<bool> interrupt{true};
        cut.set_interrupt(&interrupt);
        std::vector<std::vector<StepRecord>> a, b;
        for (int k = 0; k < 3; ++k) a.push_back(cut.step());
        QCOMPARE(cut.take_samples().size(), std::size_t{0});
        interrupt = false;
        for (int k = 0; k < 3; ++k) a.push_back(cut.step());
        const std::vector<TextSample> after = cut.take_samples();
        const std::vector<TextSample> all = samples_of(whole, &b);
        QCOMPARE(after.size(), std::size_t{6});  // steps 3, 4, 5
        for (std::size_t k = 0; k < after.size(); ++k) QVERIFY2(differs(after[k], all[6 + k]).isEmpty(), qPrintable(differs(after[k], all[6 + k])));
        for (std::size_t k = 0; k < a.size(); ++k)
            for (std::size_t r = 0; r < runs.size(); ++r) QVERIFY2(differs(a[k][r], b[k][r]).isEmpty(), qPrintable(differs(a[k][r], b[k][r])));
    }

    void samples_are_the_same_on_1_2_and_3_threads() {
        const std::vector<std::string> runs{"fp32", "amp-fp16", "amp-bf16"};
        std::vector<TextSample> first;
        for (unsigned t : {1u, 2u, 3u}) {
            set_thread_count(t);
            Session s(sampling_gpt(runs, 7));
            const auto got = samples_of(s);
            if (t == 1) first = got;
            QCOMPARE(got.size(), first.size());
            for (std::size_t k = 0; k < got.size(); ++k)
                QVERIFY2(differs(got[k], first[k]).isEmpty(), qPrintable(QStringLiteral("%1 threads: ").arg(t) + differs(got[k], first[k])));
        }
        set_thread_count(0);
    }

    void samples_are_the_same_across_a_resume() {
        const std::vector<std::string> runs{"fp32", "amp-fp16"};
        Session whole(sampling_gpt(runs, 8));
        const auto all = samples_of(whole);
        Session first(sampling_gpt(runs, 8));
        train(first, 4);
        auto resumed = load_session_state(nlohmann::json::parse(save_state(first).dump()));
        const auto rest = samples_of(*resumed);
        // Steps 6 and 7 after the resume at step 4.
        QCOMPARE(rest.size(), std::size_t{4});
        for (std::size_t k = 0; k < rest.size(); ++k) QVERIFY2(differs(rest[k], all[all.size() - 4 + k]).isEmpty(), qPrintable(differs(rest[k], all[all.size() - 4 + k])));
    }

    void sample_now_writes_from_the_weights_of_the_last_step() {
        Session s(sampling_gpt({"fp32"}, 8, 0));
        s.sample_now();  // before the first step: step -1
        train(s, 3);
        s.sample_now();
        const auto now = s.take_samples();
        QCOMPARE(now.size(), std::size_t{2});
        QCOMPARE(now[0].step, -1LL);
        QCOMPARE(now[1].step, 2LL);
        // As the scheduled sample of step 2 in a session sampling every 2 steps.
        Session scheduled(sampling_gpt({"fp32"}, 8, 2));
        train(scheduled, 3);
        const auto at2 = scheduled.take_samples();
        QCOMPARE(at2.back().step, 2LL);
        QVERIFY2(differs(now[1], at2.back()).isEmpty(), qPrintable(differs(now[1], at2.back())));
        Session mlp(small_config({"fp32"}, 2));
        QVERIFY_THROWS_EXCEPTION(ConfigError, mlp.sample_now());
    }

    // A sample's forward pass runs over its one sequence, not the training batch (sample.hpp): its
    // logits are those of the same sequence in row 0 of a whole batch, bit for bit, in FP32, BF16
    // and FP16 — and a batch's pass after it reads every row again.
    void one_sequence_reads_as_its_row_of_a_batch() {
        Session s(sampling_gpt({"fp32", "amp-bf16", "amp-fp16"}, 8, 0));
        train(s, 2);
        const int T = 16, B = 4, V = static_cast<int>(s.dataset().text->vocab.size());
        RowMatrix one(1, T), batch(B, T);
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t) batch(b, t) = static_cast<float>((7 * b + 3 * t + 1) % V);
        one.row(0) = batch.row(0);
        for (int r = 0; r < 3; ++r) {
            std::vector<float> alone(static_cast<std::size_t>(T * V)), all(static_cast<std::size_t>(B * T * V)),
                again(all.size());
            s.run(r).forward_text(batch, all);
            s.run(r).forward_text(one, alone);
            s.run(r).forward_text(batch, again);
            for (int i = 0; i < T * V; ++i) QVERIFY2(same_bits(alone[i], all[i]), qPrintable(QStringLiteral("run %1, logit %2").arg(r).arg(i)));
            for (std::size_t i = 0; i < all.size(); ++i) QVERIFY(same_bits(again[i], all[i]));
            // The rows past the first differ from the first's: the batch is not one sequence repeated.
            QVERIFY(!same_bits(all[static_cast<std::size_t>(T * V)], all[0]) || !same_bits(all[static_cast<std::size_t>(T * V + 1)], all[1]));
        }
    }

    // RFC 4180: the text quoted, its quotes doubled, its line break inside the quotes; the sidecar
    // names the file.
    void samples_csv_quotes_the_text() {
        std::vector<RunInfo> runs(2);
        runs[0].label = "fp32";
        runs[1].label = "amp-fp16+pytorch";
        std::vector<TextSample> samples{{0, 10, 2.5, "The \"cat\",\nsat", false}, {1, 10, std::nullopt, "The", true}};
        QCOMPARE(QString::fromStdString(samples_csv(samples, runs)),
                 QStringLiteral("run,step,eval_loss,nonfinite,text\r\nfp32,10,2.5,0,\"The \"\"cat\"\",\nsat\"\r\n"
                                "amp-fp16+pytorch,10,,1,The\r\n"));
        QCOMPARE(samples_path("out/a.csv"), std::filesystem::path("out/a.samples.csv"));
        const auto dir = std::filesystem::temp_directory_path() / ("mpx-samples-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        nlohmann::json sidecar;
        write_samples_csv(dir / "a.samples.csv", samples, runs, sidecar);
        QCOMPARE(sidecar["samples"].get<std::string>(), std::string("a.samples.csv"));
        std::ifstream in(dir / "a.samples.csv", std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        QCOMPARE(text.str(), samples_csv(samples, runs));
        QCOMPARE(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1L);
        std::filesystem::remove_all(dir);
    }
};

QTEST_APPLESS_MAIN(TestSamples)
#include "test_samples.moc"
