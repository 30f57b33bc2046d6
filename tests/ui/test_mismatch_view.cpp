// The Mismatch view on the fp16-for-rl lesson's session (fewer steps), offscreen at 1280×800: its
// bars are the counts an independent Session of the same configuration measures for the same step
// (not the store's own copy), taller where more tokens fall, each policy in its precision's colour;
// the hover names the bin and every policy's count; File ▸ Export CSV writes A.mismatch.csv beside
// the CSV; the picture exports; an MLP session explains
// why there is nothing to show.
#include <QApplication>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "engine/io/mismatch_csv.hpp"
#include "engine/run/session.hpp"
#include "ui/session/run_colours.hpp"
#include "ui/views/mismatch_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::MainWindow;
using mpx::ui::MismatchView;

class TestMismatchView : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;
    QTemporaryDir dir;

    // The lesson as shipped, 40 steps, measured after steps 0, 20 and 39.
    static mpx::SessionConfig lesson() {
        mpx::SessionConfig c = mpx::load_config("fp16-for-rl");
        c.steps = 40;
        c.mismatch.every = 20;
        return c;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(dir.isValid());
    }
    void init() {
        w = std::make_unique<MainWindow>();
        w->resize(1280, 800);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    }
    void cleanup() { w.reset(); }

    void bars_are_the_engines_counts_for_the_step() {
        const mpx::SessionConfig c = lesson();
        w->setView(MainWindow::View::mismatch);
        auto* v = w->findChild<MismatchView*>();
        QVERIFY(v && v->isVisible());
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("fp16-for-rl"));
        QVERIFY(started.wait(10'000));
        QVERIFY(!v->message().isEmpty());  // nothing measured before the first step
        w->run();
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::finished, 120'000);
        w->store()->drainNow();
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->mismatches().size(), std::size_t{3 * 4}, 10'000);

        // The engine's own measurement of the same weights, from a session of its own.
        mpx::Session s(c);
        std::vector<mpx::MismatchResult> want;
        while (!s.finished()) {
            s.step();
            for (auto& m : s.take_mismatches()) want.push_back(m);
        }
        QCOMPARE(want.size(), std::size_t{12});
        QCOMPARE(v->message(), QString());
        QCOMPARE(v->shownStep(), 39LL);
        const auto shown = v->shown();
        QCOMPARE(shown.size(), std::size_t{4});
        long long bars = 0, coloured = 0;
        const QImage img = v->grab().toImage();
        for (int i = 0; i < 4; ++i) {
            const mpx::MismatchResult& e = want[8 + static_cast<std::size_t>(i)];
            QCOMPARE(shown[static_cast<std::size_t>(i)]->policy, e.policy);
            unsigned long long total = 0;
            for (int slot = 0; slot < mpx::core::k_slots; ++slot) {
                QCOMPARE(v->barCount(i, slot), e.bins.n[slot]);
                total += v->barCount(i, slot);
                const QRect b = v->barRect(i, slot);
                QCOMPARE(b.isEmpty(), e.bins.n[slot] == 0);
                if (!b.isEmpty()) {
                    ++bars;
                    QVERIFY(v->rect().contains(b));
                    if (b.height() < 4) continue;  // a sliver under the axis line
                    ++coloured;
                    // The bar is drawn in the policy's precision colour.
                    const QColor want_colour = mpx::gui::precisionColour(mpx::resolve_run(e.policy, c).spec);
                    QCOMPARE(img.pixelColor(b.center()).rgb(), want_colour.rgb());
                }
            }
            QCOMPARE(total, static_cast<unsigned long long>(e.tokens));
        }
        QVERIFY(bars >= 8);
        QVERIFY(coloured >= 8);
        // Heights follow the counts: amp-bf16's fullest bin is taller than amp-fp16's bar in that bin.
        const auto& bf16 = want[9].bins.n;
        const int fullest = int(std::max_element(bf16, bf16 + mpx::core::k_log2_bins) - bf16);
        QVERIFY(v->barRect(1, fullest).height() > v->barRect(0, fullest).height());
        // BF16's bars sit about three bins (2³) to the right of FP16's: compare the fullest bins.
        const auto& fp16 = want[8].bins.n;
        const int fp16_fullest = int(std::max_element(fp16, fp16 + mpx::core::k_log2_bins) - fp16);
        QVERIFY2(fullest - fp16_fullest >= 2 && fullest - fp16_fullest <= 4, qPrintable(QString::number(fullest - fp16_fullest)));
        // The hover: the bin and every policy's count there.
        const QString tip = v->tooltipAt(v->barRect(1, fullest).center());
        QVERIFY2(tip.contains(QStringLiteral("amp-bf16: %1 of 2,048 tokens").arg(bf16[fullest])), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("≤ |Δ| <")), qPrintable(tip));
        // File ▸ Export CSV writes the measurements beside the CSV, as mpx-cli run --csv does: the
        // engine's own results' text, named by the sidecar.
        QSignalSpy exported(w->engine(), &mpx::gui::EngineController::exported);
        w->engine()->exportCsv(dir.filePath(QStringLiteral("rl.csv")));
        QVERIFY(exported.wait(10'000));
        QFile written(dir.filePath(QStringLiteral("rl.mismatch.csv")));
        QVERIFY(written.open(QIODevice::ReadOnly));
        QCOMPARE(written.readAll().toStdString(), mpx::mismatch_csv(want));
        QFile sidecar(dir.filePath(QStringLiteral("rl.json")));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        QVERIFY(sidecar.readAll().contains("\"mismatch\": \"rl.mismatch.csv\""));
        // The picture exports.
        const QString png = dir.filePath(QStringLiteral("mismatch.png"));
        QVERIFY(w->exportViewPng(png));
        QVERIFY(QImage(png).width() > 400);
    }

    void an_mlp_session_says_why_nothing_is_shown() {
        w->setView(MainWindow::View::mismatch);
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(mpx::load_config("default"), QStringLiteral("default"));
        QVERIFY(started.wait(10'000));
        auto* v = w->findChild<MismatchView*>();
        QVERIFY(v->message().contains(QStringLiteral("model.kind = gpt")));
        QCOMPARE(v->shownStep(), -1LL);
        w->engine()->pause();
    }
};

QTEST_MAIN(TestMismatchView)
#include "test_mismatch_view.moc"
