// BoundaryView: maps from the engine's grids, the class edges, the held-out points, titles and legend.
#include "ui/views/boundary_view.hpp"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/run/boundary_grid.hpp"
#include "ui/kit/chart_image.hpp"
#include "ui/kit/run_style.hpp"

namespace mpx::ui {
namespace {

constexpr int k_margin = 12, k_gap = 18;
const QColor k_noPrediction(0x40, 0x40, 0x40);  // a cell whose logits hold inf or NaN

}  // namespace

QRgb BoundaryView::cellColour(int label, float confidence, int classes) {
    if (label < 0) return k_noPrediction.rgb();
    const double chance = 1.0 / std::max(2, classes);
    const double sure = std::clamp((static_cast<double>(confidence) - chance) / (1.0 - chance), 0.0, 1.0);
    const double w = 0.12 + 0.68 * sure;  // even at chance the class shows faintly; never as deep as a dot
    const QColor c = classColour(label);
    auto mix = [w](int v) { return static_cast<int>(std::lround(255.0 + (v - 255.0) * w)); };
    return qRgb(mix(c.red()), mix(c.green()), mix(c.blue()));
}

namespace {

// Agreement near 100 %: fixed decimals (two above 99.9 %), no sign: the text places it.
QString agreementPercent(double share) { return QString::number(100.0 * share, 'f', share > 0.999 && share < 1 ? 2 : 1); }

QString plainNumber(double v) { return QString::number(v, 'g', 3); }

}  // namespace

BoundaryView::BoundaryView(gui::RecordStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    setMinimumSize(400, 300);
    setAutoFillBackground(true);
    installChartImageMenu(this, QStringLiteral("decision-boundaries"));  // a figure for slides (chart_image.hpp)
    setToolTip(tr("What each run's model predicts at every point of the input plane, computed by that run's own "
                  "forward pass in its own precision. Colour: the predicted class; deep where the model is sure, pale "
                  "where it hesitates. Dark lines: where the prediction changes class (the decision boundary). Dots: "
                  "held-out points in their true class's colour. A run that tracks FP32 draws the same map as fp32."));
    connect(m_store, &gui::RecordStore::boundariesUpdated, this, [this] {
        rebuildImages();
        update();
    });
    connect(m_store, &gui::RecordStore::sessionStarted, this, [this] {
        rebuildImages();
        update();
    });
}

void BoundaryView::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    emit wantedChanged(true);
}

void BoundaryView::hideEvent(QHideEvent* e) {
    QWidget::hideEvent(e);
    if (!e->spontaneous()) emit wantedChanged(false);  // a minimised window keeps its grids coming
}

void BoundaryView::setPresentationScale(double s) {
    m_scale = s;
    update();
}

QFont BoundaryView::scaledFont() const {
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * m_scale);
    return f;
}

QString BoundaryView::message() const {
    const auto session = m_store->session();
    if (!session) return tr("No session yet: press Run or Step.");
    const std::string why = mpx::boundary_refusal(session->config.data);
    if (!why.empty()) return QString::fromStdString(why);
    if (!m_shown) return tr("Computing the first maps…");
    return {};
}

QString BoundaryView::costText() const {
    if (!m_shown) return {};
    const auto& b = *m_shown;
    QString text = tr("%1×%1 grid per run, %2 ms for %3 %4")
                       .arg(b.resolution)
                       .arg(b.seconds * 1e3, 0, 'f', b.seconds < 0.01 ? 1 : 0)
                       .arg(b.runs.size())
                       .arg(b.runs.size() == 1 ? tr("run") : tr("runs"));
    if (b.share) text += tr("; grids take %1 % of the engine's time while it trains").arg(100.0 * *b.share, 0, 'f', 1);
    return text;
}

bool BoundaryView::showsStep(qint64 steps) const {
    const auto session = m_store->session();
    if (session && !mpx::boundary_refusal(session->config.data).empty()) return true;
    return m_shown && m_shown->step >= steps;
}

void BoundaryView::rebuildImages() {
    m_shown = m_store->boundaries();
    m_images.clear();
    if (!m_shown) return;
    const auto& b = *m_shown;
    const int n = b.resolution;
    for (const mpx::BoundaryGrid& g : b.runs) {
        QImage img(n, n, QImage::Format_RGB32);
        for (int r = 0; r < n; ++r) {
            auto* line = reinterpret_cast<QRgb*>(img.scanLine(n - 1 - r));  // row 0 is the lowest y
            for (int c = 0; c < n; ++c) {
                const auto i = static_cast<std::size_t>(r) * static_cast<std::size_t>(n) + static_cast<std::size_t>(c);
                line[c] = cellColour(g.label[i], g.confidence[i], b.classes);
            }
        }
        m_images.push_back(std::move(img));
    }
}

QImage BoundaryView::mapImage(int run) const {
    return run >= 0 && run < static_cast<int>(m_images.size()) ? m_images[static_cast<std::size_t>(run)] : QImage();
}

QString BoundaryView::headerTitle() const {
    return m_shown ? tr("The class each run's model predicts over the input plane, after %1 steps").arg(m_shown->step) : QString();
}

QString BoundaryView::caption(int run) const {
    if (!m_shown) return {};
    const auto& b = *m_shown;
    const auto session = m_store->session();
    const auto ri = static_cast<std::size_t>(run);
    QString first;
    if (b.reference == run) first = tr("the reference (FP32)");
    else if (b.reference >= 0 && ri < b.agreement.size() && b.agreement[ri])
        first = tr("same as %1 on %2 % of the plane")
                    .arg(session ? session->runs[static_cast<std::size_t>(b.reference)].label : QString(),
                         agreementPercent(*b.agreement[ri]));
    QString second;
    if (ri < static_cast<std::size_t>(m_store->runCount()) && b.step > 0) {
        const gui::BucketStat acc = m_store->history(run).latest(gui::Metric::evalAccuracy, b.step - 1);
        if (acc.valid) {
            second = tr("held-out accuracy %1 %").arg(agreementPercent(acc.mean));
            if (acc.last + 1 != b.step) second += tr(" (after %1 steps)").arg(acc.last + 1);
        }
    }
    return first + QLatin1Char('\n') + second;
}

BoundaryView::Layout BoundaryView::layout() const {
    Layout l;
    const QFontMetrics fm(scaledFont());
    const int line = fm.lineSpacing();
    const int runs = m_shown ? static_cast<int>(m_shown->runs.size()) : 0;
    // The header wraps rather than cut (the classroom's large text on a laptop): its title in bold.
    const int headW = width() - 2 * k_margin;
    const auto wrapped = [](const QFont& f, int w, const QString& t) {
        return t.isEmpty() ? 0 : QFontMetrics(f).boundingRect(QRect(0, 0, std::max(1, w), 10'000), Qt::TextWordWrap, t).height();
    };
    QFont bold = scaledFont();
    bold.setBold(true);
    l.title = headerTitle();
    const int titleLines = wrapped(bold, headW, l.title), costLines = wrapped(scaledFont(), headW, costText());
    l.header = QRect(k_margin, k_margin / 2, headW, std::max(2 * line, titleLines + costLines) + 4);
    l.titleHeight = titleLines;
    if (runs == 0) return l;
    l.gap = k_gap;
    // Captions take the lines they wrap to at the maps' width (two more than one each where the maps
    // are narrow: the classroom's large text); the legend may wrap twice.
    const int titleH = line + 6, legendH = 3 * line + 4;
    const int availW = (width() - 2 * k_margin - (runs - 1) * l.gap) / runs;
    const auto footFor = [&](int side) {
        int h = 2 * line;
        for (int run = 0; run < runs; ++run) h = std::max(h, wrapped(scaledFont(), side, caption(run)));
        return h + 6;
    };
    // The largest maps whose captions, wrapped at their width, still leave room for the legend.
    const int room = height() - k_margin - l.header.bottom() - 4 - titleH - legendH;
    l.side = std::max(40, std::min(availW, room - footFor(availW)));
    int footH = footFor(l.side);
    // Not below two thirds of the room: where long captions cannot fit beside the maps (mid-run, "after
    // N steps", the classroom's text), the legend goes lower rather than the maps to nothing.
    const int least = std::max(40, std::min(availW, room * 2 / 3));
    while (l.side > least && l.side + footH > room) {
        l.side = std::max(least, l.side - 8);
        footH = footFor(l.side);
    }
    l.footHeight = footH;
    l.left = (width() - (runs * l.side + (runs - 1) * l.gap)) / 2;
    l.top = l.header.bottom() + 4 + titleH;
    // The legend right under the maps' captions, where the eye goes next.
    l.legend = QRect(l.left, l.top + l.side + footH, width() - l.left - k_margin, legendH);
    return l;
}

QRect BoundaryView::mapRect(int run) const {
    if (!m_shown || !message().isEmpty() || run < 0 || run >= static_cast<int>(m_shown->runs.size())) return {};
    const Layout l = layout();
    return {l.left + run * (l.side + l.gap), l.top, l.side, l.side};
}

void BoundaryView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QString msg = message();
    if (!msg.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(40, 40, -40, -40), Qt::AlignCenter | Qt::TextWordWrap, msg);
        return;
    }
    const auto& b = *m_shown;
    const auto session = m_store->session();
    const Layout l = layout();
    const QFont normal = scaledFont();
    const QFontMetrics fm(normal);
    const int line = fm.lineSpacing();
    const QColor text = palette().color(QPalette::WindowText);

    // Header: what, when, at what cost.
    QFont bold = normal;
    bold.setBold(true);
    p.setPen(text);
    p.setFont(bold);
    p.drawText(QRect(l.header.left(), l.header.top(), l.header.width(), l.titleHeight), Qt::AlignLeft | Qt::TextWordWrap, l.title);
    p.setFont(normal);
    p.drawText(QRect(l.header.left(), l.header.top() + l.titleHeight, l.header.width(), l.header.height() - l.titleHeight),
                  Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, costText());

    const double sx = 1.0 / (b.plane.x1 - b.plane.x0), sy = 1.0 / (b.plane.y1 - b.plane.y0);
    const double dot = std::clamp(l.side / 110.0, 1.6, 3.2) * std::sqrt(m_scale);
    const QBrush hatch(QColor(0, 0, 0, 110), Qt::BDiagPattern);
    const mpx::BoundaryGrid* ref = b.reference >= 0 ? &b.runs[static_cast<std::size_t>(b.reference)] : nullptr;
    for (int run = 0; run < static_cast<int>(b.runs.size()); ++run) {
        const QRect r = mapRect(run);
        const auto ri = static_cast<std::size_t>(run);
        const QString label = session && ri < session->runs.size() ? session->runs[ri].label : QString::number(run);
        // Title in the run's colour, as in every chart.
        p.setFont(bold);
        p.setPen(runColour(session, run));
        p.fillRect(QRect(r.left(), r.top() - line - 2, 4, line - 2), runColour(session, run));
        p.drawText(QRect(r.left() + 8, r.top() - line - 4, r.width() - 8, line), Qt::AlignLeft | Qt::AlignBottom,
                   QFontMetrics(bold).elidedText(label, Qt::ElideRight, r.width() - 8));
        p.setFont(normal);

        p.setRenderHint(QPainter::SmoothPixmapTransform, false);  // one cell, one block: the resolution shows
        p.drawImage(r, m_images[ri]);

        const mpx::BoundaryGrid& g = b.runs[ri];
        const int n = b.resolution;
        const double cw = static_cast<double>(r.width()) / n, ch = static_cast<double>(r.height()) / n;
        auto cell = [n](int row, int col) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(n) + static_cast<std::size_t>(col); };
        auto top = [&](int row) { return r.bottom() + 1 - (row + 1) * ch; };
        p.setRenderHint(QPainter::Antialiasing, false);
        // Hatched: where this run predicts another class than FP32 (what "does not track" looks like).
        if (ref && ref != &g) {
            p.setPen(Qt::NoPen);
            p.setBrush(hatch);
            for (int row = 0; row < n; ++row)
                for (int col = 0; col < n;) {
                    if (g.label[cell(row, col)] == ref->label[cell(row, col)]) {
                        ++col;
                        continue;
                    }
                    const int from = col;
                    while (col < n && g.label[cell(row, col)] != ref->label[cell(row, col)]) ++col;
                    p.drawRect(QRectF(r.left() + from * cw, top(row), (col - from) * cw, ch));
                }
        }
        // Class edges: a line wherever neighbouring cells predict different classes.
        p.setPen(QPen(QColor(30, 30, 30, 200), 1));
        for (int row = 0; row < n; ++row)
            for (int col = 0; col < n; ++col) {
                const double x = r.left() + col * cw, y = top(row);
                if (col + 1 < n && g.label[cell(row, col)] != g.label[cell(row, col + 1)])
                    p.drawLine(QPointF(x + cw, y), QPointF(x + cw, y + ch));
                if (row + 1 < n && g.label[cell(row, col)] != g.label[cell(row + 1, col)])
                    p.drawLine(QPointF(x, y), QPointF(x + cw, y));
            }

        // Held-out points in their true class's colour.
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setClipRect(r);
        const std::size_t shown = std::min(b.point_labels.size(), b.points.size() / 2);  // points: (shown, 2) row-major
        for (std::size_t k = 0; k < shown; ++k) {
            const double px = r.left() + (b.points[2 * k] - b.plane.x0) * sx * r.width();
            const double py = r.bottom() + 1 - (b.points[2 * k + 1] - b.plane.y0) * sy * r.height();
            p.setPen(QPen(Qt::white, 0.8));
            p.setBrush(classColour(b.point_labels[k]).darker(115));
            p.drawEllipse(QPointF(px, py), dot, dot);
        }
        p.setClipping(false);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(palette().color(QPalette::Mid), 1));  // neutral: the class colours are the map's
        p.drawRect(r.adjusted(-1, -1, 0, 0));

        // Under the map: how it compares with FP32, and what the held-out split says.
        p.setPen(text);
        p.drawText(QRect(r.left(), r.bottom() + 4, r.width(), l.footHeight), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                      caption(run));
    }

    // Legend, wrapping onto a second line where it must: classes, paleness, hatching, no
    // prediction, dots, the plane's extent.
    p.setRenderHint(QPainter::Antialiasing, false);
    int x = l.legend.left(), y = l.legend.top();
    const int s = fm.height() - 4, right = width() - k_margin;
    auto item = [&](int markWidth, const QString& what, const std::function<void(QRect)>& mark) {
        const int w = markWidth + 4 + fm.horizontalAdvance(what);
        if (x > l.legend.left() && x + w > right) {
            x = l.legend.left();
            y += line;
        }
        mark(QRect(x, y + 2, markWidth, s));
        p.setPen(text);
        p.drawText(QPointF(x + markWidth + 4, y + fm.ascent()), what);
        x += w + 14;
    };
    const int K = std::max(2, b.classes);
    for (int c = 0; c < b.classes; ++c)
        item(s, tr("class %1").arg(c), [&](QRect m) { p.fillRect(m, classColour(c)); });
    item(80, tr("pale: unsure (probability %1) → deep: sure (1)").arg(plainNumber(1.0 / K)), [&](QRect m) {
        for (int i = 0; i < m.width(); ++i)
            p.fillRect(QRect(m.left() + i, m.top(), 1, m.height()),
                       QColor(cellColour(0, static_cast<float>(1.0 / K + (1.0 - 1.0 / K) * i / (m.width() - 1)), K)));
    });
    if (ref && b.runs.size() > 1)
        item(s, tr("hatched: another class than %1").arg(session ? session->runs[static_cast<std::size_t>(b.reference)].label : QString()),
             [&](QRect m) {
                 p.fillRect(m, Qt::white);
                 p.fillRect(m, hatch);
             });
    item(s, tr("inf/NaN: no prediction"), [&](QRect m) { p.fillRect(m, k_noPrediction); });
    item(s, tr("held-out point, in its true class's colour"), [&](QRect m) {
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setPen(QPen(Qt::white, 0.8));
        p.setBrush(classColour(0).darker(115));
        p.drawEllipse(QPointF(m.center()) + QPointF(0.5, 0.5), dot, dot);
        p.setBrush(Qt::NoBrush);
        p.setRenderHint(QPainter::Antialiasing, false);
    });
    item(0, tr("plane: x %1 … %2, y %3 … %4")
                .arg(plainNumber(b.plane.x0), plainNumber(b.plane.x1), plainNumber(b.plane.y0), plainNumber(b.plane.y1)),
         [](QRect) {});
}

QString BoundaryView::tooltipAt(QPoint pos) const {
    if (!m_shown) return {};
    const auto& b = *m_shown;
    const auto session = m_store->session();
    for (int run = 0; run < static_cast<int>(b.runs.size()); ++run) {
        const QRect r = mapRect(run);
        if (!r.contains(pos)) continue;
        const int n = b.resolution;
        const int col = std::clamp((pos.x() - r.left()) * n / r.width(), 0, n - 1);
        const int row = std::clamp((r.bottom() - pos.y()) * n / r.height(), 0, n - 1);
        const auto cell = static_cast<std::size_t>(row) * static_cast<std::size_t>(n) + static_cast<std::size_t>(col);
        const double x = b.plane.x0 + (col + 0.5) * (b.plane.x1 - b.plane.x0) / n;
        const double y = b.plane.y0 + (row + 0.5) * (b.plane.y1 - b.plane.y0) / n;
        QString t = tr("<b>at (%1, %2)</b>, step %3<br>").arg(plainNumber(x), plainNumber(y)).arg(b.step);
        for (std::size_t i = 0; i < b.runs.size(); ++i) {
            const QString label = session && i < session->runs.size() ? session->runs[i].label : QString::number(i);
            const int cls = b.runs[i].label[cell];
            t += QStringLiteral("<span style='color:%1'>■</span> %2: ").arg(runColour(session, static_cast<int>(i)).name(), label.toHtmlEscaped());
            t += cls < 0 ? tr("no prediction (inf/NaN)")
                         : tr("class %1, probability %2").arg(cls).arg(static_cast<double>(b.runs[i].confidence[cell]), 0, 'f', 3);
            t += QStringLiteral("<br>");
        }
        return t;
    }
    return {};
}

bool BoundaryView::event(QEvent* e) {
    if (e->type() != QEvent::ToolTip) return QWidget::event(e);
    auto* help = static_cast<QHelpEvent*>(e);
    const QString cell = tooltipAt(help->pos());
    QToolTip::showText(help->globalPos(), cell.isEmpty() ? toolTip() : cell, this);
    return true;
}

}  // namespace mpx::ui
