#include "engine/compute/overflow_verdict.hpp"

#include "engine/compute/site_names.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {

std::string step_ranges(const std::vector<long long>& steps, std::size_t max_ranges) {
    std::string out;
    std::size_t ranges = 0, i = 0;
    for (; i < steps.size() && ranges < max_ranges; ++ranges) {
        std::size_t j = i;
        while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += std::to_string(steps[i]) + (j > i ? "-" + std::to_string(steps[j]) : "");
        i = j + 1;
    }
    if (i < steps.size()) out += " and " + std::to_string(steps.size() - i) + " more";
    return out;
}

bool forward_site(int site) {
    return site >= 0 && pass_of(static_cast<TensorKind>(site % k_tensor_kinds)) == Pass::forward;
}

std::string forward_overflow_cure(int site, const ModelConfig& m) {
    const std::string plain = "run this layer in FP32 or train in BF16";
    if (m.kind != ModelKind::gpt || site < 0) return plain;
    const int layer = site / k_tensor_kinds;
    const auto k = static_cast<TensorKind>(site % k_tensor_kinds);
    // The attention layer of block b is layer 1 + 5·b + 1 (embed, then qkv, attn, proj, fc, mlp_proj).
    const bool attention = layer >= 1 && layer < gpt_lm_head_layer(m.gpt) && (layer - 1) % 5 == 1;
    if (attention && (k == TensorKind::operand || k == TensorKind::output))
        return "apply 1/√d before q·kᵀ (attention.scale = before or split) or normalise q and k "
               "(attention.qk_norm), or " + plain;
    return plain;
}

std::string forward_overflow_verdict(const std::string& site, const std::vector<long long>& poisoned,
                                     long long of_steps, const std::string& detail, const std::string& cure) {
    return "forward overflow at " + site + " from step " + std::to_string(poisoned.front()) + " (" +
           std::to_string(poisoned.size()) + " of " + std::to_string(of_steps) +
           " steps poisoned the loss or gradients: " + step_ranges(poisoned) + detail + "): no loss scale avoids it; " +
           cure;
}

std::string run_forward_verdict(const std::vector<long long>& steps, const std::vector<int>& first_sites,
                                long long of_steps, const ModelConfig& m) {
    std::vector<long long> poisoned;
    int first = -1;
    for (std::size_t k = 0; k < steps.size() && k < first_sites.size(); ++k)
        if (forward_site(first_sites[k])) {
            if (first < 0) first = first_sites[k];
            poisoned.push_back(steps[k]);
        }
    if (poisoned.empty()) return {};
    return forward_overflow_verdict(site_label(first, m), poisoned, of_steps, "", forward_overflow_cure(first, m));
}

}  // namespace mpx
