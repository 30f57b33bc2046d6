// Fp8History: the engine's FP8 scale rows per tensor, thinned by doubling buckets.
#include "ui/session/fp8_history.hpp"

#include <algorithm>

namespace mpx::gui {
namespace {

// Whether `b` should stand for a bucket instead of `a` (b is the later row): it saturated a larger
// share, or as large and flushed a larger share, or both the same.
bool keeps(const Fp8Point& a, const Fp8Point& b) {
    const double sa = a.saturatedShare(), sb = b.saturatedShare();
    if (sa != sb) return sb > sa;
    return b.underflowShare() >= a.underflowShare();
}

}  // namespace

void Fp8Series::add(const mpx::Fp8ScaleRow& r) {
    if (m_points.empty()) {
        m_format = r.format;
        m_block = r.block;
    }
    Fp8Point p;
    p.step = r.step;
    p.amax = r.amax;
    p.scale = r.scale;
    p.saturated = r.saturated;
    p.underflow = r.underflow;
    p.nonzero = r.nonzero;
    p.count = r.count;
    const bool fp4 = m_format == mpx::Format::e2m1;
    if (fp4 && r.fp4.compared > 0) {
        m_consistency.push_back({r.step, r.fp4.mismatched, r.fp4.compared});
        if (m_consistency.size() >= m_capacity) {  // every other one, the newest kept
            std::size_t out = 0;
            for (std::size_t i = m_consistency.size() % 2 ? 0 : 1; i < m_consistency.size(); i += 2)
                m_consistency[out++] = m_consistency[i];
            m_consistency.resize(out);
        }
    }
    if (!m_points.empty() && m_points.back().step / m_width == p.step / m_width) {
        if (keeps(m_points.back(), p)) {
            m_points.back() = p;
            if (fp4) m_fp4.back() = r.fp4;
        }
        return;
    }
    m_points.push_back(p);
    if (fp4) m_fp4.push_back(r.fp4);
    // Full: wider buckets until at most half the capacity is used (one doubling for steps that
    // arrive one by one; more where steps are sparse).
    while (m_points.size() >= m_capacity) {
        m_width *= 2;
        std::size_t out = 0;
        for (std::size_t i = 0; i < m_points.size(); ++i) {
            if (out > 0 && m_points[out - 1].step / m_width == m_points[i].step / m_width) {
                if (keeps(m_points[out - 1], m_points[i])) {
                    m_points[out - 1] = m_points[i];
                    if (fp4) m_fp4[out - 1] = m_fp4[i];
                }
            } else {
                if (fp4) m_fp4[out] = m_fp4[i];
                m_points[out++] = m_points[i];
            }
        }
        m_points.resize(out);
        if (fp4) m_fp4.resize(out);
    }
}

const Fp8Point* Fp8Series::at(long long step) const {
    auto it = std::upper_bound(m_points.begin(), m_points.end(), step,
                               [](long long s, const Fp8Point& p) { return s < p.step; });
    return it == m_points.begin() ? nullptr : &*std::prev(it);
}

void Fp8History::add(const mpx::Fp8ScaleRow& r) {
    if (r.layer < 0) return;
    const auto i = static_cast<std::size_t>(r.layer) * mpx::k_fp8_tensors + static_cast<std::size_t>(r.tensor);
    if (i >= m_series.size()) {
        m_series.resize(i + 1);
        m_has.resize(i + 1, 0);
    }
    m_series[i].add(r);
    m_has[i] = 1;
    m_last = std::max(m_last, r.step);
}

const Fp8Series* Fp8History::series(int layer, mpx::Fp8Tensor t) const {
    if (layer < 0) return nullptr;
    const auto i = static_cast<std::size_t>(layer) * mpx::k_fp8_tensors + static_cast<std::size_t>(t);
    return i < m_series.size() && m_has[i] ? &m_series[i] : nullptr;
}

std::vector<int> Fp8History::layers() const {
    std::vector<int> out;
    for (std::size_t i = 0; i < m_has.size(); ++i) {
        const int l = static_cast<int>(i / mpx::k_fp8_tensors);
        if (m_has[i] && (out.empty() || out.back() != l)) out.push_back(l);
    }
    return out;
}

std::size_t Fp8History::bytes() const {
    std::size_t b = 0;
    for (const Fp8Series& s : m_series)
        b += s.points().capacity() * sizeof(Fp8Point) +
             (s.format() == mpx::Format::e2m1 ? s.points().capacity() * sizeof(mpx::core::Fp4Record) : 0) +
             s.consistency().capacity() * sizeof(Fp4Consistency);
    return b;
}

}  // namespace mpx::gui
