// The FP4 view on the offscreen platform, on a real session (amp-bf16, nvfp4, nvfp4+1d, mxfp4 on
// the digits MLP) trained by the window's worker: its bars are the engine's E2M1 code counts and
// block tops of the step shown (the code bars sum to the values the engine cast), its time charts
// the engine's clamped and flushed shares and NVFP4's S_enc, the weights' forward/backward readout
// is 0 with 16x16 tiles and more than 0 with +1d on a histogram-collecting step (fc2: fc1 has no
// backward copy), the Range view
// places E2M1's window where the amax's block puts it, and a session without FP4 runs says which
// runs to add while the FP8 tab keeps showing only FP8 runs.
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <memory>

#include "engine/run/run.hpp"
#include "engine/run/session.hpp"
#include "ui/kit/column_chart.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/session/fp8_history.hpp"
#include "ui/views/fp4_view.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/range_bands.hpp"
#include "ui/window/main_window.hpp"

using mpx::Fp8ScaleRow;
using mpx::Fp8Tensor;
using mpx::gui::EngineState;
using mpx::gui::RecordBuffer;
using mpx::gui::RecordStore;
using mpx::ui::Fp4View;
using mpx::ui::MainWindow;

namespace {

// A store fed through its buffer as the worker feeds it, for a session of the given runs.
struct Fed {
    RecordBuffer buffer;
    RecordStore store{&buffer};
    explicit Fed(const QStringList& labels) {
        auto info = std::make_shared<mpx::gui::SessionInfo>();
        info->generation = 1;
        info->config = mpx::load_config("default");
        for (const QString& l : labels) info->runs.push_back({l, mpx::parse_run_spec(l.toStdString())});
        info->totalSteps = 100;
        buffer.beginSession(info);
        store.drainNow();
    }
};

// The digits MLP of the fp8 preset, narrower and shorter: four runs, histograms every 5 steps.
mpx::SessionConfig fp4Config() {
    mpx::SessionConfig c = mpx::load_config("fp8");
    c.runs = {"amp-bf16", "nvfp4", "nvfp4+1d", "mxfp4"};
    c.model.sizes = {784, 32, 10};
    c.data.n_train = 512;
    c.data.n_test = 128;
    c.instruments.every = 5;
    c.steps = 40;
    return c;
}

// The engine's row of (run, layer, tensor) at `step`.
const Fp8ScaleRow* rowOf(const mpx::Session& s, int run, int layer, Fp8Tensor t, long long step) {
    for (const Fp8ScaleRow& r : s.run(static_cast<std::size_t>(run)).fp8_scales())
        if (r.layer == layer && r.tensor == t && r.step == step) return &r;
    return nullptr;
}

}  // namespace

class TestFp4View : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
    }

    void a_session_without_fp4_runs_says_which_to_add() {
        Fed f({QStringLiteral("fp32"), QStringLiteral("amp-bf16"), QStringLiteral("fp8-hybrid")});
        Fp4View v(&f.store);
        QVERIFY(v.fp4Runs().empty());
        QCOMPARE(v.run(), -1);
        QVERIFY2(v.message().startsWith(QStringLiteral("No FP4 run in this session: type nvfp4, nvfp4+1d or mxfp4")),
                 qPrintable(v.message()));
        // FP8 runs keep their own tab, which lists no FP4 run.
        Fed g({QStringLiteral("fp8-hybrid"), QStringLiteral("nvfp4"), QStringLiteral("mxfp4+floor")});
        Fp4View w(&g.store);
        QCOMPARE(w.fp4Runs(), (std::vector<int>{1, 2}));
        QCOMPARE(w.message(), QString());
        QCOMPARE(w.kind(), mpx::Fp4Kind::nvfp4);
        w.setRun(2);
        QCOMPARE(w.kind(), mpx::Fp4Kind::mxfp4);
        QCOMPARE(w.recipe().mx_scale_rule, mpx::core::MxScaleRule::floor);
        mpx::ui::Fp8View fp8(&g.store);
        QCOMPARE(fp8.fp8Runs(), std::vector<int>{0});
        // The run boxes' tooltips explain the FP4 modes and their switches.
        QVERIFY(mpx::gui::runModeHelp(QStringLiteral("mxfp4")).contains(QStringLiteral("MXFP4")));
        QVERIFY2(mpx::gui::runModeHelp(QStringLiteral("nvfp4+1d")).contains(QStringLiteral("weights in 1x16 blocks")),
                 qPrintable(mpx::gui::runModeHelp(QStringLiteral("nvfp4+1d"))));
    }

    // The series keeps each kept row's FP4 record beside it, and every weight comparison apart
    // from the thinning.
    void series_keeps_fp4_records_and_every_comparison() {
        mpx::gui::Fp8Series s(8);
        for (int i = 0; i < 12; ++i) {
            Fp8ScaleRow r;
            r.step = i;
            r.format = mpx::Format::e2m1;
            r.block = true;
            r.count = 100;
            r.nonzero = 100;
            r.saturated = i == 5 ? 4 : 0;
            r.fp4.codes[3] = static_cast<unsigned long long>(i);
            r.fp4.codes[0] = 100 - static_cast<unsigned long long>(i);
            if (i % 3 == 0) r.fp4.mismatched = static_cast<unsigned long long>(i), r.fp4.compared = 64;
            s.add(r);
        }
        QCOMPARE(s.bucketWidth(), 2LL);
        for (std::size_t i = 0; i < s.points().size(); ++i)
            QCOMPARE(s.fp4(i)->codes[3], static_cast<unsigned long long>(s.points()[i].step));  // the row's own record
        QCOMPARE(s.consistency().size(), std::size_t{4});  // steps 0, 3, 6, 9
        QCOMPARE(s.consistency().back().step, 9LL);
        QCOMPARE(s.consistency().back().mismatched, 9ULL);
        mpx::gui::Fp8Series fp8(8);
        Fp8ScaleRow r;
        r.count = 1;
        fp8.add(r);
        QVERIFY(fp8.fp4(0) == nullptr);
    }

    // The window trains fp4Config for 12 steps; an engine session of the same configuration in this
    // thread makes the rows the view must show.
    void bars_and_lines_are_the_engines_records_of_a_real_fp4_session() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        constexpr int steps = 12;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(fp4Config(), QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->setView(MainWindow::View::fp4);
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 120'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
        w->store()->drainNow();
        Fp4View* v = w->fp4View();
        QCOMPARE(v->message(), QString());
        QCOMPARE(v->fp4Runs(), (std::vector<int>{1, 2, 3}));

        mpx::Session engine(w->store()->session()->config);
        for (int s = 0; s < steps; ++s) engine.step();
        for (int run : {1, 2, 3})
            for (int layer : {0, 1})
                for (Fp8Tensor t : {Fp8Tensor::x, Fp8Tensor::w, Fp8Tensor::dy})
                    for (long long step : {0LL, 5LL, 11LL}) {
                        v->setRun(run);
                        v->setLayer(layer);
                        v->setTensor(t);
                        v->setStep(step);
                        v->refresh();
                        const QString what = QStringLiteral("run %1 fc%2 %3 step %4").arg(run).arg(layer + 1).arg(static_cast<int>(t)).arg(step);
                        const Fp8ScaleRow* row = rowOf(engine, run, layer, t, step);
                        QVERIFY2(row, qPrintable(what));
                        QCOMPARE(row->format, mpx::Format::e2m1);
                        QCOMPARE(v->shownStep(), step);
                        const mpx::core::Fp4Record* rec = v->record();
                        QVERIFY2(rec, qPrintable(what));
                        unsigned long long sum = 0;
                        for (int k = 0; k < 8; ++k) {
                            QCOMPARE(rec->codes[k], row->fp4.codes[k]);
                            sum += rec->codes[k];
                        }
                        QVERIFY2(sum == row->count, qPrintable(what + QStringLiteral(": %1 codes, %2 values").arg(sum).arg(row->count)));
                        QCOMPARE(v->point()->count, row->count);
                        const auto& bars = v->codeChart()->columns();
                        QCOMPARE(bars.size(), 8);
                        QCOMPARE(bars[7].label, QStringLiteral("6"));
                        for (int k = 0; k < 8; ++k)
                            QCOMPARE(bars[k].share, static_cast<double>(row->fp4.codes[k]) / static_cast<double>(row->count));
                        const auto& tops = v->blockChart()->columns();
                        QCOMPARE(tops.size(), 3);
                        QVERIFY(row->fp4.blocks > 0);
                        QCOMPARE(tops[0].share, static_cast<double>(row->fp4.top6) / static_cast<double>(row->fp4.blocks));
                        QCOMPARE(tops[1].share, static_cast<double>(row->fp4.top4) / static_cast<double>(row->fp4.blocks));
                        QVERIFY(std::abs(tops[0].share + tops[1].share + tops[2].share - 1.0) < 1e-12);
                    }
        // Every step's shares and NVFP4's S_enc, point for point (a 12-step run: no thinning).
        v->setRun(1);
        v->setLayer(1);
        v->setTensor(Fp8Tensor::x);
        v->setStep(-1);
        v->refresh();
        QCOMPARE(v->shownStep(), steps - 1LL);
        const auto sat = v->sharePlot()->points(Fp4View::saturatedLine);
        const auto flushed = v->sharePlot()->points(Fp4View::flushedLine);
        const auto senc = v->scalePlot()->points(Fp4View::scaleLine);
        QCOMPARE(sat.size(), steps);
        QCOMPARE(senc.size(), steps);
        for (int i = 0; i < steps; ++i) {
            const Fp8ScaleRow* r = rowOf(engine, 1, 1, Fp8Tensor::x, i);
            QCOMPARE(sat[i].y(), 100.0 * static_cast<double>(r->saturated) / static_cast<double>(r->count));
            QCOMPARE(flushed[i].y(), r->nonzero ? 100.0 * static_cast<double>(r->underflow) / static_cast<double>(r->nonzero) : 0.0);
            QCOMPARE(senc[i].y(), static_cast<double>(r->scale));
            QCOMPARE(r->scale, mpx::core::nvfp4_global(r->amax).enc);  // S_enc = 2688 ÷ amax
        }
        QVERIFY(v->scalePlot()->isVisibleTo(v));
        v->setRun(3);  // MXFP4: no tensor scale to draw
        QVERIFY(!v->scalePlot()->isVisibleTo(v));

        // The weights' two quantizations on a collecting step (every 5): the same with 16x16 tiles,
        // different in places with 1x16 blocks.
        v->setLayer(0);  // fc1 computes no gradient for the data: no backward copy of its weights
        v->setTensor(Fp8Tensor::w);
        v->setRun(1);
        v->setStep(5);
        QVERIFY(!v->consistency().has_value());
        QVERIFY(v->consistencyText().contains(QStringLiteral("no gradient back to the data")));
        for (int layer : {1}) {
            v->setLayer(layer);
            v->setTensor(Fp8Tensor::w);
            v->setRun(1);
            v->setStep(5);
            QVERIFY(v->consistency().has_value());
            QCOMPARE(v->consistency()->step, 5LL);
            QCOMPARE(v->consistency()->mismatched, 0ULL);
            QCOMPARE(v->consistency()->compared, rowOf(engine, 1, layer, Fp8Tensor::w, 5)->fp4.compared);
            QVERIFY(v->consistency()->compared > 0);
            QVERIFY2(v->consistencyText().contains(QStringLiteral(": 0 of ")) &&
                         v->consistencyText().contains(QStringLiteral("16×16 tiles make both quantizations the same")),
                     qPrintable(v->consistencyText()));
            v->setRun(2);  // nvfp4+1d
            v->setStep(5);
            QVERIFY(v->consistency().has_value());
            QCOMPARE(v->consistency()->mismatched, rowOf(engine, 2, layer, Fp8Tensor::w, 5)->fp4.mismatched);
            QVERIFY2(v->consistency()->mismatched > 0, qPrintable(v->consistencyText()));
            QVERIFY2(v->consistencyText().contains(QStringLiteral("1×16 blocks")), qPrintable(v->consistencyText()));
            v->setStep(7);  // not a collecting step: the readout of step 5
            QCOMPARE(v->consistency()->step, 5LL);
        }

        // The Range view's strip: E2M1's window in the amax's block, whose largest value lands on
        // 6 (NVFP4) or in (3, 6] (MXFP4, rceil); the BF16 run has no cast.
        for (int run : {1, 3}) {
            const mpx::ui::Fp8Cast c = mpx::ui::fp8Cast(*w->store(), run, 1, mpx::HistTensor::input, 10);
            QVERIFY(c.fp4Run && !c.fp8Run && c.active && c.block);
            QCOMPARE(c.format, mpx::Format::e2m1);
            QCOMPARE(c.bands.size(), std::size_t{4});
            const double top = c.bands[2].hi;  // log2 of 6 × the block's scale
            const double a = std::log2(c.amax);
            if (run == 1) QVERIFY2(std::abs(a - top) < 0.1, qPrintable(QStringLiteral("%1 %2").arg(a).arg(top)));
            else QVERIFY2(a <= top + 1e-9 && a > top - 1, qPrintable(QStringLiteral("%1 %2").arg(a).arg(top)));
            QVERIFY(c.note.contains(run == 1 ? QStringLiteral("NVFP4") : QStringLiteral("MXFP4")));
        }
        QVERIFY(!mpx::ui::fp8Cast(*w->store(), 0, 1, mpx::HistTensor::input, 10).fp4Run);

        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("fp4.png"));
        QVERIFY(w->exportViewPng(png));
        QVERIFY(QImage(png).width() > 400);
    }
};

QTEST_MAIN(TestFp4View)
#include "test_fp4_view.moc"
