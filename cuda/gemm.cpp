// cuBLASLt matmul with FP32 output and FP32 compute; descriptors are made per call (host-side,
// microseconds) and the heuristic is asked each time: caching both per shape is the next step.
#include "cuda/gemm.hpp"

#include "cuda/check.hpp"

namespace mpx::cuda {
namespace {

constexpr std::size_t k_workspace_bytes = 32u << 20;  // NVIDIA's suggestion for Hopper

// Owns one cuBLASLt descriptor.
template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
    T h = nullptr;
    LtHandle() = default;
    LtHandle(const LtHandle&) = delete;
    LtHandle& operator=(const LtHandle&) = delete;
    ~LtHandle() {
        if (h) Destroy(h);
    }
};
using OpDesc = LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

cudaDataType_t data_type(GemmInput in) {
    switch (in) {
        case GemmInput::fp16: return CUDA_R_16F;
        case GemmInput::bf16: return CUDA_R_16BF;
        case GemmInput::fp32:
        case GemmInput::tf32: break;
    }
    return CUDA_R_32F;
}

cublasComputeType_t compute_type(GemmInput in) {
    return in == GemmInput::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace

GemmInput gemm_input(Format compute) {
    switch (compute) {
        case Format::fp32: return GemmInput::fp32;
        case Format::tf32: return GemmInput::tf32;
        case Format::bf16: return GemmInput::bf16;
        case Format::fp16:
        case Format::e4m3:
        case Format::e5m2: return GemmInput::fp16;
    }
    return GemmInput::fp32;
}

Format gemm_storage(GemmInput in) {
    switch (in) {
        case GemmInput::fp16: return Format::fp16;
        case GemmInput::bf16: return Format::bf16;
        case GemmInput::fp32:
        case GemmInput::tf32: break;
    }
    return Format::fp32;
}

Gemm::Gemm(cudaStream_t stream) : m_stream(stream), m_workspace(k_workspace_bytes) {
    CUBLAS_CHECK(cublasLtCreate(&m_lt));
    try {  // a throwing constructor runs no destructor: release what was made so far
        CUBLAS_CHECK(cublasCreate(&m_blas));
        CUBLAS_CHECK(cublasSetStream(m_blas, m_stream));
    } catch (...) {
        if (m_blas) cublasDestroy(m_blas);
        cublasLtDestroy(m_lt);
        throw;
    }
}

Gemm::~Gemm() {
    if (m_blas) cublasDestroy(m_blas);
    if (m_lt) cublasLtDestroy(m_lt);
}

void Gemm::run(GemmInput in, bool trans_a, bool trans_b, int m, int n, int k, const void* a,
               int lda, const void* b, int ldb, float* c, int ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: zeros, as Eigen gives
        CUDA_CHECK(
            cudaMemsetAsync(c, 0, sizeof(float) * static_cast<std::size_t>(ldc) * n, m_stream));
        return;
    }
    const cudaDataType_t ab = data_type(in);
    const cublasComputeType_t ct = compute_type(in);
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const float alpha = 1.0f, beta = 0.0f;

    OpDesc op;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op.h, ct, CUDA_R_32F));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
    Layout la, lb, lc;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la.h, ab, trans_a ? k : m, trans_a ? m : k, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb.h, ab, trans_b ? n : k, trans_b ? k : n, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc.h, CUDA_R_32F, m, n, ldc));
    Preference pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.h));
    const std::uint64_t ws = m_workspace.bytes();
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    // The heuristic's best few algorithms in order: one Lt rejects at run time gives way to the next.
    constexpr int k_candidates = 4;
    cublasLtMatmulHeuristicResult_t results[k_candidates]{};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(m_lt, op.h, la.h, lb.h, lc.h, lc.h,
                                                             pref.h, k_candidates, results, &found);
    if (hs == CUBLAS_STATUS_SUCCESS)
        for (int i = 0; i < found; ++i)
            if (cublasLtMatmul(m_lt, op.h, &alpha, a, la.h, b, lb.h, &beta, c, lc.h, c, lc.h,
                               &results[i].algo, m_workspace.data(), m_workspace.bytes(),
                               m_stream) == CUBLAS_STATUS_SUCCESS)
                return;
    // Odd shapes or leading dimensions Lt has no kernel for, or every candidate refused: the
    // classic API takes anything.
    CUBLAS_CHECK(cublasGemmEx(m_blas, op_a, op_b, m, n, k, &alpha, a, ab, lda, b, ab, ldb, &beta, c,
                              CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT));
}

}  // namespace mpx::cuda
