// Exponent histograms ("where do the values sit against each format's range"): what the backends
// bin on a collecting step, the tensors a run exports under their names, and the bounded log a run
// keeps for its whole history. Rule: both backends bin with core::bin_slot and core::update_ulp_slot
// (engine/core/format_core.hpp) at the moment an op rounds its FP32 result into storage, so a value
// that flushes to zero is counted where it was.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/format_core.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {

// What a backend bins on a step that collects: per site (layer, kind) the FP32 values each store at
// that site rounded (optimizer: the working copy's write-back only, not its states; dropout's
// in-place rescaling is not binned again), and per layer the optimizer's update-to-ulp ratios.
struct StepHistograms {
    core::Bins site[k_sites];
    core::Bins update_ulp[k_max_layers];
};

// The tensors a histogram is exported and shown for (the names of `mpx-cli run --histograms`).
enum class HistTensor : std::uint8_t {
    input,                 // the layer's input as stored (fc1: the batch; fcN: fc(N−1)'s output)
    preact,                // z = x·wᵀ + b
    normalized,            // LayerNorm's output (models with layernorm)
    output,                // the activation's output (the output layer: its logits, = preact)
    grad_output,           // the gradient arriving at the layer's output, as scaled
    grad_weight,           // weight and bias gradients, as scaled
    grad_weight_unscaled,  // the same after unscaling
    weight,                // the working copy's write-back (nothing on a skipped step)
    update_ulp,            // log2(|update| / ulp of the weight it was applied to)
};
inline constexpr int k_hist_tensors = 9;
inline constexpr EnumName<HistTensor> k_hist_tensor_names[] = {
    {HistTensor::input, "input"},
    {HistTensor::preact, "preact"},
    {HistTensor::normalized, "normalized"},
    {HistTensor::output, "output"},
    {HistTensor::grad_output, "grad_output"},
    {HistTensor::grad_weight, "grad_weight"},
    {HistTensor::grad_weight_unscaled, "grad_weight_unscaled"},
    {HistTensor::weight, "weight"},
    {HistTensor::update_ulp, "update_ulp"},
};
constexpr std::span<const EnumName<HistTensor>> names_of(HistTensor) { return k_hist_tensor_names; }
inline std::string_view to_string(HistTensor t) { return enum_name(t); }

// Whether a tensor's values are gradients as scaled by the loss scale (the Range view shows the
// unscaled ones beside them).
constexpr bool is_scaled_gradient(HistTensor t) {
    return t == HistTensor::grad_output || t == HistTensor::grad_weight;
}

// Where a tensor's bins are in a step's histograms, for layer `layer` of a model of `layers`
// layers; nullptr where the layer has none (normalized without LayerNorm).
const core::Bins* find_bins(const StepHistograms& h, int layer, HistTensor t, int layers, bool layernorm);

// One tensor's histogram at one step, compactly: the counts of bins lo..lo+len−1 (log2 bins, as
// core::bin_slot numbers them minus k_bin_min) plus zero/inf/NaN. `format` is the format the values
// were rounded into (update_ulp: the format of the weight the update was applied to).
struct Histogram {
    std::uint8_t layer = 0;
    HistTensor tensor = HistTensor::input;
    Format format = Format::fp32;
    std::int16_t lo = 0;     // log2 of the first bin held
    std::uint32_t offset = 0, len = 0;  // into the snapshot's counts
    unsigned long long zero = 0, inf = 0, nan = 0;
};

// Every exported tensor's histogram at one collected step.
struct HistogramSnapshot {
    long long step = 0;
    double loss_scale = 1.0;  // the scale this step's gradients carried
    std::vector<Histogram> tensors;
    std::vector<unsigned long long> counts;
    // The step record's counts per layer and pass (index layer · 3 + pass: forward, backward,
    // update): the Where view's underflow share and overflow count per layer.
    std::vector<core::Counts> layer_counts;

    const core::Counts& layer(int layer, Pass p) const {
        return layer_counts[static_cast<std::size_t>(layer) * 3 + static_cast<std::size_t>(p)];
    }
    const Histogram* find(int layer, HistTensor t) const;
    // The count of log2 bin b (k_bin_min..k_bin_max) of a histogram of this snapshot.
    unsigned long long count(const Histogram& h, int bin) const;
    unsigned long long total(const Histogram& h) const;  // every value, zero/inf/NaN included
    std::size_t bytes() const;
    // Builds one: `format_of(layer, tensor)` gives each tensor's storage format (Mlp::stored_format).
    template <class FormatOf>
    static HistogramSnapshot from(long long step, double scale, const StepStats& st,
                                  const StepHistograms& h, int layers, bool layernorm,
                                  FormatOf&& format_of);
    void add(int layer, HistTensor t, Format f, const core::Bins& b);
};

template <class FormatOf>
HistogramSnapshot HistogramSnapshot::from(long long step, double scale, const StepStats& st,
                                          const StepHistograms& h, int layers, bool layernorm,
                                          FormatOf&& format_of) {
    HistogramSnapshot s;
    s.step = step;
    s.loss_scale = scale;
    s.layer_counts.resize(static_cast<std::size_t>(layers) * 3);
    for (int i = 0; i < layers * k_tensor_kinds; ++i) {
        const Pass p = pass_of(static_cast<TensorKind>(i % k_tensor_kinds));
        s.layer_counts[static_cast<std::size_t>(i / k_tensor_kinds) * 3 + static_cast<std::size_t>(p)] += st.site[i];
    }
    for (int l = 0; l < layers; ++l)
        for (const auto& e : k_hist_tensor_names)
            if (const core::Bins* b = find_bins(h, l, e.value, layers, layernorm))
                s.add(l, e.value, format_of(l, e.value), *b);
    return s;
}

// A run's collected histograms, bounded: when holding more than `max_bytes`, every other snapshot
// is dropped (those at odd multiples of the stride) and collection continues at twice the stride,
// so the log still spans the whole run at an even spacing.
class HistogramLog {
public:
    explicit HistogramLog(std::size_t max_bytes = 24u << 20) : m_max_bytes(max_bytes) {}
    // Whether step `step` should be collected, given the configured interval (0: never).
    bool wants(long long step, int every) const;
    void add(HistogramSnapshot s, int every);
    const std::vector<HistogramSnapshot>& snapshots() const { return m_snaps; }
    long long stride() const { return m_stride; }  // multiples of `every` kept now
    std::size_t bytes() const { return m_bytes; }
    void clear();

private:
    std::size_t m_max_bytes;
    std::vector<HistogramSnapshot> m_snaps;
    std::size_t m_bytes = 0;
    long long m_stride = 1;
};

}  // namespace mpx
