// The Range view's bands: a format's spans, an FP8 cast's spans placed by the engine's scale rows,
// their labels, fates and drawing.
#include "ui/views/range_bands.hpp"

#include <QCoreApplication>
#include <QFontMetrics>
#include <QLocale>
#include <QPainter>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/config/session_config.hpp"
#include "engine/core/fp4.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/precision/policy.hpp"
#include "ui/kit/log2_axis.hpp"
#include "ui/kit/number_text.hpp"

namespace mpx::ui {
namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

QString tr(const char* s) { return QCoreApplication::translate("mpx::ui::RangeView", s); }
// 1.43, 312.7, 57344: a value as a student reads it; powers of two far from 1 as 2^k.
QString valueText(double log2v) {
    if (log2v < -9.5 || log2v > 19.5) return pow2Text(std::round(log2v * 10) / 10);
    return QString::number(std::exp2(log2v), 'g', log2v < 0 ? 3 : 4);
}
// A scale as a student reads it: 74.28, 8247; far from 1 as a power of two (2^25.7).
QString scaleText(double scale) {
    if (scale >= 0.01 && scale < 1e5) return QString::number(scale, 'g', 4);
    return pow2Text(std::round(std::log2(scale) * 10) / 10);
}
QString maxText(mpx::Format f) { return QString::number(format_info(f).max_finite, 'g', 6); }
// Whether storing in f clips at ±max rather than overflowing: its default rule (E4M3), or it has no
// inf and no NaN to overflow to (E2M1).
bool storeSaturates(mpx::Format f) {
    const FormatInfo d = format_info(f);
    return d.default_overflow == mpx::Overflow::saturate || !d.has_nan;
}

// The nearest engine row to `step`: the store keeps every step's row until it thins a long run.
const gui::Fp8Point* nearestRow(const gui::Fp8Series& s, long long step) {
    const auto& pts = s.points();
    auto it = std::lower_bound(pts.begin(), pts.end(), step,
                               [](const gui::Fp8Point& p, long long v) { return p.step < v; });
    if (it == pts.end()) return pts.empty() ? nullptr : &pts.back();
    if (it != pts.begin() && step - std::prev(it)->step < it->step - step) --it;
    return &*it;
}

QString overflowFate(const Fp8Cast& c) {
    if (c.overflow == mpx::Overflow::saturate) return tr("saturate at %1 (clipped)").arg(maxText(c.format));
    return format_info(c.format).has_inf ? tr("become ±inf") : tr("become NaN (fp8.e4m3_overflow = nan)");
}

// NVFP4 and MXFP4: E2M1's window in the block that holds the row's amax, in the tensor's own values.
// The amax's block is divided by a scale the rules of core/fp4.hpp give for that amax (NVFP4: the
// E4M3 block scale over S_enc, whose largest element lands on 6; MXFP4: the run's power-of-two
// rule); other blocks have smaller scales and windows further left.
Fp8Cast fp4Window(Fp8Cast c, const mpx::RunSpec& spec, const mpx::SessionConfig& config, const gui::Fp8Point& row,
                  long long step) {
    const mpx::Fp4Kind kind = mpx::fp4_kind(spec.mode);
    const mpx::Fp4Config rc = mpx::resolve_fp4(kind, config.fp4, spec.fp4);
    const bool nv = kind == mpx::Fp4Kind::nvfp4;
    c.format = mpx::Format::e2m1;
    c.overflow = mpx::Overflow::saturate;  // E2M1 has no inf or NaN: its casts clamp at ±6
    c.rowStep = row.step;
    c.amax = row.amax;
    c.scale = row.scale;
    c.saturated = row.saturated;
    c.count = row.count;
    c.flushedShare = row.underflowShare();
    const QString name = nv ? QStringLiteral("NVFP4") : QStringLiteral("MXFP4");
    const QString why = nv ? tr("NVFP4: every block of 16 values has its own scale (an E4M3 number, times one FP32 scale for "
                                "the whole tensor), set so that the block's largest value lands on 6, so no single band "
                                "fits the whole tensor.")
                           : tr("MXFP4: every block of 32 values has its own power-of-two scale, set by its largest value, so "
                                "no single band fits the whole tensor.");
    const QString counted = tr("The cast on step %1 clamped %2 of %3 values at ±6 and turned %4 of the non-zero ones into 0.")
                                .arg(row.step)
                                .arg(QLocale().toString(row.saturated), QLocale().toString(row.count), percentText(c.flushedShare));
    c.blockHelp = tr("<br>%1: FP4 (E2M1) holds only 0, 0.5, 1, 1.5, 2, 3, 4 and 6, so each block of %2 values is divided by "
                     "its own scale first. The strip above is that window for the block holding the largest value: "
                     "from half its scale (E2M1's 0.5) to 6 times it; under a quarter of the scale a value becomes 0, "
                     "above 6 times it a value is clamped.%3")
                      .arg(name)
                      .arg(nv ? 16 : 32)
                      .arg(nv ? QString()
                              : tr(" A power-of-two scale can put the block's largest value anywhere from just above 3 "
                                   "to 6: at 3 or below, 4 and 6 go unused (the lost binade)."));
    if (!(row.amax > 0.0f) || !std::isfinite(row.amax)) {
        c.note = why + QLatin1Char('\n') + counted;
        return c;
    }
    double divisor = 0;  // what the amax's block is divided by before rounding
    if (nv) {
        const mpx::core::Nvfp4Global g = mpx::core::nvfp4_global(row.amax, rc.four_over_six ? 256.0f : mpx::core::k_e4m3_max);
        divisor = 1.0 / static_cast<double>(mpx::core::nvfp4_encode_scale(mpx::core::nvfp4_block_scale(row.amax, g), g));
    } else {
        const int e = mpx::core::mxfp4_exponent(row.amax, rc.mx_scale_rule);
        if (e != mpx::core::k_mx_nan_exponent) divisor = static_cast<double>(mpx::core::mx_scale_value(e));
    }
    if (!(divisor > 0) || !std::isfinite(divisor)) {
        c.note = why + QLatin1Char('\n') + counted;
        return c;
    }
    c.active = true;
    c.shift = std::log2(divisor);
    c.bands = formatBands(c.format, c.shift);
    c.title = nv ? tr("cast to NVFP4 (E2M1, a scale per block of 16)") : tr("cast to MXFP4 (E2M1, a power-of-two scale per block of 32)");
    const QString atStep = row.step == step ? QString() : tr(" (step %1: the store kept no row at %2)").arg(row.step).arg(step);
    c.note = why + QLatin1Char('\n') +
             tr("Strip above: E2M1's window in the block holding the amax (%1, ÷%2)%3: 0.5 to 6 times the block's scale. "
                "In any block, values under %4 of its largest become 0.")
                 .arg(QString::number(row.amax, 'g', 3), scaleText(divisor), atStep,
                      nv ? tr("about 1/24") : tr("1/24 to 1/12")) +
             QLatin1Char('\n') + counted;
    return c;
}

}  // namespace

std::vector<BandSpan> formatBands(mpx::Format f, double shift) {
    const FormatInfo d = format_info(f);
    // Round to nearest: below half the smallest subnormal a value becomes 0 (exactly half: the tie
    // goes to the even neighbour, 0).
    const double flush = std::log2(static_cast<double>(d.min_subnormal)) - 1.0 + shift;
    const double normal = std::log2(static_cast<double>(d.min_normal)) + shift;
    const double top = std::log2(static_cast<double>(d.max_finite)) + shift;
    return {{Band::flushed, -k_inf, flush}, {Band::subnormal, flush, normal},
            {Band::normal, normal, top}, {Band::overflow, top, k_inf}};
}

QColor bandColour(Band b) {
    switch (b) {
        case Band::flushed: return QColor(0xd9, 0xd9, 0xd9);
        case Band::subnormal: return QColor(0xfd, 0xe6, 0xc4);
        case Band::normal: return QColor(0xe3, 0xf2, 0xe6);
        case Band::overflow: return QColor(0xf8, 0xc9, 0xc4);
    }
    return Qt::white;
}

std::optional<mpx::Fp8Tensor> fp8OperandOf(mpx::HistTensor t) {
    // The histogram of `input` is the layer's input as stored, which its forward GEMM casts as x;
    // `weight` the working copy the GEMMs cast as w; `grad_output` the dy its backward GEMMs cast.
    switch (t) {
        case mpx::HistTensor::input: return mpx::Fp8Tensor::x;
        case mpx::HistTensor::weight: return mpx::Fp8Tensor::w;
        case mpx::HistTensor::grad_output: return mpx::Fp8Tensor::dy;
        default: return std::nullopt;
    }
}

Fp8Cast fp8Cast(const gui::RecordStore& store, int run, int layer, mpx::HistTensor t, long long step) {
    Fp8Cast c;
    const auto session = store.session();
    if (!session || run < 0 || run >= store.runCount() || run >= static_cast<int>(session->runs.size())) return c;
    const mpx::RunSpec& spec = session->runs[static_cast<std::size_t>(run)].spec;
    if (!mpx::scales_gemms(spec.mode)) return c;
    c.fp8Run = mpx::is_fp8(spec.mode);
    c.fp4Run = mpx::is_fp4(spec.mode);
    c.recipe = mpx::fp8_recipe_of(spec, session->config.fp8);
    c.block = c.recipe == mpx::Fp8Recipe::block;
    const auto operand = fp8OperandOf(t);
    if (!operand) return c;
    const gui::Fp8Series* s = store.fp8(run).series(layer, *operand);
    const gui::Fp8Point* row = s ? nearestRow(*s, step) : nullptr;
    if (!row) {
        c.note = tr("This run casts fc%1's %2 to %3, but no scale has arrived for it yet.")
                     .arg(layer + 1)
                     .arg(QString::fromLatin1(mpx::to_string(t).data(), static_cast<int>(mpx::to_string(t).size())),
                          c.fp4Run ? QStringLiteral("FP4") : QStringLiteral("FP8"));
        return c;
    }
    if (c.fp4Run) return fp4Window(c, spec, session->config, *row, step);
    c.format = s->format();
    c.rowStep = row->step;
    c.amax = row->amax;
    c.scale = row->scale;
    c.saturated = row->saturated;
    c.count = row->count;
    c.flushedShare = row->underflowShare();
    const QString atStep = row->step == step ? QString() : tr(" (the scale of step %1: the store kept no row at %2)").arg(row->step).arg(step);
    // What the engine counted when it cast this tensor on that step: the bars' bins straddle the
    // band edges, the counts do not.
    const QString counted = tr("The cast on step %1 saturated %2 of %3 values and turned %4 of the non-zero ones into 0.")
                                .arg(row->step)
                                .arg(QLocale().toString(row->saturated), QLocale().toString(row->count), percentText(c.flushedShare));
    if (c.block) {
        c.overflow = mpx::Overflow::saturate;  // OCP MX: conversion to the element type saturates
        const QString why = tr("MXFP8: every block of 32 values has its own power-of-two scale, set by its largest value, so "
                               "no single band fits the whole tensor.");
        if (!(row->amax > 0.0f) || !std::isfinite(row->amax)) {
            c.note = why + QLatin1Char('\n') + counted;
            return c;
        }
        c.active = true;
        c.shift = mpx::core::mx_shared_exponent(row->amax);
        c.bands = formatBands(c.format, c.shift);
        // In any block a value flushes below E4M3's flush edge times 2^(floor(log2 block max) − emax).
        const double relative = formatBands(c.format)[0].hi - mpx::core::k_e4m3_emax;
        c.title = tr("cast to MXFP8 (%1, a scale per block of 32)").arg(formatName(c.format));
        c.blockHelp = tr("<br>MXFP8: each block of 32 values has its own power-of-two scale; the strip above is the %1 window "
                         "of the block holding the largest value. A block whose largest value lies between %2·2<sup>k</sup> "
                         "and 2·2<sup>k</sup> saturates it: the block's power-of-two scale puts it above %3, where %1 stops "
                         "(OCP MX v1.0).")
                          .arg(formatName(c.format))
                          .arg(format_info(c.format).max_finite / std::exp2(mpx::core::k_e4m3_emax))
                          .arg(format_info(c.format).max_finite);
        c.note = why + QLatin1Char('\n') +
                 tr("Strip above: %1's window in the block holding the amax (%2, ×%3)%4. In any block, values under "
                    "~%5 × its largest become 0.")
                     .arg(formatName(c.format), QString::number(row->amax, 'g', 3), pow2Text(-c.shift), atStep, pow2Text(relative)) +
                 QLatin1Char('\n') + counted;
        return c;
    }
    mpx::Fp8Gemm g;  // the engine's rule for what each operand's cast does above the format's max
    g.fwd = g.grad = c.format;
    g.e4m3_overflow = mpx::e4m3_overflow_mode(session->config.fp8.e4m3_overflow);
    c.overflow = g.overflow(*operand);
    const double shift = -std::log2(c.scale);
    if (!(c.scale > 0) || !std::isfinite(shift)) {
        c.note = tr("%1's scale at step %2 is %3: its bands cannot be placed on this axis.")
                     .arg(formatName(c.format)).arg(row->step).arg(c.scale) + QLatin1Char('\n') + counted;
        return c;
    }
    c.active = true;
    c.shift = shift;
    c.bands = formatBands(c.format, shift);
    const QString scale = scaleText(c.scale);
    c.title = tr("cast to %1 ×%2").arg(formatName(c.format), scale);
    const QString how = c.recipe == mpx::Fp8Recipe::current ? tr("current scaling")
                        : row->step == 0                    ? tr("delayed scaling, no history yet")
                                                            : tr("delayed scaling");
    const QString power = pow2Text(std::round(-shift * 10) / 10);
    c.note = tr("Shaded: %1's range as the matrix product casts these values: it multiplies each by %2 (%3)%4, then "
                "rounds to %1.")
                 .arg(formatName(c.format), scale, power == scale ? how : power + QStringLiteral(", ") + how, atStep) +
             QLatin1Char('\n') +
             tr("Below %1 values become 0; above %2 (= %3 ÷ %4) they %5.")
                 .arg(valueText(c.bands[0].hi), valueText(c.bands[3].lo), maxText(c.format), scale, overflowFate(c)) +
             QLatin1Char('\n') + counted;
    return c;
}

QStringList bandLabels(const BandSpan& b, mpx::Format f, const Fp8Cast* cast) {
    if (!cast) {
        switch (b.band) {
            case Band::flushed:
                return {tr("flushed to zero (below %1)").arg(pow2Text(b.hi)), tr("→ 0 below %1").arg(pow2Text(b.hi)), tr("→ 0")};
            case Band::subnormal: return {tr("subnormal (fewer digits)"), tr("subnormal"), tr("sub.")};
            case Band::normal: return {tr("normal")};
            case Band::overflow:
                return storeSaturates(f) ? QStringList{tr("saturates (above %1)").arg(maxText(f)), tr("saturates"), tr("max")}
                                         : QStringList{tr("overflow (above %1)").arg(maxText(f)), tr("overflow"), tr("inf")};
        }
        return {};
    }
    const QString name = formatName(cast->format);
    switch (b.band) {
        case Band::flushed:
            return {tr("%1: 0 (below %2)").arg(name, valueText(b.hi)), tr("→ 0 below %1").arg(valueText(b.hi)), tr("→ 0")};
        case Band::subnormal: return {tr("subnormal"), tr("sub.")};
        case Band::normal: return {tr("%1 normal").arg(name), tr("normal")};
        case Band::overflow:
            return cast->overflow == mpx::Overflow::saturate
                       ? QStringList{tr("saturates (above %1)").arg(valueText(b.lo)), tr("saturates"), tr("max")}
                       : QStringList{tr("overflow (above %1)").arg(valueText(b.lo)), tr("overflow"), tr("inf")};
    }
    return {};
}

QString bandLabel(const BandSpan& b, mpx::Format f, const Fp8Cast* cast) {
    const QStringList all = bandLabels(b, f, cast);
    return all.isEmpty() ? QString() : all.front();
}

std::vector<BandLabel> placeBandLabels(const Log2Axis& ax, const QRectF& plot, const std::vector<BandSpan>& bands,
                                       mpx::Format f, const Fp8Cast* cast, const QFontMetrics& fm) {
    // Left to right, each band's longest label that fits its own width; a band too narrow for its
    // shortest label lends it room to the right (to the left at the plot's right end), past the
    // previous label, and a label that finds no room at all is left out rather than cut.
    std::vector<BandLabel> out;
    double cursor = -std::numeric_limits<double>::infinity();  // where the previous label ends
    for (const BandSpan& b : bands) {
        const double x0 = ax.x(std::max(b.lo, ax.lo)), x1 = ax.x(std::min(b.hi, ax.hi));
        if (x1 <= x0) continue;
        const QStringList variants = bandLabels(b, f, cast);
        if (variants.isEmpty()) continue;
        const double start = std::max(x0 + 3, cursor + 8);
        QString text = variants.back();
        for (const QString& v : variants)
            if (start + fm.horizontalAdvance(v) <= x1 - 2) {
                text = v;
                break;
            }
        const double w = fm.horizontalAdvance(text);
        double at = start;
        if (at + w > plot.right()) at = plot.right() - w;  // the last band: spill to the left
        if (at < cursor + 8 || at < plot.left()) continue;
        out.push_back({b.band, text, at});
        cursor = at + w;
    }
    return out;
}

QString bandFate(Band b, mpx::Format f, const Fp8Cast* cast) {
    if (!cast) {
        switch (b) {
            case Band::flushed: return tr("too small for %1: they are stored as 0 (the gradient is lost)");
            case Band::subnormal: return tr("so small that %1 keeps fewer significant digits for them");
            case Band::normal: return tr("stored by %1 with its full precision");
            case Band::overflow:
                if (storeSaturates(f)) return tr("too large for %1: they are clipped to ±%2").arg(QStringLiteral("%1"), maxText(f));
                return format_info(f).has_inf ? tr("too large for %1: they become infinity") : tr("too large for %1: they become NaN");
        }
        return {};
    }
    const QString scale = scaleText(cast->scale);
    switch (b) {
        case Band::flushed: return tr("too small for %1 even after the scale ×%2: the matrix product reads them as 0").arg(QStringLiteral("%1"), scale);
        case Band::subnormal:
            return tr("after the scale ×%2 still so small that %1 keeps fewer significant bits for them").arg(QStringLiteral("%1"), scale);
        case Band::normal:
            return tr("read by the matrix product in %1 with its full %2-bit mantissa")
                .arg(QStringLiteral("%1"), QString::number(format_info(cast->format).mantissa_bits));
        case Band::overflow: return tr("too large for %1 after the scale ×%2: they %3").arg(QStringLiteral("%1"), scale, overflowFate(*cast));
    }
    return {};
}

void drawBands(QPainter& p, const Log2Axis& ax, const QRectF& plot, const std::vector<BandSpan>& bands,
               mpx::Format f, const Fp8Cast* cast, double labelY) {
    for (const BandSpan& b : bands) {
        const double x0 = ax.x(std::max(b.lo, ax.lo)), x1 = ax.x(std::min(b.hi, ax.hi));
        if (x1 > x0) p.fillRect(QRectF(x0, plot.top(), x1 - x0, plot.height()), bandColour(b.band));
    }
    if (std::isnan(labelY)) return;
    for (const BandLabel& l : placeBandLabels(ax, plot, bands, f, cast, QFontMetrics(p.font()))) {
        p.setPen(bandColour(l.band).darker(260));
        p.drawText(QPointF(l.x, labelY), l.text);
    }
}

void drawBlockWindow(QPainter& p, const Log2Axis& ax, const QRectF& strip, const Fp8Cast& cast) {
    const QFontMetrics fs(p.font());
    for (const BandSpan& b : cast.bands) {
        const double x0 = ax.x(std::max(b.lo, ax.lo)), x1 = ax.x(std::min(b.hi, ax.hi));
        if (x1 <= x0) continue;
        const QRectF r(x0, strip.top(), x1 - x0, strip.height());
        p.fillRect(r, bandColour(b.band).darker(115));
        p.setPen(bandColour(b.band).darker(300));
        const QString t = b.band == Band::normal ? tr("%1 normal: the amax's block").arg(formatName(cast.format))
                                                 : bandLabel(b, cast.format, &cast);
        p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, fs.elidedText(t, Qt::ElideRight, static_cast<int>(r.width()) - 5));
    }
}

}  // namespace mpx::ui
