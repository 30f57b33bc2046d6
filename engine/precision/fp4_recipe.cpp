// FP4 recipes (engine/precision/fp4_recipe.hpp).
#include "engine/precision/fp4_recipe.hpp"

#include <charconv>

#include "engine/base/error.hpp"
#include "engine/core/write_back.hpp"

namespace mpx {

namespace {
constexpr std::string_view k_first = "bf16-first-", k_last = "bf16-last-";
constexpr int k_max_bf16_layers = 64;

std::optional<int> count_after(std::string_view part, std::string_view prefix) {
    if (!part.starts_with(prefix)) return std::nullopt;
    const std::string_view digits = part.substr(prefix.size());
    int n = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc{} || end != digits.data() + digits.size() || n < 0 || n > k_max_bf16_layers) return -1;
    return n;
}
}  // namespace

void validate(const Fp4Config& c) {
    if (c.bf16_first < 0 || c.bf16_first > k_max_bf16_layers)
        throw ConfigError("fp4.bf16_first", "must be 0 to 64 (linear layers kept in BF16 at the start)");
    if (c.bf16_last < 0 || c.bf16_last > k_max_bf16_layers)
        throw ConfigError("fp4.bf16_last", "must be 0 to 64 (linear layers kept in BF16 at the end)");
}

bool parse_fp4_switch(std::string_view part, Fp4Kind kind, Fp4Overrides& o, std::string_view label,
                      const std::string& field) {
    const std::string run = "run '" + std::string(label) + "'";
    const bool nv = kind == Fp4Kind::nvfp4;
    const auto set = [&](auto& slot, auto value, std::string_view what) {
        if (slot) throw ConfigError(field, run + " sets " + std::string(what) + " twice");
        slot = value;
    };
    const auto nv_only = [&] {
        if (!nv)
            throw ConfigError(field, run + ": '" + std::string(part) + "' is a switch of the NVFP4 recipe; mxfp4 "
                                         "scales 1x32 blocks by powers of two and rounds to nearest (its switch is "
                                         "the scale rule: +floor, +ceil, +rceil or +even)");
    };
    if (part == "rht" || part == "no-rht") return nv_only(), set(o.rht, part == "rht", "the Hadamard transform"), true;
    if (part == "sr" || part == "no-sr") return nv_only(), set(o.sr, part == "sr", "stochastic rounding"), true;
    if (part == "2d" || part == "1d") return nv_only(), set(o.weights_2d, part == "2d", "the weights' blocks"), true;
    if (part == "4over6" || part == "no-4over6")
        return nv_only(), set(o.four_over_six, part == "4over6", "4over6"), true;
    if (const auto r = enum_parse<core::MxScaleRule>(part)) {
        if (nv)
            throw ConfigError(field, run + ": the scale rule '" + std::string(part) + "' is MXFP4's; NVFP4's block "
                                         "scales are E4M3 (use mxfp4+" + std::string(part) + ")");
        return set(o.mx_scale_rule, *r, "the scale rule"), true;
    }
    for (const auto& [prefix, slot] : {std::pair{k_first, &o.bf16_first}, std::pair{k_last, &o.bf16_last}})
        if (const auto n = count_after(part, prefix)) {
            if (*n < 0)
                throw ConfigError(field, run + ": '" + std::string(part) + "' needs a count of layers, 0 to 64 (e.g. " +
                                             std::string(prefix) + "1)");
            set(*slot, *n, std::string(prefix.substr(0, prefix.size() - 1)));
            return true;
        }
    return false;
}

std::string fp4_switch_suffix(const Fp4Overrides& o) {
    std::string s;
    if (o.rht) s += *o.rht ? "+rht" : "+no-rht";
    if (o.sr) s += *o.sr ? "+sr" : "+no-sr";
    if (o.weights_2d) s += *o.weights_2d ? "+2d" : "+1d";
    if (o.four_over_six) s += *o.four_over_six ? "+4over6" : "+no-4over6";
    if (o.mx_scale_rule) s += "+" + std::string(enum_name(*o.mx_scale_rule));
    if (o.bf16_first) s += "+" + std::string(k_first) + std::to_string(*o.bf16_first);
    if (o.bf16_last) s += "+" + std::string(k_last) + std::to_string(*o.bf16_last);
    return s;
}

Fp4Config resolve_fp4(Fp4Kind kind, const Fp4Config& session, const Fp4Overrides& o) {
    Fp4Config c = session;
    c.rht = o.rht.value_or(c.rht);
    c.sr = o.sr.value_or(c.sr);
    c.weights_2d = o.weights_2d.value_or(c.weights_2d);
    c.four_over_six = o.four_over_six.value_or(c.four_over_six);
    c.bf16_first = o.bf16_first.value_or(c.bf16_first);
    c.bf16_last = o.bf16_last.value_or(c.bf16_last);
    c.mx_scale_rule = o.mx_scale_rule.value_or(c.mx_scale_rule);
    if (kind == Fp4Kind::mxfp4) c.rht = c.sr = c.weights_2d = c.four_over_six = false;
    return c;
}

Fp4Cast Fp4Gemm::cast(Fp8Tensor t, bool columnwise) const {
    Fp4Cast c;
    c.kind = kind;
    c.mx_rule = recipe.mx_scale_rule;
    if (kind != Fp4Kind::nvfp4) return c;
    c.two_d = t == Fp8Tensor::w && recipe.weights_2d;
    c.four_over_six = recipe.four_over_six;
    c.metric = recipe.four_over_six_metric;
    // Each stochastic copy its own stream: the layer, and the row- or column-wise copy of dy.
    if (t == Fp8Tensor::dy && recipe.sr)
        c.sr_key = core::round_key(sr_seed ^ 0x4650344ull /* "FP4" */, static_cast<std::uint32_t>(2 * layer + (columnwise ? 1 : 0)), 0);
    return c;
}

}  // namespace mpx
