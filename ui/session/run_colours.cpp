// The one table of run colours. Families follow the precision a reader compares (issue 27):
// neutral for the FP32 yardsticks, warm (Okabe–Ito vermillion, orange, reddish purple) for FP16,
// blues for BF16, greens for FP8 and wine/purple for FP4 (Paul Tol's muted wine and purple, which
// no other family uses). Okabe–Ito's colours stay distinguishable with the common
// colour-vision deficiencies; within a family the shades differ in lightness, which survives them
// too, and variants add a dash pattern so that a line never relies on hue alone.
#include "ui/session/run_colours.hpp"

#include <algorithm>
#include <array>
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

enum class Shade { base, dark, light };
struct Variant {
    Shade shade;
    Qt::PenStyle pen;
};
// Variant 0 is the plain label; the rest are dashed, and neighbours differ in shade and dash.
constexpr std::array<Variant, 8> k_variants{{{Shade::base, Qt::SolidLine},
                                             {Shade::dark, Qt::DashLine},
                                             {Shade::light, Qt::DotLine},
                                             {Shade::dark, Qt::DashDotLine},
                                             {Shade::light, Qt::DashLine},
                                             {Shade::base, Qt::DashDotDotLine},
                                             {Shade::dark, Qt::DotLine},
                                             {Shade::light, Qt::DashDotLine}}};

QColor shaded(const QColor& base, Shade s, int round) {
    QColor c = base;
    if (s == Shade::dark) c = mix(base, Qt::black, 0.35);
    if (s == Shade::light) c = mix(base, Qt::white, 0.38);
    // A ninth run of one precision (never in a shipped preset): step further from the table.
    if (round > 0) c = mix(c, round % 2 ? Qt::black : Qt::white, std::min(0.15 * round, 0.6));
    return c;
}

template <class E>
int ordinal(const std::optional<E>& v) { return v ? static_cast<int>(*v) + 1 : 0; }

// Which variant a label's suffixes pick: 0 for none, else from each suffix's place in its engine
// list, so "pure-fp16+kahan" is drawn alike in every session. The lists' orders keep the shipped
// sets apart (hysteresis: pytorch 1, deepspeed 5, megatron 7; lost-updates: sr 2, kahan 3;
// fp8: delayed 1, current 2; accumulation: fast 3, te 5); runStyles resolves any clash.
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
    int v = ordinal(spec.write_back) + ordinal(spec.fp8_recipe) + ordinal(spec.accumulate) + fp4VariantOf(spec.fp4);
    if (spec.scaler_preset) {
        const std::vector<std::string> names = mpx::scaler_preset_names();
        const auto it = std::find(names.begin(), names.end(), *spec.scaler_preset);
        v += static_cast<int>(it - names.begin()) + 1;
    }
    return v;
}

}  // namespace

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
        case mpx::Mode::mxfp4: return rgb(0xaa4499);         // purple (Paul Tol's muted), lighter than wine
    }
    return rgb(0x555555);
}

std::vector<RunStyle> runStyles(const std::vector<mpx::RunSpec>& specs) {
    std::vector<RunStyle> out;
    out.reserve(specs.size());
    for (const mpx::RunSpec& spec : specs) {
        const QColor base = precisionColour(spec);
        const int first = variantOf(spec) % static_cast<int>(k_variants.size());
        for (int k = 0;; ++k) {
            const int i = first + k;
            const Variant& v = k_variants[static_cast<std::size_t>(i) % k_variants.size()];
            const RunStyle s{shaded(base, v.shade, i / static_cast<int>(k_variants.size())), v.pen};
            const bool taken = std::any_of(out.begin(), out.end(), [&](const RunStyle& o) {
                return o.colour == s.colour && o.pen == s.pen;
            });
            if (!taken) {
                out.push_back(s);
                break;
            }
        }
    }
    return out;
}

}  // namespace mpx::gui
