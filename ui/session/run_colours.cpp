// The one table of run colours. Families follow the precision a reader compares (issue 27):
// neutral for the FP32 yardsticks, warm (Okabe–Ito vermillion, orange, reddish purple) for FP16,
// blues for BF16, greens for FP8 and wine/purple for FP4 (Paul Tol's muted wine and purple, which
// no other family uses). Okabe–Ito's colours stay distinguishable with the common
// colour-vision deficiencies; within a family the shades differ in lightness, which survives them
// too, and variants add a dash pattern so that a line never relies on hue alone.
#include "ui/session/run_colours.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "engine/scaler/scaler.hpp"

namespace mpx::gui {
namespace {

QColor rgb(unsigned v) { return QColor::fromRgb((v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff); }

QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

enum class Shade { base, dark, light, darker, muted };
struct Variant {
    Shade shade;
    Qt::PenStyle pen;
};
// Variant 0 is the plain label; the rest are dashed, and neighbours differ in shade and dash.
constexpr std::array<Variant, 10> k_variants{{{Shade::base, Qt::SolidLine},
                                              {Shade::dark, Qt::DashLine},
                                              {Shade::light, Qt::DotLine},
                                              {Shade::dark, Qt::DashDotLine},
                                              {Shade::light, Qt::DashLine},
                                              {Shade::base, Qt::DashDotDotLine},
                                              {Shade::dark, Qt::DotLine},
                                              {Shade::light, Qt::DashDotLine},
                                              {Shade::darker, Qt::DashLine},
                                              {Shade::muted, Qt::DashDotDotLine}}};

QColor shaded(const QColor& base, Shade s, int round) {
    QColor c = base;
    // Lightness steps a projector keeps apart (about 10 to 13 in projectedDifference for the
    // table's colours; darker and muted about 8 from their nearest). No paler step: it would fade
    // into the chart.
    if (s == Shade::dark) c = mix(base, Qt::black, 0.4);
    if (s == Shade::light) c = mix(base, Qt::white, 0.45);
    if (s == Shade::darker) c = mix(base, Qt::black, 0.65);
    if (s == Shade::muted) c = mix(base, QColor(0x80, 0x80, 0x80), 0.65);  // greyed: the fifth of a family
    // A ninth run of one precision (never in a shipped preset): step further from the table.
    if (round > 0) c = mix(c, round % 2 ? Qt::black : Qt::white, std::min(0.15 * round, 0.6));
    return c;
}

// Runs closer than this (projectedDifference) are told apart by their dash alone, which a
// projector's washed-out picture does not carry; a line closer than k_faint to the chart's white
// fades into it.
constexpr double k_apart = 10.0;
constexpr double k_faint = 15.0;

template <class E>
int ordinal(const std::optional<E>& v) { return v ? static_cast<int>(*v) + 1 : 0; }

// Which variant a label's suffixes pick: 0 for none, else from each suffix's place in its engine
// list, so "pure-fp16+kahan" is drawn alike in every session. The lists' orders keep the shipped
// sets apart (hysteresis: pytorch 1, deepspeed 5, megatron 7; lost-updates: sr 2, kahan 3;
// fp8: delayed 1, current 2; accumulation: fast 3, te 5; a penalty mistake 1, 2; a GPT switch its
// place in gpt_switch_suffixes plus 1); runStyles resolves any clash.
// FP4 switches: one place each in a fixed order (fp4_switch_suffix's), so "nvfp4+1d" is drawn alike
// in every session: +no-rht 1, +no-sr 2, +1d 3, +4over6 4, a scale rule 5…8, +bf16-first 6, +bf16-last 7.
int fp4VariantOf(const mpx::Fp4Overrides& o) {
    int v = 0;
    if (o.rht) v += 1;
    if (o.sr) v += 2;
    if (o.weights_2d) v += 3;
    if (o.four_over_six) v += 4;
    if (o.mx_scale_rule) v += 5 + static_cast<int>(*o.mx_scale_rule);
    if (o.bf16_first) v += 6;
    if (o.bf16_last) v += 7;
    return v;
}

int variantOf(const mpx::RunSpec& spec) {
    int v = ordinal(spec.write_back) + ordinal(spec.fp8_recipe) + ordinal(spec.accumulate) + fp4VariantOf(spec.fp4) +
            ordinal(spec.penalty_mistake);
    for (mpx::GptSwitch g : spec.gpt_switches) v += static_cast<int>(g) + 1;
    if (spec.scaler_preset) {
        const std::vector<std::string> names = mpx::scaler_preset_names();
        const auto it = std::find(names.begin(), names.end(), *spec.scaler_preset);
        v += static_cast<int>(it - names.begin()) + 1;
    }
    return v;
}

}  // namespace

Lab lab(const QColor& c, double ambient) {
    const auto linear = [&](double v) {
        return ambient + (1 - ambient) * (v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4));
    };
    const double r = linear(c.redF()), g = linear(c.greenF()), b = linear(c.blueF());
    const auto f = [](double t) { return t > 216.0 / 24389.0 ? std::cbrt(t) : (24389.0 / 27.0 * t + 16.0) / 116.0; };
    const double fx = f((0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047);
    const double fy = f(0.2126729 * r + 0.7151522 * g + 0.0721750 * b);
    const double fz = f((0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883);
    return {116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)};
}

double deltaE2000(const Lab& p, const Lab& q) {
    constexpr double deg = 3.14159265358979323846 / 180.0;
    const auto pow7 = [](double x) { return x * x * x * x * x * x * x; };
    const double cm = (std::hypot(p[1], p[2]) + std::hypot(q[1], q[2])) / 2;
    const double g = 0.5 * (1 - std::sqrt(pow7(cm) / (pow7(cm) + pow7(25.0))));
    const double a1 = (1 + g) * p[1], a2 = (1 + g) * q[1];
    const double C1 = std::hypot(a1, p[2]), C2 = std::hypot(a2, q[2]);
    const auto hue = [&](double b, double a) {
        if (a == 0 && b == 0) return 0.0;
        const double h = std::atan2(b, a) / deg;
        return h < 0 ? h + 360 : h;
    };
    const double h1 = hue(p[2], a1), h2 = hue(q[2], a2);
    const double dL = q[0] - p[0], dC = C2 - C1;
    double dh = 0;
    if (C1 * C2 != 0) dh = h2 - h1 > 180 ? h2 - h1 - 360 : h2 - h1 < -180 ? h2 - h1 + 360 : h2 - h1;
    const double dH = 2 * std::sqrt(C1 * C2) * std::sin(dh / 2 * deg);
    const double Lm = (p[0] + q[0]) / 2, Cm = (C1 + C2) / 2;
    double hm = h1 + h2;
    if (C1 * C2 != 0) hm = std::abs(h1 - h2) <= 180 ? hm / 2 : (h1 + h2 < 360 ? (hm + 360) / 2 : (hm - 360) / 2);
    const double t = 1 - 0.17 * std::cos((hm - 30) * deg) + 0.24 * std::cos(2 * hm * deg) + 0.32 * std::cos((3 * hm + 6) * deg) -
                     0.20 * std::cos((4 * hm - 63) * deg);
    const double sl = 1 + 0.015 * (Lm - 50) * (Lm - 50) / std::sqrt(20 + (Lm - 50) * (Lm - 50));
    const double sc = 1 + 0.045 * Cm, sh = 1 + 0.015 * Cm * t;
    const double rt = -2 * std::sqrt(pow7(Cm) / (pow7(Cm) + pow7(25.0))) * std::sin(60 * std::exp(-std::pow((hm - 275) / 25, 2)) * deg);
    return std::sqrt(std::pow(dL / sl, 2) + std::pow(dC / sc, 2) + std::pow(dH / sh, 2) + rt * (dC / sc) * (dH / sh));
}

double projectedDifference(const QColor& a, const QColor& b) { return deltaE2000(lab(a, k_projector_ambient), lab(b, k_projector_ambient)); }

QColor precisionColour(const mpx::RunSpec& spec) {
    const bool bf16 = spec.low == mpx::Format::bf16;
    switch (spec.mode) {
        case mpx::Mode::fp32: return rgb(0x1a1a1a);          // near black: the yardstick
        case mpx::Mode::tf32: return rgb(0x8c8c8c);          // grey: FP32 storage, rounded GEMMs
        case mpx::Mode::scaling_only: return rgb(0x8c6d4f);  // taupe: FP32 arithmetic with FP16's scaler
        case mpx::Mode::amp: return bf16 ? rgb(0x0072b2) : rgb(0xd55e00);        // Okabe–Ito blue / vermillion
        case mpx::Mode::pure: return bf16 ? rgb(0x56b4e9) : rgb(0xe69f00);       // sky blue / orange
        case mpx::Mode::half: return bf16 ? rgb(0x003f6b) : rgb(0x8f3b00);       // navy / dark vermillion
        case mpx::Mode::selective: return bf16 ? rgb(0x7b68b5) : rgb(0xcc79a7);  // slate blue / reddish purple
        case mpx::Mode::adaptive: return bf16 ? rgb(0x9cc3e4) : rgb(0xf4a582);   // pale blue / salmon
        case mpx::Mode::fp8_hybrid: return rgb(0x009e73);    // Okabe–Ito bluish green
        case mpx::Mode::fp8_e4m3: return rgb(0x00593f);      // dark green
        case mpx::Mode::mxfp8: return rgb(0x999933);         // olive (Paul Tol's muted)
        case mpx::Mode::nvfp4: return rgb(0x882255);         // wine (Paul Tol's muted)
        case mpx::Mode::mxfp4: return rgb(0xb04ca0);         // purple (Paul Tol's muted, a step lighter), lighter than wine
    }
    return rgb(0x555555);
}

std::vector<RunStyle> runStyles(const std::vector<mpx::RunSpec>& specs) {
    // Plain labels first, each its precision's colour whatever else the session holds; then the
    // variants in their suffixes' order (not the session's), each taking the first shade and dash
    // of its sequence that is far from every run drawn so far — or, in a session too crowded for
    // that, the one of its sequence farthest from them.
    std::vector<std::size_t> order(specs.size());
    std::vector<int> variant(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        order[i] = i;
        variant[i] = variantOf(specs[i]);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return variant[a] < variant[b]; });
    std::vector<RunStyle> out(specs.size());
    std::vector<RunStyle> drawn;
    drawn.reserve(specs.size());
    const int n = static_cast<int>(k_variants.size());
    for (std::size_t i : order) {
        const QColor base = precisionColour(specs[i]);
        const int first = variant[i] % n;
        const auto style = [&](int k) {
            const Variant& v = k_variants[static_cast<std::size_t>((first + k) % n)];
            return RunStyle{shaded(base, v.shade, (first + k) / n), v.pen};
        };
        const auto unlike = [&](const RunStyle& s) {
            return std::none_of(drawn.begin(), drawn.end(), [&](const RunStyle& o) { return o.colour == s.colour && o.pen == s.pen; });
        };
        const auto nearest = [&](const RunStyle& s) {
            double d = projectedDifference(s.colour, Qt::white) < k_faint ? 0.0 : std::numeric_limits<double>::infinity();
            for (const RunStyle& o : drawn) d = std::min(d, projectedDifference(o.colour, s.colour));
            return d;
        };
        int k = 0;
        if (variant[i] > 0) {
            while (k < n && nearest(style(k)) < k_apart) ++k;
            if (k == n) {  // none far enough: the one of its sequence farthest from the rest
                int best = -1;
                for (int j = 0; j < n; ++j)
                    if (unlike(style(j)) && (best < 0 || nearest(style(j)) > nearest(style(best)))) best = j;
                k = std::max(best, 0);
            }
        }
        while (!unlike(style(k))) ++k;  // a later round's shades
        out[i] = style(k);
        drawn.push_back(out[i]);
    }
    return out;
}

}  // namespace mpx::gui
