// The FP4 view's sentences: what the chosen run's recipe does to the chosen tensor, the captions
// that depend on the FP4 kind, and the weights' forward/backward readout, in words a student
// follows. Rule: plain functions of what is shown (no widget, no store), so every sentence is one
// place; the facts they state come from engine/core/fp4.hpp and REFERENCE.md, "FP4".
#pragma once

#include <QString>

#include <optional>

#include "engine/precision/fp4_recipe.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "ui/session/fp8_history.hpp"

namespace mpx::ui::fp4words {

// What the view shows: the run's kind and resolved recipe, the tensor and its layer.
struct Shown {
    mpx::Fp4Kind kind = mpx::Fp4Kind::nvfp4;
    mpx::Fp4Config recipe;
    mpx::Fp8Tensor tensor = mpx::Fp8Tensor::x;
    int layer = 0;
};

QString tensorWords(mpx::Fp8Tensor t);  // "activations"
QString tensorName(mpx::Fp8Tensor t);   // "x"
// The tensor's blocks for the picker: "16×16 tiles", "1×16 blocks, rounded at random", "1×32 blocks".
QString blocks(const Shown& s);
// The paragraph over the charts: FP4's 8 sizes, the kind's scales, what this run does to the tensor.
QString explain(const Shown& s);
// The captions of the block-tops chart (what a lost binade is) and of the shares chart.
QString topsCaption(mpx::Fp4Kind k);
QString shareCaption(mpx::Fp4Kind k, mpx::core::MxScaleRule rule);
// A bar's value in at most three digits ("21 %", "5.1 %", "0.62 %"): eight of them share half a
// laptop's view, and a wider one would be cut ("20.…"); the tooltip and caption keep the rest.
QString barText(double share);
// The weights' readout: `c` the newest comparison at or before `shownStep`, `every` instruments.every.
QString consistency(const Shown& s, int every, const std::optional<gui::Fp4Consistency>& c, long long shownStep);

}  // namespace mpx::ui::fp4words
