// A matrix quantized to NVFP4 or MXFP4 (engine/core/fp4.hpp) the way Transformer Engine's reference
// does it: what `mpx-cli quantize` writes, and what an outside oracle checks (tests/fp4/).
// Rule: blocks run along rows (a row is the GEMM's reduction dimension); a matrix whose sizes are
// not multiples of the block is zero-padded to them, as TE's reference pads, and cut back after.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/fp4.hpp"
#include "engine/precision/accumulation.hpp"

namespace mpx {

enum class Fp4Kind : std::uint8_t { nvfp4, mxfp4 };
constexpr EnumName<Fp4Kind> fp4_kind_names[] = {{Fp4Kind::nvfp4, "nvfp4"}, {Fp4Kind::mxfp4, "mxfp4"}};
constexpr std::span<const EnumName<Fp4Kind>> names_of(Fp4Kind) { return fp4_kind_names; }
namespace core {  // beside the enum, where argument-dependent lookup finds it
constexpr EnumName<MxScaleRule> mx_scale_rule_names[] = {
    {MxScaleRule::floor, "floor"}, {MxScaleRule::ceil, "ceil"}, {MxScaleRule::rceil, "rceil"}, {MxScaleRule::even, "even"}};
constexpr std::span<const EnumName<MxScaleRule>> names_of(MxScaleRule) { return mx_scale_rule_names; }
}  // namespace core

struct Fp4Options {
    Fp4Kind kind = Fp4Kind::nvfp4;
    bool two_d = false;  // NVFP4: one scale per 16×16 tile (weights), else per 1×16
    bool rht = false;    // NVFP4: the 16-point random Hadamard transform of each block first (Wgrad inputs)
    // Stochastic rounding of the elements from the stream of core::round_key(seed, 0, 0), word i for
    // element i (row-major over the padded matrix); none: round to nearest even.
    std::optional<std::uint64_t> sr_seed;
    core::MxScaleRule mx_rule = core::MxScaleRule::rceil;  // MXFP4; RCEIL: NVIDIA's recommendation
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

// TE's RHT matrix: T[k][j] = s[k] · H16[k][j] / 4, s TE's fixed sign vector (get_wgrad_sign_vector).
float rht_entry(int k, int j);
// Each consecutive 16 of each row (zero-padded) times T, summed in k order in FP32 (each product is
// exact: T's entries are ±1/4): y_j = Σ_k x_k · T[k][j]. Returns the padded (rows, ⌈cols/16⌉·16).
FloatMatrix rht_rows(const FloatMatrix& x);

// ConfigError naming the option for a combination the format does not have (--2d or --rht on
// MXFP4) and for an empty matrix.
Fp4Matrix quantize_fp4(const FloatMatrix& x, const Fp4Options& o);

}  // namespace mpx
