// mx_cast_in_place in four passes over the whole matrix, each contiguous and vectorisable: the block
// exponents, × 2^-e, one vectorised E4M3 rounding of everything, × 2^e. A block holding an inf or
// NaN amax (E8M0's NaN scale, rare) sends the whole matrix through hd::mx_element one element at a
// time, which is the definition.
#include "engine/mx_cast.hpp"

#include <algorithm>
#include <vector>

#include "engine/format.hpp"
#include "engine/fp8_math.hpp"

namespace mpx {
namespace {

constexpr int k_block = hd::k_mx_block;
constexpr int k_nan_scale = 128;  // hd::mx_shared_exponent of an inf/NaN amax

// Block (line, b) holds elements b·32 … of `line`; at(line, k) is element k of the line.
template <class At>
void by_element(int lines, int len, At at, hd::Counts& counts) {
    const hd::TallyEdges edges = hd::tally_edges(Format::e4m3);
    for (int l = 0; l < lines; ++l)
        for (int b0 = 0; b0 < len; b0 += k_block) {
            const int b1 = std::min(len, b0 + k_block);
            float amax = 0.0f;
            for (int k = b0; k < b1; ++k) amax = hd::amax_fold(amax, *at(l, k));
            const int e = hd::mx_shared_exponent(amax);
            for (int k = b0; k < b1; ++k) {
                float scaled, q;
                *at(l, k) = hd::mx_element(*at(l, k), e, scaled, q);
                hd::tally(edges, scaled, q, counts);
            }
        }
}

}  // namespace

void mx_cast_in_place(float* v, int rows, int cols, MxAxis axis, hd::Counts& counts) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    if (n == 0) return;
    const std::size_t C = static_cast<std::size_t>(cols);
    // The factors 2^-e and 2^e of every block, laid out as the blocks are: rows × blocks per row,
    // or row groups × columns (2^e is not 1 / 2^-e where either leaves FP32's normal range).
    thread_local std::vector<float> down, up, fold;
    const int groups = axis == MxAxis::rows ? (cols + k_block - 1) / k_block : (rows + k_block - 1) / k_block;
    const std::size_t blocks = axis == MxAxis::rows ? static_cast<std::size_t>(rows) * groups
                                                    : static_cast<std::size_t>(groups) * C;
    down.resize(blocks);
    up.resize(blocks);
    bool nan_scale = false;
    const auto set = [&](std::size_t block, int e) {
        nan_scale |= e == k_nan_scale;
        down[block] = e == k_nan_scale ? 1.0f : hd::exp2i(-e);
        up[block] = e == k_nan_scale ? 1.0f : hd::exp2i(e);
    };
    if (axis == MxAxis::rows) {
        for (int r = 0; r < rows; ++r)
            for (int g = 0; g < groups; ++g) {
                const int k = g * k_block, end = std::min(cols, k + k_block);
                const float amax = hd::amax_of(v + static_cast<std::size_t>(r) * C + k, static_cast<std::size_t>(end - k));
                set(static_cast<std::size_t>(r) * groups + g, hd::mx_shared_exponent(amax));
            }
    } else {
        fold.resize(C);
        for (int g = 0; g < groups; ++g) {
            std::fill(fold.begin(), fold.end(), 0.0f);
            for (int r = g * k_block, end = std::min(rows, r + k_block); r < end; ++r) {
                const float* row = v + static_cast<std::size_t>(r) * C;
                for (std::size_t c = 0; c < C; ++c) fold[c] = hd::amax_fold(fold[c], row[c]);
            }
            for (std::size_t c = 0; c < C; ++c) set(static_cast<std::size_t>(g) * C + c, hd::mx_shared_exponent(fold[c]));
        }
    }
    if (nan_scale) {
        if (axis == MxAxis::rows)
            by_element(rows, cols, [&](int l, int k) { return v + static_cast<std::size_t>(l) * C + k; }, counts);
        else
            by_element(cols, rows, [&](int l, int k) { return v + static_cast<std::size_t>(k) * C + l; }, counts);
        return;
    }
    // Every element times its block's factor (2^-e, then after rounding 2^e).
    const auto apply = [&](const std::vector<float>& factor) {
        for (int r = 0; r < rows; ++r) {
            float* row = v + static_cast<std::size_t>(r) * C;
            if (axis == MxAxis::rows) {
                const float* f = &factor[static_cast<std::size_t>(r) * groups];
                for (int g = 0; g < groups; ++g)
                    for (int k = g * k_block, end = std::min(cols, k + k_block); k < end; ++k) row[k] *= f[g];
            } else {
                const float* f = &factor[static_cast<std::size_t>(r / k_block) * C];
                for (std::size_t c = 0; c < C; ++c) row[c] *= f[c];
            }
        }
    };
    apply(down);
    counts += round_in_place(Format::e4m3, {v, n}, Overflow::saturate);
    apply(up);
}

}  // namespace mpx
