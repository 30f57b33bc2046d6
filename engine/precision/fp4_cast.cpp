// fp4_cast_in_place by row groups: a group is the rows one block spans (1, or 16 for 2D tiles and
// for blocks down columns); per group, the blocks' amaxes and scales first (an integer max on the
// bits), spread over the group's columns as one factor and one scale per column, then one pass over
// the group's elements that scales, rounds, tallies and decodes each.
#include "engine/precision/fp4_cast.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/core/write_back.hpp"

namespace mpx {
namespace {

constexpr int k_rht_signs[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
constexpr std::uint32_t k_abs = 0x7fffffffu;

// The amax as torch.amax has it: NaN if any value is NaN (its bits exceed inf's), else max |x|.
float amax_from_bits(std::uint32_t m) { return m > 0x7f800000u ? NAN : core::float_of(m); }

// Per element: the scaled value rounded (stochastically from `word` when sr), and its decode.
struct Element {
    std::uint32_t code;
    float value;
};

// A block's scale and the factor its elements are multiplied by, for an amax mapped to `target`
// (6, or 4 under 4over6's second choice): NVFP4 as TE orders it; MXFP4 by its rule.
struct BlockScale {
    float scale = 0.0f, factor = 0.0f;
};
BlockScale nv_scale(float vmax, const core::Nvfp4Global& g, float mult) {
    float d = vmax * mult;
    if (d > core::k_flt_max) d = core::k_flt_max;
    if (d > core::k_e4m3_max) d = core::k_e4m3_max;
    BlockScale b;
    b.scale = core::decode_bits(Format::e4m3, core::encode_bits(Format::e4m3, d, Overflow::saturate));
    b.factor = core::nvfp4_encode_scale(b.scale, g);
    return b;
}

struct Caster {
    const Fp4Cast& c;
    bool nv;
    core::Nvfp4Global g;
    std::uint64_t key = 0;
    int cols = 0;

    float decode(std::uint32_t code, float scale) const {
        return nv ? core::nvfp4_decode(code, scale, g) : core::e2m1_value(code) * scale;
    }
    // One element at row-major index i with its block's factor and scale, tallied.
    float cast(float x, std::size_t i, float factor, float scale, Fp4Tally& t, std::uint8_t* codes) const {
        const float sv = x * factor;
        const float v = core::fp4_scaled(x, factor);
        const std::uint32_t code =
            c.sr_key ? core::e2m1_code_stochastic(v, core::round_word(key, i)) : core::e2m1_code(v);
        t.counts.overflow += std::fabs(sv) > core::k_e2m1_max;
        t.counts.nonzero += x != 0.0f;
        t.counts.underflow += (x != 0.0f && x == x && (code & 7u) == 0u);
        ++t.record.codes[code & 7u];
        if (codes) codes[i] = static_cast<std::uint8_t>(code);
        return decode(code, scale);
    }
    // The error of casting a block with (factor, scale), RNE, in double (4over6's choice).
    template <class Each>
    double error(Each each, float factor, float scale) const {
        double e = 0.0;
        each([&](float x) {
            const double d = static_cast<double>(decode(core::e2m1_code(core::fp4_scaled(x, factor)), scale)) - x;
            e += c.metric == Fp4Metric::mse ? d * d : std::fabs(d);
        });
        return e;
    }
};

// One row cast by round to nearest even, on the bits and branch-free so the loop vectorises: for
// |x·factor| (integer order is float order for non-negative floats) the code's magnitude is the
// number of e2m1_code's thresholds it passes (> 0.25, ≥ 0.75, > 1.25, ≥ 1.75, > 2.5, ≥ 3.5, > 5:
// beyond 6 it passes all seven, as the clamp has it), its value that many steps (0.5, 0.5, 0.5, 0.5,
// 1, 1, 2: exact); a NaN passes none and, like −0.0, gets +0. The codes are counted as the number
// of values past each threshold (codes[k] = past[k] − past[k+1]). Equal to Caster::cast element by
// element, counts included (tests/test_fp4.cpp).
void cast_row_rne(float* row, std::size_t n, const float* factor, const float* scale, float dec, Fp4Tally& t) {
    constexpr std::uint32_t t0 = 0x3e800000u + 1, t1 = 0x3f400000u, t2 = 0x3fa00000u + 1, t3 = 0x3fe00000u,
                            t4 = 0x40200000u + 1, t5 = 0x40600000u, t6 = 0x40a00000u + 1, six = 0x40c00000u;
    std::uint32_t p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, over = 0, nonzero = 0, under = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t xb = core::bits_of(row[i]) & k_abs;
        const std::uint32_t sb = core::bits_of(row[i] * factor[i]);
        const std::uint32_t a = sb & k_abs;
        const std::uint32_t ok = a <= 0x7f800000u;  // not NaN
        const std::uint32_t u0 = ok & (a >= t0), u1 = ok & (a >= t1), u2 = ok & (a >= t2), u3 = ok & (a >= t3),
                            u4 = ok & (a >= t4), u5 = ok & (a >= t5), u6 = ok & (a >= t6);
        p0 += u0;
        p1 += u1;
        p2 += u2;
        p3 += u3;
        p4 += u4;
        p5 += u5;
        p6 += u6;
        const std::uint32_t halves = u0 + u1 + u2 + u3 + 2 * (u4 + u5) + 4 * u6;
        const float mag = static_cast<float>(static_cast<int>(halves)) * 0.5f;
        const std::uint32_t neg = (sb >> 31) & ok & static_cast<std::uint32_t>(a != 0u);
        const float q = core::float_of(core::bits_of(mag) | (neg << 31));
        over += ok & static_cast<std::uint32_t>(a > six);
        nonzero += xb != 0u;
        under += static_cast<std::uint32_t>(xb != 0u) & static_cast<std::uint32_t>(xb <= 0x7f800000u) &
                 static_cast<std::uint32_t>(halves == 0u);
        row[i] = (q * scale[i]) * dec;  // nvfp4_decode; MXFP4 passes dec = 1 (exact)
    }
    t.counts.overflow += over;
    t.counts.nonzero += nonzero;
    t.counts.underflow += under;
    const std::uint32_t past[7] = {p0, p1, p2, p3, p4, p5, p6};
    t.record.codes[0] += n - past[0];
    for (int k = 0; k < 6; ++k) t.record.codes[k + 1] += past[k] - past[k + 1];
    t.record.codes[7] += past[6];
}

}  // namespace

float rht_entry(int k, int j) {
    // Sylvester: H16[k][j] = (−1)^popcount(k & j).
    const int h = (__builtin_popcount(static_cast<unsigned>(k & j)) & 1) ? -1 : 1;
    return static_cast<float>(k_rht_signs[k] * h) * 0.25f;
}

void rht_in_place(float* v, int rows, int cols, MxAxis axis, Fp4Workspace* ws) {
    float t[16][16];
    for (int k = 0; k < 16; ++k)
        for (int j = 0; j < 16; ++j) t[k][j] = rht_entry(k, j);
    const std::size_t C = static_cast<std::size_t>(cols);
    if (axis == MxAxis::rows) {  // quantize's transform, once per matrix: one thread
        std::vector<float> in(16);
        for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
            for (std::size_t b = 0; b + 16 <= C; b += 16) {
                float* x = v + r * C + b;
                std::copy(x, x + 16, in.begin());
                for (int j = 0; j < 16; ++j) {
                    float acc = 0.0f;
                    for (int k = 0; k < 16; ++k) acc = acc + in[static_cast<std::size_t>(k)] * t[k][j];
                    x[j] = acc;
                }
            }
        return;
    }
    // Down columns: 16 rows at a time, every column at once (the same sums, k order), reading a copy
    // (the workspace's, or the thread's of its 16 rows).
    const std::size_t whole = static_cast<std::size_t>(rows / 16) * 16 * C;
    if (ws) {
        if (ws->f.size() < whole) ws->f.resize(whole);
        std::copy(v, v + whole, ws->f.data());
    }
    parallel_for(static_cast<std::size_t>(rows / 16), [&](std::size_t g) {
        const float* in = nullptr;
        if (ws) {
            in = ws->f.data() + g * 16 * C;
        } else {
            thread_local std::vector<float> copy;
            copy.assign(v + g * 16 * C, v + (g + 1) * 16 * C);
            in = copy.data();
        }
        for (int j = 0; j < 16; ++j) {
            float* out = v + (g * 16 + static_cast<std::size_t>(j)) * C;
            std::fill(out, out + C, 0.0f);
            for (int k = 0; k < 16; ++k) {
                const float w = t[k][j];
                const float* x = in + static_cast<std::size_t>(k) * C;
                for (std::size_t col = 0; col < C; ++col) out[col] = out[col] + x[col] * w;
            }
        }
    });
}

Fp4Tally fp4_cast_in_place(float* v, int rows, int cols, MxAxis axis, const Fp4Cast& c, Fp4Outputs out,
                           Fp4Workspace* ws) {
    Fp4Tally total;
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    if (n == 0) return total;
    const bool nv = c.kind == Fp4Kind::nvfp4;
    const int B = c.block();
    const int tile = nv && c.two_d ? core::k_nvfp4_block : 1;
    // A group spans `height` rows; within it a block spans `width` columns.
    const int height = axis == MxAxis::rows ? tile : B;
    const int width = axis == MxAxis::rows ? B : tile;
    const int groups = (rows + height - 1) / height;
    const int segments = (cols + width - 1) / width;
    const std::size_t C = static_cast<std::size_t>(cols);

    std::uint32_t amax_bits = 0;
    for (std::size_t i = 0; i < n; ++i) amax_bits = std::max(amax_bits, core::bits_of(v[i]) & k_abs);
    total.amax = amax_from_bits(amax_bits);
    Caster k{c, nv, {}, c.sr_key.value_or(0), cols};
    if (nv) {
        k.g = core::nvfp4_global(total.amax, c.four_over_six ? 256.0f : core::k_e4m3_max);
        total.s_enc = k.g.enc;
        total.s_dec = k.g.dec;
    }
    const float mult4 = k.g.enc * 0.25f;  // 4over6's second choice maps the amax to 4

    const std::size_t pieces = std::clamp<std::size_t>(static_cast<std::size_t>(groups), 1, 64);
    Fp4Tally part[64];
    const std::size_t segs = static_cast<std::size_t>(segments);
    if (ws) {  // per piece: each column's factor and scale, each segment's amax
        if (ws->f.size() < pieces * 2 * C) ws->f.resize(pieces * 2 * C);
        if (ws->u.size() < pieces * segs) ws->u.resize(pieces * segs);
    }
    parallel_for(pieces, [&](std::size_t p) {
        const auto [g0, g1] = piece_range(static_cast<std::size_t>(groups), pieces, p);
        std::span<float> factor, scale;
        std::span<std::uint32_t> seg_amax;
        if (ws) {
            factor = {ws->f.data() + p * 2 * C, C};
            scale = {ws->f.data() + p * 2 * C + C, C};
            seg_amax = {ws->u.data() + p * segs, segs};
        } else {
            thread_local std::vector<float> own_factor, own_scale;
            thread_local std::vector<std::uint32_t> own_amax;
            own_factor.resize(C);
            own_scale.resize(C);
            own_amax.resize(segs);
            factor = own_factor;
            scale = own_scale;
            seg_amax = own_amax;
        }
        Fp4Tally& t = part[p];
        for (std::size_t g = g0; g < g1; ++g) {
            const std::size_t r0 = g * static_cast<std::size_t>(height);
            const std::size_t r1 = std::min<std::size_t>(static_cast<std::size_t>(rows), r0 + static_cast<std::size_t>(height));
            std::fill(seg_amax.begin(), seg_amax.end(), 0u);
            for (std::size_t r = r0; r < r1; ++r) {
                const float* row = v + r * C;
                if (width == 1) {  // blocks down columns: one running max per column
                    for (std::size_t col = 0; col < C; ++col)
                        seg_amax[col] = std::max(seg_amax[col], core::bits_of(row[col]) & k_abs);
                    continue;
                }
                for (int s = 0; s < segments; ++s) {
                    const std::size_t c0 = static_cast<std::size_t>(s) * static_cast<std::size_t>(width);
                    const std::size_t c1 = std::min(C, c0 + static_cast<std::size_t>(width));
                    std::uint32_t m = 0;
                    for (std::size_t col = c0; col < c1; ++col) m = std::max(m, core::bits_of(row[col]) & k_abs);
                    seg_amax[static_cast<std::size_t>(s)] = std::max(seg_amax[static_cast<std::size_t>(s)], m);
                }
            }
            for (int s = 0; s < segments; ++s) {
                const float vmax = amax_from_bits(seg_amax[static_cast<std::size_t>(s)]);
                const std::size_t c0 = static_cast<std::size_t>(s) * static_cast<std::size_t>(width);
                const std::size_t c1 = std::min(C, c0 + static_cast<std::size_t>(width));
                BlockScale b;
                if (nv) {
                    b = nv_scale(vmax, k.g, k.g.block_mult);
                    if (c.four_over_six) {
                        const BlockScale b4 = nv_scale(vmax, k.g, mult4);
                        const auto each = [&](auto&& fn) {
                            for (std::size_t r = r0; r < r1; ++r)
                                for (std::size_t col = c0; col < c1; ++col) fn(v[r * C + col]);
                        };
                        if (k.error(each, b4.factor, b4.scale) < k.error(each, b.factor, b.scale)) b = b4;
                    }
                } else {
                    const int e = core::mxfp4_exponent(vmax, c.mx_rule);
                    b.scale = e == core::k_mx_nan_exponent ? NAN : core::mx_scale_value(e);
                    b.factor = 1.0f / b.scale;
                }
                if (out.scales) out.scales[g * static_cast<std::size_t>(segments) + static_cast<std::size_t>(s)] = b.scale;
                std::fill(factor.begin() + static_cast<std::ptrdiff_t>(c0), factor.begin() + static_cast<std::ptrdiff_t>(c1), b.factor);
                std::fill(scale.begin() + static_cast<std::ptrdiff_t>(c0), scale.begin() + static_cast<std::ptrdiff_t>(c1), b.scale);
                ++t.record.blocks;
                const std::uint32_t top = core::e2m1_code(core::fp4_scaled(vmax, b.factor)) & 7u;
                t.record.top6 += top == 7u;
                t.record.top4 += top == 6u;
            }
            for (std::size_t r = r0; r < r1; ++r) {
                float* row = v + r * C;
                if (!c.sr_key && !out.codes) {
                    cast_row_rne(row, C, factor.data(), scale.data(), nv ? k.g.dec : 1.0f, t);
                    continue;
                }
                for (std::size_t col = 0; col < C; ++col)
                    row[col] = k.cast(row[col], r * C + col, factor[col], scale[col], t, out.codes);
            }
        }
    });
    for (std::size_t p = 0; p < pieces; ++p) {
        total.counts += part[p].counts;
        total.record.add(part[p].record);
    }
    return total;
}

}  // namespace mpx
