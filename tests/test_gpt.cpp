// The GPT (engine/model/gpt.hpp) as a run trains it: where FP16 scores overflow and where the scale's
// placement prevents it, the same bits on any thread count and across a save and resume, the text's
// windows and held-out loss, and every bad setting refused with the field named. Its backward
// against finite differences is in test_gradients.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/model/gpt.hpp"
#include "gpt_test_support.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

std::vector<std::string> names_of_layers(const ModelConfig& m) {
    std::vector<std::string> n;
    for (int l = 0; l < m.layers(); ++l) n.push_back(layer_name(m, l));
    return n;
}

// One forward pass and loss of a one-block GPT (one head of 16) whose q and k weights are scaled
// by `alpha`, under `label`'s precisions and `where`'s scale: the step record's counts.
struct Probe {
    core::Counts scores;  // the attention layer's output site: the scores as stored
    double loss = 0.0;
};
Probe probe_scores(const std::string& label, AttentionScale where, float alpha, bool qk_norm = false) {
    ModelConfig m;
    m.kind = ModelKind::gpt;
    m.gpt = GptConfig{1, 1, 16, 8, true, 11};
    m.attention.scale = where;
    m.attention.qk_norm = qk_norm;
    InitialWeights init = init_gpt_weights(m, 3);
    RowMatrix& qkv = init.tensors[4];  // transformer.h.0.attn.c_attn.weight (3C, C): q rows, k rows, v rows
    qkv.topRows(32) *= alpha;
    PolicyOptions opt;
    opt.names = names_of_layers(m);
    auto be = make_cpu_backend();
    const auto model = make_model(*be, m, layer_precisions(parse_run_spec(label), m.layers(), opt), 2, init,
                                  OptimizerKind::adam);
    const std::vector<float> tokens{3, 0, 6, 2, 5, 5, 1, 4, 7, 8, 9, 10, 0, 1, 2, 3};
    const std::vector<int> labels{0, 6, 2, 1, 5, 1, 4, 3, 8, 9, 10, 0, 1, 2, 3, 4};
    model->set_input(Eigen::Map<const RowMatrix>(tokens.data(), 2, 8));
    be->begin_step();
    const Tensor& logits = model->forward(0, true);
    be->set_site(gpt_lm_head_layer(m.gpt), TensorKind::grad_output);
    be->softmax_cross_entropy(logits, labels, 1.0f, model->dlogits());
    const StepStats& st = be->read_stats();
    return {st.site[site_index(gpt_layer(GptSite::attn, 0), TensorKind::output)], st.loss_sum};
}

}  // namespace

class TestGpt : public QObject {
    Q_OBJECT

private slots:
    void layers_have_readable_names() {
        ModelConfig m;
        m.kind = ModelKind::gpt;
        m.gpt.n_layer = 3;
        QCOMPARE(m.layers(), 17);
        QCOMPARE(layer_name(m, 0), std::string("embed"));
        QCOMPARE(layer_name(m, gpt_layer(GptSite::qkv, 2)), std::string("block2.attn.qkv"));
        QCOMPARE(layer_name(m, gpt_layer(GptSite::attn, 1)), std::string("block1.attn"));
        QCOMPARE(layer_name(m, gpt_layer(GptSite::mlp_proj, 0)), std::string("block0.mlp.proj"));
        QCOMPARE(layer_name(m, 16), std::string("lm_head"));
        QVERIFY(!is_linear_layer(m, gpt_layer(GptSite::attn, 1)));
        QVERIFY(!is_linear_layer(m, 0));
        QVERIFY(is_linear_layer(m, 16));
        QCOMPARE(gpt_param_names(m.gpt).size(), std::size_t{2 + 12 * 3 + 2});
        const auto qkn = gpt_param_names(m.gpt, true);  // QK-norm's γ after each attn.c_proj
        QCOMPARE(qkn.size(), std::size_t{2 + 14 * 3 + 2});
        QCOMPARE(qkn[2 + 6], std::string("transformer.h.0.attn.q_norm.weight"));
        QCOMPARE(qkn[2 + 7], std::string("transformer.h.0.attn.k_norm.weight"));
        QCOMPARE(gpt_param_layers(m.gpt, true)[2 + 6], gpt_layer(GptSite::attn, 0));
    }

    // Scores of about 1e5 (the q and k weights scaled until the FP32 scores' largest |value| is
    // 1e5): AMP-FP16 with 1/√d applied after q·kᵀ stores them as inf, counted at the scores' site
    // with the value they had, and the loss is NaN; the same weights with the scale before q·kᵀ or
    // split over q and k keep them below 65504 (1e5 / √16 = 25,000).
    void scores_pass_65504_after_but_not_before_or_split() {
        const Probe unit = probe_scores("fp32", AttentionScale::after, 1.0f);
        // The site's largest stored value: the product's output, before 1/√16 (FP32 rounds nothing).
        const float raw_max = core::float_of(static_cast<std::uint32_t>(unit.scores.stored_max));
        QVERIFY(raw_max > 0.0f);
        const auto alpha = static_cast<float>(std::sqrt(1e5 / raw_max));
        const Probe fp32 = probe_scores("fp32", AttentionScale::before, alpha);
        QCOMPARE(fp32.scores.overflow, 0ULL);
        const Probe after = probe_scores("amp-fp16", AttentionScale::after, alpha);
        QVERIFY2(after.scores.overflow > 0, "no score overflowed");
        QVERIFY(after.scores.nonfinite > 0);
        const double largest = core::float_of(static_cast<std::uint32_t>(after.scores.overflow_max));
        QVERIFY2(largest > 65520.0 && std::abs(largest - 1e5) < 2e3, qPrintable(QString::number(largest)));
        QVERIFY(std::isnan(after.loss));
        for (AttentionScale where : {AttentionScale::before, AttentionScale::split}) {
            const Probe p = probe_scores("amp-fp16", where, alpha);
            QCOMPARE(p.scores.overflow, 0ULL);
            QCOMPARE(p.scores.nonfinite, 0ULL);
            QVERIFY(std::isfinite(p.loss));
            const double kept = core::float_of(static_cast<std::uint32_t>(p.scores.stored_max));
            QVERIFY2(kept > 2e4 && kept < 3e4, qPrintable(QString::number(kept)));
        }
    }

    // QK-norm on the same weights (scores of 1e5 without it): each head's q and k normalised to
    // unit variance over their 16 channels (γ = 1) bound every score by 16 in magnitude, so
    // AMP-FP16 with the scale after q·kᵀ stores no inf and the loss is finite; the attention's
    // normalized site counts the norms' outputs (2 × 16 positions × 16 channels).
    void qk_norm_keeps_fp16_scores_finite() {
        const Probe unit = probe_scores("fp32", AttentionScale::after, 1.0f);
        const float raw_max = core::float_of(static_cast<std::uint32_t>(unit.scores.stored_max));
        const auto alpha = static_cast<float>(std::sqrt(1e5 / raw_max));
        QVERIFY(probe_scores("amp-fp16", AttentionScale::after, alpha).scores.overflow > 0);
        const Probe p = probe_scores("amp-fp16", AttentionScale::after, alpha, true);
        QCOMPARE(p.scores.overflow, 0ULL);
        QCOMPARE(p.scores.nonfinite, 0ULL);
        QVERIFY(std::isfinite(p.loss));
        const double kept = core::float_of(static_cast<std::uint32_t>(p.scores.stored_max));
        QVERIFY2(kept > 1.0 && kept <= 16.0, qPrintable(QString::number(kept)));
    }

    // In a training step: the q and k weights of an AMP-FP16 run (a saved state, edited) scaled 600×
    // (scores of about 26,000 standard deviation):
    // the step record names block0.attn's output (the scores) as the first site holding inf/NaN, and
    // the step is skipped; with the scale before q·kᵀ the same weights train on.
    void first_nonfinite_names_the_scores() {
        for (AttentionScale where : {AttentionScale::after, AttentionScale::before}) {
            SessionConfig c = small_gpt({"amp-fp16"}, 1);
            c.model.gpt.n_layer = 1;
            c.model.gpt.n_head = 1;
            c.model.attention.scale = where;
            Session s(c);
            Run& run = s.run(0);
            nlohmann::json state = save_state(run);
            auto& qkv = state.at("params").at(4 * 4);  // transformer.h.0.attn.c_attn.weight, working copy
            for (std::size_t k = 0; k < 2 * 32 * 32; ++k) qkv[k] = qkv[k].get<float>() * 600.0f;
            load_run_state(run, state);
            const auto recs = train(s, 1);
            const StepRecord& r = recs.at(0).at(0);
            if (where == AttentionScale::after) {
                QCOMPARE(int(r.first_nonfinite), site_index(gpt_layer(GptSite::attn, 0), TensorKind::output));
                QCOMPARE(QString::fromStdString(site_name(r.first_nonfinite, c.model)), QStringLiteral("block0.attn.output"));
                // The CSV's first_nonfinite column names it the same way.
                QVERIFY(csv_row(r, run.info()).find(",block0.attn.output,") != std::string::npos);
                QVERIFY(r.skipped);
                QVERIFY(r.overflow_count > 0);
            } else {
                QCOMPARE(int(r.first_nonfinite), -1);
                QVERIFY(!r.skipped);
            }
        }
    }

    // The documented setting: gpt-nanogpt-cpu with model.init_scale = 256 (initial weights 256×
    // nanoGPT's). Its first step's scores pass 65504 under AMP-FP16 with the scale after q·kᵀ — the
    // record's first non-finite site is a block's attn.output, the loss NaN and the step skipped —
    // and the forward pass stays finite with the scale before q·kᵀ or split, on the same weights;
    // FP32 sees no inf. (mpx-cli shows AMP-BF16 sees none either.)
    void init_scale_256_makes_fp16_scores_overflow_after_only() {
        SessionConfig base = load_config("gpt-nanogpt-cpu");
        base.model.gpt.init_scale = 256.0f;
        base.runs = {"fp32", "amp-fp16"};
        base.steps = 1;
        base.eval_every = 0;
        base.sample.every = 0;  // a sample is 160 forward passes of this model: minutes under a sanitizer
        for (AttentionScale where : {AttentionScale::after, AttentionScale::before, AttentionScale::split}) {
            SessionConfig c = base;
            c.model.attention.scale = where;
            Session s(c);
            const auto r = train(s, 1).at(0);
            QCOMPARE(int(r[0].first_nonfinite), -1);
            if (where == AttentionScale::after) {
                const QString site = QString::fromStdString(site_name(r[1].first_nonfinite, c.model));
                QVERIFY2(site.startsWith("block") && site.endsWith(".attn.output"), qPrintable(site));
                QVERIFY(r[1].skipped);
                QVERIFY(r[1].first_nonfinite_magnitude && *r[1].first_nonfinite_magnitude > 65520.0);
                QVERIFY(std::isnan(r[1].loss));
            } else {
                // The forward pass stays finite; the backward pass at the scaler's first scale,
                // 65536, may overflow (the scaler's business: it skips and backs off).
                QVERIFY(std::isfinite(r[1].loss));
                if (r[1].first_nonfinite >= 0)
                    QVERIFY(pass_of(static_cast<TensorKind>(r[1].first_nonfinite % k_tensor_kinds)) != Pass::forward);
            }
        }
    }

    // norm.stats = storage (pytorch#92164): LayerNorm's statistics in a BF16 accumulator. A row of
    // 512 ones (stored in BF16): FP32 statistics give mean 1, variance 0 and outputs of 0 (β); in
    // BF16 the mean's sum stalls at 256 (256 + 1 is a tie, to even), so the mean is 0.5, each
    // deviation 0.5, the sum of their squares (0.25 each) stalls at 64, the variance is 0.125, rstd
    // 1/bf16(√0.125) = 2.828125, and every output is 0.5 · 2.828125 = 1.4140625 instead of 0. A row
    // of 128 ones sums to 128 exactly: mean 1, outputs 0, as in FP32. The three statistics of each
    // row are tallied at the op's site.
    void norm_stats_storage_stalls_bf16_sums_at_256() {
        auto be = make_cpu_backend();
        for (const int D : {512, 128}) {
            Tensor x = be->alloc(Format::bf16, 1, D, MemCategory::workspace);
            be->upload(std::vector<float>(static_cast<std::size_t>(D), 1.0f), x);
            Tensor g = be->alloc(Format::fp32, 1, D, MemCategory::workspace), b = be->alloc(Format::fp32, 1, D, MemCategory::workspace);
            be->fill(g, 1.0f);
            be->fill(b, 0.0f);
            Tensor y = be->alloc(Format::fp32, 1, D, MemCategory::workspace), mean = be->alloc(Format::fp32, 1, 1, MemCategory::workspace),
                   rstd = be->alloc(Format::fp32, 1, 1, MemCategory::workspace);
            std::vector<float> out(static_cast<std::size_t>(D)), mu(1), rs(1);
            for (const Format stats : {Format::fp32, Format::bf16}) {
                const core::Counts c = counted(*be, [&] { be->layernorm_forward_stats_in(stats, x, g, b, y, mean, rstd); });
                be->download(y, out);
                be->download(mean, mu);
                be->download(rstd, rs);
                const bool stalls = stats == Format::bf16 && D == 512;
                QCOMPARE(mu[0], stalls ? 0.5f : 1.0f);
                if (stalls) QCOMPARE(rs[0], 2.828125f);
                for (const float v : out) QCOMPARE(v, stalls ? 1.4140625f : 0.0f);
                // BF16: three statistics tallied, then the D outputs; FP32 tallies the outputs only.
                QCOMPARE(c.nonzero, static_cast<unsigned long long>(stalls ? 3 + D : stats == Format::bf16 ? 2 : 0));
            }
        }
    }

    // In a run: norm.stats = storage changes AMP-BF16's first loss (its LayerNorms now sum in BF16)
    // and leaves FP32 bit for bit as it was (the statistics' format there is FP32).
    void norm_stats_storage_changes_bf16_runs_only() {
        SessionConfig c = small_gpt({"fp32", "amp-bf16", "half-bf16"}, 2);
        Session plain(c);
        const auto a = train(plain, 2);
        c.model.norm_stats = NormStats::storage;
        Session storage(c);
        const auto b = train(storage, 2);
        QVERIFY(differs(a[0][0], b[0][0]).isEmpty() && differs(a[1][0], b[1][0]).isEmpty());
        for (std::size_t r : {1u, 2u}) {
            QVERIFY2(a[0][r].loss != b[0][r].loss, qPrintable(QString::number(a[0][r].loss, 'g', 9)));
            QVERIFY(std::abs(a[0][r].loss - b[0][r].loss) < 0.05);
        }
    }

    // train.z_loss = λ (PaLM): the training loss is the cross-entropy plus λ·mean (log Z)². At the
    // first step (weights of the same seed) the loss grows by λ·(log Z)², log Z ≈ ln 99 for
    // near-zero logits: 1e-3 · 4.595² ≈ 0.0211; the held-out loss stays the cross-entropy alone
    // (an evaluation before any update: the same number with and without). An FP32 run.
    void z_loss_adds_lambda_log_z_squared() {
        SessionConfig c = small_gpt({"fp32"}, 1);
        c.eval_every = 1;
        Session plain(c);
        const auto a = train(plain, 1);
        c.train.z_loss = 1e-3;
        Session z(c);
        const auto b = train(z, 1);
        const double added = b[0][0].loss - a[0][0].loss, want = 1e-3 * std::log(99.0) * std::log(99.0);
        QVERIFY2(std::abs(added - want) < 0.01 * want, qPrintable(QString::number(added, 'g', 9)));
        QVERIFY(a[0][0].eval_loss && b[0][0].eval_loss);
        QVERIFY(std::abs(*a[0][0].eval_loss - *b[0][0].eval_loss) < 1e-3);  // one step apart, no z term
    }

    void same_bits_on_one_two_and_three_threads() {
        std::vector<std::vector<StepRecord>> first;
        for (unsigned t : {1u, 2u, 3u}) {
            set_thread_count(t);
            Session s(small_gpt({"fp32", "amp-fp16", "amp-bf16", "pure-bf16"}, 6));
            auto recs = train(s, 6);
            // The switches too: LayerNorm statistics in the storage format, the z-loss, QK-norm.
            SessionConfig switched = small_gpt({"amp-bf16", "half-fp16"}, 6);
            switched.model.norm_stats = NormStats::storage;
            switched.train.z_loss = 1e-4;
            switched.model.attention.qk_norm = true;
            Session w(switched);
            const auto more = train(w, 6);
            for (std::size_t k = 0; k < recs.size(); ++k) recs[k].insert(recs[k].end(), more[k].begin(), more[k].end());
            if (first.empty()) {
                first = recs;
                continue;
            }
            for (std::size_t k = 0; k < recs.size(); ++k)
                for (std::size_t r = 0; r < recs[k].size(); ++r) {
                    const QString d = differs(first[k][r], recs[k][r], true);
                    QVERIFY2(d.isEmpty(), qPrintable(QStringLiteral("%1 threads: ").arg(t) + d));
                }
        }
        set_thread_count(0);
        QVERIFY(first.back()[0].eval_loss.has_value());
    }

    void save_and_resume_is_bit_identical() {
        Session whole(small_gpt({"fp32", "amp-fp16"}, 8));
        const auto all = train(whole, 8);
        Session first(small_gpt({"fp32", "amp-fp16"}, 8));
        train(first, 4);
        const std::string text = save_state(first).dump();
        auto resumed = load_session_state(nlohmann::json::parse(text));
        const auto rest = train(*resumed, 4);
        QCOMPARE(rest.size(), std::size_t{4});
        for (std::size_t k = 0; k < 4; ++k)
            for (std::size_t r = 0; r < 2; ++r) QVERIFY2(differs(all[4 + k][r], rest[k][r]).isEmpty(), qPrintable(differs(all[4 + k][r], rest[k][r])));
    }

    // Loss starts at ln(99) (uniform over the fortunes' symbols) and every run learns.
    void loss_starts_uniform_and_falls() {
        Session s(small_gpt({"fp32", "amp-bf16"}, 60));
        const auto recs = train(s, 60);
        QVERIFY(std::abs(recs[0][0].loss - std::log(99.0)) < 0.05);
        for (std::size_t r = 0; r < 2; ++r) {
            QVERIFY2(recs.back()[r].loss < 3.4, qPrintable(QString::number(recs.back()[r].loss)));
            QVERIFY(recs.back()[r].eval_loss && *recs.back()[r].eval_loss < 3.5);
        }
    }

    void bad_settings_are_refused_data() {
        QTest::addColumn<QString>("set");
        QTest::addColumn<QString>("field");
        QTest::newRow("n_embd_not_divisible") << "model.n_embd=33" << "model.n_embd";
        QTest::newRow("n_layer_13") << "model.n_layer=13" << "model.n_layer";
        QTest::newRow("block_size_2000") << "model.block_size=2000" << "model.block_size";
        QTest::newRow("dropout_1") << "model.dropout=1" << "model.dropout";
        QTest::newRow("softcap_negative") << "attention.softcap=-1" << "attention.softcap";
        QTest::newRow("scale_unknown") << "attention.scale=\"middle\"" << "attention.scale";
        QTest::newRow("autocast_unknown") << "autocast=\"tpu\"" << "autocast";
        QTest::newRow("norm_stats_unknown") << "norm.stats=\"bf16\"" << "norm.stats";
        QTest::newRow("z_loss_negative") << "train.z_loss=-0.001" << "train.z_loss";
        QTest::newRow("qk_norm_text") << "attention.qk_norm=\"yes\"" << "attention.qk_norm";
        QTest::newRow("points_for_gpt") << "data.kind=\"spirals\"" << "data.kind";
        QTest::newRow("nvfp4_keeps_every_linear_in_bf16") << "runs=[\"nvfp4+bf16-first-5+bf16-last-4\"]" << "runs";
        QTest::newRow("cuda") << "device=\"cuda\"" << "device";
        QTest::newRow("selective_names_fc1") << "runs=[\"selective-fp16\"]" << "selective_layers";
        QTest::newRow("missing_text") << "data.text_file=\"/nonexistent/shakespeare.txt\"" << "data.text_file";
    }
    void bad_settings_are_refused() {
        QFETCH(QString, set);
        QFETCH(QString, field);
        SessionConfig c = small_gpt({"fp32"}, 2);
        try {
            apply_override(c, set.toStdString());
            Session s(c);
            QFAIL("accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), field);
            QVERIFY(!QString::fromUtf8(e.what()).contains('\n'));
        }
    }

    void gpt_settings_on_an_mlp_are_refused() {
        SessionConfig c;
        for (const char* set : {"model.n_layer=2", "attention.softcap=30", "autocast=\"cpu-1.13\"", "data.text_file=\"x\""}) {
            SessionConfig d = c;
            try {
                apply_override(d, set);
                QFAIL(set);
            } catch (const ConfigError&) {
            }
        }
        // norm.stats and train.z_loss name themselves on an MLP (its LayerNorm keeps FP32
        // statistics; its losses have no z-loss).
        for (const char* set : {"norm.stats=storage", "train.z_loss=0.0001"})
            try {
                SessionConfig d = c;
                apply_override(d, set);
                QFAIL(set);
            } catch (const ConfigError& e) {
                QVERIFY(QString::fromLatin1(set).startsWith(QString::fromStdString(e.field()) + '='));
                QVERIFY(!QString::fromUtf8(e.what()).contains('\n'));
            }
        try {
            apply_override(c, "data.kind=\"text\"");
            QFAIL("text on an MLP accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("model.kind"));
        }
    }

    // A text too short for the context: refused naming block_size; a user's file trains.
    void user_text_file() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("poem.txt").toStdString();
        std::string text;
        for (int i = 0; i < 100; ++i) text += "The quick brown fox jumps over the lazy dog; é!\n";
        std::ofstream(path) << text;
        SessionConfig c = small_gpt({"fp32"}, 3);
        c.data.text_file = path;
        Session s(c);
        QCOMPARE(s.dataset().outputs, static_cast<int>(s.dataset().text->vocab.size()));
        const auto recs = train(s, 3);
        QVERIFY(std::abs(recs[0][0].loss - std::log(static_cast<double>(s.dataset().outputs))) < 0.1);
        c.model.gpt.block_size = 1000;
        try {
            Session big(c);
            QFAIL("a context longer than the held-out text accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("model.block_size"));
        }
    }

    // Selective precision names the GPT's layers: only those store FP16 values, the others FP32.
    void selective_names_gpt_layers() {
        SessionConfig c = small_gpt({"fp32", "selective-fp16"}, 1);
        c.selective_layers = {"block1.mlp.fc", "lm_head"};
        Session s(c);
        const auto recs = train(s, 1);
        QVERIFY(std::isfinite(recs[0][1].loss));
        QVERIFY(recs[0][1].loss != recs[0][0].loss);
        const Run& sel = s.run(1);
        QCOMPARE(sel.stored_format(gpt_layer(GptSite::mlp_fc, 1), HistTensor::weight), Format::fp16);
        QCOMPARE(sel.stored_format(gpt_lm_head_layer(c.model.gpt), HistTensor::output), Format::fp16);
        QCOMPARE(sel.stored_format(gpt_layer(GptSite::mlp_fc, 0), HistTensor::weight), Format::fp32);
        QCOMPARE(sel.stored_format(gpt_layer(GptSite::qkv, 1), HistTensor::output), Format::fp32);
    }
};

QTEST_APPLESS_MAIN(TestGpt)
#include "test_gpt.moc"
