// The Where view's verdict on a GPT whose attention scores pass FP16's largest value (gpt-classroom
// with its initial weights 600× nanoGPT's, docs/gpt.md): the app, trained through its engine thread,
// says that no loss scale avoids it and names the scores' site and the cure, and its counts are those
// of the engine's own step records, from a session trained here independently of the window. The
// AMP-BF16 run beside it, and AMP-FP16 with 1/√d applied before q·kᵀ, get no verdict.
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <memory>

#include "engine/compute/site_names.hpp"
#include "engine/run/session.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::MainWindow;
using mpx::ui::WhereView;

namespace {

constexpr long long k_steps = 12;

mpx::SessionConfig storm(mpx::AttentionScale scale) {
    auto cfg = mpx::gui::loadConfig(QStringLiteral("gpt-classroom")).config;
    if (!cfg) qFatal("gpt-classroom does not load");
    cfg->model.gpt.init_scale = 600.0f;
    cfg->model.attention.scale = scale;
    cfg->runs = {"amp-fp16", "amp-bf16"};
    cfg->steps = k_steps;
    return *cfg;
}

// Trains `cfg` in the window to its last step (the session finishes there) and shows the Where view.
void train(MainWindow& w, const mpx::SessionConfig& cfg) {
    QSignalSpy started(w.store(), &RecordStore::sessionStarted);
    w.applyConfig(cfg, QStringLiteral("test"));
    QVERIFY(started.wait(10'000));
    w.setView(MainWindow::View::where);
    w.run(static_cast<int>(k_steps));
    QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), k_steps, 60'000);
    QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::finished, 10'000);  // its last step
    w.store()->drainNow();
}

}  // namespace

class TestWhereVerdict : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
    }

    void scores_past_65504_no_loss_scale_avoids() {
        const mpx::SessionConfig cfg = storm(mpx::AttentionScale::after);
        // The engine's records, trained here: each skipped step's first inf/NaN site.
        mpx::Session engine(cfg);
        long long forward = 0, first_step = -1;
        int first_site = -1;
        for (long long s = 0; s < k_steps; ++s) {
            const mpx::StepRecord r = engine.step()[0];
            if (!r.skipped || r.first_nonfinite < 0) continue;
            const auto kind = static_cast<mpx::TensorKind>(r.first_nonfinite % mpx::k_tensor_kinds);
            if (mpx::pass_of(kind) != mpx::Pass::forward) continue;
            ++forward;
            if (first_site < 0) first_site = r.first_nonfinite, first_step = r.step;
        }
        QVERIFY2(forward > 0, "the setting no longer overflows the scores in the forward pass");
        const QString label = QString::fromStdString(mpx::site_label(first_site, cfg.model));
        QCOMPARE(label, QStringLiteral("block 0 · attention scores"));

        auto w = std::make_unique<MainWindow>();
        w->resize(1280, 800);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        train(*w, cfg);
        WhereView* where = w->whereView();
        where->setRun(0);
        const QString v = where->verdict();
        QVERIFY2(v.startsWith(QStringLiteral("Forward overflow at %1 from step %2 (%3 of %4 steps")
                                  .arg(label).arg(first_step).arg(forward).arg(k_steps)),
                 qPrintable(v));
        QVERIFY(v.contains(QStringLiteral("no loss scale avoids it")));
        QVERIFY(v.contains(QStringLiteral("attention.scale = before or split")));
        QVERIFY(v.contains(QStringLiteral("attention.qk_norm")));
        QVERIFY(where->skips().size() == static_cast<std::size_t>(w->store()->skippedSteps(0)));
        // The view says it under the map.
        where->grab();
        // AMP-BF16 stores the same scores (its range reaches 3.4e38): no skip, no verdict.
        where->setRun(1);
        QVERIFY(where->skips().empty());
        QVERIFY(where->verdict().isEmpty());
    }

    void scale_before_the_product_gets_no_verdict() {
        const mpx::SessionConfig cfg = storm(mpx::AttentionScale::before);
        auto w = std::make_unique<MainWindow>();
        w->resize(1280, 800);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        train(*w, cfg);
        WhereView* where = w->whereView();
        where->setRun(0);
        for (const WhereView::Skip& s : where->skips()) {  // the scaler's own overflows, in the backward pass
            const auto kind = static_cast<mpx::TensorKind>(s.site % mpx::k_tensor_kinds);
            QVERIFY(mpx::pass_of(kind) != mpx::Pass::forward);
        }
        QVERIFY2(where->verdict().isEmpty(), qPrintable(where->verdict()));
    }
};

QTEST_MAIN(TestWhereVerdict)
#include "test_where_verdict.moc"
