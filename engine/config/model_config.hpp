// The model's settings as plain data: layer sizes, activation, LayerNorm, dropout, recomputation.
// Rule: no Eigen and no Backend here; the MLP itself lives in engine/model/model.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/op_math.hpp"

namespace mpx {

struct ModelConfig {
    std::vector<int> sizes{2, 64, 64, 2};  // input, hidden..., output
    Activation activation = Activation::relu;
    bool layernorm = false;
    float dropout = 0.0f;
    bool recompute = false;                // activation recomputation (gradient checkpointing)
    bool keep_output_fp32 = false;
    int layers() const { return static_cast<int>(sizes.size()) - 1; }
};
void validate(const ModelConfig& m);
// "2-64-64-2" ↔ {2, 64, 64, 2}
std::vector<int> parse_model_sizes(std::string_view text, const std::string& field);
std::string model_sizes_text(const std::vector<int>& sizes);

// The linear layers' floating-point operations in one training step over `examples` examples, two
// per multiply-add: every layer's forward GEMM and weight-gradient GEMM, and the input-gradient GEMM
// of every layer but the first (nothing needs the data's gradient). Recomputation's second forward
// pass and the element-wise ops are not counted: this is the work a GEMM rate is measured against.
double gemm_flops_per_step(const ModelConfig& m, long long examples);

}  // namespace mpx
