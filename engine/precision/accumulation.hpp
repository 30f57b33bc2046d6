// A GEMM under an accumulation model (engine/core/accumulate.hpp) on the host, its FP64 reference
// and the error between them: what `mpx-cli gemm` and `mpx-cli gemm-error` run.
// Rule: both GEMMs round the operands to the format first, so the error measured between them is
// the accumulation's alone, never the operands' rounding.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/accumulate.hpp"
#include "engine/precision/format.hpp"

namespace mpx {

constexpr EnumName<AccumulateModel> accumulate_model_names[] = {
    {AccumulateModel::exact, "exact"},
    {AccumulateModel::fp8_fast, "fp8-fast"},
    {AccumulateModel::promote, "promote"},
    {AccumulateModel::bits, "bits"}};
constexpr std::span<const EnumName<AccumulateModel>> names_of(AccumulateModel) { return accumulate_model_names; }
inline std::string_view to_string(AccumulateModel m) { return enum_name(m); }

// The model a name gives; a ConfigError naming `field` and the choices for any other name.
AccumulateModel parse_accumulate_model(std::string_view name, const std::string& field = "--accumulate");
// ConfigError naming the flag for a value the model cannot take: --bits outside 1–24, --promote-every
// below 1, a group outside 1–64 (the ranges engine/core/accumulate.hpp's exactness argument needs).
void validate(const AccumulateParams& p);

// A dense row-major matrix of floats.
struct FloatMatrix {
    int rows = 0, cols = 0;
    std::vector<float> values;  // (rows, cols), row-major
};

// C = A·B with A (m, k), B (k, n), C (m, n), every element core::accumulate_dot under p over A's and
// B's values rounded to `operands` (their format's default overflow rule). Rows of C spread over the
// engine's threads; each element is one sequential dot product, so the bits do not depend on the
// thread count. ConfigError when A's columns are not B's rows.
FloatMatrix gemm_under_model(const FloatMatrix& a, const FloatMatrix& b, Format operands,
                             const AccumulateParams& p);
// The same product in FP64 over the same rounded operands: (m, n), row-major. Products are exact in
// double; the sums round at 2^-53 (exact for FP8 operands and k up to 2^20: the terms share a
// 2^-32 grid below 2^52), far below any model's error.
std::vector<double> gemm_reference(const FloatMatrix& a, const FloatMatrix& b, Format operands);

// Element-wise |c − ref| / |ref| (0 where c equals ref, inf where only ref is 0, NaN where either is
// NaN): its maximum over all elements (what DeepSeek-V3 §3.3.2 calls the maximum relative error of a
// GEMM) and its mean. c and reference have the same size.
struct RelativeError {
    double max = 0.0, mean = 0.0;
};
RelativeError relative_error(std::span<const float> c, std::span<const double> reference);

}  // namespace mpx
