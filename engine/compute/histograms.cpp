// Exponent histograms: which bins a tensor name reads, compact snapshots, the bounded log.
#include "engine/compute/histograms.hpp"

#include <algorithm>

namespace mpx {

const core::Bins* find_bins(const StepHistograms& h, int layer, HistTensor t, int layers, bool layernorm) {
    using K = TensorKind;
    const bool last = layer == layers - 1;
    const auto at = [&](int l, K k) { return &h.site[site_index(l, k)]; };
    switch (t) {
        case HistTensor::input:  // fc1: the batch; else the layer below's stored output
            return layer == 0 ? at(0, K::input) : at(layer - 1, K::activation);
        case HistTensor::preact: return at(layer, K::output);
        case HistTensor::normalized: return layernorm && !last ? at(layer, K::normalized) : nullptr;
        case HistTensor::output: return last ? at(layer, K::output) : at(layer, K::activation);
        case HistTensor::grad_output:  // the loss's gradient, else what the layer above passed down
            return last ? at(layer, K::grad_output) : at(layer + 1, K::grad_input);
        case HistTensor::grad_weight: return at(layer, K::grad_weight);
        case HistTensor::grad_weight_unscaled: return at(layer, K::unscaled);
        case HistTensor::weight: return at(layer, K::optimizer);
        case HistTensor::update_ulp: return &h.update_ulp[layer];
    }
    return nullptr;
}

void HistogramSnapshot::add(int layer, HistTensor t, Format f, const core::Bins& b) {
    Histogram h;
    h.layer = static_cast<std::uint8_t>(layer);
    h.tensor = t;
    h.format = f;
    h.zero = b.n[core::k_slot_zero];
    h.inf = b.n[core::k_slot_inf];
    h.nan = b.n[core::k_slot_nan];
    int first = core::k_log2_bins, last = -1;
    for (int i = 0; i < core::k_log2_bins; ++i)
        if (b.n[i]) {
            first = std::min(first, i);
            last = i;
        }
    h.offset = static_cast<std::uint32_t>(counts.size());
    if (last >= 0) {
        h.lo = static_cast<std::int16_t>(first + core::k_bin_min);
        h.len = static_cast<std::uint32_t>(last - first + 1);
        counts.insert(counts.end(), b.n + first, b.n + last + 1);
    }
    tensors.push_back(h);
}

const Histogram* HistogramSnapshot::find(int layer, HistTensor t) const {
    for (const Histogram& h : tensors)
        if (h.layer == layer && h.tensor == t) return &h;
    return nullptr;
}

unsigned long long HistogramSnapshot::count(const Histogram& h, int bin) const {
    const long long i = static_cast<long long>(bin) - h.lo;
    return i >= 0 && i < static_cast<long long>(h.len) ? counts[h.offset + static_cast<std::size_t>(i)] : 0;
}

unsigned long long HistogramSnapshot::total(const Histogram& h) const {
    unsigned long long t = h.zero + h.inf + h.nan;
    for (std::uint32_t i = 0; i < h.len; ++i) t += counts[h.offset + i];
    return t;
}

std::size_t HistogramSnapshot::bytes() const {
    return sizeof(*this) + tensors.size() * sizeof(Histogram) + counts.size() * sizeof(counts[0]) +
           layer_counts.size() * sizeof(core::Counts);
}

bool HistogramLog::wants(long long step, int every) const {
    return every > 0 && step % (static_cast<long long>(every) * m_stride) == 0;
}

void HistogramLog::add(HistogramSnapshot s, int every) {
    m_bytes += s.bytes();
    m_snaps.push_back(std::move(s));
    while (m_bytes > m_max_bytes && m_snaps.size() > 1) {
        // Keep the snapshots at even multiples of the stride: every other one, evenly spaced.
        const long long keep_every = 2 * m_stride;
        const long long spacing = keep_every * std::max(every, 1);
        std::vector<HistogramSnapshot> kept;
        std::size_t bytes = 0;
        for (HistogramSnapshot& k : m_snaps)
            if (k.step % spacing == 0) {
                bytes += k.bytes();
                kept.push_back(std::move(k));
            }
        m_snaps = std::move(kept);
        m_bytes = bytes;
        m_stride = keep_every;
    }
}

void HistogramLog::clear() {
    m_snaps.clear();
    m_bytes = 0;
    m_stride = 1;
}

}  // namespace mpx
