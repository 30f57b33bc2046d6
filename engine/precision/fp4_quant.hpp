// A matrix quantized to NVFP4 or MXFP4 the way Transformer Engine's reference does it: what
// `mpx-cli quantize` writes, and what an outside oracle checks (tests/fp4/). It pads and transforms
// the matrix and hands it to fp4_cast_in_place, the path training's GEMM operands take.
// Rule: blocks run along rows (a row is the GEMM's reduction dimension); a matrix whose sizes are
// not multiples of the block is zero-padded to them, as TE's reference pads, and cut back after.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/precision/accumulation.hpp"
#include "engine/precision/fp4_cast.hpp"

namespace mpx {

struct Fp4Options {
    Fp4Kind kind = Fp4Kind::nvfp4;
    bool two_d = false;  // NVFP4: one scale per 16×16 tile (weights), else per 1×16
    bool rht = false;    // NVFP4: the 16-point random Hadamard transform of each block first (Wgrad inputs)
    // Stochastic rounding of the elements from the stream of core::round_key(seed, 0, 0), word i for
    // element i (row-major over the padded matrix); none: round to nearest even.
    std::optional<std::uint64_t> sr_seed;
    core::MxScaleRule mx_rule = core::MxScaleRule::rceil;  // MXFP4; RCEIL: NVIDIA's recommendation
    bool four_over_six = false;                             // NVFP4: Fp4Cast::four_over_six
    Fp4Metric metric = Fp4Metric::mse;
};

struct Fp4Matrix {
    int rows = 0, cols = 0;
    std::vector<std::uint8_t> codes;  // (rows, cols) E2M1 codes, one a byte here (storage packs two)
    std::vector<float> values;        // (rows, cols) what each element decodes to
    int scale_rows = 0, scale_cols = 0;
    std::vector<float> scales;        // (scale_rows, scale_cols) block scales as floats (E4M3 or 2^e)
    float s_dec = 1.0f;               // NVFP4's global decode scale (MXFP4: 1)
    float amax = 0.0f;                // NVFP4: the (transformed) tensor's amax the global scale came from
};

// Each consecutive 16 of each row (zero-padded) times T (rht_in_place). Returns the padded
// (rows, ⌈cols/16⌉·16).
FloatMatrix rht_rows(const FloatMatrix& x);

// ConfigError naming the option for a combination the format does not have (--2d, --rht or 4over6
// on MXFP4) and for an empty matrix.
Fp4Matrix quantize_fp4(const FloatMatrix& x, const Fp4Options& o);

}  // namespace mpx
