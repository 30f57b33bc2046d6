// Launchers of the CUDA backend's kernels (defined in kernels.cu). Rule: plain C++ (g++ compiles
// the backend against this header); every launcher is asynchronous on `stream`, checks the launch,
// and adds what its rounding did to `counts` (device memory; nullptr where the CPU discards the
// stats). Buffers are row-major; shapes are in the comments. Formats are runtime values here and
// one switch inside each element access (uniform across a warp, so it does not diverge).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernel_math.cuh"

namespace mpx::cuda {

using dev::Act;
using dev::Counts;
using dev::OptConsts;

// Launches a do-nothing kernel and returns the launch status: cudaErrorNoKernelImageForDevice when
// this build has no code for the device's architecture.
cudaError_t probe_kernel_image(cudaStream_t stream);

// dst (n) = src (n) FP32 rounded into f.
void encode(const float* src, Format f, void* dst, std::size_t n, Counts* counts,
            cudaStream_t stream);
// dst (n) FP32 = src (n) decoded from f.
void decode(const void* src, Format f, float* dst, std::size_t n, cudaStream_t stream);
// dst (n) in df = src (n) in sf, first rounded to `round_to` (fp32: no extra rounding). Copies
// between formats and the casts of GEMM operands into their compute format.
void convert(const void* src, Format sf, Format round_to, void* dst, Format df, std::size_t n,
             Counts* counts, cudaStream_t stream);
void fill(void* dst, Format f, float value, std::size_t n, cudaStream_t stream);
// t (n) *= factor, rounded back into f (uncounted, as the CPU's scale).
void scale(void* t, Format f, float factor, std::size_t n, cudaStream_t stream);

// y (rows, cols) = acc (rows, cols) FP32 + bias (cols) in bf (bias may be nullptr), rounded into
// yf.
void bias_store(const float* acc, const void* bias, Format bf, void* y, Format yf, int rows,
                int cols, Counts* counts, cudaStream_t stream);
// dst (n) (+)= values (n) rounded through `through` (dev::accumulate_element).
void accumulate(const float* values, Format through, bool add, void* dst, Format df, std::size_t n,
                Counts* counts, cudaStream_t stream);
// out (cols) FP32 = column sums of src (rows, cols) in f, in the CPU's order (dev::column_sum).
void column_sums(const void* src, Format f, int rows, int cols, int pairwise_cols, float* out,
                 cudaStream_t stream);

// h (n) = act(z (n))
void activation_forward(Act a, const void* z, Format zf, void* h, Format hf, std::size_t n,
                        Counts* counts, cudaStream_t stream);
// dz (n) = dh (n) ⊙ act'(z (n))
void activation_backward(Act a, const void* z, Format zf, const void* dh, Format dhf, void* dz,
                         Format dzf, std::size_t n, Counts* counts, cudaStream_t stream);

// y (rows, D) = layernorm(x (rows, D)); gamma, beta (1, D); mean, rstd (rows) FP32.
void layernorm_forward(const void* x, Format xf, const void* gamma, Format gf, const void* beta,
                       Format bf, void* y, Format yf, float* mean, float* rstd, int rows, int D,
                       Counts* counts, cudaStream_t stream);
// dx (rows, D) rounded into dxf (counted); dgamma, dbeta (D) FP32 sums for the caller to
// accumulate; row_sums (2·rows) FP32 scratch.
void layernorm_backward(const void* x, Format xf, const void* gamma, Format gf, const float* mean,
                        const float* rstd, const void* dy, Format dyf, void* dx, Format dxf,
                        float* dgamma, float* dbeta, float* row_sums, int rows, int D,
                        Counts* counts, cudaStream_t stream);

// h (n) = mask ⊙ h · keep, mask from hash_uniform(seed, i).
void dropout(void* h, Format f, float p, float keep, std::uint64_t seed, std::size_t n,
             Counts* counts, cudaStream_t stream);

// logits, dlogits (rows, C); labels (rows) on the device; row_loss (rows) FP32.
void softmax_xent(const void* logits, Format lf, const int* labels, int rows, int C, float inv_b,
                  float scale, float* row_loss, void* dlogits, Format df, Counts* counts,
                  cudaStream_t stream);
// pred, target, dpred (n); squared (n) FP32 for the caller's double sum.
void mse(const void* pred, Format pf, const void* target, Format tf, std::size_t n, float scale,
         float* squared, void* dpred, Format df, Counts* counts, cudaStream_t stream);
// counts->hits += rows whose argmax equals the label.
void accuracy(const void* logits, Format lf, const int* labels, int rows, int C, Counts* counts,
              cudaStream_t stream);

// out (n) FP32 = grad (n) · inv_scale; counts->bad += non-finite values; block_sums (blocks) gets
// one double sum of squares per block (summed on the host in block order: deterministic).
int unscale_blocks(std::size_t n);
void unscale_check(const void* grad, Format gf, float inv_scale, float* out, std::size_t n,
                   double* block_sums, Counts* counts, cudaStream_t stream);

// One optimizer step over n weights: master (FP32, nullable), working copy in wf, FP32 states
// (state2 nullable for SGD), grad in gf.
void optimizer_update(const OptConsts& s, const void* grad, Format gf, float* master, void* working,
                      Format wf, float* state1, float* state2, std::size_t n, Counts* counts,
                      cudaStream_t stream);

}  // namespace mpx::cuda
