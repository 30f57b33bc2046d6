// Figures for slides (issue 47 item 7): a chart's Copy image and Save image… give the whole chart,
// title, lanes and a key of its runs, at twice its size, the same wherever its list is scrolled; a
// chosen slide size lays the chart out at that size and leaves it as it was; Export view writes
// every chart of a list that does not fit, not the part scrolled into view.
#include <QAction>
#include <QClipboard>
#include <QGuiApplication>
#include <QMenu>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "engine/config/session_config.hpp"
#include "ui/kit/chart_image.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/views/chart_table.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::ChartId;
using mpx::ui::MainWindow;
using mpx::ui::PlotWidget;

namespace {

bool white(QRgb c) { return qRed(c) > 245 && qGreen(c) > 245 && qBlue(c) > 245; }

// Pixels of `image` in `rect` that are not white.
int inked(const QImage& image, const QRect& rect) {
    int n = 0;
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        for (int x = rect.left(); x <= rect.right(); ++x) n += !white(image.pixel(x, y));
    return n;
}

bool hasColour(const QImage& image, const QRect& rect, const QColor& c) {
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        for (int x = rect.left(); x <= rect.right(); ++x) {
            const QRgb p = image.pixel(x, y);
            if (std::abs(qRed(p) - c.red()) + std::abs(qGreen(p) - c.green()) + std::abs(qBlue(p) - c.blue()) < 24) return true;
        }
    return false;
}

QAction* action(QMenu* menu, const QString& text) {
    for (QAction* a : menu->actions())
        if (a->text() == text) return a;
    return nullptr;
}

}  // namespace

class TestChartImage : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;
    QTemporaryDir dir;

    QScrollArea* list() const { return w->charts()->findChild<QScrollArea*>(); }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
        // Save image… asks this instead of a file dialog: a file in the temporary folder.
        mpx::ui::setFigurePathAsker([this](QWidget*, const QString& suggested) {
            return dir.filePath(QFileInfo(suggested).fileName());
        });
        w = std::make_unique<MainWindow>();
        w->resize(1280, 800);  // a laptop: the hysteresis lesson's charts do not all fit
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        mpx::SessionConfig c = mpx::load_config("hysteresis");
        c.steps = 200;
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
        w->run();
        QTRY_COMPARE_WITH_TIMEOUT(w->engine()->state(), EngineState::finished, 60'000);
        w->charts()->refresh();
        QTRY_VERIFY(list()->verticalScrollBar()->maximum() > 0);
    }
    void cleanupTestCase() {
        w.reset();
        mpx::ui::setFigurePathAsker({});
    }

    void a_copied_chart_is_whole_at_twice_its_size_with_title_and_key() {
        PlotWidget* p = w->charts()->plot(ChartId::scale);
        QMenu* menu = mpx::ui::chartImageMenu(p);
        QAction* copy = action(menu, QStringLiteral("Copy image"));
        QVERIFY(copy);
        QGuiApplication::clipboard()->clear();
        copy->trigger();
        const QImage image = QGuiApplication::clipboard()->image().convertToFormat(QImage::Format_RGB32);
        delete menu;
        const QSize logical = p->size();
        QCOMPARE(image.width(), 2 * logical.width());
        // The chart at twice its height, then its key: a row or two of the runs' names.
        QVERIFY2(image.height() > 2 * logical.height() && image.height() < 2 * logical.height() + 160,
                 qPrintable(QStringLiteral("%1 for a chart %2 high").arg(image.height()).arg(logical.height())));
        // The title band (the chart's top 24 px) holds the title's ink, centred.
        const QRect titleBand(image.width() / 4, 0, image.width() / 2, 2 * 24);
        QVERIFY2(inked(image, titleBand) > 200, qPrintable(QString::number(inked(image, titleBand))));
        // The key under the chart shows each run's line in its colour.
        const QRect keyBand(0, 2 * logical.height(), image.width(), image.height() - 2 * logical.height());
        const QList<mpx::ui::LineKey::Entry> lines = p->visibleLines();
        QCOMPARE(lines.size(), 3);
        for (const auto& line : lines) {
            QVERIFY2(hasColour(image, keyBand, line.pen.color()), qPrintable(line.text));
            QVERIFY(line.pen.color().alpha() == 255);  // the run's line, not its faint envelope
        }
        // The lanes (a row per run under the step axis) are in the chart's part.
        const QRectF lane = p->laneRect(2);
        QVERIFY(lane.bottom() < logical.height());
        QVERIFY(inked(image, QRect(QPointF(2 * lane.left(), 2 * lane.top()).toPoint(), QSize(2 * 60, 2 * int(lane.height())))) > 20);
    }

    void a_chart_image_does_not_depend_on_the_scroll_position() {
        PlotWidget* p = w->charts()->plot(w->charts()->chartOrder().last());  // at the list's foot
        QScrollBar* bar = list()->verticalScrollBar();
        bar->setValue(0);
        QVERIFY(p->visibleRegion().boundingRect().height() < p->height());  // partly or wholly out of view
        const QImage top = mpx::ui::chartImage(p);
        bar->setValue(bar->maximum());
        const QImage bottom = mpx::ui::chartImage(p);
        QCOMPARE(top.size(), bottom.size());
        QVERIFY(top == bottom);
        QVERIFY(inked(top.convertToFormat(QImage::Format_RGB32), QRect(0, 0, top.width(), 48)) > 100);
        bar->setValue(0);
    }

    void save_image_writes_the_copy_to_the_asked_file() {
        PlotWidget* p = w->charts()->plot(ChartId::loss);
        QCOMPARE(mpx::ui::figureFileName(p), QStringLiteral("mpx-training-loss.png"));
        QMenu* menu = mpx::ui::chartImageMenu(p);
        QAction* save = action(menu, QStringLiteral("Save image…"));
        QVERIFY(save);
        save->trigger();
        delete menu;
        const QString path = dir.filePath(mpx::ui::figureFileName(p));
        QImage saved;
        QVERIFY2(saved.load(path), qPrintable(path));
        const QImage expected = mpx::ui::chartImage(p);
        QCOMPARE(saved.size(), expected.size());
        QVERIFY(saved.convertToFormat(QImage::Format_RGB32) == expected.convertToFormat(QImage::Format_RGB32));
        // A folder that does not exist: nothing written, false.
        QVERIFY(!mpx::ui::saveChartImage(p, dir.filePath(QStringLiteral("no/such/folder/x.png"))));
    }

    void a_slide_size_lays_the_chart_out_at_that_size_and_back() {
        PlotWidget* p = w->charts()->plot(ChartId::scale);
        const QSize shown = p->size();
        const QSize slide = mpx::ui::figureSize(mpx::ui::FigureSize::wide, p);
        QCOMPARE(slide, QSize(960, 540));
        const QImage image = mpx::ui::chartImage(p, slide).convertToFormat(QImage::Format_RGB32);
        QCOMPARE(image.width(), 1920);
        QVERIFY(image.height() > 1080);
        QCOMPARE(p->size(), shown);
        // Laid out at the slide's width: the plot reaches across it (ink near the right edge).
        QVERIFY(inked(image, QRect(1920 - 200, 200, 150, 700)) > 50);
    }

    // Export view: the charts panel's list drawn whole, taller than what the window shows, the same
    // wherever it is scrolled; each chart in it as the chart draws itself.
    void an_exported_view_holds_every_chart_of_a_list_that_does_not_fit() {
        QScrollBar* bar = list()->verticalScrollBar();
        bar->setValue(0);
        // Each chart as it draws itself, to find on the sheet.
        QList<QImage> owns;
        for (ChartId c : w->charts()->chartOrder()) owns << w->charts()->plot(c)->grab().toImage().convertToFormat(QImage::Format_RGB32);
        bar->setValue(bar->maximum() / 2);
        const QImage middle = mpx::ui::pictureOf(w->charts()).toImage().convertToFormat(QImage::Format_RGB32);
        bar->setValue(0);
        const QImage top = mpx::ui::pictureOf(w->charts()).toImage().convertToFormat(QImage::Format_RGB32);
        QVERIFY(middle == top);
        const QWidget* content = list()->widget();
        QVERIFY2(top.height() > list()->viewport()->height() + 100 && top.height() >= content->height(),
                 qPrintable(QStringLiteral("%1 for a list %2 high in a viewport %3 high")
                                .arg(top.height()).arg(content->height()).arg(list()->viewport()->height())));
        const int contentTop = top.height() - content->height();  // the list ends the sheet
        int sheetLeft = content->width();  // the sheet starts at the first column's left edge
        for (ChartId c : w->charts()->chartOrder()) sheetLeft = std::min(sheetLeft, w->charts()->plot(c)->mapTo(w->charts(), QPoint(0, 0)).x());
        for (ChartId c : w->charts()->chartOrder()) {
            PlotWidget* p = w->charts()->plot(c);
            const QImage own = owns.takeFirst();
            const QPoint at(p->mapTo(w->charts(), QPoint(0, 0)).x() - sheetLeft, contentTop + p->y());
            const QImage there = top.copy(QRect(at, own.size()));
            int differ = 0;
            for (int y = 0; y < own.height(); ++y)
                for (int x = 0; x < own.width(); ++x) differ += own.pixel(x, y) != there.pixel(x, y);
            QVERIFY2(differ < own.width() * own.height() / 100,
                     qPrintable(QStringLiteral("%1: %2 pixels differ").arg(p->title()).arg(differ)));
        }
    }
};

QTEST_MAIN(TestChartImage)
#include "test_chart_image.moc"
