// The live panel's controls are made from the engine's field lists: every preset shows and reads
// back unchanged, an edit goes out as one validated scaler, an invalid value is held back, and the
// live training fields change while the others keep the base's values. "Applies to" offers the
// session scaler, every preset two runs share and each run, and shows the chosen one's settings.
#include <QComboBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include "ui/kit/number_edit.hpp"
#include "ui/panels/live_panel.hpp"

using mpx::ui::LivePanel;

class TestLivePanel : public QObject {
    Q_OBJECT

private slots:
    void every_preset_reads_back_unchanged() {
        LivePanel p;
        for (const QString& name : mpx::gui::scalerPresetNames()) {
            const mpx::ScalerConfig s = mpx::gui::scalerPreset(name);
            p.setScaler(s);
            QVERIFY2(p.scaler() == s, qPrintable(name));
        }
    }

    void an_edited_field_goes_out_as_a_valid_scaler() {
        LivePanel p;
        p.setScaler(mpx::gui::scalerPreset(QStringLiteral("deepspeed")));
        QSignalSpy spy(&p, &LivePanel::scalerEdited);
        QSpinBox* interval = nullptr;
        for (auto* box : p.findChildren<QSpinBox*>())
            if (box->toolTip() == mpx::gui::scalerFieldHelp(QStringLiteral("growth_interval"))) interval = box;
        QVERIFY(interval);
        interval->setValue(50);
        QCOMPARE(spy.count(), 1);
        const auto sent = spy.at(0).at(0).value<mpx::ScalerConfig>();
        QCOMPARE(sent.growth_interval, 50);
        QCOMPARE(sent.hysteresis, 2);  // the rest of the preset stays
        QComboBox* growthCount = nullptr;
        for (auto* box : p.findChildren<QComboBox*>())
            if (box->findText(QStringLiteral("stable_interval")) >= 0) growthCount = box;
        QVERIFY(growthCount);
        QCOMPARE(growthCount->currentText(), QStringLiteral("stable_interval"));  // DeepSpeed >= 0.17.1
    }

    void the_choices_are_the_session_scaler_each_shared_preset_and_each_run() {
        using mpx::gui::RunDescription;
        const std::vector<RunDescription> runs = {
            {QStringLiteral("amp-fp16+pytorch"), mpx::parse_run_spec("amp-fp16+pytorch"), true, true, {}},
            {QStringLiteral("amp-fp16+deepspeed"), mpx::parse_run_spec("amp-fp16+deepspeed"), false, true, QStringLiteral("deepspeed")},
            {QStringLiteral("half-fp16+deepspeed"), mpx::parse_run_spec("half-fp16+deepspeed"), false, true, QStringLiteral("deepspeed")},
            {QStringLiteral("amp-bf16"), mpx::parse_run_spec("amp-bf16"), false, false, {}}};
        auto scalers = std::make_shared<mpx::gui::LiveScalers>();
        scalers->session = mpx::gui::scalerPreset(QStringLiteral("pytorch"));
        scalers->session.growth_interval = 100;
        mpx::ScalerConfig edited = mpx::gui::scalerPreset(QStringLiteral("deepspeed"));
        edited.hysteresis = 3;
        scalers->runs = {scalers->session, mpx::gui::scalerPreset(QStringLiteral("deepspeed")), edited,
                         mpx::gui::scalerPreset(QStringLiteral("none"))};
        LivePanel p;
        p.setRuns(runs, scalers);
        QCOMPARE(p.targetNames(), (QStringList{"Session scaler (1 run)", "Every +deepspeed run (2)", "amp-fp16+pytorch",
                                               "amp-fp16+deepspeed", "half-fp16+deepspeed", "amp-bf16 (no scaler)"}));
        QVERIFY(p.target().session);  // the default while a run follows the session scaler
        QCOMPARE(p.scaler().growth_interval, 100);
        QVERIFY(p.chooseTarget(4));
        QCOMPARE(p.target(), (mpx::ui::ScalerTarget{false, {QStringLiteral("half-fp16+deepspeed")}}));
        QCOMPARE(p.scaler().hysteresis, 3);  // that run's own settings, as last reported
        QVERIFY(p.chooseTarget(1));
        QCOMPARE(p.target().runs, (QStringList{"amp-fp16+deepspeed", "half-fp16+deepspeed"}));
        QCOMPARE(p.scaler().hysteresis, 2);  // a preset's runs show the first one's
        QSignalSpy spy(&p, &LivePanel::scalerEdited);
        QSpinBox* interval = nullptr;
        for (auto* box : p.findChildren<QSpinBox*>())
            if (box->toolTip() == mpx::gui::scalerFieldHelp(QStringLiteral("growth_interval"))) interval = box;
        QVERIFY(interval);
        interval->setValue(50);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).value<mpx::ScalerConfig>().growth_interval, 50);
        QCOMPARE(spy.at(0).at(0).value<mpx::ScalerConfig>().hysteresis, 2);
        // The engine reports new settings: the form follows them, without a signal.
        auto after = std::make_shared<mpx::gui::LiveScalers>(*scalers);
        after->runs[1].hysteresis = 5;
        p.setScalers(after);
        QCOMPARE(p.scaler().hysteresis, 5);
        QCOMPARE(spy.count(), 1);
        // The same runs again (a reset): the choice stays.
        p.setRuns(runs, after);
        QCOMPARE(p.target().runs, (QStringList{"amp-fp16+deepspeed", "half-fp16+deepspeed"}));
    }

    void with_no_run_following_the_session_scaler_the_first_run_with_a_scaler_is_chosen() {
        using mpx::gui::RunDescription;
        const std::vector<RunDescription> runs = {
            {QStringLiteral("fp32"), mpx::parse_run_spec("fp32"), false, false, {}},
            {QStringLiteral("amp-fp16+megatron"), mpx::parse_run_spec("amp-fp16+megatron"), false, true, QStringLiteral("megatron")}};
        auto scalers = std::make_shared<mpx::gui::LiveScalers>();
        scalers->session = mpx::gui::scalerPreset(QStringLiteral("pytorch"));
        scalers->runs = {mpx::gui::scalerPreset(QStringLiteral("none")), mpx::gui::scalerPreset(QStringLiteral("megatron"))};
        LivePanel p;
        p.setRuns(runs, scalers);
        QCOMPARE(p.targetNames(), (QStringList{"Session scaler (no run follows it)", "fp32 (no scaler)", "amp-fp16+megatron"}));
        QCOMPARE(p.target().runs, QStringList{"amp-fp16+megatron"});
        QVERIFY(p.scaler() == mpx::gui::scalerPreset(QStringLiteral("megatron")));
    }

    void live_training_fields_change_and_the_others_stay() {
        LivePanel p;
        mpx::TrainConfig base;
        base.batch = 32;
        p.setTrain(base);
        mpx::TrainConfig other = base;
        other.lr = 0.5;
        p.setTrain(other);
        other.batch = 7;  // not the panel's: train() keeps the base's value
        const mpx::TrainConfig t = p.train(other);
        QCOMPARE(t.lr, 0.5);
        QCOMPARE(t.batch, 7);
    }
};

QTEST_MAIN(TestLivePanel)
#include "test_live_panel.moc"
