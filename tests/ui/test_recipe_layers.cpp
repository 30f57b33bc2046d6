// The layers the FP8 and FP4 tabs list (ui/views/recipe_layers): before a recipe's first step, the
// model's Linear layers only; their names as a student reads them, the identifier beside the GPT's.
#include <QtTest>

#include "engine/config/model_config.hpp"
#include "ui/views/recipe_layers.hpp"

using namespace mpx;

class TestRecipeLayers : public QObject {
    Q_OBJECT

private slots:
    void gpt_lists_its_linear_layers_by_name() {
        ModelConfig m;
        m.kind = ModelKind::gpt;
        m.gpt = GptConfig{2, 2, 16, 8, true, 11};
        // 12 site layers: embed 0, block b's qkv 1+5b, attn 2+5b (none), proj, fc, mlp.proj, lm_head 11.
        QCOMPARE(gui::recipeLayers(m), (std::vector<int>{1, 3, 4, 5, 6, 8, 9, 10, 11}));
        QCOMPARE(gui::recipeLayerText(m, 1), QStringLiteral("block 0 · q, k, v (block0.attn.qkv)"));
        QCOMPARE(gui::recipeLayerText(m, 10), QStringLiteral("block 1 · MLP down (block1.mlp.proj)"));
        QCOMPARE(gui::recipeLayerText(m, 11), QStringLiteral("LM head (lm_head)"));
    }
    void mlp_keeps_fc_names() {
        ModelConfig m;
        m.sizes = {2, 8, 8, 2};
        QCOMPARE(gui::recipeLayers(m), (std::vector<int>{0, 1, 2}));
        QCOMPARE(gui::recipeLayerText(m, 1), QStringLiteral("fc2"));
    }
};

QTEST_APPLESS_MAIN(TestRecipeLayers)
#include "test_recipe_layers.moc"
