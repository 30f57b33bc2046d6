// What one training step counted, gathered where the ops run: every op adds its rounding counts to
// the backend's record (on the GPU it stays on the device), and the run reads the record once per
// step. Rule: plain data compiled for CPU and GPU alike; an op adds to the pass the run has set, so
// the same op counts as forward, backward or update work depending on where the step calls it.
#pragma once

#include <cstdint>

#include "engine/format_core.hpp"
#include "engine/hd.hpp"

namespace mpx {

// Where an op's counts go. forward: activations and GEMM operand casts of the forward pass (their
// overflows count); backward: gradient roundings (the underflow fraction is backward's underflow
// over its non-zero inputs); update: unscaling, clipping and the optimizer (lost updates, overflow
// of the write-back); uncounted: work whose counts the step does not report (recomputation,
// uploads of targets).
enum class Pass : std::uint8_t { forward, backward, update, uncounted };
inline constexpr int k_passes = 4;

// What optimizer_update does on a step whose gradients held inf/NaN (read from the step record):
// skip (every loss scaler) or apply the NaN update anyway (no scaler, as plain PyTorch does).
enum class OnInf : std::uint8_t { skip, apply };

struct StepStats {
    hd::Counts pass[k_passes];
    double loss_sum = 0.0;     // Σ of each loss op's mean loss (hd::mean_loss), in call order
    double sum_squares = 0.0;  // of the unscaled gradients, in hd::k_sum_chunk order

    MPX_HD const hd::Counts& of(Pass p) const { return pass[static_cast<int>(p)]; }
    MPX_HD hd::Counts& of(Pass p) { return pass[static_cast<int>(p)]; }
    // Any unscaled gradient was inf or NaN.
    MPX_HD bool found_inf() const {
        unsigned long long bad = 0;
        for (const hd::Counts& c : pass) bad += c.bad;
        return bad != 0;
    }
    // Every pass's counts added up (an op checked in isolation).
    MPX_HD hd::Counts total() const {
        hd::Counts t;
        for (const hd::Counts& c : pass) t += c;
        return t;
    }
};

}  // namespace mpx
