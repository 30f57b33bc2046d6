// What a class sees first and around Run (issue 27, items 6, 8 and 10): the hover readout stays up
// while the mouse rests on a chart; the charts before any data have no duplicate tick labels and the
// Memory chart no invented axes; Momentum is greyed unless the optimizer is SGD; Classes shows the
// data set's real count; the reset badge is quiet until something changed; the sweep exports nothing
// before a sweep; the format explorer closes on Esc and Ctrl+W and names mpx once.
// QTEST_QPA_MOUSE_HANDLING: mouse moves go through the window system path, as a real mouse does, so
// QApplication's tooltip timer (the one that used to hide the readout) runs.
#define QTEST_QPA_MOUSE_HANDLING
#include <QChartView>
#include <QElapsedTimer>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTest>
#include <QTextDocument>
#include <QToolTip>
#include <QValueAxis>
#include <map>

#include "engine/config/session_config.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/live_panel.hpp"
#include "ui/panels/setup_panel.hpp"
#include "ui/panels/sweep_panel.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/session/sweep_job.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::ChartId;
using mpx::ui::MainWindow;
using mpx::ui::PlotWidget;

namespace {

mpx::SessionConfig smallConfig(long long steps = 200) {
    mpx::SessionConfig c = mpx::load_config("default");
    mpx::apply_overrides(c, {"data.n_train=512", "data.n_test=128", "train.batch=64", "eval_every=20"});
    c.steps = steps;
    c.runs = {"fp32", "amp-fp16"};
    return c;
}

QChartView* viewOf(PlotWidget* p) { return p->findChild<QChartView*>(); }

// The texts a chart shows now, as laid out and rendered: Qt Charts puts each axis's tick labels in a
// group of their own, so the visible texts that share a parent item are one axis's labels.
std::map<const QGraphicsItem*, QStringList> labelGroups(PlotWidget* p) {
    std::map<const QGraphicsItem*, QStringList> out;
    for (QGraphicsItem* item : viewOf(p)->scene()->items())
        if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible() && !t->toPlainText().isEmpty())
            out[t->parentItem()] << t->toPlainText();
    return out;
}

QString duplicateIn(const QStringList& labels) {
    for (int i = 0; i < labels.size(); ++i)
        if (labels.indexOf(labels[i], i + 1) > 0) return labels[i];
    return {};
}

}  // namespace

class TestFirstLook : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
    }

    // Item 6. Before the fix, the mouse at rest made QGraphicsScene answer the tooltip request with
    // an empty tooltip ~0.7 s later, which hid the readout; it must stay at least as long as a
    // standard tooltip (6 s), and go when the mouse leaves the chart.
    void hover_readout_stays_while_the_mouse_rests() {
        MainWindow w;
        w.resize(1500, 950);
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w));  // Qt shows tooltips in the active window only
        QSignalSpy started(w.store(), &RecordStore::sessionStarted);
        w.applyConfig(smallConfig(), QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w.run(40);
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 40, 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(w.engine()->state(), EngineState::paused, 10'000);
        w.charts()->refresh();

        QChartView* view = viewOf(w.charts()->plot(ChartId::loss));
        const QPoint at = view->chart()->plotArea().center().toPoint();
        QTest::mouseMove(view->viewport(), at - QPoint(10, 0));
        QTest::mouseMove(view->viewport(), at);
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), 3'000);
        const QString readout = QToolTip::text();
        QVERIFY2(readout.contains(QStringLiteral("step")), qPrintable(readout));
        QVERIFY(readout.contains(QStringLiteral("amp-fp16")));

        // The mouse rests: the readout must still be up, and the same, 6.5 s later (checked every 50 ms).
        QElapsedTimer resting;
        resting.start();
        while (resting.elapsed() < 6'500) {
            QTest::qWait(50);
            QVERIFY2(QToolTip::isVisible(), qPrintable(QStringLiteral("hidden after %1 ms").arg(resting.elapsed())));
        }
        QCOMPARE(QToolTip::text(), readout);

        // Moving off the plot (onto the chart's title) takes it away.
        QTest::mouseMove(view->viewport(), QPoint(at.x(), 3));
        QTRY_VERIFY_WITH_TIMEOUT(!QToolTip::isVisible(), 3'000);
    }

    // Item 8: the charts a class sees before Run.
    void empty_charts_have_distinct_ticks_and_no_fake_memory_axes_data() {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("logLoss");
        QTest::addColumn<bool>("classroom");
        QTest::newRow("1600x1000") << QSize(1600, 1000) << false << false;
        QTest::newRow("1280x800") << QSize(1280, 800) << false << false;
        QTest::newRow("1280x800 log loss") << QSize(1280, 800) << true << false;
        QTest::newRow("1920x1080 log loss") << QSize(1920, 1080) << true << false;
        QTest::newRow("1280x800 classroom") << QSize(1280, 800) << false << true;
        QTest::newRow("1920x1080 classroom log loss") << QSize(1920, 1080) << true << true;
    }
    void empty_charts_have_distinct_ticks_and_no_fake_memory_axes() {
        QFETCH(QSize, size);
        QFETCH(bool, logLoss);
        QFETCH(bool, classroom);
        MainWindow w;
        QSignalSpy started(w.store(), &RecordStore::sessionStarted);
        w.applyConfig(smallConfig(), QStringLiteral("test"));
        QVERIFY(started.count() == 1 || started.wait(10'000));
        w.charts()->setLossLogScale(logLoss);
        w.setClassroom(classroom);
        w.resize(size);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QCOMPARE(w.store()->steps(), 0);
        w.grab();  // lays out and renders every chart
        QCoreApplication::processEvents();
        w.grab();

        for (const mpx::ui::ChartSpec& c : mpx::ui::chartTable()) {
            PlotWidget* p = w.charts()->plot(c.id);
            const auto groups = labelGroups(p);
            QVERIFY(!groups.empty());  // the title at least
            for (const auto& [parent, labels] : groups) {
                const QString twice = duplicateIn(labels);
                QVERIFY2(twice.isEmpty(), qPrintable(QStringLiteral("%1: \"%2\" twice in %3")
                                                         .arg(mpx::ui::chartPlainTitle(c.id), twice,
                                                              labels.join(QLatin1Char(' ')))));
            }
            // Every value axis shown ticks at least two distinct values (not a single repeated one).
            for (QAbstractAxis* a : viewOf(p)->chart()->axes())
                if (auto* v = qobject_cast<QValueAxis*>(a); v && v->isVisible()) QVERIFY(v->max() > v->min());
        }

        // The Memory chart: no axes at all, only its one-line hint.
        PlotWidget* memory = w.charts()->plot(ChartId::memory);
        for (QAbstractAxis* a : viewOf(memory)->chart()->axes()) QVERIFY(!a->isVisible());
        for (const auto& [parent, labels] : labelGroups(memory))
            for (const QString& l : labels) {
                bool number = false;
                l.toDouble(&number);
                QVERIFY2(!number, qPrintable(l));  // no "0 20 40 … 100", no "0.5"
            }
        QVERIFY(memory->placeholder().contains(QStringLiteral("Run")));
        bool hintShown = false;  // whole (perhaps on two lines, not elided), inside the tile
        QChartView* mv = viewOf(memory);
        for (QGraphicsItem* item : mv->scene()->items())
            if (auto* t = dynamic_cast<QGraphicsSimpleTextItem*>(item)) {
                const QRectF at = t->sceneBoundingRect();
                const QString shown = QString(t->text()).replace(QLatin1Char('\n'), QLatin1Char(' '));
                hintShown = hintShown || (t->isVisible() && shown == memory->placeholder() &&
                                          mv->rect().contains(mv->mapFromScene(at).boundingRect()));
            }
        QVERIFY(hintShown);
    }

    // ...and after the first step the Memory chart has its bars and axes; a new session empties it.
    void memory_chart_fills_at_the_first_step_and_empties_on_reset() {
        MainWindow w;
        w.resize(1500, 950);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy started(w.store(), &RecordStore::sessionStarted);
        w.applyConfig(smallConfig(), QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w.stepOnce();
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 1, 30'000);
        w.charts()->refresh();
        PlotWidget* memory = w.charts()->plot(ChartId::memory);
        QCOMPARE(memory->placeholder(), QString());
        int shown = 0;
        for (QAbstractAxis* a : viewOf(memory)->chart()->axes()) shown += a->isVisible();
        QCOMPARE(shown, 2);
        w.reset();
        QTRY_COMPARE_WITH_TIMEOUT(w.store()->steps(), 0, 10'000);
        QTRY_VERIFY(!memory->placeholder().isEmpty());
    }

    // Item 10: Momentum is SGD's; Adam and AdamW read none, so the box is greyed and says why.
    void momentum_is_editable_only_with_sgd_data() {
        QTest::addColumn<QString>("optimizer");
        QTest::addColumn<bool>("editable");
        QTest::newRow("sgd") << "sgd" << true;
        QTest::newRow("adam") << "adam" << false;
        QTest::newRow("adamw") << "adamw" << false;
    }
    void momentum_is_editable_only_with_sgd() {
        QFETCH(QString, optimizer);
        QFETCH(bool, editable);
        mpx::ui::LivePanel panel;
        mpx::TrainConfig t;
        t.optimizer = mpx::gui::optimizerFrom(optimizer);
        panel.setTrain(t);
        QWidget* momentum = panel.findChild<QWidget*>(QStringLiteral("momentum"));
        QVERIFY(momentum);
        QCOMPARE(momentum->isEnabled(), editable);
        QCOMPARE(momentum->toolTip().contains(QStringLiteral("Only SGD uses momentum")), !editable);
        if (!editable) QVERIFY(momentum->toolTip().contains(optimizer));
    }

    // Item 10: the Classes box shows the data set's class count, the setting where it is one.
    void classes_shows_the_data_sets_class_count_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("setting");
        QTest::addColumn<int>("shown");
        QTest::addColumn<bool>("editable");
        QTest::newRow("digits") << "digits" << 2 << 10 << false;
        QTest::newRow("moons") << "moons" << 5 << 2 << false;
        QTest::newRow("spirals 3 arms") << "spirals" << 3 << 3 << true;
        QTest::newRow("blobs 7") << "blobs" << 7 << 7 << true;
        QTest::newRow("sine (regression)") << "sine" << 2 << 0 << false;
    }
    void classes_shows_the_data_sets_class_count() {
        QFETCH(QString, kind);
        QFETCH(int, setting);
        QFETCH(int, shown);
        QFETCH(bool, editable);
        mpx::ui::SetupPanel panel;
        mpx::SessionConfig c = mpx::load_config("default");
        c.data.kind = mpx::gui::datasetFrom(kind);
        c.data.classes = setting;
        panel.setConfig(c);
        auto* classes = panel.findChild<QSpinBox*>(QStringLiteral("classes"));
        QVERIFY(classes);
        QCOMPARE(classes->value(), shown);
        QCOMPARE(classes->isEnabled(), editable);
        QCOMPARE(classes->text(), shown == 0 ? QStringLiteral("none (regression)") : QString::number(shown));
        // What is shown is not written back over the setting: nothing looks changed.
        mpx::SessionConfig back = c;
        panel.applyTo(back);
        QCOMPARE(back.data.classes, setting);
    }

    // Item 10: on start, with nothing changed, the Setup badge is a quiet hint; amber once a change
    // needs a reset, quiet again when it is undone.
    void reset_badge_is_amber_only_after_a_change() {
        MainWindow w;
        w.resize(1500, 950);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy started(w.store(), &RecordStore::sessionStarted);
        w.applyConfig(smallConfig(), QStringLiteral("test"));
        QVERIFY(started.count() == 1 || started.wait(10'000));
        mpx::ui::SetupPanel* setup = w.setupPanel();
        auto quiet = [&] {
            for (QLabel* l : setup->findChildren<QLabel*>())
                if (l->text().contains(QStringLiteral("⟳")) || l->styleSheet().contains(QStringLiteral("#fff3cd")) ||
                    l->styleSheet().contains(QStringLiteral("#7a5a00")))
                    return false;
            return true;
        };
        QVERIFY(!setup->pendingReset());
        QVERIFY(quiet());
        auto* steps = setup->findChild<QSpinBox*>(QStringLiteral("steps"));
        QVERIFY(steps);
        QCOMPARE(steps->value(), 200);
        steps->setValue(300);
        QTRY_VERIFY(setup->pendingReset());
        QVERIFY(!quiet());
        steps->setValue(200);
        QTRY_VERIFY(!setup->pendingReset());
        QVERIFY(quiet());
    }

    // Item 10: before any sweep there is nothing to export; the buttons say so and write nothing.
    void sweep_export_waits_for_a_sweep() {
        mpx::ui::SweepPanel p;
        p.setBaseConfig([] { return smallConfig(); });
        auto* csv = p.findChild<QPushButton*>(QStringLiteral("exportCsv"));
        auto* png = p.findChild<QPushButton*>(QStringLiteral("exportPng"));
        QVERIFY(csv && png);
        QVERIFY(!csv->isEnabled());
        QVERIFY(!png->isEnabled());
        QVERIFY(csv->toolTip().contains(QStringLiteral("Nothing to export yet")));
        p.setGrid("scaler.growth_interval", "10,20", "", "", "");
        p.setRuns("amp-fp16");
        p.setSteps(20);
        QSignalSpy done(p.job(), &mpx::gui::SweepJob::finished);
        QCOMPARE(p.start(), QString());
        QVERIFY(done.wait(60'000));
        QCOMPARE(p.job()->points().size(), std::size_t(2));
        QVERIFY(csv->isEnabled());
        QVERIFY(png->isEnabled());
        QVERIFY(!csv->toolTip().contains(QStringLiteral("Nothing to export yet")));
    }

    // Item 10: the explorer closes on Esc and on Ctrl+W, from its value box too, and its title leaves
    // the application's name to the platform (which appends it).
    void format_explorer_closes_on_esc_and_ctrl_w_data() {
        QTest::addColumn<QKeyCombination>("key");
        QTest::newRow("Esc") << QKeyCombination(Qt::Key_Escape);
        QTest::newRow("Ctrl+W") << QKeyCombination(Qt::ControlModifier, Qt::Key_W);
    }
    void format_explorer_closes_on_esc_and_ctrl_w() {
        QFETCH(QKeyCombination, key);
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        mpx::ui::FormatExplorer* ex = w.showFormatExplorer(QStringLiteral("0.1"));
        // The keys reach the window the user looks at: the explorer, raised and active.
        QTRY_COMPARE(QApplication::activeWindow(), static_cast<QWidget*>(ex));
        QCOMPARE(ex->windowTitle(), QStringLiteral("Format explorer"));
        QVERIFY(!ex->windowTitle().contains(QStringLiteral("mpx")));
        QWidget* input = ex->findChild<QLineEdit*>();
        QVERIFY(input);
        input->setFocus();
        QTest::keyClick(input, key.key(), key.keyboardModifiers());
        QTRY_VERIFY(!ex->isVisible());
        QVERIFY(w.isVisible());  // the main window stays
        // Shown again (the menu, a lesson's button), it opens as it was.
        QCOMPARE(w.showFormatExplorer(), ex);
        QVERIFY(ex->isVisible());
    }
};

QTEST_MAIN(TestFirstLook)
#include "test_first_look.moc"
