// The CUDA backend: the engine's Backend on one GPU (cuBLASLt GEMMs, kernels in kernels.cu).
// Rule: every op computes what engine/cpu_backend.cpp computes, at the same rounding points, and
// returns the same RoundStats; it throws DeviceError (with what to do) when the device fails. The
// class is plain C++ behind a pimpl, so this header needs neither nvcc nor the CUDA headers; its
// inline helpers are the host halves of ops, shared with tests/test_cuda_backend.cpp.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>

#include "cuda/kernel_math.cuh"
#include "engine/backend.hpp"

namespace mpx::cuda {

class CudaBackend final : public Backend {
public:
    // Throws DeviceError when the device is missing, unusable, or has no code in this build.
    explicit CudaBackend(int device = 0);
    ~CudaBackend() override;

    std::string name() const override;  // the GPU's name, e.g. "NVIDIA H100 80GB HBM3"
    bool is_gpu() const override { return true; }

    // The device's own figures, shown beside the engine's per-category totals.
    std::size_t device_free_bytes() const;
    std::size_t device_total_bytes() const;
    int compute_capability() const;  // 90 for 9.0
    // Throws DeviceError when this GPU cannot compute in `f` (BF16 needs compute capability 8.0).
    void require_format_support(Format f) const;

    RoundStats upload(std::span<const float> src, Tensor& dst) override;
    void download(const Tensor& src, std::span<float> dst) override;
    void copy(const Tensor& src, Tensor& dst) override;
    void fill(Tensor& dst, float value) override;
    RoundStats linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                              Tensor& y) override;
    RoundStats linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                                     Tensor& dx) override;
    RoundStats linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                      Format round_through, Tensor& dw, Tensor* db,
                                      Accumulate acc) override;
    RoundStats activation_forward(Activation a, const Tensor& z, Tensor& h) override;
    RoundStats activation_backward(Activation a, const Tensor& z, const Tensor& dh,
                                   Tensor& dz) override;
    RoundStats layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 Tensor& y, Tensor& mean, Tensor& rstd) override;
    RoundStats layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                  Tensor& dbeta, Accumulate acc) override;
    RoundStats dropout(Tensor& h, float p, std::uint64_t seed) override;
    LossResult softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, float scale,
                                     Tensor& dlogits) override;
    LossResult mse(const Tensor& pred, const Tensor& target, float scale, Tensor& dpred) override;
    double accuracy(const Tensor& logits, std::span<const int> labels) override;
    GradCheck unscale_and_check(const Tensor& grad, float inv_scale, Tensor& master_grad) override;
    void scale(Tensor& t, float factor) override;
    UpdateStats optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                                 Tensor& working, Tensor& state1, Tensor* state2) override;

protected:
    void* raw_alloc(std::size_t bytes) override;
    void raw_free(void* p) noexcept override;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

// The backend for `device`, or DeviceError saying why not (no driver, no device, no code for its
// architecture) and to use the CPU backend instead.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);

// The engine's activation as the kernels' enum.
inline dev::Act to_dev(Activation a) {
    switch (a) {
        case Activation::relu: return dev::Act::relu;
        case Activation::gelu: return dev::Act::gelu;
        case Activation::tanh: return dev::Act::tanh;
        case Activation::none: return dev::Act::none;
    }
    return dev::Act::none;
}

// The optimizer's per-step scalars, with the CPU backend's own expressions (std::pow on the host:
// the bias corrections are the CPU's bits, where CUDA's powf could differ by an ulp).
inline dev::OptConsts optimizer_consts(const OptimizerStep& s) {
    dev::OptConsts k;
    k.kind = s.kind == OptimizerKind::sgd    ? dev::Opt::sgd
             : s.kind == OptimizerKind::adam ? dev::Opt::adam
                                             : dev::Opt::adamw;
    k.lr = s.lr;
    k.momentum = s.momentum;
    k.beta1 = s.beta1;
    k.beta2 = s.beta2;
    k.eps = s.eps;
    k.weight_decay = s.weight_decay;
    if (s.kind != OptimizerKind::sgd) {
        const float bc1 = 1.0f - std::pow(s.beta1, static_cast<float>(s.t));
        const float bc2 = 1.0f - std::pow(s.beta2, static_cast<float>(s.t));
        k.step_size = s.lr / bc1;
        k.bc2_sqrt = std::sqrt(bc2);
    }
    return k;
}

// How many leading columns Eigen sums with its packet-wise order in `dy.colwise().sum()` (the CPU
// twin's bias gradient): whole packets of the float SIMD width this file is compiled for (the
// engine's -march), the rest row by row. Found by experiment on Eigen 3.4 (AVX2: 8); the tests
// hold the bias gradient against the CPU backend, so a different Eigen shows up there.
inline int eigen_pairwise_columns(int cols) {
    constexpr int packet = Eigen::internal::packet_traits<float>::Vectorizable
                               ? Eigen::internal::packet_traits<float>::size
                               : 0;
    return packet > 1 ? cols / packet * packet : 0;
}

}  // namespace mpx::cuda
