// Site names: the layer's name ("fc2", "block0.attn") + "." + the tensor kind's name.
#include "engine/compute/site_names.hpp"

#include <cstdio>

namespace mpx {

std::string site_name(int index) {
    return "fc" + std::to_string(index / k_tensor_kinds + 1) + "." +
           to_string(static_cast<TensorKind>(index % k_tensor_kinds));
}

std::string site_name(int index, const ModelConfig& m) {
    return layer_name(m, index / k_tensor_kinds) + "." + to_string(static_cast<TensorKind>(index % k_tensor_kinds));
}

std::string first_nonfinite_text(int site, std::optional<double> magnitude) {
    return first_nonfinite_text(site, magnitude, ModelConfig{});
}

std::string first_nonfinite_text(int site, std::optional<double> magnitude, const ModelConfig& m) {
    if (site < 0) return {};
    std::string t = site_name(site, m);
    if (magnitude) {
        char buf[48];
        std::snprintf(buf, sizeof buf, ", where %.6g overflowed", *magnitude);
        t += buf;
    }
    return t;
}

}  // namespace mpx
