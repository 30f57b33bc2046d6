// OpenBLAS's sgemm for the CPU backend's large FP32 GEMMs (cpu_gemm.hpp), where the build found it
// and its kernel is as wide as the one Eigen was compiled with; one thread a call, as mpx's pool
// runs the row blocks, so the bits stay the same on any thread count.
#include "engine/compute/cpu_gemm.hpp"

#ifdef MPX_HAVE_OPENBLAS
#include <cblas.h>

#include <cctype>
#include <string>
#endif

namespace mpx::cpu {

#ifdef MPX_HAVE_OPENBLAS
namespace {

// OpenBLAS picks its kernel for the CPU when it loads (OPENBLAS_CORETYPE overrides it). Debian 12's
// 0.3.21 does not know every AVX-512 core (an AMD family-1Ah EPYC gets its AVX2 "Haswell" kernel),
// and there Eigen's AVX-512 build is the faster of the two (docs/benchmarks.md), so a narrower
// kernel than Eigen's leaves the GEMMs to Eigen.
bool wide_enough(std::string core) {
#ifdef EIGEN_VECTORIZE_AVX512
    for (char& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
#else
    (void)core;
    return true;
#endif
}

bool decide() {
    // Each call on its caller's thread: mpx's pool runs the row blocks, and a thread count must not
    // change how OpenBLAS splits a block (the pthread flavour splits by its own count otherwise).
    openblas_set_num_threads(1);
    return wide_enough(openblas_get_corename());
}

}  // namespace

bool blas_serves() {
    static const bool serves = decide();
    return serves;
}

std::string gemm_kernel_name() {
    if (!blas_serves()) return std::string("Eigen (OpenBLAS ") + openblas_get_corename() + " kernel narrower than Eigen's)";
    return std::string("OpenBLAS ") + openblas_get_corename() + " for products cut into row blocks, Eigen below";
}

void blas_gemm(const BlasOperand& a, const BlasOperand& b, int m, int n, int k, float* c, int ldc) {
    const auto op = [](const BlasOperand& x) { return x.transposed ? CblasTrans : CblasNoTrans; };
    cblas_sgemm(CblasRowMajor, op(a), op(b), m, n, k, 1.0f, a.data, a.stride, b.data, b.stride, 0.0f, c, ldc);
}
#else
bool blas_serves() { return false; }
std::string gemm_kernel_name() { return "Eigen (built without OpenBLAS)"; }
void blas_gemm(const BlasOperand&, const BlasOperand&, int, int, int, float*, int) {}
#endif

}  // namespace mpx::cpu
