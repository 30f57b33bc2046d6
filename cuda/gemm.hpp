// FP32-accumulating GEMMs through cuBLASLt (cublasGemmEx where Lt's heuristic offers no algorithm).
// Rule: operands arrive already rounded to the compute format (the backend casts them first), so
// the library only has to multiply exactly and accumulate in FP32 — what the CPU twin emulates.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "cuda/device_buffer.hpp"
#include "engine/precision/format.hpp"

namespace mpx::cuda {

// The element type the operands are stored in for the library, and the compute type:
//   fp32: FP32 operands, CUBLAS_COMPUTE_32F (no TF32: cuBLASLt uses TF32 only when asked)
//   tf32: FP32 containers holding TF32 values (rounded by our cast kernel, ties to even), computed
//         with CUBLAS_COMPUTE_32F_FAST_TF32: the tensor cores' own FP32→TF32 conversion is then the
//         identity, so the operand rounding is exactly the CPU's, whatever the hardware's rounding
//   fp16: FP16 operands (FP8 E4M3/E5M2 and FP4 E2M1 values are exact in FP16, so they run here too)
//   bf16: BF16 operands
// FP16/BF16/TF32 products are exact in FP32; only the order and alignment of the FP32 accumulation
// differ from the CPU (REFERENCE.md, tensor-core note).
enum class GemmInput : std::uint8_t { fp32, tf32, fp16, bf16 };
GemmInput gemm_input(Format compute);
// The format the operands of `in` are stored in (TF32 values live in FP32 containers).
Format gemm_storage(GemmInput in);

class Gemm {
public:
    explicit Gemm(cudaStream_t stream);
    ~Gemm();
    Gemm(const Gemm&) = delete;
    Gemm& operator=(const Gemm&) = delete;

    // C (m, n) FP32 = op(A) · op(B), column-major with leading dimensions in elements (cuBLAS's
    // convention; the backend maps its row-major tensors onto it). op(A) is (m, k), op(B) (k, n).
    void run(GemmInput in, bool trans_a, bool trans_b, int m, int n, int k, const void* a, int lda,
             const void* b, int ldb, float* c, int ldc);

    // Shapes seen so far (each holds its descriptors and the heuristic's candidates).
    std::size_t cached_shapes() const { return m_plans.size(); }

private:
    // One shape's descriptors, the heuristic's best algorithms in order and the one that ran last
    // (-1: Lt has none that runs, the classic API does it). Made on a shape's first call.
    struct Plan;
    using Shape = std::tuple<GemmInput, bool, bool, int, int, int, int, int, int>;
    Plan& plan(const Shape& s);

    cudaStream_t m_stream;
    cublasLtHandle_t m_lt = nullptr;
    cublasHandle_t m_blas = nullptr;
    DeviceBuffer m_workspace;
    std::map<Shape, std::unique_ptr<Plan>> m_plans;
};

}  // namespace mpx::cuda
