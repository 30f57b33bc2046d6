// One run's FP8 scaling for display: per (layer, tensor) the engine's Fp8ScaleRows, compactly, in
// step order. Rule: a point is always one of the engine's rows, never recomputed or averaged. Memory
// is bounded: when a series holds k_capacity rows, its step buckets double in width and each bucket
// keeps one row — the one that saturated the largest share, then flushed the largest share to zero,
// then the latest — so a spike survives thinning. A series never holds more than k_capacity points
// (48 B each: 768 KiB; 3 FP8 runs of the 2-layer `fp8` preset: 18 series, at most 13.5 MiB).
// FP4 series (format e2m1) keep each kept row's core::Fp4Record beside it (104 B more a point), and
// apart from the thinning every weight comparison of the forward and backward quantizations
// (Fp4Record::compared > 0, histogram-collecting steps only), so thinning never loses the last one.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/precision/fp8_scaling.hpp"

namespace mpx::gui {

// One step of one scaled tensor, as the engine measured it (Fp8ScaleRow less the series' keys).
struct Fp8Point {
    long long step = 0;
    float amax = 0.0f;   // of the values before scaling
    float scale = 0.0f;  // the scale used on this step (MXFP8: 0, its scales are per block)
    unsigned long long saturated = 0, underflow = 0, nonzero = 0, count = 0;
    // Of the values cast, the share that overflowed the format (saturated, or became inf/NaN).
    double saturatedShare() const { return count ? static_cast<double>(saturated) / static_cast<double>(count) : 0.0; }
    // Of the non-zero values cast, the share that became zero (core::Fp8Record: underflow of nonzero).
    double underflowShare() const {
        return nonzero ? static_cast<double>(underflow) / static_cast<double>(nonzero) : 0.0;
    }
};

// A weight's two FP4 quantizations compared on one step (core::Fp4Record::mismatched of compared).
struct Fp4Consistency {
    long long step = 0;
    unsigned long long mismatched = 0, compared = 0;
};

class Fp8Series {
public:
    static constexpr std::size_t k_capacity = 1 << 14;  // 16,384 points at one step each
    explicit Fp8Series(std::size_t capacity = k_capacity) : m_capacity(capacity < 2 ? 2 : capacity) {}

    void add(const mpx::Fp8ScaleRow& r);  // steps in order
    const std::vector<Fp8Point>& points() const { return m_points; }
    long long bucketWidth() const { return m_width; }  // 1 until the first thinning
    mpx::Format format() const { return m_format; }
    bool block() const { return m_block; }  // MXFP8: per-block scales, no per-tensor scale
    // The newest point at or before `step`, or nullptr.
    const Fp8Point* at(long long step) const;
    // FP4 (format e2m1): the E2M1 codes and blocks of points()[i]; nullptr for FP8 series.
    const mpx::core::Fp4Record* fp4(std::size_t i) const { return i < m_fp4.size() ? &m_fp4[i] : nullptr; }
    // FP4 weights: every comparison of the forward and backward quantizations, in step order
    // (thinned to every other one when k_capacity are kept).
    const std::vector<Fp4Consistency>& consistency() const { return m_consistency; }

private:
    std::size_t m_capacity;
    long long m_width = 1;
    mpx::Format m_format = mpx::Format::e4m3;
    bool m_block = false;
    std::vector<Fp8Point> m_points;
    std::vector<mpx::core::Fp4Record> m_fp4;  // beside m_points, FP4 series only
    std::vector<Fp4Consistency> m_consistency;
};

class Fp8History {
public:
    void add(const mpx::Fp8ScaleRow& r);
    // The series of (layer, tensor), or nullptr when the engine sent none (not an FP8 layer).
    const Fp8Series* series(int layer, mpx::Fp8Tensor t) const;
    std::vector<int> layers() const;  // the layers with any series, ascending
    bool empty() const { return m_series.empty(); }
    long long lastStep() const { return m_last; }  // -1 when empty
    std::size_t bytes() const;

private:
    std::vector<Fp8Series> m_series;  // layer · k_fp8_tensors + tensor
    std::vector<char> m_has;
    long long m_last = -1;
};

}  // namespace mpx::gui
