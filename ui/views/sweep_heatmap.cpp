// SweepHeatmap: cells, axes, colour bar and the line chart for one numeric field.
#include "ui/views/sweep_heatmap.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <cmath>

#include "engine/base/text.hpp"
#include "ui/kit/chart_image.hpp"
#include "ui/kit/log2_axis.hpp"

namespace mpx::ui {
namespace {

constexpr int k_left = 80, k_bottom = 56, k_top = 28, k_bar = 70;

// Viridis at five stops: ordered in lightness, readable in grey, kind to colour-blind readers.
QColor viridis(double t) {
    static const QColor stops[] = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140),
                                   QColor(94, 201, 98), QColor(253, 231, 37)};
    t = std::clamp(t, 0.0, 1.0) * 4.0;
    const int i = std::min(3, static_cast<int>(t));
    const double f = t - i;
    const QColor& a = stops[i];
    const QColor& b = stops[i + 1];
    return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * f),
                            static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * f),
                            static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * f));
}

QString shortNumber(double v) { return QString::number(v, 'g', 4); }

bool powerOfTwo(double v) {
    int e = 0;
    return v > 0 && std::frexp(v, &e) == 0.5;
}

// Black on the light end of viridis, white on the dark end.
QColor textOn(const QColor& fill) { return fill.lightnessF() > 0.55 ? QColor(20, 20, 20) : QColor(250, 250, 250); }

}  // namespace

SweepHeatmap::SweepHeatmap(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumSize(360, 260);
    installChartImageMenu(this, QStringLiteral("sweep-map"));  // a figure for slides (chart_image.hpp)
}

void SweepHeatmap::setGrid(const mpx::SweepGrid& grid) {
    m_grid = grid;
    updateRange();
    update();
}

void SweepHeatmap::setPoints(const std::vector<mpx::SweepPoint>* points) {
    m_points = points;
    updateRange();
    update();
}

void SweepHeatmap::setOutcome(const QString& column) {
    m_outcome = column;
    updateRange();
    update();
}

void SweepHeatmap::setRun(int runIndex) {
    m_run = std::max(0, runIndex);
    updateRange();
    update();
}

const mpx::SweepPoint* SweepHeatmap::find(std::size_t point) const {
    if (!m_points) return nullptr;
    const auto it = std::lower_bound(m_points->begin(), m_points->end(), point,
                                     [](const mpx::SweepPoint& p, std::size_t i) { return p.index < i; });
    return it != m_points->end() && it->index == point ? &*it : nullptr;
}

std::optional<double> SweepHeatmap::value(std::size_t point) const {
    const auto* p = find(point);
    if (!p || m_run >= static_cast<int>(p->runs.size())) return std::nullopt;
    const auto v = mpx::outcome_value(p->runs[static_cast<std::size_t>(m_run)], m_outcome.toStdString());
    if (!v || !std::isfinite(*v)) return std::nullopt;
    return v;
}

void SweepHeatmap::updateRange() {
    bool any = false;
    m_min = 0;
    m_max = 1;
    for (std::size_t i = 0; i < m_grid.size(); ++i)
        if (const auto v = value(i)) {
            m_min = any ? std::min(m_min, *v) : *v;
            m_max = any ? std::max(m_max, *v) : *v;
            any = true;
        }
    // log10(1 + v) keeps zeros (no skipped steps) on the scale.
    m_log = any && m_min >= 0 && (m_max + 1) / (m_min + 1) > 100;
}

QColor SweepHeatmap::colour(double v) const {
    const auto f = [this](double x) { return m_log ? std::log10(1 + x) : x; };
    const double lo = f(m_min), hi = f(m_max);
    return viridis(hi > lo ? (f(v) - lo) / (hi - lo) : 0.5);
}

SweepHeatmap::Layout SweepHeatmap::layout() const {
    Layout l;
    const auto& axes = m_grid.axes();
    for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
        if (axes[static_cast<std::size_t>(i)].kind == mpx::AxisKind::categorical) l.categorical = i;
        else if (l.numericX < 0) l.numericX = i;
        else l.numericY = i;
    }
    if (l.categorical >= 0) l.panels = static_cast<int>(axes[static_cast<std::size_t>(l.categorical)].values.size());
    if (l.numericX >= 0) l.nx = static_cast<int>(axes[static_cast<std::size_t>(l.numericX)].values.size());
    if (l.numericY >= 0) l.ny = static_cast<int>(axes[static_cast<std::size_t>(l.numericY)].values.size());
    l.area = QRect(k_left, k_top, std::max(10, width() - k_left - k_bar), std::max(10, height() - k_top - k_bottom));
    l.gap = l.panels > 1 ? 16 : 0;
    l.panelW = (l.area.width() - l.gap * (l.panels - 1)) / l.panels;
    return l;
}

QStringList SweepHeatmap::axisLabels(int axis) const {
    QStringList out;
    if (axis < 0 || axis >= static_cast<int>(m_grid.axes().size())) return out;
    const auto& ax = m_grid.axes()[static_cast<std::size_t>(axis)];
    if (ax.kind == mpx::AxisKind::categorical) {
        for (const auto& v : ax.values) out << QString::fromStdString(v);
        return out;
    }
    // One notation per axis: powers of two as 2ᵏ when every value is one and some are large (loss
    // scales: 2¹⁶ reads better than 65536, and "256" beside "2¹⁶" reads as two kinds of number),
    // else plain numbers, whole ones with every digit (65536, not 6.554e+04).
    bool powers = !ax.numbers.empty(), large = false;
    for (double v : ax.numbers) powers = powers && powerOfTwo(v), large = large || v >= 16384.0;
    for (double v : ax.numbers)
        out << (powers && large                        ? pow2Text(std::log2(v))
                : v == std::round(v) && std::abs(v) < 1e9 ? QString::number(v, 'f', 0)
                                                          : shortNumber(v));
    return out;
}

QString SweepHeatmap::cellText(std::size_t point) const {
    const auto v = value(point);
    return v ? shortNumber(*v) : QString();
}

QRect SweepHeatmap::cellRect(std::size_t point) const {
    if (point >= m_grid.size()) return {};
    const Layout l = layout();
    const auto c = m_grid.coordinates(point);
    const int panel = l.categorical >= 0 ? static_cast<int>(c[static_cast<std::size_t>(l.categorical)]) : 0;
    const int x = l.numericX >= 0 ? static_cast<int>(c[static_cast<std::size_t>(l.numericX)]) : 0;
    const int y = l.numericY >= 0 ? static_cast<int>(c[static_cast<std::size_t>(l.numericY)]) : 0;
    const int left = l.area.left() + panel * (l.panelW + l.gap);
    // Edges rounded from the exact positions: neighbouring cells share an edge, no gaps.
    const auto edge = [](int from, int length, int n, int i) {
        return from + static_cast<int>(std::lround(static_cast<double>(length) * i / n));
    };
    const int x0 = edge(left, l.panelW, l.nx, x), x1 = edge(left, l.panelW, l.nx, x + 1);
    if (l.numericY < 0) return QRect(x0, l.area.top(), x1 - x0, l.area.height());  // a line chart: the column
    const int row = l.ny - 1 - y;  // the first value at the bottom
    const int y0 = edge(l.area.top(), l.area.height(), l.ny, row), y1 = edge(l.area.top(), l.area.height(), l.ny, row + 1);
    return QRect(x0, y0, x1 - x0, y1 - y0);
}

std::optional<std::size_t> SweepHeatmap::pointAt(QPoint pos) const {
    for (std::size_t i = 0; i < m_grid.size(); ++i)
        if (cellRect(i).contains(pos)) return i;
    return std::nullopt;
}

void SweepHeatmap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (m_grid.size() == 0) {
        p.drawText(rect(), Qt::AlignCenter, tr("Pick one or two fields and press Start."));
        return;
    }
    const Layout l = layout();
    const auto& axes = m_grid.axes();
    p.setRenderHint(QPainter::Antialiasing, l.numericY < 0);
    const QFontMetrics fm(font());
    for (int panel = 0; panel < l.panels; ++panel) {
        const int left = l.area.left() + panel * (l.panelW + l.gap);
        const QRect box(left, l.area.top(), l.panelW, l.area.height());
        if (l.categorical >= 0)
            p.drawText(QRect(left, 4, l.panelW, k_top - 6), Qt::AlignCenter,
                       QString::fromStdString(axes[static_cast<std::size_t>(l.categorical)].values[static_cast<std::size_t>(panel)]));
        QPolygonF line;
        for (std::size_t i = 0; i < m_grid.size(); ++i) {
            const auto c = m_grid.coordinates(i);
            if (l.categorical >= 0 && static_cast<int>(c[static_cast<std::size_t>(l.categorical)]) != panel) continue;
            const QRect r = cellRect(i);
            const auto v = value(i);
            if (l.numericY >= 0) {
                // A one-pixel gap of the background between cells, and the value inside where it fits.
                const QColor fill = v ? colour(*v) : palette().window().color();
                const QRect inner = r.adjusted(0, 0, -1, -1);
                p.fillRect(inner, fill);
                const QString t = cellText(i);
                if (!t.isEmpty() && fm.horizontalAdvance(t) + 4 <= inner.width() && fm.height() <= inner.height()) {
                    p.setPen(textOn(fill));
                    p.drawText(inner, Qt::AlignCenter, t);
                }
            } else if (v) {
                const auto f = [this](double x) { return m_log ? std::log10(1 + x) : x; };
                const double t = f(m_max) > f(m_min) ? (f(*v) - f(m_min)) / (f(m_max) - f(m_min)) : 0.5;
                line << QPointF(r.center().x(), box.bottom() - t * (box.height() - 8) - 4);
            }
        }
        if (l.numericY < 0 && !line.isEmpty()) {
            p.setPen(QPen(palette().text().color(), 2));
            p.drawPolyline(line);
            for (const auto& pt : line) p.setBrush(palette().highlight()), p.drawEllipse(pt, 3.5, 3.5);
        }
        p.setPen(palette().mid().color());
        p.setBrush(Qt::NoBrush);
        p.drawRect(box.adjusted(0, 0, -1, -1));
        // x labels: every value that fits
        p.setPen(palette().text().color());
        if (l.numericX >= 0) {
            const auto& ax = axes[static_cast<std::size_t>(l.numericX)];
            const QStringList labels = axisLabels(l.numericX);
            const double cw = static_cast<double>(l.panelW) / l.nx;
            int lastRight = -1000;
            for (int x = 0; x < l.nx; ++x) {
                const QString& t = labels[x];
                const int cx = static_cast<int>(left + (x + 0.5) * cw), w = fm.horizontalAdvance(t);
                if (cx - w / 2 < lastRight + 4) continue;
                p.drawText(QRect(cx - w / 2 - 2, box.bottom() + 4, w + 4, fm.height()), Qt::AlignCenter, t);
                lastRight = cx + w / 2;
            }
            p.drawText(QRect(left, box.bottom() + 6 + fm.height(), l.panelW, fm.height()), Qt::AlignCenter,
                       QString::fromStdString(ax.field));
        }
    }
    // y axis: the second numeric field's values, or the outcome's range for a line chart
    p.setPen(palette().text().color());
    if (l.numericY >= 0) {
        const auto& ay = axes[static_cast<std::size_t>(l.numericY)];
        const QStringList labels = axisLabels(l.numericY);
        const double ch = static_cast<double>(l.area.height()) / l.ny;
        int lastTop = 100000;
        for (int y = 0; y < l.ny; ++y) {
            const int cy = static_cast<int>(l.area.top() + (l.ny - 1 - y + 0.5) * ch);
            if (cy + fm.height() / 2 > lastTop) continue;
            p.drawText(QRect(0, cy - fm.height() / 2, k_left - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                       labels[y]);
            lastTop = cy - fm.height() / 2;
        }
        p.save();
        p.translate(12, l.area.center().y());
        p.rotate(-90);
        p.drawText(QRect(-l.area.height() / 2, -10, l.area.height(), 20), Qt::AlignCenter, QString::fromStdString(ay.field));
        p.restore();
    } else {
        p.drawText(QRect(0, l.area.top(), k_left - 6, fm.height()), Qt::AlignRight, shortNumber(m_max));
        p.drawText(QRect(0, l.area.bottom() - fm.height(), k_left - 6, fm.height()), Qt::AlignRight, shortNumber(m_min));
        p.drawText(QRect(0, l.area.center().y(), k_left - 6, fm.height()), Qt::AlignRight, m_outcome);
    }
    // colour bar (heatmaps only)
    if (l.numericY >= 0) {
        const QRect bar(width() - k_bar + 12, l.area.top(), 14, l.area.height());
        for (int y = 0; y < bar.height(); ++y) {
            const double t = 1.0 - static_cast<double>(y) / std::max(1, bar.height() - 1);
            p.setPen(viridis(t));
            p.drawLine(bar.left(), bar.top() + y, bar.right(), bar.top() + y);
        }
        p.setPen(palette().text().color());
        p.drawText(QRect(bar.right() + 3, bar.top() - 2, k_bar, fm.height()), Qt::AlignLeft, shortNumber(m_max));
        p.drawText(QRect(bar.right() + 3, bar.bottom() - fm.height() + 2, k_bar, fm.height()), Qt::AlignLeft, shortNumber(m_min));
        p.drawText(QRect(width() - k_bar, 4, k_bar, k_top - 6), Qt::AlignCenter, m_log ? m_outcome + tr(" (log)") : m_outcome);
    }
}

void SweepHeatmap::mouseMoveEvent(QMouseEvent* e) {
    const auto point = pointAt(e->position().toPoint());
    if (!point) {
        QToolTip::hideText();
        return;
    }
    QString text;
    for (const auto& s : m_grid.assignments(*point)) text += QString::fromStdString(s) + "\n";
    if (const auto* p = find(*point)) {
        for (const auto& o : p->runs) {
            text += "\n" + QString::fromStdString(o.run) + "\n";
            for (const auto& c : mpx::sweep_outcome_columns()) {
                const auto v = mpx::outcome_value(o, c);
                text += QStringLiteral("  %1: %2\n").arg(QString::fromStdString(c), v ? shortNumber(*v) : QStringLiteral("–"));
            }
        }
        text += tr("\nClick to load this point as normal runs.");
    } else {
        text += tr("\nnot trained yet");
    }
    QToolTip::showText(e->globalPosition().toPoint(), text.trimmed(), this);
}

void SweepHeatmap::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return;
    if (const auto point = pointAt(e->position().toPoint())) emit pointClicked(*point);
}

}  // namespace mpx::ui
