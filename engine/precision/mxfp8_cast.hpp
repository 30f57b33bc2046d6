// MXFP8 on the CPU: a row-major matrix cast in place into E4M3 blocks of core::k_mx_block values
// along each row or down each column (the GEMM's reduction dimension), each element as
// core::mx_element computes it (× 2^-e with e the block's shared exponent, rounded into E4M3
// saturating, × 2^e) and counted as core::tally counts it (input x · 2^-e, output its E4M3 value).
// Rule: equal bit for bit, counts included, to core::mx_element block by block (tests/test_fp8.cpp).
#pragma once

#include <cstdint>

#include "engine/core/format_core.hpp"

namespace mpx {

// Blocks along each row (an operand whose columns are reduced) or down each column (rows reduced).
enum class MxAxis : std::uint8_t { rows, cols };

// Returns the matrix's amax before the cast (core::amax_of: NaN counts as 0), which the block
// exponents' pass finds on the way.
float mx_cast_in_place(float* v, int rows, int cols, MxAxis axis, core::Counts& counts);

}  // namespace mpx
