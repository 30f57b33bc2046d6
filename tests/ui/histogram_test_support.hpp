// What the histogram views' tests share (test_histogram_views.cpp: Range; test_where_updates_views.cpp:
// Where and Updates): hand-made snapshots of a 2-64-64-2 model and a store fed through its buffer.
// Rule: a snapshot here is what the engine would collect (counts per power-of-two bin before
// rounding), so the views are tested on the store's own path, not on a shortcut into them.
#pragma once

#include <initializer_list>
#include <memory>
#include <utility>

#include "engine/compute/histograms.hpp"
#include "engine/run/session.hpp"
#include "ui/session/record_buffer.hpp"
#include "ui/session/record_store.hpp"
#include "ui/session/session_info.hpp"

using mpx::HistTensor;
using mpx::gui::RecordBuffer;
using mpx::gui::RecordStore;

namespace {

constexpr int k_layers = 3;  // 2-64-64-2

mpx::core::Bins bins(std::initializer_list<std::pair<int, unsigned long long>> counts, unsigned long long zero = 0) {
    mpx::core::Bins b;
    for (const auto& [bin, n] : counts) b.n[bin - mpx::core::k_bin_min] = n;
    b.n[mpx::core::k_slot_zero] = zero;
    return b;
}

// A snapshot of three layers in which fc2's gradients are given; the rest is empty.
mpx::HistogramSnapshot snapshot(long long step, double scale) {
    mpx::HistogramSnapshot s;
    s.step = step;
    s.loss_scale = scale;
    s.layer_counts.resize(k_layers * 3);
    // Scaled weight gradient of fc2: 5 values in [2^-30, 2^-29), 15 in [2^-20, ...), 30 at 2^-10, 10 zeros.
    s.add(1, HistTensor::grad_weight, mpx::Format::fp16, bins({{-30, 5}, {-20, 15}, {-10, 30}}, 10));
    s.add(1, HistTensor::grad_weight_unscaled, mpx::Format::fp32, bins({{-46, 5}, {-36, 15}, {-26, 30}}, 10));
    s.add(1, HistTensor::grad_output, mpx::Format::fp16, bins({{-12, 40}, {-8, 60}}));
    return s;
}

// A store fed through its buffer, as the worker feeds it: one session of two fp16 runs.
struct Fed {
    RecordBuffer buffer;
    RecordStore store{&buffer};
    Fed() {
        auto info = std::make_shared<mpx::gui::SessionInfo>();
        info->generation = 1;
        info->config = mpx::load_config("default");
        info->config.model.sizes = {2, 64, 64, 2};
        info->config.instruments.every = 10;
        info->runs = {{QStringLiteral("amp-fp16+none"), mpx::parse_run_spec("amp-fp16+none")},
                      {QStringLiteral("amp-fp16+pytorch"), mpx::parse_run_spec("amp-fp16+pytorch")}};
        info->totalSteps = 1000;
        buffer.beginSession(info);
    }
    void add(long long step, double scale) {
        buffer.appendHistogram(0, snapshot(step, 1.0));
        buffer.appendHistogram(1, snapshot(step, scale));
        store.drainNow();
    }
};

}  // namespace
