// The CUDA backend: the engine's Backend on one GPU (cuBLASLt GEMMs, kernels in kernels.cu).
// Rule: every op computes what engine/compute/cpu_backend.cpp computes, with the same engine/core/op_math.hpp
// functions at the same rounding points, and adds the same counts to the step record, which stays
// on the device until read_stats(); it throws DeviceError (with what to do) when the device fails.
// The class is plain C++ behind a pimpl, so this header needs neither nvcc nor the CUDA headers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/compute/backend.hpp"

namespace mpx::cuda {

// How the backend runs a step. graphs: capture each training step (after two plain ones) into a
// CUDA graph and launch it whole; off by default until its speed is measured on a GPU
// (mpx-cuda-check measures both, docs/gpu.md).
struct CudaOptions {
    bool graphs = false;
};

class CudaBackend final : public Backend {
public:
    // Throws DeviceError when the device is missing, unusable, or has no code in this build.
    explicit CudaBackend(int device = 0, CudaOptions options = {});
    ~CudaBackend() override;

    std::string name() const override;  // the GPU's name, e.g. "NVIDIA H100 80GB HBM3"
    bool is_gpu() const override { return true; }

    // The device's own figures, shown beside the engine's per-category totals.
    std::size_t device_free_bytes() const;
    std::size_t device_total_bytes() const;
    int compute_capability() const;  // 90 for 9.0
    // How many times this backend has waited for the device (read_stats, download, accuracy):
    // mpx-cuda-check reports it per training step.
    long long host_syncs() const;
    // With CudaOptions::graphs: the steps launched as graphs, and how many graphs were
    // instantiated (the rest updated in place).
    long long graph_launches() const;
    long long graph_instantiations() const;
    // Throws DeviceError when this GPU cannot compute in `f` (BF16 needs compute capability 8.0).
    void require_format_support(Format f) const;

    void begin_step() override;
    void end_step() override;
    void abort_step() noexcept override;
    const StepStats& read_stats() override;
    bool holds_two_steps() const override;  // yes, unless it captures CUDA graphs
    const StepStats& read_previous_stats() override;
    void collect_histograms(int layers) override;
    const StepHistograms* read_histograms() override;

    void upload(std::span<const float> src, Tensor& dst) override;
    void download(const Tensor& src, std::span<float> dst) override;
    void copy(const Tensor& src, Tensor& dst) override;
    void fill(Tensor& dst, float value) override;
    void linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                        Tensor& y) override;
    void linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                               Tensor& dx) override;
    void linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                Format round_through, Tensor& dw, Tensor* db,
                                Accumulate acc) override;
    void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                         Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                         Tensor* dx) override;
    void activation_forward(Activation a, const Tensor& z, Tensor& h) override;
    void activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) override;
    void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                           Tensor& mean, Tensor& rstd) override;
    void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                            const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                            Tensor& dbeta, Accumulate acc) override;
    void dropout(Tensor& h, float p, std::uint64_t seed) override;
    void softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, ScaleBy scale,
                               Tensor& dlogits) override;
    void mse(const Tensor& pred, const Tensor& target, ScaleBy scale, Tensor& dpred) override;
    double accuracy(const Tensor& logits, std::span<const int> labels) override;
    void set_scaler(const ScalerRule& rule, const ScalerState& state) override;
    void scaler_update() override;
    void set_bias_corrections(std::span<const core::BiasCorrection> table) override;
    void set_applied_steps(long long n) override;
    void count_applied_step(OnInf on_inf) override;
    void set_amax_histories(std::span<const core::AmaxHistoryState> states,
                            std::span<const float> hist) override;
    void update_amax_histories() override;
    void read_amax_histories(std::vector<core::AmaxHistoryState>& states, std::vector<float>& hist) override;
    void set_lr_schedule(std::span<const float> lrs) override;
    void set_schedule_steps(long long n) override;
    void count_schedule_step(OnInf on_inf, bool advance_on_skip) override;
    void unscale_and_check(const Tensor& grad, ScaleBy inv_scale, Tensor& unscaled) override;
    void scale(Tensor& t, float factor) override;
    void clip_to_norm(Tensor& t, double max_norm) override;
    void optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                          Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf,
                          Tensor* compensation = nullptr, int param = 0) override;
    void unscale_all(std::span<const ParamRef> ps, ScaleBy inv_scale) override;
    void clip_all(std::span<const ParamRef> ps, double max_norm) override;
    void optimizer_all(const OptimizerStep& s, std::span<const ParamRef> ps, OnInf on_inf) override;

protected:
    void* raw_alloc(std::size_t bytes) override;
    void raw_free(void* p) noexcept override;

public:
    struct Impl;

private:
    // The backward GEMMs that are given (dw with db, dx), on one cast of dy.
    void fp8_backward(const Tensor& dy, const Tensor* x, const Tensor* w, Format round_through,
                      Tensor* dw, Tensor* db, Accumulate acc, Tensor* dx);
    void linear_backward_parts(const Tensor& dy, const Tensor* x, const Tensor* w, Format compute,
                               Format round_through, Tensor* dw, Tensor* db, Accumulate acc,
                               Tensor* dx);
    std::unique_ptr<Impl> m;
};

// The backend for `device`, or DeviceError saying why not (no driver, no device, no code for its
// architecture) and to use the CPU backend instead.
std::unique_ptr<Backend> make_cuda_backend(int device = 0, CudaOptions options = {});

}  // namespace mpx::cuda
