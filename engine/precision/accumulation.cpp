// GEMMs under an accumulation model and in FP64, and the error between them
// (engine/precision/accumulation.hpp).
#include "engine/precision/accumulation.hpp"

#include <cmath>
#include <cstddef>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"

namespace mpx {

AccumulateModel parse_accumulate_model(std::string_view name, const std::string& field) {
    if (const auto m = enum_parse<AccumulateModel>(name)) return *m;
    throw ConfigError(field, "unknown accumulation model '" + std::string(name) + "'; choose " +
                                 enum_choices<AccumulateModel>());
}

void validate(const AccumulateParams& p) {
    if (p.bits < 1 || p.bits > k_max_accumulate_bits)
        throw ConfigError("--bits", "must be between 1 and " + std::to_string(k_max_accumulate_bits) +
                                        " (got " + std::to_string(p.bits) +
                                        "); DeepSeek-V3 reports 14 for H800's FP8 accumulation");
    if (p.promote_every < 1)
        throw ConfigError("--promote-every", "must be at least 1 product (got " + std::to_string(p.promote_every) +
                                                 "); DeepSeek-V3 promotes every 128");
    if (p.group < 1 || p.group > k_max_accumulate_group)
        throw ConfigError("group", "must be between 1 and " + std::to_string(k_max_accumulate_group) +
                                       " products (got " + std::to_string(p.group) + ")");
}

namespace {

FloatMatrix rounded(const FloatMatrix& m, Format f) {
    FloatMatrix r = m;
    round_in_place(f, r.values);
    return r;
}

void check_shapes(const FloatMatrix& a, const FloatMatrix& b) {
    if (a.cols != b.rows)
        throw ConfigError("", "A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " and B is " +
                                  std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                                  ": A's columns must equal B's rows");
}

// B's columns as rows (n, k), so that every dot product reads both operands contiguously.
FloatMatrix transposed(const FloatMatrix& b) {
    FloatMatrix t{b.cols, b.rows, std::vector<float>(b.values.size())};
    for (int r = 0; r < b.rows; ++r)
        for (int c = 0; c < b.cols; ++c)
            t.values[static_cast<std::size_t>(c) * b.rows + r] = b.values[static_cast<std::size_t>(r) * b.cols + c];
    return t;
}

}  // namespace

FloatMatrix gemm_under_model(const FloatMatrix& a, const FloatMatrix& b, Format operands,
                             const AccumulateParams& p) {
    validate(p);
    check_shapes(a, b);
    const FloatMatrix ar = rounded(a, operands), bt = transposed(rounded(b, operands));
    const int k = a.cols;
    FloatMatrix c{a.rows, b.cols, std::vector<float>(static_cast<std::size_t>(a.rows) * b.cols)};
    parallel_for(static_cast<std::size_t>(a.rows), [&](std::size_t i) {
        const float* row = ar.values.data() + i * k;
        for (int j = 0; j < c.cols; ++j)
            c.values[i * c.cols + j] =
                core::accumulate_dot(p, k, row, 1, bt.values.data() + static_cast<std::size_t>(j) * k, 1);
    });
    return c;
}

std::vector<double> gemm_reference(const FloatMatrix& a, const FloatMatrix& b, Format operands) {
    check_shapes(a, b);
    const FloatMatrix ar = rounded(a, operands), bt = transposed(rounded(b, operands));
    const std::size_t k = static_cast<std::size_t>(a.cols), n = static_cast<std::size_t>(b.cols);
    std::vector<double> c(static_cast<std::size_t>(a.rows) * n);
    parallel_for(static_cast<std::size_t>(a.rows), [&](std::size_t i) {
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (std::size_t t = 0; t < k; ++t)
                s += static_cast<double>(ar.values[i * k + t]) * static_cast<double>(bt.values[j * k + t]);
            c[i * n + j] = s;
        }
    });
    return c;
}

RelativeError relative_error(std::span<const float> c, std::span<const double> reference) {
    RelativeError e;
    if (c.empty()) return e;
    double sum = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const double v = c[i], r = reference[i];
        const double err = v == r ? 0.0 : std::fabs(v - r) / std::fabs(r);
        e.max = std::isnan(err) || std::isnan(e.max) ? NAN : std::fmax(e.max, err);
        sum += err;
    }
    e.mean = sum / static_cast<double>(c.size());
    return e;
}

FloatMatrix random_uniform_matrix(Rng& rng, int rows, int cols) {
    FloatMatrix m{rows, cols, std::vector<float>(static_cast<std::size_t>(rows) * cols)};
    for (float& v : m.values) v = static_cast<float>(rng.uniform());
    return m;
}

namespace {

int checked_dimension(int v, const char* name) {
    if (v < 1) throw ConfigError(name, "must be at least 1 (got " + std::to_string(v) + ")");
    return v;
}

}  // namespace

RandomGemm::RandomGemm(std::uint64_t seed, int m, int n, int k) {
    checked_dimension(m, "m");
    checked_dimension(n, "n");
    checked_dimension(k, "k");
    Rng rng = Rng::derive(seed, static_cast<std::uint64_t>(k));
    m_a = random_uniform_matrix(rng, m, k);  // A first, then B: the order is part of the definition
    m_b = random_uniform_matrix(rng, k, n);
}

const std::vector<double>& RandomGemm::reference(Format f) {
    std::vector<double>& r = m_reference[static_cast<std::size_t>(f)];
    if (r.empty()) r = gemm_reference(m_a, m_b, f);
    return r;
}

RelativeError RandomGemm::error(Format f, const AccumulateParams& p) {
    const FloatMatrix c = gemm_under_model(m_a, m_b, f, p);
    return relative_error(c.values, reference(f));
}

RelativeError gemm_error_at(std::uint64_t seed, int m, int n, int k, Format f, const AccumulateParams& p) {
    return RandomGemm(seed, m, n, k).error(f, p);
}

}  // namespace mpx
