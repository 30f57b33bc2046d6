// The model's settings: validation and the "2-64-64-2" text of its sizes.
#include "engine/config/model_config.hpp"

#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "engine/base/error.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {

void validate(const ModelConfig& m) {
    if (m.sizes.size() < 2)
        throw ConfigError("model.sizes", "needs at least an input and an output size, e.g. 2-64-2");
    if (m.layers() > k_max_layers)
        throw ConfigError("model.sizes", "at most " + std::to_string(k_max_layers) + " layers (got " +
                                             std::to_string(m.layers()) + ")");
    std::int64_t params = 0;
    for (std::size_t i = 0; i < m.sizes.size(); ++i) {
        if (m.sizes[i] < 1 || m.sizes[i] > 65536)
            throw ConfigError("model.sizes", "every layer size must be between 1 and 65536 (got " +
                                                 std::to_string(m.sizes[i]) + ")");
        if (i > 0) params += static_cast<std::int64_t>(m.sizes[i - 1]) * m.sizes[i];
    }
    if (params > 400'000'000)
        throw ConfigError("model.sizes", "the model has " + std::to_string(params) +
                                             " weights; keep it under 400 million");
    if (!(m.dropout >= 0.0f && m.dropout < 1.0f))
        throw ConfigError("model.dropout", "must be in [0, 1)");
}

std::vector<int> parse_model_sizes(std::string_view text, const std::string& field) {
    std::vector<int> out;
    // getline drops a trailing empty part: "2-64-2-" must not read as 2-64-2.
    if (text.empty() || text.back() == '-')
        throw ConfigError(field, "'" + std::string(text) + "' is not a list of layer sizes like 2-64-64-2");
    std::stringstream ss{std::string(text)};
    std::string part;
    while (std::getline(ss, part, '-')) {
        try {
            std::size_t used = 0;
            const int v = std::stoi(part, &used);
            if (used != part.size()) throw std::invalid_argument(part);
            out.push_back(v);
        } catch (const std::exception&) {
            throw ConfigError(field, "'" + std::string(text) +
                                         "' is not a list of layer sizes like 2-64-64-2");
        }
    }
    return out;
}

std::string model_sizes_text(const std::vector<int>& sizes) {
    std::string s;
    for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? "-" : "") + std::to_string(sizes[i]);
    return s;
}

double gemm_flops_per_step(const ModelConfig& m, long long examples) {
    double flops = 0.0;
    for (std::size_t i = 0; i + 1 < m.sizes.size(); ++i) {
        const double one_gemm = 2.0 * static_cast<double>(examples) * m.sizes[i] * m.sizes[i + 1];
        flops += (i == 0 ? 2.0 : 3.0) * one_gemm;
    }
    return flops;
}

}  // namespace mpx
