// The cores' FP32 peak as measured, not assumed: each thread runs a register-only kernel of
// independent fused multiply-adds on the widest vectors the build targets, all threads at once, and
// the FLOPs they finish a second add up. `mpx-cli bench` prints it beside its GFLOP/s (issue
// "Close to the cores' FP32 peak": assuming 32 FLOP a cycle halved the peak of a core with two
// AVX-512 FMA units).
#pragma once

#include <string>

namespace mpx {

struct FmaPeak {
    double gflops = 0.0;  // all threads together
    unsigned threads = 0;
    int lanes = 1;        // FP32 lanes a vector: 16 (AVX-512), 8 (AVX2 + FMA), 1 (scalar fmaf)
    std::string method;   // "AVX-512 FMA, 16 independent chains a thread, the best of 5 windows"
};

// Runs for about `seconds` on `threads` threads (at least one), in five windows; the best one counts.
FmaPeak measure_fma_peak(unsigned threads, double seconds = 0.2);

}  // namespace mpx
