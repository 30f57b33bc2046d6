// mx_cast_in_place in two passes over the matrix: the block exponents (an integer max on the bits,
// which the CPU vectorises), then one fused, branch-free pass that scales each element by 2^-e,
// rounds it into E4M3 (core::Fp8Rounding; ±448 from the overflow edge on, E4M3 saturating), tallies
// it and scales it back by 2^e. A matrix holding an inf or NaN (rare: a step the scaler skips)
// goes through core::mx_element one element at a time, which is the definition.
#include "engine/precision/mxfp8_cast.hpp"

#include <algorithm>
#include <vector>

#include "engine/core/fp8_math.hpp"
#include "engine/precision/format.hpp"

namespace mpx {
namespace {

constexpr int k_block = core::k_mx_block;
constexpr std::uint32_t k_inf_bits = 0x7f800000u;
constexpr std::size_t k_rows_chunk = 1024;  // values per fused loop under row blocks (fits L1)

// Block (line, b) holds elements b·32 … of `line`; at(line, k) is element k of the line.
template <class At>
void by_element(int lines, int len, At at, core::Counts& counts) {
    const core::TallyEdges edges = core::tally_edges(Format::e4m3);
    for (int l = 0; l < lines; ++l)
        for (int b0 = 0; b0 < len; b0 += k_block) {
            const int b1 = std::min(len, b0 + k_block);
            float amax = 0.0f;
            for (int k = b0; k < b1; ++k) amax = core::amax_fold(amax, *at(l, k));
            const int e = core::mx_shared_exponent(amax);
            for (int k = b0; k < b1; ++k) {
                float scaled, q;
                *at(l, k) = core::mx_element(*at(l, k), e, scaled, q);
                core::tally(edges, scaled, q, counts);
            }
        }
}

// The fused pass over finite values: x · down rounded into E4M3, counted, times up, with one
// factor per element in `down` and `up`.
struct Caster {
    core::Fp8Rounding round{Format::e4m3};
    core::TallyEdges edges = core::tally_edges(Format::e4m3);
    std::uint32_t max_bits = core::bits_of(format_info(Format::e4m3).max_finite);
    std::uint32_t nonzero = 0, overflow = 0, underflow = 0, subnormal = 0, overflow_max = 0, stored_max = 0;

    void cast(float* x, std::size_t m, const float* down, const float* up) {
        std::uint32_t z = 0, o = 0, u = 0, s = 0, om = 0, sm = 0;
        for (std::size_t i = 0; i < m; ++i) {
            const std::uint32_t b = core::bits_of(x[i] * down[i]);
            const float q = (b & 0x7fffffffu) >= edges.over_from ? core::float_of(max_bits | (b & 0x80000000u)) : round(b);
            const core::TallyFlags t = core::tally_flags(edges, b, core::bits_of(q));
            z += t.nonzero;
            o += t.overflow;
            u += t.underflow;
            s += t.subnormal;
            om = om > t.overflow_bits ? om : t.overflow_bits;
            sm = sm > t.stored_bits ? sm : t.stored_bits;
            x[i] = q * up[i];
        }
        nonzero += z;
        overflow += o;
        underflow += u;
        subnormal += s;
        overflow_max = overflow_max > om ? overflow_max : om;
        stored_max = stored_max > sm ? stored_max : sm;
    }
    void add_to(core::Counts& c) const {
        c.nonzero += nonzero;
        c.overflow += overflow;
        c.underflow += underflow;
        c.subnormal += subnormal;  // nonfinite stays 0: E4M3 saturates and every input is finite
        c.overflow_max = std::max<unsigned long long>(c.overflow_max, overflow_max);
        c.stored_max = std::max<unsigned long long>(c.stored_max, stored_max);
    }
};

// |x|'s largest bits over n values, NaN's included (an integer max: vectorises).
std::uint32_t max_abs_bits(const float* v, std::size_t n) {
    std::uint32_t m = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = core::bits_of(v[i]) & 0x7fffffffu;
        m = m > a ? m : a;
    }
    return m;
}

}  // namespace

float mx_cast_in_place(float* v, int rows, int cols, MxAxis axis, core::Counts& counts) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    if (n == 0) return 0.0f;
    const std::size_t C = static_cast<std::size_t>(cols);
    // The factors 2^-e and 2^e of every block, laid out as the blocks are: rows × blocks per row,
    // or row groups × columns (2^e is not 1 / 2^-e where either leaves FP32's normal range).
    thread_local std::vector<float> down, up;
    thread_local std::vector<std::uint32_t> fold;
    const int groups = axis == MxAxis::rows ? (cols + k_block - 1) / k_block : (rows + k_block - 1) / k_block;
    const std::size_t blocks = axis == MxAxis::rows ? static_cast<std::size_t>(rows) * groups
                                                    : static_cast<std::size_t>(groups) * C;
    down.resize(blocks);
    up.resize(blocks);
    std::uint32_t amax = 0;  // over the whole matrix: ≥ inf's bits when it holds an inf or NaN
    const auto set = [&](std::size_t block, std::uint32_t block_amax) {
        amax = std::max(amax, block_amax);
        const int e = core::mx_shared_exponent(core::float_of(std::min(block_amax, k_inf_bits)));
        down[block] = core::exp2i(-std::min(e, 127));
        up[block] = core::exp2i(std::min(e, 127));
    };
    if (axis == MxAxis::rows) {
        for (int r = 0; r < rows; ++r)
            for (int g = 0; g < groups; ++g) {
                const int k = g * k_block, end = std::min(cols, k + k_block);
                set(static_cast<std::size_t>(r) * groups + g,
                    max_abs_bits(v + static_cast<std::size_t>(r) * C + k, static_cast<std::size_t>(end - k)));
            }
    } else {
        fold.resize(C);
        for (int g = 0; g < groups; ++g) {
            std::fill(fold.begin(), fold.end(), 0u);
            for (int r = g * k_block, end = std::min(rows, r + k_block); r < end; ++r) {
                const float* row = v + static_cast<std::size_t>(r) * C;
                for (std::size_t c = 0; c < C; ++c) {
                    const std::uint32_t a = core::bits_of(row[c]) & 0x7fffffffu;
                    fold[c] = fold[c] > a ? fold[c] : a;
                }
            }
            for (std::size_t c = 0; c < C; ++c) set(static_cast<std::size_t>(g) * C + c, fold[c]);
        }
    }
    if (amax >= k_inf_bits) {
        const float tensor_amax = core::amax_of(v, n);
        if (axis == MxAxis::rows)
            by_element(rows, cols, [&](int l, int k) { return v + static_cast<std::size_t>(l) * C + k; }, counts);
        else
            by_element(cols, rows, [&](int l, int k) { return v + static_cast<std::size_t>(k) * C + l; }, counts);
        return tensor_amax;
    }
    Caster caster;
    if (axis == MxAxis::rows) {
        // Rows are 2 to a few hundred values long, too short for a vector loop each: the factors
        // are spread over whole rows, k_rows_chunk values at a time, and cast in one loop.
        thread_local std::vector<float> down_e, up_e;
        const std::size_t per_chunk = std::max<std::size_t>(1, k_rows_chunk / C);
        down_e.resize(per_chunk * C);
        up_e.resize(per_chunk * C);
        for (std::size_t r0 = 0; r0 < static_cast<std::size_t>(rows); r0 += per_chunk) {
            const std::size_t r1 = std::min<std::size_t>(rows, r0 + per_chunk);
            for (std::size_t r = r0; r < r1; ++r)
                for (int g = 0; g < groups; ++g) {
                    const std::size_t k = static_cast<std::size_t>(g) * k_block, len = std::min<std::size_t>(C - k, k_block);
                    const std::size_t at = (r - r0) * C + k, block = r * groups + g;
                    std::fill_n(&down_e[at], len, down[block]);
                    std::fill_n(&up_e[at], len, up[block]);
                }
            caster.cast(v + r0 * C, (r1 - r0) * C, down_e.data(), up_e.data());
        }
    } else {
        for (int r = 0; r < rows; ++r) {
            const std::size_t b = static_cast<std::size_t>(r / k_block) * C;
            caster.cast(v + static_cast<std::size_t>(r) * C, C, &down[b], &up[b]);
        }
    }
    caster.add_to(counts);
    return core::float_of(amax);
}

}  // namespace mpx
