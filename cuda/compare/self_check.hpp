// The startup self-check: before `auto` (or `cuda`) trains on a GPU, every precision policy's ops run
// on it and on the CPU backend and must agree within cuda/compare/tolerance.hpp. Rule: a GPU that
// fails is never trained on by `auto`; `cuda` refuses with the report. The result is cached per
// device and build (in this process and in the user's cache folder), so it costs one run per build.
#pragma once

#include <string>

#include "engine/compute/backend.hpp"
#include "engine/config/device_choice.hpp"

namespace mpx::compare {

struct SelfCheck {
    bool passed = false;
    std::string report;    // the first failures, one per line (empty when passed)
    double seconds = 0.0;  // how long the check took
};

// Every policy of policies(): linear_ops, elementwise_ops, losses and unscale_and_optimizer of
// `dut` against a fresh CPU backend. Any backend can be checked (tests run CPU against CPU and
// against a faulty one).
SelfCheck self_check(Backend& dut);

}  // namespace mpx::compare

namespace mpx::cuda {

// GPU 0 as training would use it: cuda::probe_device(), then the self-check, cached. Unusable,
// with the reason, when the probe or the check fails. Never throws.
GpuProbe checked_gpu();

}  // namespace mpx::cuda
