// cuBLASLt matmul with FP32 output and FP32 compute. A shape's descriptors and the heuristic's
// algorithms are made on its first call and kept (a training run has a handful of shapes, each
// called every step): later calls only queue the matmul.
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
        case Format::e5m2:
        case Format::e2m1: return GemmInput::fp16;  // E2M1's eight magnitudes are exact in FP16 too
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
        // The fallback GEMM uses our workspace too (same stream, so never at once with Lt's):
        // cuBLAS then allocates nothing inside a step captured into a CUDA graph.
        CUBLAS_CHECK(cublasSetWorkspace(m_blas, m_workspace.data(), m_workspace.bytes()));
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

struct Gemm::Plan {
    static constexpr int k_candidates = 4;
    OpDesc op;
    Layout la, lb, lc;
    cublasLtMatmulHeuristicResult_t results[k_candidates]{};
    int found = 0;
    int last = 0;  // the candidate that ran last (none when found is 0: cublasGemmEx)
};

Gemm::Plan& Gemm::plan(const Shape& s) {
    auto it = m_plans.find(s);
    if (it != m_plans.end()) return *it->second;
    const auto [in, trans_a, trans_b, m, n, k, lda, ldb, ldc] = s;
    const cudaDataType_t ab = data_type(in);
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    auto p = std::make_unique<Plan>();
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op.h, compute_type(in), CUDA_R_32F));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la.h, ab, trans_a ? k : m, trans_a ? m : k, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb.h, ab, trans_b ? n : k, trans_b ? k : n, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lc.h, CUDA_R_32F, m, n, ldc));
    Preference pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.h));
    const std::uint64_t ws = m_workspace.bytes();
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    // The heuristic's best few algorithms in order: one Lt rejects at run time gives way to the next.
    if (cublasLtMatmulAlgoGetHeuristic(m_lt, p->op.h, p->la.h, p->lb.h, p->lc.h, p->lc.h, pref.h,
                                       Plan::k_candidates, p->results, &p->found) != CUBLAS_STATUS_SUCCESS)
        p->found = 0;
    return *m_plans.emplace(s, std::move(p)).first->second;
}

void Gemm::run(GemmInput in, bool trans_a, bool trans_b, int m, int n, int k, const void* a,
               int lda, const void* b, int ldb, float* c, int ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: zeros, as Eigen gives
        CUDA_CHECK(
            cudaMemsetAsync(c, 0, sizeof(float) * static_cast<std::size_t>(ldc) * n, m_stream));
        return;
    }
    const float alpha = 1.0f, beta = 0.0f;
    Plan& p = plan({in, trans_a, trans_b, m, n, k, lda, ldb, ldc});
    // The algorithm that ran last time first, then the ones after it, wrapping round (one may
    // refuse these pointers' alignment where the last call's were wider).
    for (int i = 0; i < p.found; ++i) {
        const int at = (p.last + i) % p.found;
        if (cublasLtMatmul(m_lt, p.op.h, &alpha, a, p.la.h, b, p.lb.h, &beta, c, p.lc.h, c, p.lc.h,
                           &p.results[at].algo, m_workspace.data(), m_workspace.bytes(),
                           m_stream) == CUBLAS_STATUS_SUCCESS) {
            p.last = at;
            return;
        }
    }
    // Odd shapes or leading dimensions Lt has no kernel for, or every candidate refused: the
    // classic API takes anything.
    const cudaDataType_t ab = data_type(in);
    CUBLAS_CHECK(cublasGemmEx(m_blas, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                              trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, a, ab, lda, b,
                              ab, ldb, &beta, c, CUDA_R_32F, ldc, compute_type(in), CUBLAS_GEMM_DEFAULT));
}

}  // namespace mpx::cuda
