// The live panel's controls are made from the engine's field lists: every preset shows and reads
// back unchanged, an edit goes out as one validated scaler, an invalid value is held back, and the
// live training fields change while the others keep the base's values.
#include <QComboBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include "ui/live_panel.hpp"
#include "ui/number_edit.hpp"

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
