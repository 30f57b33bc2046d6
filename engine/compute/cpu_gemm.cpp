// OpenBLAS's sgemm for the CPU backend's large FP32 GEMMs (cpu_gemm.hpp), where the build found it
// and its kernel is as wide as the one Eigen was compiled with; one thread a call, as mpx's pool
// runs the row blocks, so the bits stay the same on any thread count.
#include "engine/compute/cpu_gemm.hpp"

#ifdef MPX_HAVE_OPENBLAS
#include <cblas.h>  // its types and enums: the library itself is loaded at run time (openblas())
#include <dlfcn.h>

#include <sys/resource.h>

#include <cctype>
#include <cstdlib>
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

struct OpenBlas {
    decltype(&cblas_sgemm) sgemm = nullptr;
    std::string core;  // its kernel's name
    std::string why;   // why it is not there
};

// OpenBLAS maps a 32–128 MiB buffer for each thread at its first call and, where the system refuses
// the mapping, retries for ever: under an address-space limit (ulimit -v) a run forced onto OpenBLAS
// hung 1 time in 3 (mpx-cli run --threads 8, 256 MiB). There the GEMMs stay on Eigen, whose buffers
// come from the allocator and whose refusal is std::bad_alloc, a message.
bool address_space_limited() {
    rlimit r{};
    return ::getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

// Loaded by its flavour's path, not linked: linked, the pthread flavour started a thread a core as
// the program loaded, whose first act is to map that buffer, and the exit waited on it (mpx-cli sweep
// --threads 64 under 256 MiB hung 8 runs in 20). Loaded here with OPENBLAS_NUM_THREADS=1 it starts
// none: each call runs on its caller's thread, as mpx's pool runs the row blocks, and a thread count
// never changes how OpenBLAS splits a block. The variable is set for the load only and put back, so
// the processes mpx starts (a test's python3) see the caller's own.
OpenBlas load() {
    OpenBlas b;
    if (address_space_limited()) {
        b.why = "an address-space limit (ulimit -v) is set, under which OpenBLAS's buffers can hang it";
        return b;
    }
    const char* before = std::getenv("OPENBLAS_NUM_THREADS");
    const std::string kept = before ? before : "";
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    void* h = ::dlopen(MPX_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (before) ::setenv("OPENBLAS_NUM_THREADS", kept.c_str(), 1);
    else ::unsetenv("OPENBLAS_NUM_THREADS");
    if (!h) {
        const char* e = ::dlerror();
        b.why = e ? e : "dlopen failed";
        return b;
    }
    const auto sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(::dlsym(h, "cblas_sgemm"));
    const auto corename = reinterpret_cast<decltype(&openblas_get_corename)>(::dlsym(h, "openblas_get_corename"));
    const auto threads = reinterpret_cast<decltype(&openblas_set_num_threads)>(::dlsym(h, "openblas_set_num_threads"));
    if (!sgemm || !corename || !threads) {
        b.why = "its cblas_sgemm, openblas_get_corename or openblas_set_num_threads is missing";
        return b;
    }
    threads(1);
    b.sgemm = sgemm;
    b.core = corename();
    return b;
}

const OpenBlas& openblas() {
    static const OpenBlas lib = load();
    return lib;
}

// Loaded before main, while the program has one thread: setenv cannot then race a getenv elsewhere.
[[maybe_unused]] const OpenBlas& k_loaded_at_start = openblas();

}  // namespace

bool blas_serves() {
    static const bool serves = openblas().sgemm && wide_enough(openblas().core);
    return serves;
}

std::string gemm_kernel_name() {
    const OpenBlas& b = openblas();
    if (!b.sgemm) return "Eigen (OpenBLAS did not load: " + b.why + ")";
    if (!blas_serves()) return "Eigen (OpenBLAS " + b.core + " kernel narrower than Eigen's)";
    return "OpenBLAS " + b.core + " for products cut into row blocks, Eigen below";
}

void blas_gemm(const BlasOperand& a, const BlasOperand& b, int m, int n, int k, float* c, int ldc) {
    const auto op = [](const BlasOperand& x) { return x.transposed ? CblasTrans : CblasNoTrans; };
    openblas().sgemm(CblasRowMajor, op(a), op(b), m, n, k, 1.0f, a.data, a.stride, b.data, b.stride, 0.0f, c, ldc);
}
#else
bool blas_serves() { return false; }
std::string gemm_kernel_name() { return "Eigen (built without OpenBLAS)"; }
void blas_gemm(const BlasOperand&, const BlasOperand&, int, int, int, float*, int) {}
#endif

}  // namespace mpx::cpu
