// The CPU GEMM kernels on mpx's row blocks, one thread: GFLOP/s of Eigen's product (the build's ISA),
// Debian's OpenBLAS (pthread flavour, one thread a call) and BLIS (serial flavour), each loaded with
// dlopen so the three sit in one process, on the shapes of 784-1024-1024-10 and 784-512-10 at batch
// 256 and of small layers; a product is cut into row blocks as engine/compute/cpu_gemm.hpp cuts it.
// Each kernel's own CPU choice can be overridden: OPENBLAS_CORETYPE=SkylakeX, BLIS_ARCH_TYPE=zen3.
//
//   g++ -O3 -march=native -DNDEBUG -std=c++20 -I/usr/include/eigen3 bench/gemm_kernels.cpp -o /tmp/gk -ldl -pthread
//   /tmp/gk          (docs/benchmarks.md, "FP32 GEMMs from OpenBLAS")
#include <Eigen/Core>
#include <dlfcn.h>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <algorithm>
#include <functional>
using RM = Eigen::Matrix<float, -1, -1, Eigen::RowMajor>;
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
struct Shape { const char* name; int m, n, k; bool ta, tb; };
static std::pair<size_t,size_t> piece(size_t n, size_t parts, size_t i) { return {n * i / parts, n * (i + 1) / parts}; }
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  void* obh = dlopen("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  void* blh = dlopen("/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!obh || !blh) { fprintf(stderr, "needs libopenblas0-pthread and libblis4-serial\n"); return 2; }
  ((void (*)(int))dlsym(obh, "openblas_set_num_threads"))(1);
  printf("OpenBLAS kernel: %s\n", ((char* (*)())dlsym(obh, "openblas_get_corename"))());
  sgemm_t ob = (sgemm_t)dlsym(obh, "cblas_sgemm");
  sgemm_t bl = (sgemm_t)dlsym(blh, "cblas_sgemm");
  std::vector<Shape> shapes = {
    {"fwd 256x1024x784 NT", 256, 1024, 784, false, true}, {"fwd 256x1024x1024 NT", 256, 1024, 1024, false, true},
    {"fwd 256x10x1024 NT", 256, 10, 1024, false, true}, {"dgr 256x1024x1024 NN", 256, 1024, 1024, false, false},
    {"dgr 256x1024x10 NN", 256, 1024, 10, false, false},
    {"wgr 1024x784x256 TN", 1024, 784, 256, true, false}, {"wgr 1024x1024x256 TN", 1024, 1024, 256, true, false},
    {"wgr 10x1024x256 TN", 10, 1024, 256, true, false},
    {"fwd 256x512x784 NT", 256, 512, 784, false, true}, {"wgr 512x784x256 TN", 512, 784, 256, true, false},
    {"fwd 64x64x64 NT", 64, 64, 64, false, true}, {"fwd 32x64x64 NT", 32, 64, 64, false, true},
    {"wgr 64x64x32 TN", 64, 64, 32, true, false}, {"fwd 128x128x128 NT", 128, 128, 128, false, true},
    {"fwd 256x384x128 NT", 256, 384, 128, false, true}, {"fwd 256x128x384 NT", 256, 128, 384, false, true},
  };
  for (auto& s : shapes) {
    // A stored (m x k) or (k x m) row-major; B stored (k x n) or (n x k).
    RM A = s.ta ? RM::Random(s.k, s.m) : RM::Random(s.m, s.k);
    RM B = s.tb ? RM::Random(s.n, s.k) : RM::Random(s.k, s.n);
    RM C(s.m, s.n), C2(s.m, s.n);
    double flops = 2.0 * s.m * s.n * s.k;
    size_t blocks = flops < 1e6 ? 1 : std::clamp<size_t>(s.m / 32, 1, 16);
    auto run_block = [&](int kind, size_t i) {
      auto [r0, r1] = piece(s.m, blocks, i); int n = r1 - r0;
      if (kind == 0) {
        if (!s.ta && !s.tb) C.middleRows(r0, n).noalias() = A.middleRows(r0, n) * B;
        if (!s.ta && s.tb) C.middleRows(r0, n).noalias() = A.middleRows(r0, n) * B.transpose();
        if (s.ta && !s.tb) C.middleRows(r0, n).noalias() = A.transpose().middleRows(r0, n) * B;
      } else {
        sgemm_t f = kind == 1 ? ob : bl;
        const float* a = s.ta ? A.data() + r0 : A.data() + r0 * A.cols();
        f(101, s.ta ? 112 : 111, s.tb ? 112 : 111, n, s.n, s.k, 1.f, a, A.cols(), B.data(), B.cols(), 0.f, C.data() + r0 * s.n, s.n);
      }
    };
    auto run = [&](int kind) {
      if (threads == 1) { for (size_t i = 0; i < blocks; ++i) run_block(kind, i); return; }
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { for (size_t i = t; i < blocks; i += threads) run_block(kind, i); });
      for (auto& t : ts) t.join();
    };
    printf("%-24s blocks %2zu", s.name, blocks);
    for (int kind = 0; kind < 3; ++kind) {
      run(kind);
      if (kind == 0) C2 = C; else printf(" maxdiff %.1e", (C - C2).cwiseAbs().maxCoeff());
      int reps = std::max(3, int(3e9 / flops));
      double best = 1e9;
      for (int rr = 0; rr < 5; ++rr) {
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) run(kind);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        best = std::min(best, dt);
      }
      printf(" %s %6.1f", kind == 0 ? "eigen" : kind == 1 ? "openblas" : "blis", flops / best * 1e-9);
    }
    printf("\n"); fflush(stdout);
  }
}
