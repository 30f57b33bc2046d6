// The sites' names: identifiers for files and settings ("block2.attn.output"), and labels as a
// student reads them in the app ("block 2 · attention scores"). Rule: every (layer, kind) of a GPT
// has its own label, the ones the views lead with say what the site holds, and the MLP's are its
// identifiers.
#include <QtTest>

#include <set>

#include "engine/compute/site_names.hpp"

using namespace mpx;

class TestSiteNames : public QObject {
    Q_OBJECT

    static ModelConfig gpt(int blocks) {
        ModelConfig m;
        m.kind = ModelKind::gpt;
        m.gpt.n_layer = blocks;
        return m;
    }

private slots:
    void gpt_sites_say_what_they_hold() {
        const ModelConfig m = gpt(3);
        QCOMPARE(site_label(site_index(gpt_layer(GptSite::attn, 2), TensorKind::output), m), std::string("block 2 · attention scores"));
        QCOMPARE(site_label(site_index(gpt_layer(GptSite::attn, 2), TensorKind::activation), m), std::string("block 2 · softmax"));
        QCOMPARE(site_label(site_index(gpt_layer(GptSite::mlp_proj, 2), TensorKind::activation), m),
                 std::string("residual after block 2"));
        QCOMPARE(site_label(site_index(gpt_lm_head_layer(m.gpt), TensorKind::output), m), std::string("LM head logits"));
        QCOMPARE(site_label(site_index(gpt_layer(GptSite::qkv, 1), TensorKind::normalized), m), std::string("block 1 · LayerNorm 1"));
        QCOMPARE(layer_label(m, gpt_layer(GptSite::attn, 0)), std::string("block 0 · attention"));
        QCOMPARE(layer_label(m, 0), std::string("embeddings"));
        QCOMPARE(layer_label(m, gpt_lm_head_layer(m.gpt)), std::string("LM head"));
    }

    void every_gpt_site_has_its_own_label() {
        const ModelConfig m = gpt(3);
        std::set<std::string> labels, layers;
        for (int l = 0; l < m.layers(); ++l) {
            QVERIFY(layers.insert(layer_label(m, l)).second);
            for (int k = 0; k < k_tensor_kinds; ++k) {
                const std::string t = site_label(site_index(l, static_cast<TensorKind>(k)), m);
                QVERIFY2(labels.insert(t).second, t.c_str());
                QVERIFY2(t.find("fc") == std::string::npos && t.find('_') == std::string::npos, t.c_str());
            }
        }
        QCOMPARE(static_cast<int>(labels.size()), m.layers() * k_tensor_kinds);
    }

    void the_app_names_the_first_inf_with_its_identifier() {
        const ModelConfig m = gpt(2);
        const int scores = site_index(gpt_layer(GptSite::attn, 1), TensorKind::output);
        QCOMPARE(first_nonfinite_label(scores, 83456.0, m),
                 std::string("block 1 · attention scores (block1.attn.output), where 83456 overflowed"));
        QCOMPARE(first_nonfinite_label(-1, std::nullopt, m), std::string());
        // The MLP's labels are its identifiers.
        const ModelConfig mlp;
        const int s = site_index(1, TensorKind::grad_input);
        QCOMPARE(site_label(s, mlp), std::string("fc2.grad_input"));
        QCOMPARE(first_nonfinite_label(s, std::nullopt, mlp), first_nonfinite_text(s, std::nullopt, mlp));
    }
};

QTEST_GUILESS_MAIN(TestSiteNames)
#include "test_site_names.moc"
