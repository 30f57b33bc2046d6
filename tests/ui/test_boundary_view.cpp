// The Decision boundaries view end to end on the offscreen platform: grids are computed only while
// the view is shown, reach it through the worker's buffer holding exactly what an independent
// Session computes, are drawn cell for cell in the colours the view promises, show their size and
// cost, follow training to the step it stopped at, and a data set without a plane gets the engine's
// refusal in words instead of maps.
#include <QHelpEvent>
#include <QImage>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "engine/run/boundary.hpp"
#include "engine/run/session.hpp"
#include "ui/kit/run_style.hpp"
#include "ui/views/boundary_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::BoundaryView;
using mpx::ui::MainWindow;

namespace {

mpx::SessionConfig spirals(long long steps) {
    mpx::SessionConfig c = mpx::load_config("default");
    c.steps = steps;
    c.runs = {"fp32", "amp-fp16", "pure-fp16"};
    c.model.sizes = {2, 32, 32, 2};
    c.data.n_train = 512, c.data.n_test = 128;
    c.train.batch = 64;
    return c;
}

}  // namespace

class TestBoundaryView : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;
    QTemporaryDir dir;

    void applyAndWait(const mpx::SessionConfig& c) {
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
    }
    void runTo(qint64 steps) {
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::paused, 10'000);
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
    }
    void init() {
        w = std::make_unique<MainWindow>();
        w->setView(MainWindow::View::charts);
        w->resize(1500, 950);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    }
    void cleanup() { w.reset(); }

    void grids_come_only_while_the_view_is_shown_and_hold_the_engines_values() {
        const mpx::SessionConfig c = spirals(240);
        applyAndWait(c);
        runTo(40);
        QTest::qWait(300);  // time for a grid the worker should not make
        w->store()->drainNow();
        QVERIFY(!w->store()->boundaries());  // the charts are shown: no grid was computed

        w->setView(MainWindow::View::boundaries);
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->boundaries() != nullptr, 10'000);
        const auto b = w->store()->boundaries();
        QCOMPARE(b->step, 40LL);  // opened while paused: the weights of that step at once
        QCOMPARE(b->runs.size(), std::size_t(3));
        QVERIFY(b->resolution >= mpx::k_min_boundary_resolution && b->resolution <= mpx::k_max_boundary_resolution);

        // An independent Session of the same configuration, 40 steps on, gives the same grids.
        mpx::Session s(c);
        for (int i = 0; i < 40; ++i) s.step();
        const mpx::Boundaries ref = mpx::evaluate_boundaries(s, b->resolution);
        QCOMPARE(b->plane, ref.plane);
        for (std::size_t i = 0; i < 3; ++i) {
            QCOMPARE(b->runs[i].label, ref.runs[i].label);
            const auto &got = b->runs[i].confidence, &want = ref.runs[i].confidence;  // NaN where no prediction
            QCOMPARE(got.size(), want.size());
            QVERIFY(std::equal(got.begin(), got.end(), want.begin(),
                               [](float a, float e) { return a == e || (std::isnan(a) && std::isnan(e)); }));
        }
        QCOMPARE(b->agreement, ref.agreement);

        // Drawn cell for cell in the promised colours: row 0 (lowest y) at the bottom of the image.
        BoundaryView* v = w->boundaryView();
        QTRY_COMPARE(v->mapImage(0).width(), b->resolution);
        const int n = b->resolution;
        for (int run = 0; run < 3; ++run) {
            const QImage img = v->mapImage(run);
            for (int r = 0; r < n; ++r)
                for (int col = 0; col < n; ++col) {
                    const auto cell = static_cast<std::size_t>(r * n + col);
                    QCOMPARE(img.pixel(col, n - 1 - r) & 0xFFFFFF,
                             BoundaryView::cellColour(b->runs[static_cast<std::size_t>(run)].label[cell],
                                                      b->runs[static_cast<std::size_t>(run)].confidence[cell], 2) & 0xFFFFFF);
                }
            QVERIFY(v->mapRect(run).width() > 150);  // three maps side by side in a 1500-wide window
            QCOMPARE(v->mapRect(run).width(), v->mapRect(run).height());
        }
        QVERIFY(v->mapRect(0).right() < v->mapRect(1).left());
        QCOMPARE(v->mapRect(0).top(), v->mapRect(2).top());
        QVERIFY(v->costText().startsWith(QStringLiteral("%1×%1 grid per run, ").arg(n)));
        QVERIFY(v->costText().contains(QStringLiteral(" ms for 3 runs")));

        // Training on: newer grids follow, and the last one shows the step training stopped at.
        runTo(120);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->boundaries()->step, 120LL, 10'000);
        QVERIFY(v->showsStep(120));

        // Back to the charts: no more grids.
        w->setView(MainWindow::View::charts);
        const auto last = w->store()->boundaries();
        runTo(200);
        QTest::qWait(300);
        w->store()->drainNow();
        QCOMPARE(w->store()->boundaries(), last);
    }

    // Pale at chance, deep when sure, each class its own colour, grey without a prediction.
    void cell_colours_read_as_class_and_confidence() {
        auto lightness = [](QRgb c) { return QColor(c).lightness(); };
        QVERIFY(lightness(BoundaryView::cellColour(0, 0.5f, 2)) > lightness(BoundaryView::cellColour(0, 0.75f, 2)));
        QVERIFY(lightness(BoundaryView::cellColour(0, 0.75f, 2)) > lightness(BoundaryView::cellColour(0, 1.0f, 2)));
        QCOMPARE(BoundaryView::cellColour(1, 0.2f, 2), BoundaryView::cellColour(1, 0.5f, 2));  // below chance: chance
        QCOMPARE(QColor(BoundaryView::cellColour(0, 1.0f, 2)).hue(), mpx::ui::classColour(0).hue());
        QCOMPARE(QColor(BoundaryView::cellColour(1, 1.0f, 2)).hue(), mpx::ui::classColour(1).hue());
        QVERIFY(QColor(BoundaryView::cellColour(0, 0.5f, 2)) != QColor(BoundaryView::cellColour(1, 0.5f, 2)));
        // Chance for three classes is 1/3: a probability of 0.5 is already part-way to sure.
        QVERIFY(lightness(BoundaryView::cellColour(2, 0.5f, 3)) < lightness(BoundaryView::cellColour(2, 1.0f / 3, 3)));
        QCOMPARE(QColor(BoundaryView::cellColour(-1, NAN, 2)).saturation(), 0);
        QVERIFY(lightness(BoundaryView::cellColour(-1, NAN, 2)) < 80);
    }

    void a_data_set_without_a_plane_shows_the_refusal() {
        mpx::SessionConfig c = spirals(20);
        c.data.kind = mpx::DatasetKind::sine;
        c.model.sizes = {1, 16, 1};
        applyAndWait(c);
        w->setView(MainWindow::View::boundaries);
        runTo(10);
        QTest::qWait(300);
        w->store()->drainNow();
        BoundaryView* v = w->boundaryView();
        QCOMPARE(v->message(), QString::fromStdString(mpx::boundary_refusal(c.data)));
        QVERIFY(v->message().contains(QStringLiteral("sine has 1 input feature")));
        QVERIFY(!w->store()->boundaries());
        QVERIFY(v->mapRect(0).isEmpty());
        QVERIFY(v->showsStep(10));  // nothing to wait for (a screenshot goes ahead)
        // Back to a plane: maps again.
        applyAndWait(spirals(20));
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->boundaries() != nullptr, 10'000);
        QTRY_VERIFY(v->message().isEmpty());
        QVERIFY(!v->mapRect(2).isEmpty());
    }

    void the_view_exports_as_png_and_explains_a_cell() {
        applyAndWait(spirals(60));
        w->setView(MainWindow::View::boundaries);
        runTo(30);
        QTRY_VERIFY_WITH_TIMEOUT(w->boundaryView()->showsStep(30), 10'000);
        const QString png = dir.filePath(QStringLiteral("boundaries.png"));
        QVERIFY(w->exportViewPng(png));
        const QImage img(png);
        QCOMPARE(img.size(), w->boundaryView()->size() * w->boundaryView()->devicePixelRatio());
        // Hovering a map names the cell's class and probability in every run.
        BoundaryView* v = w->boundaryView();
        const QRect r = v->mapRect(1);
        const QPoint mid = r.center();
        QHelpEvent help(QEvent::ToolTip, mid, v->mapToGlobal(mid));
        QApplication::sendEvent(v, &help);
        QTRY_VERIFY(QToolTip::isVisible());
        QVERIFY2(QToolTip::text().contains(QStringLiteral("fp32: class")), qPrintable(QToolTip::text()));
        QVERIFY(QToolTip::text().contains(QStringLiteral("pure-fp16: class")));
        QVERIFY(QToolTip::text().contains(QStringLiteral("probability")));
        QHelpEvent outside(QEvent::ToolTip, QPoint(2, 2), v->mapToGlobal(QPoint(2, 2)));
        QApplication::sendEvent(v, &outside);
        QTRY_VERIFY(QToolTip::text().contains(QStringLiteral("own precision")));
    }
};

QTEST_MAIN(TestBoundaryView)
#include "test_boundary_view.moc"
