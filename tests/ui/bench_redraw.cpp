// Benchmark (not a CTest test): the main window with the real engine training three runs at full
// speed until each has 100,000 recorded steps, measuring (1) the longest stall of the UI thread's
// event loop while the engine runs and (2) full redraws of every chart with 3 × 100,000 steps on
// screen (refresh from the store + synchronous repaint), at several zoom levels, and (3) full redraws
// of the histogram views (Range, Where, Updates) with every collected snapshot in the store (the
// engine's, or with --synthetic one every 10 steps per run for a 4-layer model), and (4) with
// --synthetic, full redraws of the FP8 view with every step's FP8 rows of 3 runs × 4 layers × 3 tensors.
// Run: QT_QPA_PLATFORM=offscreen build-ui/bin/bench_redraw [--steps N] [--synthetic] (or under
// xvfb-run). --synthetic fills the charts with made-up records instead of training (for profiling);
// BENCH_LINEAR_LOSS=1 measures with a linear loss axis (the app's default is logarithmic).
#include <QApplication>
#include <QPixmap>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

#include "ui/panels/charts_panel.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/range_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"

namespace {

struct Stats {
    double median = 0, p99 = 0, max = 0;
};

double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Stats stats(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back()};
}

// Times every event the UI thread dispatches (outermost only): the longest one is the longest time
// the window could not respond.
class TimingApp : public QApplication {
public:
    using QApplication::QApplication;
    bool recording = false;
    std::vector<double> wall, cpu;
    bool notify(QObject* o, QEvent* e) override {
        if (!recording || m_depth > 0 || QThread::currentThread() != thread()) return QApplication::notify(o, e);
        ++m_depth;
        const double c0 = threadCpuMs();
        QElapsedTimer t;
        t.start();
        const bool r = QApplication::notify(o, e);
        wall.push_back(t.nsecsElapsed() / 1e6);
        cpu.push_back(threadCpuMs() - c0);
        --m_depth;
        return r;
    }

private:
    int m_depth = 0;
};

}  // namespace

int main(int argc, char** argv) {
    TimingApp app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("mpx-bench"));
    long long steps = 100'000;
    bool synthetic = false;  // --synthetic: fill the store with made-up records, no engine (profiling)
    for (int i = 1; i < argc; ++i) {
        if (QByteArray(argv[i]) == "--steps" && i + 1 < argc) steps = QByteArray(argv[i + 1]).toLongLong();
        if (QByteArray(argv[i]) == "--synthetic") synthetic = true;
    }

    // A small model so the engine reaches 100,000 steps in seconds: the UI sees the highest record rate.
    const auto cfg = mpx::gui::applyOverrides(mpx::load_config("default"),
                                              {QStringLiteral("model.sizes=2-16-2"), QStringLiteral("train.batch=32"),
                                               QStringLiteral("steps=%1").arg(steps)});
    if (!cfg.config) {
        std::fprintf(stderr, "bench_redraw: %s\n", qPrintable(cfg.error));
        return 2;
    }
    mpx::ui::MainWindow w;
    w.resize(1500, 950);
    w.show();
    if (qEnvironmentVariableIsSet("BENCH_LINEAR_LOSS")) w.charts()->setLossLogScale(false);
    w.applyConfig(*cfg.config, QStringLiteral("bench"));

    // (1) Event-loop stalls: a 5 ms timer; any gap beyond its period is time the UI thread was busy.
    std::vector<double> gaps;
    QElapsedTimer clock;
    clock.start();
    qint64 last = -1;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        if (last >= 0) gaps.push_back((now - last) / 1e6);
        last = now;
    });
    // The UI's own work per tick: the store's drain with everything connected to it (charts, log,
    // status), timed here instead of by the store's timer. Wall time and the UI thread's CPU time:
    // on a loaded machine the difference is time the scheduler gave to other threads.
    std::vector<double> ticks, tickCpu;
    w.store()->setDrainInterval(1'000'000'000);
    QTimer drainer;
    drainer.setTimerType(Qt::PreciseTimer);
    QObject::connect(&drainer, &QTimer::timeout, [&] {
        const double c0 = threadCpuMs();
        QElapsedTimer t;
        t.start();
        w.store()->drainNow();
        ticks.push_back(t.nsecsElapsed() / 1e6);
        tickCpu.push_back(threadCpuMs() - c0);
    });
    drainer.start(33);
    QElapsedTimer run;
    if (synthetic) {
        QTimer::singleShot(200, &w, [&] {
            auto& buffer = w.engine()->buffer();
            auto info = std::make_shared<mpx::gui::SessionInfo>(*buffer.drain().session);
            info->generation += 1000;
            info->config.model.sizes = {2, 64, 64, 64, 2};
            info->config.instruments.every = 10;
            // The three runs as FP8 runs for the FP8 view (labels only: the other views read records).
            const char* fp8Labels[] = {"fp8-hybrid+delayed", "fp8-hybrid+current", "mxfp8"};
            for (std::size_t r = 0; r < info->runs.size() && r < 3; ++r) info->runs[r].label = QString::fromLatin1(fp8Labels[r]);
            buffer.beginSession(info);
            std::vector<mpx::StepRecord> recs;
            for (long long i = 0; i < steps; ++i)
                for (int r = 0; r < 3; ++r) {
                    mpx::StepRecord x;
                    x.run = r;
                    x.step = i;
                    x.loss = 0.7 * std::exp(-i / 2e4) + 0.01 * ((i * 7919 + r * 104729) % 1000) / 1000.0;
                    x.loss_scale = r == 1 ? std::ldexp(1.0, 16 + static_cast<int>(i / 2000 % 8)) : 1.0;
                    x.new_scale = x.loss_scale;
                    x.skipped = r == 1 && i % 1999 == 0;
                    x.underflow_frac = r == 1 ? 0.01 * ((i * 31) % 100) / 100.0 : 0.0;
                    x.overflow_count = x.skipped ? 12 : 0;
                    x.lost_update_frac = r == 2 ? 0.9 : 0.05 * ((i * 17) % 100) / 100.0;
                    x.step_time_us = 200 + (i * 13 % 50);
                    if (i % 50 == 0) {  // an evaluation every 50 steps, as by default
                        x.eval_loss = x.loss * 1.1;
                        x.eval_accuracy = 0.5 + 0.5 * (1.0 - std::exp(-i / 2e4));
                    }
                    recs.push_back(x);
                }
            buffer.append(recs);
            w.store()->drainNow();
            // FP8 scale rows as the engine sends them: every step, 4 layers × 3 tensors per run,
            // amax drifting over 2^-4…2^4 with a spike that saturates every 997 steps.
            std::vector<std::pair<int, mpx::Fp8ScaleRow>> fp8;
            for (long long i = 0; i < steps; ++i) {
                for (int r = 0; r < 3; ++r)
                    for (int l = 0; l < 4; ++l)
                        for (int t = 0; t < mpx::k_fp8_tensors; ++t) {
                            mpx::Fp8ScaleRow row;
                            row.step = i;
                            row.layer = l;
                            row.tensor = static_cast<mpx::Fp8Tensor>(t);
                            row.format = t == 2 && r < 2 ? mpx::Format::e5m2 : mpx::Format::e4m3;
                            row.block = r == 2;
                            row.amax = std::ldexp(1.0f + 0.3f * std::sin(i / 50.0f), static_cast<int>((i / 3000 + l + t) % 9) - 4);
                            row.scale = r == 2 ? 0.0f : 448.0f / row.amax;
                            row.count = 8192;
                            row.nonzero = 8000;
                            row.saturated = i % 997 == 0 && r == 0 ? 40 : 0;
                            row.underflow = static_cast<unsigned long long>((i * 13 + l * 7 + t) % 50);
                            fp8.emplace_back(r, row);
                        }
                if (i % 1000 == 999) {
                    buffer.appendFp8(fp8);
                    w.store()->drainNow();
                }
            }
            buffer.appendFp8(fp8);
            w.store()->drainNow();
            // Histograms as the engine collects them: every 10 steps, every tensor of 4 layers,
            // values spread over ~20 bins that drift with the step; the store's logs thin them.
            const int layers = 4;
            for (long long i = 0; i < steps; i += 10) {
                for (int r = 0; r < 3; ++r) {
                    mpx::HistogramSnapshot snap;
                    snap.step = i;
                    snap.loss_scale = r == 1 ? std::ldexp(1.0, 16 + static_cast<int>(i / 2000 % 8)) : 1.0;
                    snap.layer_counts.resize(static_cast<std::size_t>(layers) * 3);
                    for (int l = 0; l < layers; ++l) {
                        snap.layer_counts[static_cast<std::size_t>(l) * 3 + 1].nonzero = 4096;
                        snap.layer_counts[static_cast<std::size_t>(l) * 3 + 1].underflow = static_cast<unsigned long long>((i * 7 + l * 131 + r) % 400);
                        snap.layer_counts[static_cast<std::size_t>(l) * 3 + 1].overflow = (i % 1999 == 0 && r == 1) ? 12 : 0;
                        for (const auto& e : mpx::k_hist_tensor_names) {
                            mpx::core::Bins b;
                            const int centre = -20 + static_cast<int>((i / 500 + l * 3 + static_cast<int>(e.value)) % 24);
                            for (int k = -10; k <= 10; ++k)
                                b.n[centre + k - mpx::core::k_bin_min] = static_cast<unsigned long long>(1000.0 * std::exp(-k * k / 18.0));
                            b.n[mpx::core::k_slot_zero] = 7;
                            snap.add(l, e.value, r == 0 ? mpx::Format::fp32 : mpx::Format::fp16, b);
                        }
                    }
                    buffer.appendHistogram(r, std::move(snap));
                }
                if (i % 10'000 == 0) w.store()->drainNow();
            }
            w.store()->drainNow();
            QApplication::quit();
        });
    } else QTimer::singleShot(200, &w, [&] {
        probe.start();
        run.start();
        app.recording = true;
        w.run();
    });
    QObject::connect(w.engine(), &mpx::gui::EngineController::stateChanged, &w,
                     [&](mpx::gui::EngineState s, qint64) {
                         if (s == mpx::gui::EngineState::finished) QTimer::singleShot(300, &app, &QApplication::quit);
                     });
    app.exec();
    probe.stop();
    const double seconds = run.elapsed() / 1000.0;
    drainer.stop();
    app.recording = false;
    const Stats ev = stats(app.wall), evc = stats(app.cpu);
    const Stats g = stats(gaps), t = stats(ticks), tc = stats(tickCpu);
    std::printf("engine: %lld steps x %d runs in %.1f s (%.0f steps/s), UI drains: %zu\n",
                static_cast<long long>(w.store()->steps()), w.store()->runCount(), seconds,
                w.store()->steps() / seconds, ticks.size());
    std::printf("UI event-loop gap while training (5 ms timer): median %.1f ms, p99 %.1f ms, max %.1f ms\n",
                g.median, g.p99, g.max);
    std::printf("longest single UI-thread event while training: %.1f ms wall, %.1f ms UI-thread CPU "
                "(p99 %.1f ms wall) over %zu events\n", ev.max, evc.max, ev.p99, app.wall.size());
    std::printf("drain + refresh of all charts per tick: median %.1f ms, p99 %.1f ms, max %.1f ms "
                "(UI-thread CPU: median %.1f ms, max %.1f ms)\n", t.median, t.p99, t.max, tc.median, tc.max);

    // (2) Full redraws with every step on screen, then zoomed and panned views.
    auto* charts = w.charts();
    const double n = static_cast<double>(w.store()->steps());
    const std::vector<std::pair<double, double>> views = {
        {0, n}, {0, n / 2}, {n / 4, n / 4 + 10'000}, {n / 2, n / 2 + 1'000}, {n - 200, n}};
    std::vector<double> redraw, refreshOnly;
    std::vector<std::vector<double>> perView(views.size());
    for (int rep = 0; rep < 20; ++rep)
        for (std::size_t v = 0; v < views.size(); ++v) {
            const auto [a, b] = views[v];
            QElapsedTimer t0;
            t0.start();
            if (a == 0 && b == n) charts->resetZoom();
            else charts->zoomTo(a, b);
            charts->refresh();
            const double mid = t0.nsecsElapsed() / 1e6;
            QCoreApplication::processEvents();  // deferred scene and layout updates
            w.repaint();                        // synchronous paint of the whole window
            redraw.push_back(t0.nsecsElapsed() / 1e6);
            refreshOnly.push_back(mid);
            perView[v].push_back(redraw.back());
        }
    for (std::size_t v = 0; v < views.size(); ++v) {
        const Stats pv = stats(perView[v]);
        std::printf("  steps %.0f-%.0f: median %.1f ms, max %.1f ms\n", views[v].first, views[v].second, pv.median, pv.max);
    }
    // Redraws of the same view, as during training (new data, axes mostly unchanged).
    charts->resetZoom();
    std::vector<double> same;
    for (int rep = 0; rep < 50; ++rep) {
        QElapsedTimer t0;
        t0.start();
        charts->refresh();
        QCoreApplication::processEvents();
        w.repaint();
        same.push_back(t0.nsecsElapsed() / 1e6);
    }
    const Stats sv = stats(same);
    std::printf("  same full view redrawn (as while training): median %.1f ms, max %.1f ms\n", sv.median, sv.max);
    const Stats r = stats(redraw), ro = stats(refreshOnly);
    std::printf("  of which refresh (decimate + replace): median %.1f ms, max %.1f ms\n", ro.median, ro.max);
    std::printf("full redraw (refresh + repaint, 3 x %.0f steps): median %.1f ms, p99 %.1f ms, max %.1f ms over %zu redraws\n",
                n, r.median, r.p99, r.max, redraw.size());
    bool ok = r.max <= 33 && g.max <= 50;

    // (3) The histogram views: shown, then each redraw reads the store again (Range: another step
    // each time; Where: the other measure each time, so its image is rebuilt; Updates: refresh).
    using View = mpx::ui::MainWindow::View;
    std::size_t snapshots = 0, bytes = 0;
    for (int run = 0; run < w.store()->runCount(); ++run) {
        snapshots += w.store()->histograms(run).snapshots().size();
        bytes += w.store()->histograms(run).bytes();
    }
    std::printf("histogram views (%zu snapshots in the store, %.1f MiB):\n", snapshots, bytes / 1048576.0);
    const std::pair<View, const char*> hviews[] = {{View::range, "Range"}, {View::where, "Where"}, {View::updates, "Updates"}};
    for (const auto& [v, name] : hviews) {
        w.setView(v);
        QCoreApplication::processEvents();
        QWidget* view = v == View::range ? static_cast<QWidget*>(w.rangeView())
                        : v == View::where ? static_cast<QWidget*>(w.whereView())
                                           : static_cast<QWidget*>(w.updatesView());
        std::vector<double> t;
        for (int rep = 0; rep < 40; ++rep) {
            QElapsedTimer t0;
            t0.start();
            if (v == View::range) w.rangeView()->setStep(static_cast<long long>(n * rep / 40));
            if (v == View::where)
                w.whereView()->setMeasure(rep % 2 ? mpx::ui::WhereView::Measure::overflowCount
                                                  : mpx::ui::WhereView::Measure::underflowShare);
            if (v == View::updates) w.updatesView()->refresh();
            QCoreApplication::processEvents();
            // Rendered whole into an image (as the PNG export does): a paint that cannot be skipped
            // for a window the offscreen platform does not expose.
            const QPixmap shot = view->grab();
            Q_UNUSED(shot);
            t.push_back(t0.nsecsElapsed() / 1e6);
        }
        const Stats sv2 = stats(t);
        std::printf("  %s view full redraw (%dx%d): median %.1f ms, max %.1f ms over %zu redraws\n", name, view->width(),
                    view->height(), sv2.median, sv2.max, t.size());
        ok = ok && sv2.max <= 33;
    }
    // (4) The FP8 view (runs with FP8 rows only: --synthetic): each redraw another run, layer or
    // tensor, refreshed from the store's series and rendered whole.
    std::size_t fp8Rows = 0, fp8Bytes = 0;
    for (int run = 0; run < w.store()->runCount(); ++run) {
        fp8Bytes += w.store()->fp8(run).bytes();
        for (int l : w.store()->fp8(run).layers())
            for (int t = 0; t < mpx::k_fp8_tensors; ++t)
                if (const auto* s = w.store()->fp8(run).series(l, static_cast<mpx::Fp8Tensor>(t))) fp8Rows += s->points().size();
    }
    if (fp8Rows > 0) {
        std::printf("FP8 view (%zu rows kept in the store, %.1f MiB):\n", fp8Rows, fp8Bytes / 1048576.0);
        w.setView(View::fp8);
        QCoreApplication::processEvents();
        auto* fv = w.fp8View();
        std::vector<double> t, tr, same;
        for (int rep = 0; rep < 40; ++rep) {
            QElapsedTimer t0;
            t0.start();
            fv->setRun(fv->fp8Runs()[static_cast<std::size_t>(rep) % fv->fp8Runs().size()]);
            fv->setLayer(rep / 3 % 4);
            fv->setTensor(static_cast<mpx::Fp8Tensor>(rep % 3));
            fv->refresh();
            tr.push_back(t0.nsecsElapsed() / 1e6);
            QCoreApplication::processEvents();
            const QPixmap shot = fv->grab();
            Q_UNUSED(shot);
            t.push_back(t0.nsecsElapsed() / 1e6);
        }
        for (int rep = 0; rep < 40; ++rep) {  // the same tensor again, as while training
            QElapsedTimer t0;
            t0.start();
            fv->refresh();
            QCoreApplication::processEvents();
            const QPixmap shot = fv->grab();
            Q_UNUSED(shot);
            same.push_back(t0.nsecsElapsed() / 1e6);
        }
        const Stats sv3 = stats(t), sr = stats(tr), ss = stats(same);
        std::printf("  FP8 view full redraw, another run, layer or tensor each time (%dx%d): median %.1f ms, max %.1f ms "
                    "over %zu redraws (of which refresh: median %.1f ms, max %.1f ms)\n",
                    fv->width(), fv->height(), sv3.median, sv3.max, t.size(), sr.median, sr.max);
        std::printf("  FP8 view, the same tensor redrawn (as while training): median %.1f ms, max %.1f ms\n", ss.median, ss.max);
        ok = ok && sv3.max <= 33;
    }
    std::printf("targets (redraw <= 33 ms, UI never blocked > 50 ms): %s\n", ok ? "met" : "NOT met");
    return 0;
}
