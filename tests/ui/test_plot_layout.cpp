// PlotWidget's layout, read from what the widget lays out (issue 47 items 12 and 16): an event lane's
// name is never under one of its marks, in any view, zoom or font scale, and always at the lane's left;
// a dot on the top of the y range lies wholly inside the plot (which clips its series); the hover
// readout's tooltip grows with the classroom scale.
#include <QApplication>
#include <QChartView>
#include <QScatterSeries>
#include <QTest>
#include <QToolTip>
#include <QValueAxis>

#include "ui/kit/plot_widget.hpp"

using mpx::ui::PlotWidget;

class TestPlotLayout : public QObject {
    Q_OBJECT

private slots:
    // One row per view that draws lanes: overflow-storm's skip at every early step, a zoom whose first
    // step holds a mark (the plot's left edge, where a name placed "at the left" sat under it), the
    // trace replay's one lane with a long name, and classroom's larger text on a laptop's tile.
    void lane_names_are_never_under_their_marks_data() {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<double>("scale");
        QTest::addColumn<QStringList>("names");
        QTest::addColumn<double>("x0");
        QTest::addColumn<double>("x1");
        QTest::addColumn<double>("every");  // a mark each so many steps from 0
        QTest::addColumn<QStringList>("shown");  // the names as shown, where they are shortened
        const QStringList storm{"pure-fp16", "amp-fp16", "amp-fp16+hysteresis"};
        QTest::newRow("overflow-storm, whole run") << QSize(520, 300) << 1.0 << storm << 0.0 << 400.0 << 1.0 << QStringList{};
        QTest::newRow("overflow-storm's one lane") << QSize(530, 250) << 1.0 << QStringList{"amp-fp16+pytorch"} << 0.0 << 300.0
                                                   << 1.0 << QStringList{};
        QTest::newRow("overflow-storm, stepping") << QSize(520, 300) << 1.0 << storm << 0.0 << 12.0 << 1.0 << QStringList{};
        QTest::newRow("zoomed, a mark on the left edge") << QSize(520, 300) << 1.0 << storm << 40.0 << 60.0 << 5.0 << QStringList{};
        QTest::newRow("trace replay lane") << QSize(700, 260) << 1.0 << QStringList{"replay of model.trace (amp-fp16)"} << 0.0
                                           << 50.0 << 2.0 << QStringList{};
        QTest::newRow("classroom on a laptop tile") << QSize(420, 300) << 1.6 << storm << 0.0 << 30.0 << 1.0 << QStringList{};
        // attention-overflow's lanes in classroom text: the words that differ stay.
        QTest::newRow("attention-overflow, classroom")
            << QSize(520, 320) << 1.6 << QStringList{"amp-fp16+pytorch", "amp-fp16+attn-before+pytorch", "amp-fp16+attn-split+pytorch"}
            << 0.0 << 60.0 << 1.0 << QStringList{"amp-fp16+pytorch", "…+attn-before+…", "…+attn-split+…"};
        QTest::newRow("hysteresis") << QSize(600, 320) << 1.0 << QStringList{"pytorch", "deepspeed", "megatron"} << 0.0
                                    << 300.0 << 20.0 << QStringList{};
    }
    void lane_names_are_never_under_their_marks() {
        QFETCH(QSize, size);
        QFETCH(double, scale);
        QFETCH(QStringList, names);
        QFETCH(double, x0);
        QFETCH(double, x1);
        QFETCH(double, every);
        PlotWidget p(QStringLiteral("Loss scale"));
        p.addLine(QStringLiteral("scale"), Qt::darkBlue);
        p.setYRange(0, 1);
        QList<PlotWidget::Lane> lanes;
        for (const QString& n : names) lanes << PlotWidget::Lane{n, QColor(0x1f, 0x77, 0xb4)};
        p.setLanes(lanes);
        QList<double> steps;
        for (double s = 0; s <= 400; s += every) steps << s;
        for (int lane = 0; lane < names.size(); ++lane) {
            p.setLaneSteps(p.addLaneMarks(lane, QStringLiteral("halved"), Qt::red, Qt::darkRed, PlotWidget::Marker::diamond, 10),
                           steps);
            p.setLaneSteps(p.addLaneMarks(lane, QStringLiteral("skipped"), Qt::black, Qt::black, PlotWidget::Marker::triangle, 5),
                           steps);
        }
        p.setFontScale(scale);
        p.resize(size);
        p.show();
        QVERIFY(QTest::qWaitForWindowExposed(&p));
        QTRY_VERIFY(p.plotRect().width() > 100);
        // Live drawing sets the range again and again between two layouts of the chart; the gutter
        // must not grow on each (it did: a 530 px chart 777 px wide, its right end cut off).
        for (int k = 10; k >= 0; --k) p.setXRange(x0, x1 + k);
        QCoreApplication::processEvents();  // the chart lays itself out again for the gutter
        // The gutter is taken from the plot, never added to the chart: the chart stays its widget's width.
        QChart* chart = p.findChild<QChartView*>()->chart();
        QVERIFY2(chart->size().width() <= p.width(), qPrintable(QStringLiteral("chart %1 px in a %2 px widget, left margin %3")
                                                                    .arg(chart->size().width()).arg(p.width()).arg(chart->margins().left())));
        for (int lane = 0; lane < names.size(); ++lane) {
            const QRectF name = p.laneNameRect(lane);
            const QList<QRectF> marks = p.laneMarkRects(lane);
            QVERIFY(!marks.isEmpty());
            QVERIFY2(name.width() > 20, qPrintable(QStringLiteral("lane %1: %2 px").arg(lane).arg(name.width())));
            // One rule in every view: the name at the lane's left, inside its row, left of the plot.
            QCOMPARE(name.left(), p.laneNameRect(0).left());
            QVERIFY(p.laneRect(lane).contains(name.center()));
            QVERIFY(name.right() <= p.plotRect().left());
            for (const QRectF& m : marks)
                QVERIFY2(!m.intersects(name), qPrintable(QStringLiteral("lane %1: mark at x %2–%3 over its name at %4–%5")
                                                             .arg(lane).arg(m.left()).arg(m.right()).arg(name.left()).arg(name.right())));
            // Whole where the name is at most 40 % of the chart; a longer one keeps what tells it apart.
            if (QFontMetricsF(p.font()).horizontalAdvance(names[lane]) * scale < size.width() * 0.35)
                QCOMPARE(p.laneShownName(lane), names[lane]);
            else
                QVERIFY(!p.laneShownName(lane).isEmpty());
        }
        QFETCH(QStringList, shown);
        for (int lane = 0; lane < shown.size(); ++lane) QCOMPARE(p.laneShownName(lane), shown[lane]);
        for (int lane = 0; lane < names.size(); ++lane) {
        }
    }

    // A held-out accuracy of 100 %: the y range ends at 100, and the dot there lay on the plot's top
    // edge, its upper half clipped. Now the range gives it half a dot of room; the ticks still end at 100.
    void a_dot_at_the_top_of_the_range_lies_wholly_inside_the_plot() {
        PlotWidget p(QStringLiteral("Held-out accuracy"));
        const int line = p.addLine(QStringLiteral("acc"), Qt::darkGreen);
        const int dots = p.addMarkers(QStringLiteral("acc"), Qt::darkGreen, Qt::white, PlotWidget::Marker::circle, 7);
        const QList<QPointF> pts{{0, 40}, {50, 100}, {100, 100}};
        p.setPoints(line, pts);
        p.setPoints(dots, pts);
        p.setXRange(-10, 110);
        p.setYRange(0, 100);
        p.resize(500, 260);
        p.show();
        QVERIFY(QTest::qWaitForWindowExposed(&p));
        QCoreApplication::processEvents();
        QChart* chart = p.findChild<QChartView*>()->chart();
        auto* series = qobject_cast<QScatterSeries*>(chart->series().value(dots));
        QVERIFY(series);
        const QPointF at = chart->mapToPosition(QPointF(50, 100), series);
        const double r = series->markerSize() / 2;
        const QRectF dot(at.x() - r, at.y() - r, 2 * r, 2 * r);
        QVERIFY2(chart->plotArea().contains(dot), qPrintable(QStringLiteral("dot top %1, plot top %2").arg(dot.top()).arg(chart->plotArea().top())));
        auto* y = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).value(0));
        QCOMPARE(y->tickInterval(), 20.0);
        QVERIFY(y->max() > 100 && y->max() < 110);  // the last tick is 100
        QCOMPARE(y->min(), 0.0);                    // no dot at 0: no room asked there
    }

    // Classroom's scale reaches the hover readout, which every view shows as a tooltip for the plot.
    void the_readout_tooltip_grows_with_the_classroom_scale() {
        PlotWidget p(QStringLiteral("Loss"));
        p.resize(400, 250);
        p.show();
        QVERIFY(QTest::qWaitForWindowExposed(&p));
        auto tipSize = [&] {
            QToolTip::showText(p.mapToGlobal(QPoint(200, 120)), QStringLiteral("<b>step 12</b>"), &p);
            double pt = -1;
            for (QWidget* t : QApplication::topLevelWidgets())
                if (t->inherits("QTipLabel") && t->isVisible()) pt = t->font().pointSizeF();
            QToolTip::hideText();
            QTest::qWait(350);  // the tooltip fades before another is made
            return pt;
        };
        const double desktop = tipSize();
        QVERIFY(desktop > 0);
        p.setFontScale(1.6);
        const double classroom = tipSize();
        QVERIFY2(std::abs(classroom - 1.6 * desktop) < 0.2, qPrintable(QStringLiteral("%1 pt vs %2 pt").arg(classroom).arg(desktop)));
        p.setFontScale(1.0);
        QCOMPARE(tipSize(), desktop);
    }
};

QTEST_MAIN(TestPlotLayout)
#include "test_plot_layout.moc"
