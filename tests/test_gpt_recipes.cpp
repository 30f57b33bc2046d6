// FP8/FP4 recipes and dropout on the GPT (docs/gpt.md, "FP8 and FP4", "Dropout"): the recipes reach
// the Linear layers only (bf16-first/last counted over them), each step's scale rows hold every
// Linear layer's GEMM inputs' true amax, FP8 and FP4 runs learn, and with dropout on every bit is the
// same on 1, 2 and 3 threads and across a save and resume; dropout's backward against central
// differences with the mask fixed, and no dropout when evaluating.
#include <QtTest>

#include <cmath>
#include <set>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/core/rng.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/model/gpt.hpp"
#include "engine/run/run.hpp"
#include "gpt_test_support.hpp"
#include "session_test_support.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

std::vector<float> get(Backend& be, const Tensor& t) {
    std::vector<float> v(t.size());
    be.download(t, v);
    return v;
}
float amax_of(const std::vector<float>& v) {
    float a = 0.0f;
    for (const float x : v) a = std::max(a, std::abs(x));
    return a;
}

// A two-block GPT (2 heads, width 16, context 8, 11 symbols; or test_gradients' width 8, context 4,
// 7 symbols) of `label`'s precisions as a run resolves and sets them, batch 2, on fixed tokens.
struct Tiny {
    SessionConfig cfg;
    std::unique_ptr<Backend> be = make_cpu_backend();
    std::unique_ptr<Model> model;
    std::vector<int> labels{0, 6, 2, 1, 5, 1, 4, 3, 8, 9, 10, 0, 1, 2, 3, 4};
    Tiny(const std::string& label, float dropout = 0.0f, float init_factor = 1.0f, bool narrow = false) {
        cfg.model.kind = ModelKind::gpt;
        cfg.model.gpt = narrow ? GptConfig{2, 2, 8, 4, true, 7} : GptConfig{2, 2, 16, 8, true, 11};
        cfg.model.dropout = dropout;
        cfg.data.kind = DatasetKind::text;
        cfg.runs = {label};
        InitialWeights init = init_weights(cfg.model, 3);
        const auto names = gpt_param_names(cfg.model.gpt);
        for (std::size_t i = 0; i < names.size(); ++i)  // the random ones (LayerNorm's γ stays 1)
            if (!is_gpt_norm_param(names[i])) init.tensors[i] *= init_factor;
        const RunInfo info = resolve_run(label, cfg);
        model = make_model(*be, cfg.model, run_precisions(info, cfg, init), 2, init, OptimizerKind::adam);
        for (int l = 0; l < cfg.model.layers(); ++l) {  // the recipe, as a run sets it
            Fp8Gemm& g = model->fp8_gemms()[static_cast<std::size_t>(l)];
            g.recipe = fp8_recipe_of(info.spec, cfg.fp8);
            if (!is_fp4(info.spec.mode) || !model->precisions()[static_cast<std::size_t>(l)].fp8) continue;
            g.fp4.emplace();
            g.fp4->kind = fp4_kind(info.spec.mode);
            g.fp4->recipe = info.fp4;
            g.fp4->layer = l;
        }
        std::vector<float> tokens{3, 0, 6, 2, 5, 5, 1, 4, 7, 8, 9, 10, 0, 1, 2, 3};
        if (narrow) {
            tokens = {3, 0, 6, 2, 5, 5, 1, 4};
            labels = {0, 6, 2, 1, 5, 1, 4, 3};
        }
        model->set_input(Eigen::Map<const RowMatrix>(tokens.data(), 2, cfg.model.gpt.block_size));
    }
    const Gpt& gpt() const { return static_cast<const Gpt&>(*model); }
    // One forward pass and its mean cross-entropy (the step's loss), counted; backward when asked.
    double step(std::uint64_t seed, bool train, std::optional<std::uint64_t> backward_seed = std::nullopt) {
        be->begin_step();
        const Tensor& logits = model->forward(seed, train);
        be->set_site(gpt_lm_head_layer(cfg.model.gpt), TensorKind::grad_output);
        be->softmax_cross_entropy(logits, labels, 1.0f, model->dlogits());
        if (backward_seed) model->backward(model->dlogits(), *backward_seed, Accumulate::overwrite);
        return be->read_stats().loss_sum;
    }
};

std::vector<std::string> fp8_layer_names(const Model& m, const ModelConfig& cfg) {
    std::vector<std::string> n;
    for (int l = 0; l < cfg.layers(); ++l)
        if (m.precisions()[static_cast<std::size_t>(l)].fp8) n.push_back(layer_name(cfg, l));
    return n;
}

}  // namespace

class TestGptRecipes : public QObject {
    Q_OBJECT

private slots:
    // FP8 and FP4 scale the Linear layers' GEMM operands; the embedding and attention keep the
    // recipe's BF16 base (attention's two batched products in BF16, as Transformer Engine's).
    // bf16-first-1 and bf16-last-2 count Linear layers: block0.attn.qkv first, the LM head last.
    void recipes_reach_the_linear_layers_only() {
        const Tiny fp8("fp8-hybrid");
        const ModelConfig& m = fp8.cfg.model;
        QCOMPARE(fp8_layer_names(*fp8.model, m),
                 (std::vector<std::string>{"block0.attn.qkv", "block0.attn.proj", "block0.mlp.fc", "block0.mlp.proj",
                                           "block1.attn.qkv", "block1.attn.proj", "block1.mlp.fc", "block1.mlp.proj",
                                           "lm_head"}));
        for (const int l : {0, gpt_layer(GptSite::attn, 0), gpt_layer(GptSite::attn, 1)}) {
            const LayerPrecision& p = fp8.model->precisions()[static_cast<std::size_t>(l)];
            QCOMPARE(p.compute, Format::bf16);
            QCOMPARE(p.activation, Format::bf16);
        }
        QCOMPARE(fp8.model->precisions()[1].grad_compute, Format::e5m2);
        const Tiny fp4("nvfp4+bf16-first-1+bf16-last-2");
        QCOMPARE(fp8_layer_names(*fp4.model, m),
                 (std::vector<std::string>{"block0.attn.proj", "block0.mlp.fc", "block0.mlp.proj", "block1.attn.qkv",
                                           "block1.attn.proj", "block1.mlp.fc"}));
        const LayerPrecision& head = fp4.model->precisions().back();
        QCOMPARE(head.compute, Format::bf16);
        QVERIFY(!head.fp8);
        QCOMPARE(fp4.model->precisions()[1].compute, Format::bf16);  // block0.attn.qkv, first
        QCOMPARE(fp4.model->precisions()[3].compute, Format::e2m1);  // block0.attn.proj
    }

    // Each Linear layer's x and w casts record the true amax of the GEMM's input and weight, read
    // here from the tensors themselves; the LM head's dy that of the logits' gradient. Nothing is
    // recorded at the embedding or attention.
    void scale_rows_hold_each_gemm_inputs_amax_data() {
        QTest::addColumn<QString>("label");
        for (const char* l : {"fp8-e4m3+current", "mxfp8", "nvfp4", "mxfp4"}) QTest::newRow(l) << QString::fromLatin1(l);
    }
    void scale_rows_hold_each_gemm_inputs_amax() {
        QFETCH(QString, label);
        Tiny t(label.toStdString(), 0.0f, 10.0f);
        const ModelConfig& m = t.cfg.model;
        t.step(7, true, 7);
        const StepStats& st = t.be->read_stats();
        int linear = 0;
        for (int l = 0; l < m.layers(); ++l) {
            const core::Fp8Record& x = st.fp8[fp8_index(l, Fp8Tensor::x)];
            const core::Fp8Record& w = st.fp8[fp8_index(l, Fp8Tensor::w)];
            if (!is_linear_layer(m, l)) {
                QCOMPARE(x.count + w.count, 0ull);
                continue;
            }
            ++linear;
            const std::vector<float> in = get(*t.be, t.gpt().linear_input(l));
            const Param* weight = nullptr;  // the Linear's weight: the tied LM head reads wte
            for (const Param& p : t.model->params())
                if (p.layer == (l == gpt_lm_head_layer(m.gpt) ? 0 : l) && p.working.rows() > 1 && !weight) weight = &p;
            const std::vector<float> wv = get(*t.be, weight->working);
            QVERIFY2(x.amax == amax_of(in), qPrintable(QString::fromStdString(layer_name(m, l)) +
                                                      QStringLiteral(": x amax %1 vs %2").arg(x.amax).arg(amax_of(in))));
            QCOMPARE(x.count, static_cast<unsigned long long>(in.size()));
            QCOMPARE(w.amax, amax_of(wv));
            QCOMPARE(w.count, static_cast<unsigned long long>(wv.size()));
        }
        QCOMPARE(linear, 9);
        const core::Fp8Record& dy = st.fp8[fp8_index(gpt_lm_head_layer(m.gpt), Fp8Tensor::dy)];
        QCOMPARE(dy.amax, amax_of(get(*t.be, t.model->dlogits())));
        // current scaling: 448 / amax, E4M3's largest over the tensor's
        if (label == "fp8-e4m3+current") {
            const core::Fp8Record& x = st.fp8[fp8_index(1, Fp8Tensor::x)];
            QCOMPARE(x.scale, 448.0f / x.amax);
        }
    }

    // Every recipe learns the fortunes: held-out loss falls from ln 99 ≈ 4.6 by more than a nat in
    // 60 steps, and each step's log has one amax and scale row per Linear layer and tensor.
    void fp8_and_fp4_runs_train() {
        Session s(small_gpt({"amp-bf16", "fp8-hybrid", "fp8-e4m3+current", "mxfp8", "nvfp4", "mxfp4"}, 60));
        const auto recs = train(s, 60);
        std::set<std::pair<int, Fp8Tensor>> want;
        for (int l = 0; l < s.config().model.layers(); ++l)
            if (is_linear_layer(s.config().model, l))
                for (int k = 0; k < k_fp8_tensors; ++k) want.insert({l, static_cast<Fp8Tensor>(k)});
        for (std::size_t r = 0; r < recs.back().size(); ++r) {
            const double first = *recs.front()[r].eval_loss, last = *recs.back()[r].eval_loss;
            qInfo("%s: held-out %.4f -> %.4f", s.run(r).info().label.c_str(), first, last);
            QVERIFY2(last < first - 1.0, qPrintable(QStringLiteral("%1 -> %2").arg(first).arg(last)));
            if (r == 0) continue;
            std::set<std::pair<int, Fp8Tensor>> got;
            for (const Fp8ScaleRow& row : s.run(r).fp8_scales())
                if (row.step == 59) got.insert({row.layer, row.tensor});
            QVERIFY(got == want);
            QVERIFY(recs.back()[r].fp8_saturated_frac.has_value());
        }
    }

    // Dropout's backward against central differences of the same forward pass, mask fixed by the
    // seed (nanoGPT's four placements, p = 0.3): FP32, test_gradients' tiny GPT with weights 5×
    // nanoGPT's, every parameter element; its tolerance, |g − fd| ≤ 3e-4 + 1e-3·|fd|. The step is
    // h = 2^-10, not its 2^-7: rows that dropout thins and rescales give LayerNorm more curvature,
    // and h²/6·|f'''| at 2^-7 reached 2e-3 (measured worst here: 1.1e-4). The backward with another
    // step's mask fails it (1,730 elements beyond).
    void dropout_backward_matches_central_differences() {
        for (const std::uint64_t backward_seed : {11ull, 12ull}) {
            Tiny t("fp32", 0.3f, 5.0f, true);
            t.step(11, true, backward_seed);
            Backend& be = *t.be;
            double worst = 0.0;
            int beyond = 0;
            for (Param& p : t.model->params()) {
                const std::vector<float> g = get(be, p.grad);
                std::vector<float> w = get(be, p.working);
                for (std::size_t e = 0; e < w.size(); ++e) {
                    const float v = w[e];
                    const double h = 0x1p-10;
                    const float hi = static_cast<float>(v + h), lo = static_cast<float>(v - h);
                    w[e] = hi;
                    be.upload(w, p.working);
                    const double lp = t.step(11, true);
                    w[e] = lo;
                    be.upload(w, p.working);
                    const double lm = t.step(11, true);
                    w[e] = v;
                    be.upload(w, p.working);
                    const double fd = (lp - lm) / (static_cast<double>(hi) - static_cast<double>(lo));
                    const double err = std::abs(g[e] - fd);
                    worst = std::max(worst, err);
                    if (err > 3e-4 + 1e-3 * std::abs(fd)) ++beyond;
                }
            }
            qInfo("backward with seed %llu: worst |analytic - fd| %.3g, %d beyond", static_cast<unsigned long long>(backward_seed),
                  worst, beyond);
            if (backward_seed == 11) QCOMPARE(beyond, 0);
            else QVERIFY(beyond > 100);
        }
    }

    // Evaluation drops nothing: a model with dropout gives the same logits as one without when not
    // training, whatever the seed; training with it changes the loss, and the seed changes the mask.
    void dropout_only_while_training() {
        Tiny with("amp-bf16", 0.2f), without("amp-bf16", 0.0f);
        const double plain = without.step(0, false);
        QCOMPARE(with.step(5, false), plain);
        QCOMPARE(with.step(6, false), plain);
        QCOMPARE(without.step(5, true), plain);
        const double a = with.step(5, true), b = with.step(6, true);
        QVERIFY(a != plain && b != plain && a != b);
        QCOMPARE(with.step(5, true), a);
    }

    // Dropout and the recipes on 1, 2 and 3 threads: the same records and scale rows bit for bit.
    void same_bits_on_one_two_and_three_threads() {
        std::vector<std::vector<StepRecord>> first;
        std::vector<float> first_amax;
        for (unsigned threads : {1u, 2u, 3u}) {
            set_thread_count(threads);
            SessionConfig c = small_gpt({"amp-bf16", "fp8-hybrid", "mxfp8", "nvfp4", "mxfp4"}, 6);
            c.model.dropout = 0.1f;
            Session s(c);
            const auto recs = train(s, 6);
            std::vector<float> amax;
            for (std::size_t r = 1; r < s.run_count(); ++r)
                for (const Fp8ScaleRow& row : s.run(r).fp8_scales()) {
                    amax.push_back(row.amax);
                    amax.push_back(row.scale);
                }
            if (first.empty()) {
                first = recs;
                first_amax = amax;
                continue;
            }
            QVERIFY2(differs(first, recs).isEmpty(), qPrintable(QStringLiteral("%1 threads: ").arg(threads) + differs(first, recs)));
            QVERIFY(std::memcmp(amax.data(), first_amax.data(), amax.size() * sizeof(float)) == 0 && amax.size() == first_amax.size());
        }
        set_thread_count(0);
    }

    // Saved after 4 steps and resumed, a GPT with dropout under delayed FP8 scaling (history 4) and
    // NVFP4 continues bit for bit: masks come from the step's seed, the histories travel with the state.
    // The --fp8-scales CSV names a GPT's layers as its model does (block0.attn.qkv ... lm_head), one
    // name per Linear layer, never the MLP's fc1..fcN.
    void fp8_scales_csv_names_the_gpts_layers() {
        SessionConfig c = small_gpt({"fp8-hybrid"}, 2);
        Session s(c);
        while (!s.finished()) s.step();
        const QTemporaryDir dir;
        const std::filesystem::path path = (dir.path() + QStringLiteral("/scales.csv")).toStdString();
        write_fp8_scales_csv(path, {s.run(0).info()}, {&s.run(0).fp8_scales()});
        QFile f(QString::fromStdString(path.string()));
        QVERIFY(f.open(QIODevice::ReadOnly));
        std::set<std::string> layers;
        for (const QByteArray& line : f.readAll().split('\n').mid(1))
            if (!line.trimmed().isEmpty()) layers.insert(line.split(',')[2].toStdString());
        std::set<std::string> want;
        for (int l = 0; l < s.config().model.layers(); ++l)
            if (is_linear_layer(s.config().model, l)) want.insert(layer_name(s.config().model, l));
        QCOMPARE(layers, want);
        QVERIFY(want.count("block0.attn.qkv") && want.count("lm_head") && want.size() == 9);
    }

    void save_and_resume_is_bit_identical() {
        SessionConfig c = small_gpt({"fp8-hybrid+delayed", "nvfp4", "amp-bf16"}, 8);
        c.model.dropout = 0.1f;
        c.fp8.amax_history_len = 4;
        Session whole(c);
        const auto all = train(whole, 8);
        Session first(c);
        train(first, 4);
        auto resumed = load_session_state(nlohmann::json::parse(save_state(first).dump()));
        const auto rest = train(*resumed, 4);
        QCOMPARE(rest.size(), std::size_t{4});
        for (std::size_t k = 0; k < 4; ++k)
            for (std::size_t r = 0; r < 3; ++r)
                QVERIFY2(differs(all[4 + k][r], rest[k][r]).isEmpty(), qPrintable(differs(all[4 + k][r], rest[k][r])));
    }
};

QTEST_APPLESS_MAIN(TestGptRecipes)
#include "test_gpt_recipes.moc"
