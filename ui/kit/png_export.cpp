// savePng: QSaveFile (a temporary beside the target, renamed on commit), never a direct write.
// pictureOf: the page's widgets sorted into picture, legend and control, the first two rendered in
// place onto a white sheet; a scroll area's content is laid out on the sheet whole (unrolled).
#include "ui/kit/png_export.hpp"

#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QGraphicsView>
#include <QGridLayout>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QPainter>
#include <QSaveFile>
#include <QScrollArea>
#include <QTabBar>
#include <QWidget>

#include <algorithm>
#include <vector>

namespace mpx::ui {
namespace {

constexpr char k_partProperty[] = "mpxPicturePart";

PicturePart markOf(const QWidget* w) {
    const QVariant v = w->property(k_partProperty);
    return v.isValid() ? static_cast<PicturePart>(v.toInt()) : PicturePart::automatic;
}

bool isControl(const QWidget* w) {
    if (const PicturePart m = markOf(w); m != PicturePart::automatic) return m == PicturePart::control;
    return qobject_cast<const QAbstractButton*>(w) || qobject_cast<const QComboBox*>(w) ||
           qobject_cast<const QAbstractSlider*>(w) || qobject_cast<const QAbstractSpinBox*>(w) ||
           qobject_cast<const QLineEdit*>(w) || qobject_cast<const QTabBar*>(w);
}

// A check box with an icon is a run's legend entry (the Training charts' run boxes).
bool isLegendEntry(const QWidget* w) {
    const auto* b = qobject_cast<const QAbstractButton*>(w);
    return b && markOf(w) == PicturePart::automatic && b->isCheckable() && !b->icon().isNull();
}

// The layout that holds `w` as an item of its own, searched from `l` down.
const QLayout* layoutHolding(const QLayout* l, const QWidget* w) {
    if (!l) return nullptr;
    if (l->indexOf(const_cast<QWidget*>(w)) >= 0) return l;
    for (int i = 0; i < l->count(); ++i)
        if (const QLayout* found = layoutHolding(l->itemAt(i)->layout(), w)) return found;
    return nullptr;
}

// A label beside a control in its row names that control ("Run", "Layer", "Smoothing").
bool labelsAControl(const QLabel* label) {
    const QWidget* parent = label->parentWidget();
    const QLayout* l = parent ? layoutHolding(parent->layout(), label) : nullptr;
    if (!l) return false;
    const auto* grid = qobject_cast<const QGridLayout*>(l);
    int row = -1, col, rs, cs;
    if (grid) grid->getItemPosition(grid->indexOf(const_cast<QLabel*>(label)), &row, &col, &rs, &cs);
    for (int i = 0; i < l->count(); ++i) {
        const QWidget* w = l->itemAt(i)->widget();
        if (!w || w == label || !w->isVisibleTo(parent) || !isControl(w) || isLegendEntry(w)) continue;
        if (grid) {
            int r, c, rspan, cspan;
            grid->getItemPosition(i, &r, &c, &rspan, &cspan);
            if (r != row) continue;
        }
        return true;
    }
    return false;
}

struct Part {
    const QWidget* widget;
    QRect shown;  // in the widget's coordinates: the part its ancestors let show
    QPoint at;    // its top left on the sheet (the page's coordinates, scroll areas unrolled)
    bool legend;
};

// A scroll area whose content is drawn whole: it grows by `by` pixels at `bottom`, and the parts
// below it, outside it, move down as much. Its own parts are [first, last).
struct Unrolled {
    int bottom;
    int by;
    std::size_t first, last;
};

void collect(const QWidget* page, const QWidget* parent, QPoint origin, QRect clip, std::vector<Part>& parts,
             std::vector<Unrolled>& unrolled);

// Sorts `w` (its top left at `at` on the sheet, `clip` what its ancestors show, sheet coordinates)
// into a part, or into its children's parts.
void visit(const QWidget* page, const QWidget* w, QPoint at, QRect clip, std::vector<Part>& parts,
           std::vector<Unrolled>& unrolled) {
    const QRect seen = QRect(at, w->size()) & clip;
    if (seen.isEmpty()) return;
    const Part part{w, seen.translated(-at), at, false};
    const PicturePart mark = markOf(w);
    const auto* scroll = qobject_cast<const QScrollArea*>(w);
    if (mark == PicturePart::picture || (mark == PicturePart::automatic && qobject_cast<const QGraphicsView*>(w))) {
        parts.push_back(part);
    } else if (scroll && scroll->widget() && scroll->widget()->isVisibleTo(page) && mark == PicturePart::automatic) {
        // The content whole, from its top, whatever is scrolled into view (issue 47 item 7: the
        // hysteresis lesson's second chart was cut in half); the sheet grows by what did not show.
        const QWidget* content = scroll->widget();
        const QWidget* port = scroll->viewport();
        const QPoint top = at + port->pos();
        const std::size_t first = parts.size();
        visit(page, content, top, QRect(top, content->size()), parts, unrolled);
        const int by = std::max(0, content->height() - port->height());
        if (by > 0) unrolled.push_back({at.y() + scroll->height(), by, first, parts.size()});
    } else if (isLegendEntry(w)) {
        if (qobject_cast<const QAbstractButton*>(w)->isChecked()) parts.push_back({w, part.shown, at, true});
    } else if (isControl(w)) {
        return;
    } else if (const auto* label = qobject_cast<const QLabel*>(w)) {
        if (!labelsAControl(label)) parts.push_back(part);
    } else if (w->findChildren<QWidget*>(Qt::FindDirectChildrenOnly).isEmpty()) {
        parts.push_back(part);  // a widget that paints itself: a canvas, a heatmap, a colour bar
    } else {
        collect(page, w, at, seen, parts, unrolled);
    }
}

// The children of `parent` (its top left at `origin` on the sheet), depth first, in painting order.
void collect(const QWidget* page, const QWidget* parent, QPoint origin, QRect clip, std::vector<Part>& parts,
             std::vector<Unrolled>& unrolled) {
    for (const QObject* o : parent->children()) {
        const auto* w = qobject_cast<const QWidget*>(o);
        if (!w || w->isWindow() || !w->isVisibleTo(page)) continue;
        visit(page, w, origin + w->pos(), clip, parts, unrolled);
    }
}

}  // namespace

bool savePng(const QPixmap& picture, const QString& path) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return false;
    if (!picture.save(&file, "PNG")) {
        file.cancelWriting();
        return false;
    }
    return file.commit();
}

void setPicturePart(QWidget* w, PicturePart part) { w->setProperty(k_partProperty, static_cast<int>(part)); }

QPixmap pictureOf(const QWidget* page) {
    std::vector<Part> parts;
    std::vector<Unrolled> unrolled;
    collect(page, page, QPoint(0, 0), page->rect(), parts, unrolled);
    if (parts.empty()) return const_cast<QWidget*>(page)->grab();
    // What lies below an unrolled scroll area moves down by what it grew, top to bottom.
    std::sort(unrolled.begin(), unrolled.end(), [](const Unrolled& a, const Unrolled& b) { return a.bottom < b.bottom; });
    for (std::size_t u = 0; u < unrolled.size(); ++u) {
        const Unrolled& grown = unrolled[u];
        for (std::size_t i = 0; i < parts.size(); ++i)
            if ((i < grown.first || i >= grown.last) && parts[i].at.y() + parts[i].shown.top() >= grown.bottom)
                parts[i].at.ry() += grown.by;
        for (std::size_t v = u + 1; v < unrolled.size(); ++v)
            if (unrolled[v].bottom >= grown.bottom) unrolled[v].bottom += grown.by;
    }
    // Where a row of controls was, nothing is drawn: each empty band across the page closes up to
    // k_gap pixels, the parts below it moving up.
    constexpr int k_gap = 6;
    std::vector<std::pair<int, int>> spans;  // [top, bottom) of the parts, merged
    for (const Part& p : parts) spans.emplace_back(p.at.y() + p.shown.top(), p.at.y() + p.shown.bottom() + 1);
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<int, int>> merged;
    for (const auto& s : spans)
        if (!merged.empty() && s.first <= merged.back().second + k_gap) merged.back().second = std::max(merged.back().second, s.second);
        else merged.push_back(s);
    const auto lift = [&](int y) {  // how far a part starting at y moves up
        int up = 0;
        for (std::size_t i = 1; i < merged.size() && merged[i].first <= y; ++i) up += merged[i].first - merged[i - 1].second - k_gap;
        return up;
    };
    for (Part& p : parts) p.at.ry() -= lift(p.at.y() + p.shown.top());
    QRect bounds;
    for (const Part& p : parts) bounds |= p.shown.translated(p.at);
    if (bounds.isEmpty()) return const_cast<QWidget*>(page)->grab();
    const qreal dpr = page->devicePixelRatioF();
    QPixmap out(bounds.size() * dpr);
    out.setDevicePixelRatio(dpr);
    out.fill(page->palette().color(QPalette::Base));
    QPainter p(&out);
    p.translate(-bounds.topLeft());
    for (const Part& part : parts) {
        auto* w = const_cast<QWidget*>(part.widget);
        if (!part.legend) {
            // A label draws on the sheet; a chart or canvas with the background it is shown on.
            const auto flags = qobject_cast<QLabel*>(w) ? QWidget::RenderFlags(QWidget::DrawChildren)
                                                        : QWidget::DrawWindowBackground | QWidget::DrawChildren;
            w->render(&p, part.at + part.shown.topLeft(), QRegion(part.shown), flags);
            continue;
        }
        // A legend entry: its swatch and its text, without the box that toggles it.
        const auto* b = static_cast<QAbstractButton*>(w);
        const QSize icon = b->iconSize();
        const QRect r(part.at, w->size());
        p.save();
        p.setClipRect(part.shown.translated(part.at));
        const QPixmap swatch = b->icon().pixmap(icon, dpr);
        p.drawPixmap(QPoint(r.left() + 2, r.center().y() - icon.height() / 2), swatch);
        p.setFont(b->font());
        p.setPen(b->palette().color(QPalette::WindowText));
        p.drawText(r.adjusted(icon.width() + 8, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, b->text());
        p.restore();
    }
    return out;
}

bool saveViewPng(const QWidget* page, const QString& path) { return savePng(pictureOf(page), path); }

}  // namespace mpx::ui
