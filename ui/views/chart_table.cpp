// The chart table.
#include "ui/views/chart_table.hpp"

#include <QCoreApplication>
#include <QRegularExpression>

#include "ui/kit/concepts.hpp"

namespace mpx::ui {
namespace {

using gui::Metric;

constexpr ChartSpec k_charts[] = {
    {ChartId::loss, QT_TRANSLATE_NOOP("ChartTable", "Training loss (each step's batch)"),
     QT_TRANSLATE_NOOP("ChartTable", "loss"), AxisKind::loss,
     Metric::loss, Draw::rawAndSmoothed, false, &concepts::loss},
    {ChartId::evalLoss, QT_TRANSLATE_NOOP("ChartTable", "Held-out loss"),
     QT_TRANSLATE_NOOP("ChartTable", "loss on test data"), AxisKind::loss, Metric::evalLoss, Draw::dots, false, &concepts::evalLoss},
    {ChartId::evalAccuracy, QT_TRANSLATE_NOOP("ChartTable", "Held-out accuracy"),
     QT_TRANSLATE_NOOP("ChartTable", "accuracy, % right"), AxisKind::percent, Metric::evalAccuracy, Draw::dots,
     false, &concepts::evalAccuracy},
    {ChartId::scale,
     // Its events are keyed under the chart, beside their lanes (ChartsPanel::drawLanes).
     QT_TRANSLATE_NOOP("ChartTable", "Loss scale (log₂)"), QT_TRANSLATE_NOOP("ChartTable", "scale"), AxisKind::log2, Metric::lossScale, Draw::envelope, true, &concepts::lossScale},
    {ChartId::underflow, QT_TRANSLATE_NOOP("ChartTable", "Gradient underflow"),
     QT_TRANSLATE_NOOP("ChartTable", "% of gradients → 0"), AxisKind::percent, Metric::underflow, Draw::envelope,
     false, &concepts::underflow},
    {ChartId::overflow, QT_TRANSLATE_NOOP("ChartTable", "Overflows per step"),
     QT_TRANSLATE_NOOP("ChartTable", "values → ±inf or max"), AxisKind::count, Metric::overflow, Draw::max, false,
     &concepts::overflow},
    {ChartId::lostUpdates, QT_TRANSLATE_NOOP("ChartTable", "Lost updates (nothing stored changed)"),
     QT_TRANSLATE_NOOP("ChartTable", "% of weights"), AxisKind::percent, Metric::lostUpdates, Draw::mean,
     false, &concepts::lostUpdates},
    {ChartId::throughput, QT_TRANSLATE_NOOP("ChartTable", "Throughput per run (smoothed)"),
     QT_TRANSLATE_NOOP("ChartTable", "steps/s (own time)"), AxisKind::count, Metric::throughput, Draw::average, false,
     &concepts::throughput},
    {ChartId::memory, QT_TRANSLATE_NOOP("ChartTable", "Memory by category"), "", AxisKind::count, Metric::loss,
     Draw::stacked, false, &concepts::memory},
};
static_assert(std::size(k_charts) == k_chart_count);

constexpr bool rowsInIdOrder() {
    for (int i = 0; i < k_chart_count; ++i)
        if (static_cast<int>(k_charts[i].id) != i) return false;
    return true;
}
static_assert(rowsInIdOrder(), "k_charts[i] must be the row of ChartId i");

constexpr const char* k_keys[] = {"loss", "eval-loss", "eval-accuracy", "scale", "underflow",
                                  "overflow", "lost-updates", "throughput", "memory"};
static_assert(std::size(k_keys) == k_chart_count, "one key per ChartId, in id order");

}  // namespace

std::span<const ChartSpec> chartTable() { return k_charts; }
const ChartSpec& chartSpec(ChartId id) { return k_charts[static_cast<int>(id)]; }
QString chartTitle(const ChartSpec& c) { return QCoreApplication::translate("ChartTable", c.title); }
QString chartYTitle(const ChartSpec& c) {
    return *c.yTitle ? QCoreApplication::translate("ChartTable", c.yTitle) : QString();
}

const char* chartKey(ChartId id) { return k_keys[static_cast<int>(id)]; }

std::optional<ChartId> chartFromKey(const QString& key) {
    for (int i = 0; i < k_chart_count; ++i)
        if (key == QLatin1String(k_keys[i])) return static_cast<ChartId>(i);
    return std::nullopt;
}

QString chartPlainTitle(ChartId id) {
    QString t = chartTitle(chartSpec(id));
    t.remove(QRegularExpression(QStringLiteral("&nbsp;.*$")));  // legend symbols after the name
    t.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
    return t.trimmed();
}

}  // namespace mpx::ui
