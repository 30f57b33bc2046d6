// The FP4 view's sentences (fp4_words.hpp).
#include "ui/views/fp4_words.hpp"

#include <QCoreApplication>
#include <QLocale>
#include <QStringList>

#include <cmath>
#include <string_view>

#include "ui/kit/number_text.hpp"

namespace mpx::ui::fp4words {
namespace {

QString tr(const char* s) { return QCoreApplication::translate("mpx::ui::Fp4View", s); }
QString count(unsigned long long n) { return QLocale().toString(n); }

}  // namespace

QString tensorWords(mpx::Fp8Tensor t) {
    switch (t) {
        case mpx::Fp8Tensor::x: return tr("activations");
        case mpx::Fp8Tensor::w: return tr("weights");
        case mpx::Fp8Tensor::dy: return tr("gradients");
    }
    return {};
}

QString tensorName(mpx::Fp8Tensor t) {
    const std::string_view n = mpx::enum_name(t);
    return QString::fromLatin1(n.data(), static_cast<qsizetype>(n.size()));
}

QString blocks(const Shown& s) {
    if (s.kind == mpx::Fp4Kind::mxfp4) return tr("1×32 blocks");
    if (s.tensor == mpx::Fp8Tensor::w) return s.recipe.weights_2d ? tr("16×16 tiles") : tr("1×16 blocks");
    if (s.tensor == mpx::Fp8Tensor::dy && s.recipe.sr) return tr("1×16 blocks, rounded at random");
    return tr("1×16 blocks");
}

QString explain(const Shown& s) {
    const mpx::Fp4Config& rc = s.recipe;
    const mpx::Fp8Tensor t = s.tensor;
    const QString grid = tr("FP4 (E2M1) holds only <b>0, 0.5, 1, 1.5, 2, 3, 4 and 6</b> (each with a sign), so each block "
                            "of values is divided by its own scale, then rounded to the nearest of the eight.");
    if (s.kind == mpx::Fp4Kind::nvfp4) {
        QStringList how;
        how << (t == mpx::Fp8Tensor::w ? (rc.weights_2d ? tr("weights share one scale per 16×16 tile")
                                                         : tr("weights have one scale per row block of 16 (+1d)"))
                                        : tr("one scale per block of 16 values"));
        if (t == mpx::Fp8Tensor::dy)
            how << (rc.sr ? tr("gradients are rounded up or down at random (stochastic rounding), so on average they keep "
                               "their value")
                          : tr("gradients are rounded to nearest (+no-sr)"));
        // The engine records dy where it is first cast: the Dgrad copy, except in fc1, which passes no
        // gradient to the data and casts only the Wgrad copy (blocks down columns, after the RHT).
        if (t == mpx::Fp8Tensor::dy && s.layer == 0)
            how << (rc.rht ? tr("fc1 sends no gradient to the data, so the copy shown is the one for the weight "
                                "gradient, mixed by a Hadamard transform first (it evens out each block's values)")
                           : tr("fc1 sends no gradient to the data, so the copy shown is the one for the weight gradient"));
        else if (t != mpx::Fp8Tensor::w)
            how << (rc.rht ? tr("the copy for the weight gradient is first mixed by a Hadamard transform (not shown here)")
                           : tr("no Hadamard transform (+no-rht)"));
        if (rc.four_over_six) how << tr("+4over6: a block may aim its largest value at 4 instead of 6 where that rounds better");
        return tr("<b>NVFP4</b> (Transformer Engine's recipe): %1 A block's scale (8-bit E4M3, times one FP32 scale "
                  "S_enc for the tensor) puts its largest value on 6. Here: %2.")
            .arg(grid, how.join(QStringLiteral("; ")));
    }
    // Where each rule puts a block's largest value v: v ÷ 2^e for core::mxfp4_exponent's e.
    QString lands;
    switch (rc.mx_scale_rule) {
        case mpx::core::MxScaleRule::rceil:
            lands = tr("it rounds the scale up, so nothing is clamped: a block's largest value lands anywhere from "
                       "just above 3 up to 6");
            break;
        case mpx::core::MxScaleRule::floor:
            lands = tr("OCP MX v1.0's rule: a block's largest value lands between 4 and 8, and above 6 it is clamped");
            break;
        case mpx::core::MxScaleRule::ceil:
            lands = tr("a block's largest value lands between just above 2 and 4, so 6 is never used");
            break;
        case mpx::core::MxScaleRule::even:
            lands = tr("a block's largest value lands between 3.5 and 7, and above 6 it is clamped");
            break;
    }
    const std::string_view rule = mpx::enum_name(rc.mx_scale_rule);
    return tr("<b>MXFP4</b> (OCP MX): %1 A block of 32 gets a power-of-two scale (no tensor scale), which can only "
              "move its largest value by doubling; with the rule here, “%2”, %3.")
        .arg(grid, QString::fromLatin1(rule.data(), static_cast<qsizetype>(rule.size())), lands);
}

QString topsCaption(mpx::Fp4Kind k) {
    return k == mpx::Fp4Kind::nvfp4
               ? tr("On 3 or below, 4 and 6 go unused: a <i>lost binade</i>, a factor of two of FP4's range wasted. "
                    "NVFP4's scales aim every block at 6.")
               : tr("On 3 or below, 4 and 6 go unused in that block: MXFP4's <i>lost binade</i>, a factor of two of FP4's "
                    "range wasted, so the block is rounded more coarsely.");
}

QString shareCaption(mpx::Fp4Kind k, mpx::core::MxScaleRule rule) {
    if (k == mpx::Fp4Kind::nvfp4)
        return tr("Red: above 6 after scaling, clamped to 6 — mostly blocks' largest values, a few % over 6 because "
                  "their scale is rounded to E4M3. Purple: non-zero values rounded to 0.");
    if (rule == mpx::core::MxScaleRule::floor)
        return tr("Red: above 6 after scaling, clamped to 6 (“floor” lets a block's largest reach 8: up to 25 % "
                  "off). Purple: non-zero values rounded to 0.");
    return tr("Red: above 6 after scaling, clamped to 6. Purple: non-zero values too small for their block, "
              "rounded to 0.");
}

QString consistency(const Shown& s, int every, const std::optional<gui::Fp4Consistency>& c, long long shownStep) {
    if (s.tensor != mpx::Fp8Tensor::w)
        return tr("<b>Forward vs backward copy:</b> only the weights are read by both passes in different directions; "
                  "choose w to compare their two FP4 copies.");
    if (s.layer == 0)
        return tr("<b>Forward vs backward copy of the weights:</b> fc1 passes no gradient back to the data, so its "
                  "weights are never read by the backward pass and have only the forward copy. Choose fc2 or later.");
    if (!c)
        return every > 0 ? tr("<b>Forward vs backward copy of the weights:</b> compared once every %1 steps (on the steps "
                              "that collect histograms); none yet at this step.").arg(every)
                         : tr("<b>Forward vs backward copy of the weights:</b> compared only on steps that collect "
                              "histograms, and this session collects none (instruments.every is 0).");
    const bool nv = s.kind == mpx::Fp4Kind::nvfp4;
    const bool tiles = nv && s.recipe.weights_2d;
    const QString blocks = !nv ? tr("1×32 blocks") : tiles ? tr("16×16 tiles") : tr("1×16 blocks");
    QString text = c->step == shownStep
                       ? tr("<b>Forward vs backward copy of the weights</b> (step %1): ").arg(c->step)
                       : tr("<b>Forward vs backward copy of the weights</b> (checked on step %1; the check runs every "
                            "%2 steps): ").arg(c->step).arg(every);
    if (c->mismatched == 0) {
        return text + (tiles ? tr("0 of %1 elements differ: 16×16 tiles make both quantizations the same.").arg(count(c->compared))
                             : tr("0 of %1 elements differ (with %2 they could; none did on this step).")
                                   .arg(count(c->compared), blocks));
    }
    const double share = static_cast<double>(c->mismatched) / static_cast<double>(c->compared);
    text += tr("%1 of %2 elements differ (%3, %4): a row block and a column block have different largest values, "
               "so different scales, and the same weight rounds differently in the forward and the backward pass.")
                .arg(count(c->mismatched), count(c->compared), percentText(share), blocks);
    if (nv) text += tr(" NVFP4's 16×16 tiles (the default; this run has +1d) avoid this.");
    return text;
}

QString barText(double share) {
    const double pc = 100 * share;
    if (pc >= 9.95 || pc == 0) return QStringLiteral("%1 %").arg(QLocale().toString(std::round(pc), 'f', 0));
    return QStringLiteral("%1 %").arg(QLocale().toString(pc, 'g', 2));
}

}  // namespace mpx::ui::fp4words
