// A row-major matrix cast in place into NVFP4 or MXFP4 (engine/core/fp4.hpp): the one CPU path
// that both training's GEMM operands and `mpx-cli quantize` take, so the outside oracle that checks
// `quantize` (tests/fp4/) checks training's casts too.
// Rule: blocks run along each row or down each column (the GEMM's reduction dimension); a block cut
// short by the matrix's edge is quantized as if zero-padded (TE's reference pads with zeros); every
// element's bits follow fp4.hpp's functions in Transformer Engine's order, and the stochastic words
// are round_word(key, i), i the element's row-major index: the result does not depend on the thread
// count.
#pragma once

#include <vector>

#include <cstdint>
#include <optional>
#include <span>

#include "engine/base/enum_names.hpp"
#include "engine/core/fp4.hpp"
#include "engine/core/format_core.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx {

enum class Fp4Kind : std::uint8_t { nvfp4, mxfp4 };
constexpr EnumName<Fp4Kind> fp4_kind_names[] = {{Fp4Kind::nvfp4, "nvfp4"}, {Fp4Kind::mxfp4, "mxfp4"}};
constexpr std::span<const EnumName<Fp4Kind>> names_of(Fp4Kind) { return fp4_kind_names; }
namespace core {  // beside the enum, where argument-dependent lookup finds it
constexpr EnumName<MxScaleRule> mx_scale_rule_names[] = {
    {MxScaleRule::floor, "floor"}, {MxScaleRule::ceil, "ceil"}, {MxScaleRule::rceil, "rceil"}, {MxScaleRule::even, "even"}};
constexpr std::span<const EnumName<MxScaleRule>> names_of(MxScaleRule) { return mx_scale_rule_names; }
}  // namespace core

// 4over6's measure of a block's error: the sum of |q − x| or of (q − x)², in double.
enum class Fp4Metric : std::uint8_t { mae, mse };
constexpr EnumName<Fp4Metric> fp4_metric_names[] = {{Fp4Metric::mae, "mae"}, {Fp4Metric::mse, "mse"}};
constexpr std::span<const EnumName<Fp4Metric>> names_of(Fp4Metric) { return fp4_metric_names; }

// How one tensor is cast.
struct Fp4Cast {
    Fp4Kind kind = Fp4Kind::nvfp4;
    bool two_d = false;  // NVFP4: one scale per 16×16 tile (weights), else per 1×16
    // Stochastic rounding of the elements with the words of this key (core::round_word); none: RNE.
    std::optional<std::uint64_t> sr_key;
    core::MxScaleRule mx_rule = core::MxScaleRule::rceil;
    // NVFP4 4over6: per block the better of amax → 6 and amax → 4 by `metric` (6 on a tie), and 256
    // instead of 448 as the E4M3 bound of the global scale, so the larger scale still fits.
    bool four_over_six = false;
    Fp4Metric metric = Fp4Metric::mse;
    int block() const { return kind == Fp4Kind::nvfp4 ? core::k_nvfp4_block : core::k_mxfp4_block; }
};

// What a cast did: the tensor's amax (NaN kept), NVFP4's global encode scale (MXFP4: 0); counts:
// overflow = elements whose scaled value passed ±6 and were clamped, underflow = non-zero elements
// that became ±0, nonzero; the FP4 record (codes, blocks, tops).
struct Fp4Tally {
    float amax = 0.0f;
    float s_enc = 0.0f;
    float s_dec = 1.0f;  // NVFP4's global decode scale (MXFP4: 1)
    core::Counts counts;
    core::Fp4Record record;
};

// Optional outputs for `quantize`: codes (rows × cols), and block scales as floats laid out as the
// blocks are (rows: rows × ⌈cols/block⌉, or ⌈rows/16⌉ × ⌈cols/16⌉ for 2D; cols: ⌈rows/block⌉ × cols).
struct Fp4Outputs {
    std::uint8_t* codes = nullptr;
    float* scales = nullptr;
};

// Working memory of the casts and the transform, held by a caller that casts every step (the CPU
// backend): it grows only when a larger shape arrives, so a step allocates nothing after the first
// whatever piece each thread takes. Without one, the functions use thread-local buffers, which grow
// the first time a thread meets a shape (the quantize tool).
struct Fp4Workspace {
    std::vector<float> f;
    std::vector<std::uint32_t> u;
};

// v (rows × cols) becomes what its quantization decodes to. Returns the tally.
Fp4Tally fp4_cast_in_place(float* v, int rows, int cols, MxAxis axis, const Fp4Cast& c, Fp4Outputs out = {},
                           Fp4Workspace* ws = nullptr);

// The 16-point random Hadamard transform of each 16 consecutive values along each row (axis rows)
// or down each column (cols), in place: y_j = Σ_k x_k · T[k][j] in k order in FP32, T = diag(s)·H16/4
// (TE's sign vector s). The length along the axis must be a multiple of 16.
void rht_in_place(float* v, int rows, int cols, MxAxis axis, Fp4Workspace* ws = nullptr);
// T[k][j] (exact: ±1/4).
float rht_entry(int k, int j);

}  // namespace mpx
