// The Where and Updates views on the offscreen platform: the Where view's cells are the per-layer
// underflow shares of a real overflow-storm run and each skipped step's ring sits in the layer of
// its first inf/NaN; clicking a cell opens Range at that layer and step; the views' pictures leave
// their controls out; the Updates view shows the chosen layer at the chosen step and its share left
// of the half-ulp line is the count of those bins. (The Range view's tests: test_histogram_views.cpp.)
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QScrollArea>
#include <QTest>
#include <cmath>
#include <memory>

#include "engine/compute/histograms.hpp"
#include "engine/core/fp8_math.hpp"
#include "engine/run/session.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/views/range_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"
#include "histogram_test_support.hpp"

using mpx::Fp8ScaleRow;
using mpx::Fp8Tensor;
using mpx::HistTensor;
using mpx::gui::EngineState;
using mpx::gui::RecordBuffer;
using mpx::gui::RecordStore;
using mpx::ui::MainWindow;
using mpx::ui::RangeView;
using mpx::ui::UpdatesView;
using mpx::ui::WhereView;

Q_DECLARE_METATYPE(mpx::Format)

class TestWhereUpdatesViews : public QObject {
    Q_OBJECT
    QTemporaryDir dir;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
    }

    void where_cells_markers_and_click_on_a_real_overflow_storm() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        auto cfg = mpx::gui::loadConfig(QStringLiteral("overflow-storm")).config;
        QVERIFY(cfg);
        QCOMPARE(cfg->instruments.every, 1);  // the preset collects every step
        cfg->steps = 40;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(*cfg, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->setView(MainWindow::View::where);
        w->run(12);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 12, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
        w->store()->drainNow();
        WhereView* where = w->whereView();
        QCOMPARE(where->run(), 1);  // amp-fp16: where the storm is
        QCOMPARE(where->layers(), 3);
        QCOMPARE(where->columns(), 12);
        const auto& snaps = w->store()->histograms(1).snapshots();
        for (int c = 0; c < where->columns(); ++c)
            for (int l = 0; l < 3; ++l) {
                const mpx::core::Counts& b = snaps[static_cast<std::size_t>(c)].layer(l, mpx::Pass::backward);
                const double expect = b.nonzero ? static_cast<double>(b.underflow) / static_cast<double>(b.nonzero) : 0.0;
                QCOMPARE(where->cellValue(l, c), expect);
            }
        // The storm's first steps are skipped (2^24 → 2^19): each ring in its first inf/NaN's layer.
        const auto skips = where->skips();
        QCOMPARE(static_cast<int>(skips.size()), static_cast<int>(w->store()->skippedSteps(1)));
        QVERIFY(skips.size() >= 3);
        for (const WhereView::Skip& s : skips) {
            QVERIFY(s.site >= 0);
            QCOMPARE(s.layer, s.site / mpx::k_tensor_kinds);
            const QRectF cell = where->cellRect(s.layer, static_cast<int>(s.step));  // every step collected
            QVERIFY(cell.contains(where->skipPos(s)));
        }
        where->setMeasure(WhereView::Measure::overflowCount);
        const mpx::core::Counts& f0 = snaps[0].layer(skips[0].layer, mpx::Pass::backward);
        QVERIFY(where->cellValue(skips[0].layer, static_cast<int>(skips[0].step)) >= static_cast<double>(f0.overflow));
        QVERIFY(where->cellValue(skips[0].layer, static_cast<int>(skips[0].step)) > 0);

        // A click on fc3's cell at step 7 opens the Range view there.
        w->whereView()->repaint();
        const QPointF centre = where->cellRect(2, 7).center();
        QWidget* canvas = where->childAt(centre.toPoint());
        QVERIFY(canvas);
        QTest::mouseClick(canvas, Qt::LeftButton, {}, canvas->mapFrom(where, centre.toPoint()));
        QCOMPARE(w->view(), MainWindow::View::range);
        QCOMPARE(w->rangeView()->runA(), 1);
        QCOMPARE(w->rangeView()->layer(), 2);
        QCOMPARE(w->rangeView()->step(), 7);
        QCOMPARE(w->rangeView()->tensor(), HistTensor::grad_output);  // overflow: the gradients that blew up
        QVERIFY(!w->rangeView()->following());

        // Their pictures (ui/kit/png_export.hpp, for Export the view as PNG) leave the control rows
        // out: the Where view's is its canvas, the charts' starts below the options row, and none of
        // them is the whole page. MPX_VIEW_PICTURES=DIR saves them to look at.
        const std::pair<MainWindow::View, QWidget*> pages[] = {{MainWindow::View::range, w->rangeView()},
                                                               {MainWindow::View::where, w->whereView()},
                                                               {MainWindow::View::updates, w->updatesView()},
                                                               {MainWindow::View::charts, w->charts()}};
        for (const auto& [view, page] : pages) {
            w->setView(view);
            const QPixmap pic = mpx::ui::pictureOf(page);
            if (const QString keep = qEnvironmentVariable("MPX_VIEW_PICTURES"); !keep.isEmpty())
                QVERIFY(pic.save(QStringLiteral("%1/%2.png").arg(keep, QString::fromLatin1(page->metaObject()->className()).section(QStringLiteral("::"), -1))));
            // A scroll area's content counts whole: the picture unrolls it (every chart of the list).
            int unrolled = page->height();
            for (const QScrollArea* a : page->findChildren<QScrollArea*>())
                if (a->widget()) unrolled += std::max(0, a->widget()->height() - a->viewport()->height());
            QVERIFY2(pic.height() < unrolled - 20,
                     qPrintable(QStringLiteral("%1: %2 of %3").arg(QLatin1String(page->metaObject()->className())).arg(pic.height()).arg(unrolled)));
            QVERIFY(pic.width() > 300 && pic.height() > 150);
        }
        w->setView(MainWindow::View::where);
        const QWidget* whereCanvas = w->whereView()->childAt(w->whereView()->heatRect().center());
        QVERIFY(whereCanvas);
        QCOMPARE(mpx::ui::pictureOf(w->whereView()).size(), whereCanvas->size());

        // Every view exports a non-empty picture of itself.
        for (auto v : {MainWindow::View::range, MainWindow::View::where, MainWindow::View::updates}) {
            w->setView(v);
            const QString path = dir.filePath(QStringLiteral("view%1.png").arg(static_cast<int>(v)));
            QVERIFY(w->exportViewPng(path));
            const QImage img(path);
            QVERIFY(!img.isNull());
            QVERIFY(img.width() > 300 && img.height() > 200);
            // Not blank: more than a handful of colours.
            QSet<QRgb> colours;
            for (int y = 0; y < img.height(); y += 7)
                for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
            QVERIFY2(colours.size() > 8, qPrintable(QStringLiteral("view %1: %2 colours").arg(static_cast<int>(v)).arg(colours.size())));
        }
    }

    // The Updates view's layer choice and step slider: one layer's bins or all layers added, at the
    // collected step chosen; a step a run skipped shows no update for it.
    void updates_view_shows_the_chosen_layer_at_the_chosen_step() {
        Fed f;
        // update_ulp of layer l at step s: 10·(l+1) values at bin −5 − l and s values at bin 3.
        const auto snap = [](long long step, bool skipped) {
            mpx::HistogramSnapshot s = snapshot(step, 1.0);
            if (!skipped)
                for (int l = 0; l < k_layers; ++l)
                    s.add(l, HistTensor::update_ulp, mpx::Format::fp32,
                          bins({{-5 - l, 10 * (l + 1)}, {3, static_cast<unsigned long long>(step)}}));
            return s;
        };
        UpdatesView u(&f.store);
        for (long long step : {10, 20, 30}) {
            f.buffer.appendHistogram(0, snap(step, false));
            f.buffer.appendHistogram(1, snap(step, step == 20));  // run 1 skipped step 20
            f.store.drainNow();
        }
        QVERIFY(u.following());
        QCOMPARE(u.step(), 30);
        QCOMPARE(u.layer(), -1);  // all layers
        UpdatesView::Curve c = u.curve(0);
        QCOMPARE(c.step, 30);
        QCOMPARE(c.nonzero, 10ull + 20 + 30 + 3 * 30);
        QCOMPARE(c.n[static_cast<std::size_t>(-6 - mpx::core::k_bin_min)], 20ull);
        QCOMPARE(u.shareBelowHalfUlp(0), 60.0 / 150);
        u.setLayer(1);  // fc2 only
        c = u.curve(0);
        QCOMPARE(c.nonzero, 20ull + 30);
        QCOMPARE(c.n[static_cast<std::size_t>(-6 - mpx::core::k_bin_min)], 20ull);
        QCOMPARE(c.n[static_cast<std::size_t>(-5 - mpx::core::k_bin_min)], 0ull);
        QCOMPARE(u.shareBelowHalfUlp(0), 20.0 / 50);
        u.setStep(19);  // the nearest collected step
        QCOMPARE(u.step(), 20);
        QVERIFY(!u.following());
        QCOMPARE(u.curve(0).nonzero, 20ull + 20);
        QCOMPARE(u.curve(1).step, 20);  // skipped: the step, no updates
        QCOMPARE(u.curve(1).nonzero, 0ull);
        QCOMPARE(u.shareBelowHalfUlp(1), 0.0);
        f.add(40, 1.0);  // training goes on; the view stays at its step
        QCOMPARE(u.step(), 20);
    }

    void updates_share_left_of_half_ulp_is_the_count() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        auto cfg = mpx::gui::loadConfig(QStringLiteral("lost-updates")).config;
        QVERIFY(cfg);
        cfg->steps = 60;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(*cfg, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->setView(MainWindow::View::charts);
        w->run(21);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), 21, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
        w->store()->drainNow();
        QVERIFY(w->updatesView()->lostPlot()->points(0).isEmpty());  // hidden: not refreshed while training
        w->setView(MainWindow::View::updates);  // shown: catches up at once
        UpdatesView* u = w->updatesView();
        for (int run = 0; run < 3; ++run) {
            const auto& s = w->store()->histograms(run).snapshots().back();
            QCOMPARE(s.step, 20);
            unsigned long long below = 0, all = 0;
            for (int l = 0; l < 3; ++l) {
                const mpx::Histogram* h = s.find(l, HistTensor::update_ulp);
                QVERIFY(h);
                for (int b = mpx::core::k_bin_min; b <= mpx::core::k_bin_max; ++b) {
                    all += s.count(*h, b);
                    if (b <= -2) below += s.count(*h, b);  // bin −2 holds [¼, ½) of an ulp
                }
            }
            QVERIFY(all > 0);
            QCOMPARE(u->curve(run).step, 20);
            QCOMPARE(u->curve(run).nonzero, all);
            QCOMPARE(u->shareBelowHalfUlp(run), static_cast<double>(below) / static_cast<double>(all));
        }
        // pure-fp16 (FP16 weights) loses most updates; fp32 weights lose few (the preset's lesson).
        QVERIFY(u->shareBelowHalfUlp(2) > 0.5);
        QVERIFY(u->shareBelowHalfUlp(0) < u->shareBelowHalfUlp(2));
        // The lost-updates line beneath is the Training tab's metric, one point per recorded step here.
        QVERIFY(!u->lostPlot()->points(0).isEmpty());
    }
};

QTEST_MAIN(TestWhereUpdatesViews)
#include "test_where_updates_views.moc"
