// chartImage: the chart widget rendered by itself onto a white image (QWidget::render paints a widget
// whole, whatever of it its scroll area shows), a PlotWidget's key of lines under it where its own
// legend is hidden. The menu's size choice and the folder last saved to are kept in QSettings.
#include "ui/kit/chart_image.hpp"

#include <QActionGroup>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QCursor>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMenu>
#include <QPainter>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QToolTip>

#include "ui/kit/line_key.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/kit/title_fit.hpp"

namespace mpx::ui {
namespace {

constexpr char k_nameProperty[] = "mpxFigureName";
constexpr char k_menuProperty[] = "mpxFigureMenu";
const QString k_sizeKey = QStringLiteral("figures/size");
const QString k_folderKey = QStringLiteral("figures/folder");
constexpr int k_keyPad = 6;  // around the key under a plot

FigurePathAsker& asker() {
    static FigurePathAsker ask;
    return ask;
}

FigureSize chosenSize() {
    const int v = QSettings().value(k_sizeKey, 0).toInt();
    return v >= 0 && v <= static_cast<int>(FigureSize::standard) ? static_cast<FigureSize>(v) : FigureSize::asShown;
}

// The Pictures folder at first, then the folder of the last figure saved.
QString figureFolder() {
    const QString last = QSettings().value(k_folderKey).toString();
    if (!last.isEmpty() && QFileInfo(last).isDir()) return last;
    const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    return !pictures.isEmpty() && QFileInfo(pictures).isDir() ? pictures : QDir::homePath();
}

void saveWithDialog(QWidget* chart) {
    const QString suggested = QDir(figureFolder()).filePath(figureFileName(chart));
    const QString path = asker() ? asker()(chart, suggested)
                                 : QFileDialog::getSaveFileName(chart, QObject::tr("Save the chart as a picture"), suggested,
                                                                QObject::tr("PNG (*.png)"));
    if (path.isEmpty()) return;
    const bool ok = saveChartImage(chart, path, figureSize(chosenSize(), chart));
    if (ok) QSettings().setValue(k_folderKey, QFileInfo(path).absolutePath());
    // A tooltip, not a dialog: the chart stays in view and nothing waits for a click.
    QToolTip::showText(QCursor::pos(), ok ? QObject::tr("Saved %1").arg(QDir::toNativeSeparators(path))
                                          : QObject::tr("Could not write %1").arg(QDir::toNativeSeparators(path)),
                       chart);
}

class FigureMenuFilter : public QObject {
public:
    explicit FigureMenuFilter(QWidget* chart) : QObject(chart), m_chart(chart) {}
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() != QEvent::ContextMenu) return false;
        QMenu* menu = chartImageMenu(m_chart);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(static_cast<QContextMenuEvent*>(e)->globalPos());
        e->accept();
        return true;
    }

private:
    QWidget* m_chart;
};

}  // namespace

QSize figureSize(FigureSize size, const QWidget* chart) {
    switch (size) {
        case FigureSize::wide: return {960, 540};      // 1920 × 1080 pixels at 2×: a full-HD slide
        case FigureSize::standard: return {800, 600};  // 1600 × 1200: a 4:3 slide
        case FigureSize::asShown: break;
    }
    return chart->size();
}

QString figureSizeName(FigureSize size, const QWidget* chart) {
    const QSize s = figureSize(size, chart);
    const QString pixels = QStringLiteral("%1 × %2").arg(s.width() * k_figureRatio).arg(s.height() * k_figureRatio);
    switch (size) {
        case FigureSize::wide: return QObject::tr("Wide slide, 16:9 (%1)").arg(pixels);
        case FigureSize::standard: return QObject::tr("Slide, 4:3 (%1)").arg(pixels);
        case FigureSize::asShown: break;
    }
    return QObject::tr("As shown, twice its pixels (%1)").arg(pixels);
}

QImage chartImage(QWidget* chart, QSize logical, double ratio) {
    const QSize shown = chart->size();
    const bool resized = logical.isValid() && !logical.isEmpty() && logical != shown;
    if (resized) chart->resize(logical);  // lays the chart out again now (a resize event is sent at once)
    const QSize size = chart->size();     // the asked size within the chart's least and largest
    LineKey key;
    const auto* plot = qobject_cast<const PlotWidget*>(chart);
    if (plot && !plot->legendVisible()) key.setEntries(plot->visibleLines());
    key.setPalette(QPalette(QColor(Qt::white)));  // dark text on the white sheet, whatever the desktop's theme
    const int keyWidth = std::max(1, size.width() - 2 * k_keyPad);
    const int keyHeight = key.entries().isEmpty() ? 0 : key.heightForWidth(keyWidth) + k_keyPad;
    QImage image(QSize(size.width(), size.height() + keyHeight) * ratio, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(ratio);
    image.fill(Qt::white);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    // Without the widget's own window background: the chart draws its plot's; the sheet is white.
    chart->render(&p, QPoint(0, 0), QRegion(QRect(QPoint(0, 0), size)), QWidget::DrawChildren);
    if (keyHeight > 0) {
        key.resize(keyWidth, keyHeight - k_keyPad);
        key.render(&p, QPoint(k_keyPad, size.height()), QRegion(), QWidget::DrawChildren);
    }
    p.end();
    if (resized) chart->resize(shown);
    return image;
}

QString figureFileName(const QWidget* chart) {
    QString name = chart->property(k_nameProperty).toString();
    if (const auto* plot = qobject_cast<const PlotWidget*>(chart); plot && name.isEmpty()) name = fit::plainText(plot->title());
    // The chart's name, less the lesson's star and the qualifiers after " · " or " (".
    name.remove(QStringLiteral("★"));
    for (const QString& cut : {QStringLiteral(" · "), QStringLiteral(" (")})
        if (const qsizetype at = name.indexOf(cut); at > 0) name.truncate(at);
    name = name.toLower().replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    name.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
    return QStringLiteral("mpx-%1.png").arg(name.isEmpty() ? QStringLiteral("chart") : name);
}

void copyChartImage(QWidget* chart, QSize logical) {
    QGuiApplication::clipboard()->setImage(chartImage(chart, logical));
}

bool saveChartImage(QWidget* chart, const QString& path, QSize logical) {
    return savePng(QPixmap::fromImage(chartImage(chart, logical)), path);
}

void setFigurePathAsker(FigurePathAsker ask) { asker() = std::move(ask); }

QMenu* chartImageMenu(QWidget* chart) {
    auto* menu = new QMenu(chart);
    const QString whole = QObject::tr("The whole chart (title, axes, legend) on white, at the size chosen under Image size");
    menu->addAction(QObject::tr("Copy image"), chart, [chart] { copyChartImage(chart, figureSize(chosenSize(), chart)); })
        ->setToolTip(whole);
    menu->addAction(QObject::tr("Save image…"), chart, [chart] { saveWithDialog(chart); })->setToolTip(whole);
    QMenu* sizes = menu->addMenu(QObject::tr("Image size"));
    auto* group = new QActionGroup(sizes);
    for (FigureSize s : {FigureSize::asShown, FigureSize::wide, FigureSize::standard}) {
        QAction* a = sizes->addAction(figureSizeName(s, chart));
        a->setCheckable(true);
        a->setChecked(s == chosenSize());
        a->setData(static_cast<int>(s));
        group->addAction(a);
        QObject::connect(a, &QAction::triggered, a, [s] { QSettings().setValue(k_sizeKey, static_cast<int>(s)); });
    }
    menu->setToolTipsVisible(true);
    return menu;
}

void installChartImageMenu(QWidget* chart, const QString& name) {
    if (!name.isEmpty()) chart->setProperty(k_nameProperty, name);
    if (chart->property(k_menuProperty).toBool()) return;  // installed once
    chart->setProperty(k_menuProperty, true);
    chart->installEventFilter(new FigureMenuFilter(chart));
}

}  // namespace mpx::ui
