// The Range view on the offscreen platform: its bars are the snapshot's shares and its bands sit at
// each format's limits, the unscaled overlay is shifted by log2(loss scale), the slider follows the
// newest step until moved. On FP8 runs it shades the FP8 cast's bands where the engine's scale for
// that step, layer and tensor puts them (E4M3 for input and weight, E5M2 for grad_output under
// fp8-hybrid), explains MXFP8's per-block scales instead, and names the step whose scale it used
// when the store thinned. It draws only the session's formats' limits, explains exact zeros, stays
// whole at a laptop's width; an exported view is its picture without its controls. The Where and
// Updates views' tests are in test_where_updates_views.cpp.
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
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


class TestHistogramViews : public QObject {
    Q_OBJECT
    QTemporaryDir dir;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
    }

    void range_bars_are_the_snapshots_shares() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        QCOMPARE(v.runA(), 0);  // amp-fp16+none above amp-fp16+pytorch
        QCOMPARE(v.runB(), 1);
        QCOMPARE(v.layer(), 1);  // fc2
        QCOMPARE(v.tensor(), HistTensor::grad_weight);
        const RangeView::Panel p = v.panel(0);
        QCOMPARE(p.total, 60ull);
        QCOMPARE(p.format, mpx::Format::fp16);
        auto share = [&](int bin) { return p.share[static_cast<std::size_t>(bin - mpx::core::k_bin_min)]; };
        QCOMPARE(share(-30), 5.0 / 60);
        QCOMPARE(share(-20), 15.0 / 60);
        QCOMPARE(share(-10), 30.0 / 60);
        QCOMPARE(share(-11), 0.0);
        QCOMPARE(p.zero, 10.0 / 60);
        QCOMPARE(p.inf, 0.0);
        QVERIFY(p.unscaled.empty());  // run A's scale is 1: nothing to shift
    }

    void bands_sit_at_the_formats_limits_data() {
        QTest::addColumn<mpx::Format>("format");
        QTest::addColumn<double>("flushBelow");
        QTest::addColumn<double>("normalFrom");
        QTest::addColumn<double>("largest");
        QTest::newRow("fp16") << mpx::Format::fp16 << -25.0 << -14.0 << 65504.0;
        QTest::newRow("bf16") << mpx::Format::bf16 << -134.0 << -126.0 << 3.3895313892515355e38;
        QTest::newRow("e4m3") << mpx::Format::e4m3 << -10.0 << -6.0 << 448.0;
        QTest::newRow("e5m2") << mpx::Format::e5m2 << -17.0 << -14.0 << 57344.0;
        // E2M1 from its facts alone: 0.25 ties to 0, 0.5 is its subnormal, 1 … 6 its normals.
        QTest::newRow("e2m1") << mpx::Format::e2m1 << -2.0 << 0.0 << 6.0;
    }
    void bands_sit_at_the_formats_limits() {
        QFETCH(mpx::Format, format);
        QFETCH(double, flushBelow);
        QFETCH(double, normalFrom);
        QFETCH(double, largest);
        const auto b = RangeView::bands(format);
        QCOMPARE(b.size(), 4u);
        QCOMPARE(b[0].band, RangeView::Band::flushed);
        QCOMPARE(b[0].hi, flushBelow);  // below half the smallest subnormal: rounds to 0
        QCOMPARE(b[1].band, RangeView::Band::subnormal);
        QCOMPARE(b[1].lo, flushBelow);
        QCOMPARE(b[1].hi, normalFrom);
        QCOMPARE(b[2].band, RangeView::Band::normal);
        QCOMPARE(b[2].hi, std::log2(largest));
        QCOMPARE(b[3].band, RangeView::Band::overflow);
        QCOMPARE(b[3].lo, std::log2(largest));
    }

    void unscaled_overlay_is_shifted_by_log2_of_the_scale() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        // grad_weight: the engine's own unscaled histogram, 16 bins to the left.
        RangeView::Panel p = v.panel(1);
        QCOMPARE(p.shift, 16.0);
        QCOMPARE(p.unscaled.size(), 3u);
        QCOMPARE(p.unscaled[0].first, -46.0);
        QCOMPARE(p.unscaled[0].second, 5.0 / 60);
        QCOMPARE(p.unscaled[2].first, -26.0);
        for (std::size_t i = 0; i < 3; ++i)
            QCOMPARE(p.unscaled[i].first + p.shift,
                     static_cast<double>(std::array{-30, -20, -10}[i]));  // each bar moved by log2(scale)
        // grad_output: its own bars moved by −log2(scale).
        v.setTensor(HistTensor::grad_output);
        p = v.panel(1);
        QCOMPARE(p.unscaled.size(), 2u);
        QCOMPARE(p.unscaled[0].first, -12.0 - 16.0);
        QCOMPARE(p.unscaled[0].second, 0.4);
        QCOMPARE(p.unscaled[1].first, -8.0 - 16.0);
        QCOMPARE(p.unscaled[1].second, 0.6);
        v.setTensor(HistTensor::preact);  // not a gradient: no overlay
        QVERIFY(v.panel(1).unscaled.empty());
    }

    // Thin lines only for the formats the session's runs use: two FP16 runs (FP32 for the unscaled
    // gradients) draw FP32's and FP16's limits, not BF16's, E4M3's or E5M2's; the caption's "off this
    // axis" names only those too.
    void range_lines_are_the_sessions_formats_only() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        QCOMPARE(v.limitFormats(), (std::vector<mpx::Format>{mpx::Format::fp32, mpx::Format::fp16}));
        const QStringList c = v.caption(0);
        QCOMPARE(c.last(), QStringLiteral("Off this axis: FP32 2⁻¹⁴⁹ … 2¹²⁸."));
        QVERIFY(!c.join(QLatin1Char(' ')).contains(QStringLiteral("BF16")));
    }

    // The caption says what the exact zeros are: no bar, not underflow, where they come from, and
    // what share the bars are.
    void range_caption_explains_the_exact_zeros() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        const QString first = v.caption(0).front();  // fc2 grad_weight: 10 zeros of 60 values
        QVERIFY2(first.startsWith(QStringLiteral("Exactly 0 before rounding: 16.7 % of the 60 values.")), qPrintable(first));
        QVERIFY2(first.contains(QStringLiteral("are not underflow")), qPrintable(first));
        QVERIFY2(first.contains(QStringLiteral("when its input was 0, or its ReLU unit off")), qPrintable(first));
        QVERIFY2(first.endsWith(QStringLiteral("The bars are the other 83.3 %.")), qPrintable(first));
        v.setTensor(HistTensor::grad_output);  // 100 values, none 0
        QVERIFY2(v.caption(0).front().startsWith(QStringLiteral("100 values, none exactly 0")), qPrintable(v.caption(0).front()));
    }

    // At a laptop's width (the docks leave the view some 570 px) the choices are whole, and the band
    // labels are whole, inside the plot and apart: a narrow band takes a shorter form of its label.
    void range_is_whole_at_a_laptops_width() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        v.resize(570, 800);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QVERIFY2(v.minimumSizeHint().width() <= 570, qPrintable(QString::number(v.minimumSizeHint().width())));
        for (const QComboBox* c : v.findChildren<QComboBox*>())
            QVERIFY2(c->width() >= c->sizeHint().width(), qPrintable(c->currentText()));
        const QRect r = v.plotRect(0);
        const auto [lo, hi] = v.axisRange();
        const mpx::ui::Log2Axis ax{lo, hi, QRectF(r)};
        QFont small = v.font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        const QFontMetrics fs(small);
        const auto labels = mpx::ui::placeBandLabels(ax, QRectF(r), RangeView::bands(mpx::Format::fp16), mpx::Format::fp16, nullptr, fs);
        QCOMPARE(labels.size(), 4u);  // every band named
        double end = -1e9;
        for (const auto& l : labels) {
            const double w = fs.horizontalAdvance(l.text);
            QVERIFY2(l.x >= r.left() && l.x + w <= r.right() + 1, qPrintable(l.text));
            QVERIFY2(l.x >= end, qPrintable(l.text));
            QVERIFY(!l.text.contains(QStringLiteral("…")));
            end = l.x + w;
        }
        QVERIFY(mpx::ui::bandLabels(RangeView::bands(mpx::Format::fp16)[1], mpx::Format::fp16, nullptr).contains(labels[1].text));
        // A band wide enough takes its whole label.
        const mpx::ui::Log2Axis wide{lo, hi, QRectF(0, 0, 4000, 100)};
        const auto whole = mpx::ui::placeBandLabels(wide, QRectF(0, 0, 4000, 100), RangeView::bands(mpx::Format::fp16), mpx::Format::fp16, nullptr, fs);
        QCOMPARE(whole[1].text, QStringLiteral("subnormal (fewer digits)"));
        QCOMPARE(whole[3].text, QStringLiteral("overflow (above 65504)"));
    }

    // An exported view is its picture: the Range view's PNG is its canvas (legend, titles, plots,
    // captions) without the combo boxes and the step slider; on any page, controls and the labels
    // beside them are left out, a run's legend check box shows as its swatch and name (an unticked
    // run not at all), captions and charts stay where they were.
    void a_views_picture_leaves_its_controls_out() {
        Fed f;
        f.add(0, 65536);
        RangeView v(&f.store);
        v.resize(900, 800);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QWidget* canvas = v.childAt(v.plotRect(0).center());
        QVERIFY(canvas && !qobject_cast<QComboBox*>(canvas));
        const QImage pic = mpx::ui::pictureOf(&v).toImage().convertToFormat(QImage::Format_RGB32);
        QCOMPARE(pic.size(), canvas->size());
        QCOMPARE(pic, canvas->grab().toImage().convertToFormat(QImage::Format_RGB32));
        const QString path = dir.filePath(QStringLiteral("range-picture.png"));
        QVERIFY(mpx::ui::saveViewPng(&v, path));
        QCOMPARE(QImage(path).size(), canvas->size());

        struct Solid : QWidget {
            QColor c;
            void paintEvent(QPaintEvent*) override { QPainter(this).fillRect(rect(), c); }
        };
        QWidget page;
        auto* col = new QVBoxLayout(&page);
        auto* bar = new QHBoxLayout;
        bar->addWidget(new QLabel(QStringLiteral("Run")));
        bar->addWidget(new QComboBox);
        bar->addWidget(new QCheckBox(QStringLiteral("Log loss")));
        col->addLayout(bar);
        auto* legend = new QHBoxLayout;
        auto* shown = new QCheckBox(QStringLiteral("amp-fp16"));
        shown->setIcon(mpx::ui::swatch(QColor(Qt::red), 12));
        shown->setChecked(true);
        auto* hidden = new QCheckBox(QStringLiteral("fp32"));
        hidden->setIcon(mpx::ui::swatch(QColor(Qt::blue), 12));
        legend->addWidget(shown);
        legend->addWidget(hidden);
        col->addLayout(legend);
        auto* caption = new QLabel(QStringLiteral("A caption under the legend"));
        col->addWidget(caption);
        auto* chart = new Solid;
        chart->c = QColor(Qt::green);
        chart->setMinimumSize(200, 100);
        col->addWidget(chart, 1);
        page.resize(400, 320);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        const QImage sheet = mpx::ui::pictureOf(&page).toImage().convertToFormat(QImage::Format_RGB32);
        const QRect want = shown->geometry() | caption->geometry() | chart->geometry();
        QCOMPARE(sheet.size(), want.size());  // from the legend down: the control row is cut off
        QCOMPARE(sheet.pixel(chart->geometry().center() - want.topLeft()), QColor(Qt::green).rgb());
        int red = 0, blue = 0;
        for (int y = 0; y < sheet.height(); ++y)
            for (int x = 0; x < sheet.width(); ++x) {
                red += sheet.pixel(x, y) == QColor(Qt::red).rgb();
                blue += sheet.pixel(x, y) == QColor(Qt::blue).rgb();
            }
        QVERIFY(red > 20);   // the ticked run's swatch
        QCOMPARE(blue, 0);   // the unticked run is not in the picture
    }

    void range_follows_the_newest_step_until_moved() {
        Fed f;
        RangeView v(&f.store);
        f.add(0, 1024);
        f.add(10, 1024);
        QCOMPARE(v.step(), 10);
        QVERIFY(v.following());
        f.add(20, 1024);
        QCOMPARE(v.step(), 20);
        v.setStep(9);  // the nearest collected step
        QCOMPARE(v.step(), 10);
        QVERIFY(!v.following());
        f.add(30, 1024);
        QCOMPARE(v.step(), 10);
        QCOMPARE(v.panel(1).step, 10);  // run B at the same step
    }

    // The window trains the fp8 preset (fp32, amp-bf16, fp8-hybrid+delayed, fp8-hybrid+current,
    // mxfp8; 784-128-10) for 21 steps; an engine session of the same configuration in this thread
    // gives the rows whose scales must place the bands at the collected step 20.
    void range_fp8_bands_sit_where_the_engines_scale_puts_them() {
        auto w = std::make_unique<MainWindow>();
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        auto cfg = mpx::gui::loadConfig(QStringLiteral("fp8")).config;
        QVERIFY(cfg);
        QCOMPARE(cfg->instruments.every, 10);
        constexpr int steps = 21;
        cfg->steps = 40;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(*cfg, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->setView(MainWindow::View::range);
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 120'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
        w->store()->drainNow();
        RangeView* v = w->rangeView();
        // An FP8 session opens on its first FP8 run beside its last, fc2's input (fc1's activations).
        QCOMPARE(v->runA(), 2);
        QCOMPARE(v->runB(), 4);
        QCOMPARE(v->layer(), 1);
        QCOMPARE(v->tensor(), HistTensor::input);
        QCOMPARE(v->step(), 20);
        // Its thin lines: the formats these runs store and cast to (FP32, BF16, E4M3 forward, E5M2
        // gradients); FP16 is no run's.
        QCOMPARE(v->limitFormats(), (std::vector<mpx::Format>{mpx::Format::fp32, mpx::Format::bf16, mpx::Format::e4m3, mpx::Format::e5m2}));
        // The Where view opens on the same first FP8 run, counting its saturations (its BF16
        // gradients' underflow map would be empty).
        QCOMPARE(w->whereView()->run(), 2);
        QCOMPARE(w->whereView()->measure(), WhereView::Measure::overflowCount);

        mpx::Session engine(w->store()->session()->config);
        for (int s = 0; s < steps; ++s) engine.step();
        auto rowAt = [&](int run, int layer, Fp8Tensor t) {
            for (const Fp8ScaleRow& r : engine.run(static_cast<std::size_t>(run)).fp8_scales())
                if (r.step == 20 && r.layer == layer && r.tensor == t) return r;
            return Fp8ScaleRow{-1};
        };
        struct Case {
            int run, layer;
            HistTensor tensor;
            Fp8Tensor operand;
            mpx::Format format;
        };
        for (const Case c : {Case{2, 0, HistTensor::input, Fp8Tensor::x, mpx::Format::e4m3},
                             Case{2, 0, HistTensor::weight, Fp8Tensor::w, mpx::Format::e4m3},
                             Case{2, 1, HistTensor::input, Fp8Tensor::x, mpx::Format::e4m3},
                             Case{2, 1, HistTensor::grad_output, Fp8Tensor::dy, mpx::Format::e5m2},
                             Case{2, 0, HistTensor::grad_output, Fp8Tensor::dy, mpx::Format::e5m2},
                             Case{3, 1, HistTensor::weight, Fp8Tensor::w, mpx::Format::e4m3}}) {
            const QString what = QStringLiteral("run %1 fc%2 %3").arg(c.run).arg(c.layer + 1).arg(static_cast<int>(c.tensor));
            v->setRuns(c.run, -1);
            v->setLayer(c.layer);
            v->setTensor(c.tensor);
            const RangeView::Panel p = v->panel(0);
            const Fp8ScaleRow row = rowAt(c.run, c.layer, c.operand);
            QVERIFY2(row.step == 20 && row.scale > 0, qPrintable(what));
            QVERIFY2(p.found && p.fp8.fp8Run && p.fp8.active && !p.fp8.block, qPrintable(what));
            QCOMPARE(p.step, 20);
            QCOMPARE(p.fp8.rowStep, 20);
            QCOMPARE(p.fp8.format, c.format);
            QCOMPARE(p.fp8.scale, static_cast<double>(row.scale));
            QCOMPARE(p.fp8.amax, static_cast<double>(row.amax));
            QCOMPARE(p.fp8.count, row.count);
            QCOMPARE(p.fp8.saturated, row.saturated);
            QCOMPARE(p.fp8.overflow, mpx::Overflow::saturate);  // E4M3 as the preset sets it; E5M2 always
            // Each edge 2^k of the format sits at 2^k ÷ scale: the format's log2 edges − log2(scale).
            const auto unscaled = RangeView::bands(c.format);
            const double log2Scale = std::log2(static_cast<double>(row.scale));
            QCOMPARE(p.fp8.bands.size(), 4u);
            QCOMPARE(p.shaded.size(), 4u);
            for (std::size_t i = 0; i < 4; ++i) {
                QCOMPARE(p.fp8.bands[i].band, unscaled[i].band);
                QCOMPARE(p.shaded[i].band, unscaled[i].band);
                if (i > 0) QCOMPARE(p.fp8.bands[i].lo, unscaled[i].lo - log2Scale);
                if (i < 3) QCOMPARE(p.fp8.bands[i].hi, unscaled[i].hi - log2Scale);
                if (i > 0) QCOMPARE(p.shaded[i].lo, p.fp8.bands[i].lo);
            }
            // Current scaling: max ÷ scale, the largest |value| that fits, is the step's own amax (up to
            // the rounding of the scale to FP32).
            if (c.run == 3)
                QVERIFY(std::abs(std::exp2(p.fp8.bands[3].lo) / static_cast<double>(row.amax) - 1) < 1e-6);
            QVERIFY2(p.fp8.title.contains(QString::fromLatin1(mpx::format_info(c.format).name).toUpper()), qPrintable(p.fp8.title));
            QVERIFY2(p.fp8.note.startsWith(QStringLiteral("Shaded: %1's range as the matrix product casts these values")
                                               .arg(QString::fromLatin1(mpx::format_info(c.format).name).toUpper())),
                     qPrintable(p.fp8.note));
            // The axis shows the cast's bands, not BF16's whole range.
            const auto [lo, hi] = v->axisRange();
            QVERIFY(lo <= p.fp8.bands[1].lo && hi >= p.fp8.bands[3].lo);
            QVERIFY2(lo > -100 && hi < 100, qPrintable(what));
        }
        // Not an FP8 operand (preact), and not an FP8 run (amp-bf16): the storage format's bands.
        v->setRuns(2, -1);
        v->setTensor(HistTensor::preact);
        RangeView::Panel p = v->panel(0);
        QVERIFY(p.fp8.fp8Run && !p.fp8.active && p.fp8.note.isEmpty());
        QCOMPARE(p.shaded[2].hi, RangeView::bands(p.format)[2].hi);
        v->setRuns(1, -1);
        v->setTensor(HistTensor::input);
        p = v->panel(0);
        QVERIFY(p.found);
        QVERIFY(!p.fp8.fp8Run && !p.fp8.active && p.fp8.bands.empty() && p.fp8.note.isEmpty() && p.fp8.title.isEmpty());
        for (std::size_t i = 0; i < 4; ++i) QCOMPARE(p.shaded[i].hi, RangeView::bands(p.format)[i].hi);
        // MXFP8: no single band; the storage format stays shaded, the window of the amax's block is
        // E4M3's bands moved by that block's shared exponent, and the caption says why.
        v->setRuns(4, -1);
        v->setLayer(0);
        p = v->panel(0);
        const Fp8ScaleRow mx = rowAt(4, 0, Fp8Tensor::x);
        QVERIFY(p.fp8.active && p.fp8.block);
        QCOMPARE(p.fp8.scale, 0.0);
        QCOMPARE(p.fp8.amax, static_cast<double>(mx.amax));
        QCOMPARE(p.fp8.shift, static_cast<double>(mpx::core::mx_shared_exponent(mx.amax)));
        QCOMPARE(p.fp8.bands[3].lo, std::log2(448.0) + p.fp8.shift);
        for (std::size_t i = 0; i < 4; ++i) QCOMPARE(p.shaded[i].hi, RangeView::bands(p.format)[i].hi);
        QVERIFY2(p.fp8.note.startsWith(QStringLiteral("MXFP8: every block of 32 values has its own power-of-two scale")),
                 qPrintable(p.fp8.note));
        QVERIFY2(p.fp8.note.contains(QStringLiteral("no single band fits the whole tensor")), qPrintable(p.fp8.note));
        // The view draws it (and the two FP8 runs side by side) into a picture.
        v->setRuns(2, 4);
        const QString png = dir.filePath(QStringLiteral("range-fp8.png"));
        QVERIFY(w->exportViewPng(png));
        QVERIFY(QImage(png).width() > 400);
    }

    // A long run's store keeps one row per bucket: the view uses the nearest row and names its step.
    // fp8-e4m3 casts dy to E4M3, and fp8.e4m3_overflow = nan makes its overflow NaN, not saturation.
    void range_fp8_names_the_step_whose_scale_it_uses() {
        RecordBuffer buffer;
        RecordStore store{&buffer};
        auto info = std::make_shared<mpx::gui::SessionInfo>();
        info->generation = 1;
        info->config = mpx::load_config("default");
        info->config.model.sizes = {2, 16, 2};
        info->config.fp8.e4m3_overflow = mpx::E4m3Overflow::nan;
        info->runs = {{QStringLiteral("fp8-e4m3+current"), mpx::parse_run_spec("fp8-e4m3+current")}};
        info->totalSteps = 100;
        buffer.beginSession(info);
        mpx::HistogramSnapshot snap;
        snap.step = 10;
        snap.layer_counts.resize(2 * 3);
        snap.add(0, HistTensor::grad_output, mpx::Format::bf16, bins({{-12, 40}}));
        buffer.appendHistogram(0, snap);
        std::vector<std::pair<int, Fp8ScaleRow>> rows;
        for (long long step : {9, 12}) {
            Fp8ScaleRow r;
            r.step = step;
            r.layer = 0;
            r.tensor = Fp8Tensor::dy;
            r.format = mpx::Format::e4m3;
            r.amax = 7.0f;
            r.scale = step == 9 ? 64.0f : 4.0f;
            r.count = r.nonzero = 40;
            rows.emplace_back(0, r);
        }
        buffer.appendFp8(rows);
        store.drainNow();
        RangeView v(&store);
        QCOMPARE(v.tensor(), HistTensor::input);
        v.setLayer(0);
        v.setTensor(HistTensor::grad_output);
        const RangeView::Panel p = v.panel(0);
        QCOMPARE(p.step, 10);
        QVERIFY(p.fp8.active);
        QCOMPARE(p.fp8.rowStep, 9LL);  // 1 step away, 12 is 2
        QCOMPARE(p.fp8.scale, 64.0);
        QCOMPARE(p.fp8.bands[3].lo, std::log2(448.0) - 6);
        QCOMPARE(p.fp8.overflow, mpx::Overflow::infinity);  // E4M3 has no inf: NaN
        QVERIFY2(p.fp8.note.contains(QStringLiteral("(the scale of step 9: the store kept no row at 10)")), qPrintable(p.fp8.note));
        QVERIFY2(p.fp8.note.contains(QStringLiteral("they become NaN")), qPrintable(p.fp8.note));
        QCOMPARE(mpx::ui::bandLabel(p.fp8.bands[3], p.format, &p.fp8), QStringLiteral("overflow (above 7)"));
    }
};

QTEST_MAIN(TestHistogramViews)
#include "test_histogram_views.moc"
