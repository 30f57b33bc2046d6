// How two backends' results are compared: per-element bounds atol + |ref|·k·eps(format), and the
// rule for RoundStats. Header-only and Qt-free: used by tests/test_cuda_backend.cpp and by the
// backend comparisons in backend_compare.cpp (mpx-cuda-check runs those where no Qt is installed).
//
// The contract (engine/core/op_math.hpp): both backends run the same engine/core/op_math.hpp and
// engine/core/format_core.hpp functions, built without FMA contraction (-ffp-contract=off, nvcc
// --fmad=false), so every result is bit-exact except in two places, which get bounds:
//  - GEMMs: the FP32 accumulation order (cuBLAS vs Eigen). Each side is within K·eps32·Σ|a||b| of
//    the exact sum of its (identically rounded) products, so they differ by at most
//    2·K·eps32·Σ|a||b|; rounding into the destination can then move one more ulp of the
//    destination's format.
//  - tanhf/expf/logf: CUDA's and glibc's differ by a couple of ulps: 16·eps32 of the intermediate
//    terms, then one ulp of the destination.
// RoundStats: a count may differ by at most the number of elements whose stored values differ (an
// element with equal bits on both sides was counted the same way): equal values, equal counts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/rng.hpp"
#include "engine/precision/format.hpp"

namespace mpx::compare {

inline constexpr double k_eps32 = 0x1p-23;

inline double eps(Format f) { return info(f).epsilon; }
inline double min_sub(Format f) { return info(f).min_subnormal; }

// Bitwise equality of two buffers (a NaN equals a NaN of the same bits).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Diff {
    std::size_t differing = 0;  // elements whose bits differ
    std::size_t outside = 0;    // ... by more than their bound
    std::string first;          // the first element outside, described
};

// |got − ref| ≤ bound[i] per element; equal bits, and NaN against NaN, always pass.
inline Diff compare_values(const std::vector<float>& ref, const std::vector<float>& got,
                           const std::vector<double>& bound) {
    Diff d;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        if (std::memcmp(&ref[i], &got[i], sizeof(float)) == 0 ||
            (std::isnan(ref[i]) && std::isnan(got[i])))
            continue;
        ++d.differing;
        const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
        if (!(err <= bound[i]) && d.outside++ == 0)  // inf − inf and NaN against a number land here
            d.first = "element " + std::to_string(i) + ": ref " + std::to_string(ref[i]) +
                      ", got " + std::to_string(got[i]) + ", bound " + std::to_string(bound[i]);
    }
    return d;
}

inline std::vector<double> bounds(const std::vector<float>& ref, double rel, double atol) {
    std::vector<double> b(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) b[i] = rel * std::fabs(ref[i]) + atol;
    return b;
}

// Same FP32 operations in the same order on both sides: equal bits.
inline std::vector<double> exact_bounds(const std::vector<float>& ref) {
    return std::vector<double>(ref.size(), 0.0);
}

// tanhf/expf/logf differ between CUDA and glibc by a couple of ulps.
inline std::vector<double> transcendental_bounds(const std::vector<float>& ref, Format dst,
                                                 double scale) {
    return bounds(ref, eps(dst) + 16 * k_eps32, min_sub(dst) + 16 * k_eps32 * scale);
}

// GEMMs: 2·K·eps32·Σ|a||b| per output (Σ from the operands as rounded to the compute format), plus
// one ulp of the destination.
inline std::vector<double> gemm_bounds(const std::vector<float>& ref,
                                       const std::vector<double>& abs_sum, int K, Format dst) {
    std::vector<double> b(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
        b[i] = 2.0 * K * k_eps32 * abs_sum[i] + eps(dst) * std::fabs(ref[i]) + min_sub(dst);
    return b;
}

// Whether every RoundStats count differs by at most `allowed`.
inline bool counts_close(const RoundStats& a, const RoundStats& b, std::size_t allowed) {
    const auto near = [&](std::size_t x, std::size_t y) {
        return (x > y ? x - y : y - x) <= allowed;
    };
    // The largest value that overflowed, and the largest stored, are each one of the values: equal
    // where they all are.
    return near(a.overflow, b.overflow) && near(a.underflow, b.underflow) &&
           near(a.subnormal, b.subnormal) && near(a.nonzero, b.nonzero) &&
           (allowed > 0 || (a.overflow_max == b.overflow_max && a.stored_max == b.stored_max));
}
inline std::string counts_text(const RoundStats& s) {
    return "overflow " + std::to_string(s.overflow) + ", underflow " + std::to_string(s.underflow) +
           ", subnormal " + std::to_string(s.subnormal) + ", nonzero " + std::to_string(s.nonzero) +
           ", largest overflowed bits " + std::to_string(s.overflow_max) + ", largest stored bits " +
           std::to_string(s.stored_max);
}

// ---- inputs ------------------------------------------------------------------------------------

inline std::vector<float> normal(std::size_t n, std::uint64_t seed, double sigma) {
    Rng r(seed);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(r.normal(0.0, sigma));
    return v;
}

// Magnitudes spread over 2^-lo .. 2^hi with random signs: exercises underflow and overflow.
inline std::vector<float> wide(std::size_t n, std::uint64_t seed, double lo, double hi) {
    Rng r(seed);
    std::vector<float> v(n);
    for (float& x : v)
        x = static_cast<float>((r.uniform() < 0.5 ? -1.0 : 1.0) * std::exp2(r.uniform(-lo, hi)));
    return v;
}

inline double max_abs(const std::vector<float>& v) {
    double m = 0.0;
    for (float x : v)
        if (std::isfinite(x)) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
}

}  // namespace mpx::compare
