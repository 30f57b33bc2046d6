// The Setup tab on the offscreen platform, for the model kinds: a GPT preset shows the GPT's fields
// (not the MLP's) and comes back from the panel unchanged; switching to the MLP and back gives
// configurations the engine accepts; a shape the engine refuses shows the engine's own line.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/panels/setup_panel.hpp"

using mpx::ui::SetupPanel;

namespace {
QComboBox* modelKind(SetupPanel& p) {
    for (QComboBox* c : p.findChildren<QComboBox*>())
        if (c->findData(QStringLiteral("gpt")) >= 0) return c;
    return nullptr;
}
// The spin box whose form row is labelled `label`.
QSpinBox* spinLabelled(SetupPanel& p, const QString& label) {
    for (QLabel* l : p.findChildren<QLabel*>())
        if (l->text() == label)
            if (auto* s = qobject_cast<QSpinBox*>(l->buddy())) return s;
    return nullptr;
}
}  // namespace

class TestSetupPanel : public QObject {
    Q_OBJECT

private slots:
    void a_gpt_preset_shows_its_fields_and_round_trips() {
        mpx::SessionConfig c = mpx::load_config("gpt-classroom");
        mpx::apply_overrides(c, {"attention.scale=split", "attention.softcap=30", "autocast=cpu-1.13", "data.n_test=48",
                                 "attention.qk_norm=true", "norm.stats=storage", "train.z_loss=0.0001"});
        SetupPanel p;
        p.setConfig(c);
        p.show();
        QComboBox* kind = modelKind(p);
        QVERIFY(kind);
        QCOMPARE(kind->currentData().toString(), QStringLiteral("gpt"));
        auto* pages = p.findChild<QStackedWidget*>();
        QVERIFY(pages);
        QCOMPARE(pages->currentIndex(), 1);  // the GPT's page, not the MLP's layer sizes
        QSpinBox* blocks = spinLabelled(p, QStringLiteral("Blocks"));
        QVERIFY(blocks);
        QCOMPARE(blocks->value(), c.model.gpt.n_layer);
        QVERIFY(blocks->isVisible());
        mpx::SessionConfig back = c;
        back.model = mpx::ModelConfig{};  // the panel must write every GPT field itself
        back.train.z_loss = 0.0;
        back.data.kind = mpx::DatasetKind::spirals;
        back.data.n_test = 7;
        p.applyTo(back);
        QCOMPARE(back.model.kind, mpx::ModelKind::gpt);
        QVERIFY(back.model.gpt == c.model.gpt);
        QVERIFY(back.model.attention == c.model.attention);
        QCOMPARE(back.model.autocast, mpx::AutocastPolicy::cpu_1_13);
        QCOMPARE(back.model.norm_stats, mpx::NormStats::storage);
        QVERIFY(back.model.attention.qk_norm);
        QCOMPARE(back.data.kind, mpx::DatasetKind::text);
        QCOMPARE(back.data.n_test, 48);
        QCOMPARE(back.train.z_loss, 0.0001);
        mpx::validate(back);
    }

    void switching_kinds_gives_configurations_the_engine_accepts() {
        mpx::SessionConfig c = mpx::load_config("default");
        mpx::apply_overrides(c, {"model.layernorm=true", "model.dropout=0.1"});
        SetupPanel p;
        p.setConfig(c);
        QComboBox* kind = modelKind(p);
        QVERIFY(kind);
        kind->setCurrentIndex(kind->findData(QStringLiteral("gpt")));
        mpx::SessionConfig g = c;
        p.applyTo(g);
        QCOMPARE(g.model.kind, mpx::ModelKind::gpt);
        QCOMPARE(g.data.kind, mpx::DatasetKind::text);
        QVERIFY(!g.model.layernorm);  // the MLP's settings the GPT refuses are not carried over
        QCOMPARE(g.model.dropout, 0.1f);  // dropout is the GPT's too (nanoGPT's four places)
        mpx::validate(g);
        // The GPT's page has its own dropout box, and it reaches the configuration.
        QDoubleSpinBox* gptDropout = nullptr;
        for (QDoubleSpinBox* b : p.findChildren<QDoubleSpinBox*>())
            if (b->toolTip().contains(QStringLiteral("nanoGPT's dropout at four places"))) gptDropout = b;
        QVERIFY(gptDropout);
        QCOMPARE(gptDropout->value(), 0.1);
        gptDropout->setValue(0.2);
        p.applyTo(g);
        QCOMPARE(g.model.dropout, 0.2f);
        mpx::validate(g);
        kind->setCurrentIndex(kind->findData(QStringLiteral("mlp")));
        mpx::SessionConfig m = g;
        p.applyTo(m);
        QCOMPARE(m.model.kind, mpx::ModelKind::mlp);
        QCOMPARE(m.data.kind, c.data.kind);
        QVERIFY(m.model.layernorm);
        mpx::validate(m);
    }

    void a_shape_the_engine_refuses_shows_its_line() {
        SetupPanel p;
        p.setConfig(mpx::load_config("gpt-classroom"));
        p.show();
        QSpinBox* width = spinLabelled(p, QStringLiteral("Width"));
        QVERIFY(width);
        width->setValue(50);  // 4 heads
        bool shown = false;
        for (QLabel* l : p.findChildren<QLabel*>())
            if (l->isVisible() && l->text().contains(QStringLiteral("50 is not divisible by model.n_head = 4"))) shown = true;
        QVERIFY(shown);
    }
};

QTEST_MAIN(TestSetupPanel)
#include "test_setup_panel.moc"
