// PlotWidget's bar mode (plot_widget.hpp): stacked horizontal bars, one per category, a legend at the
// side naming the sets, a value axis from 0.
// Rule: the line mode's axes are taken off (and kept by the widget), never mixed with the bars'; bar
// sets are rebuilt only when their names or the categories change, values replaced in place.
#include "ui/kit/plot_private.hpp"

namespace mpx::ui {
using namespace plot;

namespace {
// Measured on Qt 6.4's layout (ui_test_window_fit, the Memory chart of five and seven runs).
constexpr int k_barLabelPad = 4;   // a category label's padding above and below
constexpr int k_legendRowPad = 8;  // a legend entry's marker and spacing beyond its line
constexpr int k_barAxisPad = 8;    // between the value axis's labels and its title
constexpr int k_chartFrame = 16;   // the chart's background frame and the title's gap
constexpr int k_legendFrame = 24;  // the legend's own margins above and below its entries
}  // namespace

void PlotWidget::setBars(const QStringList& categories, const QList<BarSet>& sets, const QString& valueTitle) {
    if (!d->bars) {
        removeAllSeries();
        d->chart->removeAxis(d->x);
        d->chart->removeAxis(d->y);
        // removeAxis gives up the chart's ownership; the widget owns them now (other calls may
        // still read them), so they are deleted with it instead of leaking.
        d->x->setParent(this);
        d->y->setParent(this);
        d->bars = new QHorizontalStackedBarSeries;
        d->bars->setBarWidth(0.6);
        d->chart->addSeries(d->bars);
        d->barCategories = new QBarCategoryAxis;
        d->barValues = new QValueAxis;
        d->barCategories->setLabelsFont(scaled(axisFont(), d->fontScale));
        d->barValues->setLabelsFont(scaled(axisFont(), d->fontScale));
        d->barValues->setTitleFont(scaled(axisFont(), d->fontScale));
        d->barValues->setLabelFormat(QStringLiteral("%.6g"));  // nice ticks: "1000", never "1e+03"
        d->barValues->setTickType(QValueAxis::TicksDynamic);
        d->barValues->setTickAnchor(0);
        d->barValues->setGridLineColor(QColor(0, 0, 0, 28));
        d->chart->addAxis(d->barCategories, Qt::AlignLeft);
        d->chart->addAxis(d->barValues, Qt::AlignBottom);
        d->bars->attachAxis(d->barCategories);
        d->bars->attachAxis(d->barValues);
        d->chart->legend()->show();
        // At the side, one category per line: a row under a narrow chart cuts the names short.
        d->chart->legend()->setAlignment(Qt::AlignRight);
        QFont lf = axisFont();
        lf.setPointSizeF(8 * d->fontScale);
        d->chart->legend()->setFont(lf);
        if (!d->placeholderText.isEmpty()) setPlaceholder(d->placeholderText);  // stays empty
    }
    d->barValues->setTitleText(valueTitle);
    bool sameSets = d->barSets.size() == sets.size();
    for (int i = 0; sameSets && i < sets.size(); ++i) sameSets = d->barSets[i]->label() == sets[i].name;
    if (!sameSets || categories != d->barCategoryNames) {
        d->bars->clear();
        d->barSets.clear();
        for (const BarSet& s : sets) {
            auto* set = new QBarSet(s.name);
            set->setColor(s.colour);
            set->setBorderColor(s.colour.darker(115));
            d->bars->append(set);
            d->barSets << set;
        }
        d->barCategories->clear();
        d->barCategories->append(categories);
        d->barCategoryNames = categories;
        d->barSetsGiven.clear();
    }
    bool same = d->barSetsGiven.size() == sets.size();
    for (int i = 0; same && i < sets.size(); ++i) same = d->barSetsGiven[i].values == sets[i].values;
    if (same) return;
    d->barSetsGiven = sets;
    double total = 0;
    QList<double> sums(categories.size(), 0.0);
    for (int i = 0; i < sets.size(); ++i) {
        for (int c = 0; c < categories.size(); ++c) {
            const qreal v = c < sets[i].values.size() ? sets[i].values[c] : 0;
            if (d->barSets[i]->count() <= c) d->barSets[i]->append(v);
            else if (d->barSets[i]->at(c) != v) d->barSets[i]->replace(c, v);
            sums[c] += v;
        }
    }
    for (double s : sums) total = std::max(total, s);
    d->barTotal = total;
    fitBarTicks();
}

int PlotWidget::barsLeastHeight() const {
    if (!d->bars || d->barCategoryNames.isEmpty()) return 0;
    const QFontMetrics axis(d->barCategories->labelsFont());
    const QFontMetrics legend(d->chart->legend()->font());
    const QFontMetrics title(d->chart->titleFont());
    const QMargins m = d->chart->margins();
    // The plot: a category's share at least its label's line; the legend: a row per set.
    const int plot = static_cast<int>(d->barCategoryNames.size() + 1) * (axis.height() + k_barLabelPad);
    const int keys = static_cast<int>(d->barSets.size()) * (legend.height() + k_legendRowPad);
    const int below = 2 * axis.lineSpacing() + k_barAxisPad;  // the value axis's labels and its title
    return title.lineSpacing() + m.top() + m.bottom() + std::max(plot + below, keys + k_legendFrame) + k_chartFrame;
}

// The value axis of the bars: from 0 to a round number over the longest bar, as many labels as fit
// the plot's width in its font (applyNiceNumbers chose five whatever the font, and classroom's text
// ran them together: "0100200300400").
void PlotWidget::fitBarTicks() {
    if (!d->bars) return;
    const double top = d->barTotal > 0 ? d->barTotal * 1.05 : 1;
    const QFontMetricsF fm(d->barValues->labelsFont());
    // The widest label: the power of ten at or over the top ("1000" over 602), as "%.6g" prints it.
    const QString widest = top >= 1 ? QString::number(std::pow(10.0, std::ceil(std::log10(top))), 'f', 0) : QString::number(top, 'g', 3);
    const double label = fm.horizontalAdvance(widest) + 2 * fm.averageCharWidth();
    const int ticks = std::clamp(static_cast<int>(d->chart->plotArea().width() / label), 2, 5);
    const double step = niceStep(top, ticks);
    const double end = std::ceil(top / step - 1e-9) * step;
    if (d->barValues->min() == 0 && d->barValues->max() == end && d->barValues->tickInterval() == step) return;
    applyAxis(d->barValues, 0, end, step);
}

}  // namespace mpx::ui
