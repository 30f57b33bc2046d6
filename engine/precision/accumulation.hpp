// A GEMM under an accumulation model (engine/core/accumulate.hpp) on the host, its FP64 reference
// and the error between them: what `mpx-cli gemm`, `mpx-cli gemm-error` and the app's accumulator
// lab run.
// Rule: both GEMMs round the operands to the format first, so the error measured between them is
// the accumulation's alone, never the operands' rounding.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/accumulate.hpp"
#include "engine/core/rng.hpp"
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

// ---- the random-matrix experiment (`mpx-cli gemm-error`, the accumulator lab) -------------------

// (rows, cols) uniform in [0, 1), row-major, drawn in order from rng: every product positive, so no
// element of C is near zero by cancellation and a relative error means what it says (DeepSeek-V3
// §3.3.2 does not say its distribution).
FloatMatrix random_uniform_matrix(Rng& rng, int rows, int cols);

// One point of the experiment: A (m, k) and then B (k, n) drawn from Rng::derive(seed, k), one
// stream per K, so adding a K to a list leaves the other points' matrices as they were. The FP64
// reference is computed once per operand format, so several models at one K share it. Not
// thread-safe (the cache); one per thread. ConfigError for m, n or k below 1.
class RandomGemm {
public:
    RandomGemm(std::uint64_t seed, int m, int n, int k);
    const FloatMatrix& a() const { return m_a; }  // (m, k)
    const FloatMatrix& b() const { return m_b; }  // (k, n)
    // gemm_reference(a, b, f), computed on first use: (m, n).
    const std::vector<double>& reference(Format f);
    // relative_error(gemm_under_model(a, b, f, p), reference(f)); ConfigError from validate(p).
    RelativeError error(Format f, const AccumulateParams& p);

private:
    FloatMatrix m_a, m_b;
    std::array<std::vector<double>, std::size(all_formats)> m_reference;  // empty until used
};

// RandomGemm(seed, m, n, k).error(f, p): the number `mpx-cli gemm-error` prints for that point.
RelativeError gemm_error_at(std::uint64_t seed, int m, int n, int k, Format f, const AccumulateParams& p);

}  // namespace mpx
