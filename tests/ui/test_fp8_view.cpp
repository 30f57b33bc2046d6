// The FP8 scaling view on the offscreen platform: its points are the engine's rows of a real run of
// the fp8 preset (amax; 448 ÷ scale for E4M3 and 57344 ÷ scale for E5M2; saturated and flushed
// shares), the amax history window spans exactly fp8.amax_history_len steps before the step it
// explains, a session without FP8 runs says what to add, an activation spike saturates delayed
// scaling's x on the spike's first step and not current scaling's, and the store's series keep
// every row until full, then in each bucket the row that saturated most. The Where view's overflow map
// of an FP8 run has every step and counts the steps this tab counts.
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <memory>

#include "engine/compute/backend.hpp"
#include "engine/core/rng.hpp"
#include "engine/run/run.hpp"
#include "engine/run/session.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/session/fp8_history.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::Fp8ScaleRow;
using mpx::Fp8Tensor;
using mpx::gui::EngineState;
using mpx::gui::RecordBuffer;
using mpx::gui::RecordStore;
using mpx::ui::Fp8View;
using mpx::ui::MainWindow;

namespace {

// A store fed through its buffer as the worker feeds it, for a session of the given runs.
struct Fed {
    RecordBuffer buffer;
    RecordStore store{&buffer};
    explicit Fed(const QStringList& labels, int history = 16) {
        auto info = std::make_shared<mpx::gui::SessionInfo>();
        info->generation = 1;
        info->config = mpx::load_config("default");
        info->config.model.sizes = {2, 16, 2};
        info->config.fp8.amax_history_len = history;
        for (const QString& l : labels) info->runs.push_back({l, mpx::parse_run_spec(l.toStdString())});
        info->totalSteps = 100;
        buffer.beginSession(info);
        store.drainNow();
    }
};

// The engine's spike scenario (tests/test_fp8_training.cpp): 2-16-2 on one fixed batch, history 4,
// the input ×1000 from step 5 on; each step's rows go to the buffer as the worker sends them.
void trainSpike(Fed& f, int runIndex, const std::string& label, int steps) {
    mpx::SessionConfig c;
    c.model.sizes = {2, 16, 2};
    c.train.batch = 32;
    c.fp8.amax_history_len = 4;
    c.runs = {label};
    const mpx::InitialWeights init = mpx::init_weights(c.model, 3);
    mpx::Run run(0, mpx::resolve_run(label, c.scaler, c.scaler_overrides), c, init, mpx::make_cpu_backend());
    mpx::Rng rng(5);
    mpx::RowMatrix x(32, 2);
    std::vector<int> labels(32);
    for (int r = 0; r < 32; ++r) {
        x(r, 0) = static_cast<float>(rng.uniform(-1.0, 1.0));
        x(r, 1) = static_cast<float>(rng.uniform(-1.0, 1.0));
        labels[static_cast<std::size_t>(r)] = x(r, 0) > 0.0f ? 1 : 0;
    }
    for (int s = 0; s < steps; ++s) {
        mpx::Batch b;
        b.x = s >= 5 ? mpx::RowMatrix(x * 1000.0f) : x;
        b.labels = labels;
        run.step(s, {b}, mpx::LossKind::cross_entropy);
        std::vector<std::pair<int, Fp8ScaleRow>> rows;
        for (const Fp8ScaleRow& row : run.fp8_scales())
            if (row.step == s) rows.emplace_back(runIndex, row);
        f.buffer.appendFp8(rows);
    }
    f.store.drainNow();
}

// The y of the point at step `step`, or NaN.
double yAt(const QList<QPointF>& pts, long long step) {
    for (const QPointF& p : pts)
        if (p.x() == static_cast<double>(step)) return p.y();
    return std::nan("");
}

}  // namespace

class TestFp8View : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
    }

    // Capacity 8: the 8th row doubles the buckets to 2 steps; each pair keeps its more saturated
    // row, the later one where they tie. Pattern: 'X' where a step saturated.
    void series_thins_to_the_most_saturated_row_of_each_bucket_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QList<long long>>("kept");
        QTest::newRow("none saturate: the later of each pair") << "........" << QList<long long>{1, 3, 5, 7};
        QTest::newRow("step 4 saturates: it stays") << "....X..." << QList<long long>{1, 3, 4, 7};
        QTest::newRow("step 5 saturates: it stays") << ".....X.." << QList<long long>{1, 3, 5, 7};
        QTest::newRow("steps 0 and 6") << "X.....X." << QList<long long>{0, 3, 5, 6};
        QTest::newRow("7 rows: nothing thinned") << "..X...." << QList<long long>{0, 1, 2, 3, 4, 5, 6};
    }
    void series_thins_to_the_most_saturated_row_of_each_bucket() {
        QFETCH(QString, pattern);
        QFETCH(QList<long long>, kept);
        mpx::gui::Fp8Series s(8);
        for (int i = 0; i < pattern.size(); ++i) {
            Fp8ScaleRow r;
            r.step = i;
            r.amax = static_cast<float>(i + 1);
            r.scale = 2.0f;
            r.count = 100;
            r.nonzero = 100;
            r.saturated = pattern[i] == QLatin1Char('X') ? 3 : 0;
            s.add(r);
        }
        QList<long long> got;
        for (const auto& p : s.points()) got << p.step;
        QCOMPARE(got, kept);
        for (const auto& p : s.points()) QCOMPARE(p.amax, static_cast<float>(p.step + 1));  // the row itself
        QCOMPARE(s.bucketWidth(), pattern.size() >= 8 ? 2LL : 1LL);
    }

    void a_session_without_fp8_runs_says_what_to_add() {
        Fed f({QStringLiteral("fp32"), QStringLiteral("amp-bf16")});
        Fp8View v(&f.store);
        QVERIFY(v.fp8Runs().empty());
        QCOMPARE(v.run(), -1);
        QVERIFY2(v.message().startsWith(
                     QStringLiteral("No FP8 run in this session: add fp8-hybrid, fp8-e4m3 or mxfp8 to the precisions")),
                 qPrintable(v.message()));
        Fed g({QStringLiteral("fp32"), QStringLiteral("fp8-hybrid+current")});
        Fp8View w(&g.store);
        QCOMPARE(w.fp8Runs(), std::vector<int>{1});
        QCOMPARE(w.message(), QString());
    }

    // The spike of step 5: delayed scaling's scale comes from steps 1–4 (history 4), so fc1's x
    // saturates there and the amax line stands above the limit line; current scaling measures the
    // spike it casts and saturates nothing.
    void a_spike_saturates_delayed_scaling_but_not_current() {
        Fed f({QStringLiteral("fp8-hybrid+delayed"), QStringLiteral("fp8-hybrid+current")}, 4);
        trainSpike(f, 0, "fp8-hybrid+delayed", 8);
        trainSpike(f, 1, "fp8-hybrid+current", 8);
        Fp8View v(&f.store);
        v.resize(1200, 800);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setRun(0);
        v.setLayer(0);
        v.setTensor(Fp8Tensor::x);
        v.refresh();
        QCOMPARE(v.recipe(), mpx::Fp8Recipe::delayed);
        const auto sat = v.sharePlot()->points(Fp8View::saturatedLine);
        QCOMPARE(sat.size(), 8);
        QCOMPARE(yAt(sat, 4), 0.0);
        QVERIFY2(yAt(sat, 5) > 0.0, qPrintable(QString::number(yAt(sat, 5))));
        const auto amax = v.scalePlot()->points(Fp8View::amaxLine);
        const auto limit = v.scalePlot()->points(Fp8View::limitLine);
        QVERIFY(yAt(amax, 5) > yAt(limit, 5));   // above the limit: saturated
        QVERIFY(yAt(amax, 4) <= yAt(limit, 4) * (1 + 1e-6));  // on it (448 ÷ (448 ÷ amax)): not
        QCOMPARE(v.scalePlot()->points(Fp8View::saturatedMarkers).size(), 1);
        QCOMPARE(v.scalePlot()->points(Fp8View::saturatedMarkers)[0].x(), 5.0);
        QCOMPARE(v.historyWindow(5), std::make_pair(1LL, 4LL));
        v.setRun(1);
        QCOMPARE(v.recipe(), mpx::Fp8Recipe::current);
        const auto cur = v.sharePlot()->points(Fp8View::saturatedLine);
        QCOMPARE(cur.size(), 8);
        for (const QPointF& p : cur) QCOMPARE(p.y(), 0.0);
        QVERIFY(v.scalePlot()->points(Fp8View::saturatedMarkers).isEmpty());
        QCOMPARE(v.historyWindow(5), std::make_pair(-1LL, -1LL));  // no history: this step's amax
        QVERIFY(std::isnan(v.scalePlot()->xBand().first));
    }

    // The window runs the fp8 preset (fp32, amp-bf16, fp8-hybrid+delayed, fp8-hybrid+current,
    // mxfp8; history 16) for 24 steps; an engine session built from the same configuration in
    // this thread makes the rows the view must show, point for point.
    void points_are_the_engines_rows_of_an_fp8_preset_run() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        auto cfg = mpx::gui::loadConfig(QStringLiteral("fp8")).config;
        QVERIFY(cfg);
        QCOMPARE(cfg->fp8.amax_history_len, 16);
        constexpr int steps = 24;
        cfg->steps = 40;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(*cfg, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->setView(MainWindow::View::fp8);
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 120'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
        w->store()->drainNow();
        Fp8View* v = w->fp8View();
        QCOMPARE(v->message(), QString());
        QCOMPARE(v->fp8Runs(), (std::vector<int>{2, 3, 4}));

        mpx::Session engine(w->store()->session()->config);
        for (int s = 0; s < steps; ++s) engine.step();
        struct Case {
            int run;
            int layer;
            Fp8Tensor tensor;
            double fmax;  // 0: MXFP8, no limit line
        };
        for (const Case c : {Case{2, 0, Fp8Tensor::x, 448}, Case{2, 0, Fp8Tensor::dy, 57344}, Case{2, 1, Fp8Tensor::w, 448},
                             Case{3, 0, Fp8Tensor::x, 448}, Case{3, 1, Fp8Tensor::dy, 57344}, Case{4, 0, Fp8Tensor::x, 0}}) {
            v->setRun(c.run);
            v->setLayer(c.layer);
            v->setTensor(c.tensor);
            v->refresh();
            const QString what = QStringLiteral("run %1 fc%2 %3").arg(c.run).arg(c.layer + 1).arg(static_cast<int>(c.tensor));
            std::vector<Fp8ScaleRow> rows;
            for (const Fp8ScaleRow& r : engine.run(static_cast<std::size_t>(c.run)).fp8_scales())
                if (r.layer == c.layer && r.tensor == c.tensor) rows.push_back(r);
            QCOMPARE(rows.size(), std::size_t{steps});
            const auto amax = v->scalePlot()->points(Fp8View::amaxLine);
            const auto limit = v->scalePlot()->points(Fp8View::limitLine);
            const auto sat = v->sharePlot()->points(Fp8View::saturatedLine);
            const auto flushed = v->sharePlot()->points(Fp8View::flushedLine);
            QVERIFY2(amax.size() == steps && sat.size() == steps && flushed.size() == steps, qPrintable(what));
            QCOMPARE(limit.size(), c.fmax > 0 ? steps : 0);
            for (int i = 0; i < steps; ++i) {
                const Fp8ScaleRow& r = rows[static_cast<std::size_t>(i)];
                QCOMPARE(amax[i].x(), static_cast<double>(r.step));
                QCOMPARE(amax[i].y(), static_cast<double>(r.amax));
                if (c.fmax > 0) QCOMPARE(limit[i].y(), c.fmax / static_cast<double>(r.scale));
                QCOMPARE(sat[i].y(), 100.0 * static_cast<double>(r.saturated) / static_cast<double>(r.count));
                QCOMPARE(flushed[i].y(),
                         r.nonzero ? 100.0 * static_cast<double>(r.underflow) / static_cast<double>(r.nonzero) : 0.0);
            }
        }
        // Delayed scaling: the window spans the 16 steps before the step it explains.
        v->setRun(2);
        v->setLayer(0);
        v->setTensor(Fp8Tensor::x);
        v->refresh();
        QCOMPARE(v->windowStep(), steps - 1LL);
        const auto [a, b] = v->historyWindow(steps - 1);
        QCOMPARE(b - a + 1, 16LL);
        QCOMPARE(b, steps - 2LL);
        QCOMPARE(v->scalePlot()->xBand().first, a - 0.5);
        QCOMPARE(v->scalePlot()->xBand().second, b + 0.5);
        v->setHoverStep(20);
        QCOMPARE(v->historyWindow(20), std::make_pair(4LL, 19LL));
        QCOMPARE(v->scalePlot()->xBand().first, 3.5);
        QCOMPARE(v->historyWindow(3), std::make_pair(0LL, 2LL));  // clipped at step 0
        QVERIFY(v->hoverText(20).contains(QStringLiteral("steps 4–19")));
        v->setHoverStep(-1);
        // MXFP8: block scales, no window and no limit.
        v->setRun(4);
        QCOMPARE(v->recipe(), mpx::Fp8Recipe::block);
        QVERIFY(std::isnan(v->scalePlot()->xBand().first));
        // The Where view's overflow map of an FP8 run agrees with this tab: one column per step (the
        // histograms come every 10), each cell the saturations of the layer's casts on that step,
        // and per layer and tensor the same count of saturating steps as this tab's summary.
        mpx::ui::WhereView* where = w->whereView();
        QCOMPARE(where->measure(), mpx::ui::WhereView::Measure::overflowCount);
        for (int run : {2, 4}) {
            where->setRun(run);
            QVERIFY(where->castColumns());
            QCOMPARE(where->columns(), steps);
            const auto& rows = engine.run(static_cast<std::size_t>(run)).fp8_scales();
            for (int c = 0; c < steps; ++c) {
                QCOMPARE(where->columnStep(c), static_cast<long long>(c));
                for (int l = 0; l < 2; ++l) {
                    unsigned long long sat = 0;
                    for (const Fp8ScaleRow& r : rows)
                        if (r.step == c && r.layer == l) sat += r.saturated;
                    QCOMPARE(where->cellValue(l, c), static_cast<double>(sat));
                }
            }
            for (int l = 0; l < 2; ++l)
                for (Fp8Tensor t : {Fp8Tensor::x, Fp8Tensor::w, Fp8Tensor::dy}) {
                    const auto n = std::count_if(rows.begin(), rows.end(), [&](const Fp8ScaleRow& r) {
                        return r.layer == l && r.tensor == t && r.saturated > 0;
                    });
                    QCOMPARE(where->saturatingSteps(l, t), static_cast<int>(n));
                    if (t != Fp8Tensor::x) continue;
                    v->setRun(run);
                    v->setLayer(l);
                    v->setTensor(t);
                    v->refresh();
                    const QString says = n == 0 ? QStringLiteral("No value saturated")
                                         : n == 1 ? QStringLiteral("1 step saturated")
                                                  : QStringLiteral("%1 steps saturated").arg(n);
                    QVERIFY2(v->summary().startsWith(says), qPrintable(v->summary()));
                    QVERIFY2(where->saturationSummary().contains(QStringLiteral("fc%1: x %2").arg(l + 1).arg(n)),
                             qPrintable(where->saturationSummary()));
                }
        }
        // The underflow map stays on the collected histograms, and says how to get every step.
        where->setMeasure(mpx::ui::WhereView::Measure::underflowShare);
        QVERIFY(!where->castColumns());
        QCOMPARE(where->columns(), 3);  // steps 0, 10, 20
        QVERIFY2(where->subtitle().contains(QStringLiteral("set instruments.every = 1")), qPrintable(where->subtitle()));
        where->setMeasure(mpx::ui::WhereView::Measure::overflowCount);
        QVERIFY2(where->subtitle().contains(QStringLiteral("one column per step")), qPrintable(where->subtitle()));

        // The view exports as the others do.
        w->setView(MainWindow::View::fp8);
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("fp8.png"));
        QVERIFY(w->exportViewPng(png));
        QVERIFY(QImage(png).width() > 400);
    }
};

QTEST_MAIN(TestFp8View)
#include "test_fp8_view.moc"
