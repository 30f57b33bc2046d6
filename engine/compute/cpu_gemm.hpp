// The CPU backend's FP32 GEMMs (internal to engine/compute): cut into blocks of output rows by shape
// alone so the thread count changes no bit, each block one single-threaded GEMM (OpenBLAS's sgemm
// where the build found it and it serves, cpu_gemm.cpp; else Eigen's product with kept panels), and
// the GEMM under an accumulation model (engine/core/accumulate.hpp).
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <string>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/compute/cpu_scratch.hpp"
#include "engine/core/accumulate.hpp"

namespace mpx::cpu {

// Which kernel runs a GEMM of FP32 accumulation: decided by shape alone (product), never by thread.
enum class GemmKernel { eigen, blas };

// An sgemm operand: row-major storage, or transposed (a column-major view of row-major storage).
struct BlasOperand {
    const float* data;
    int stride;
    bool transposed;
};

// True where the build found OpenBLAS and its kernel for this CPU is as wide as Eigen's (decided once
// a process); its name and rule for a reader (bench, docs/benchmarks.md).
bool blas_serves();
std::string gemm_kernel_name();
// c (m × n, row stride ldc) = a · b in one single-threaded OpenBLAS sgemm.
void blas_gemm(const BlasOperand& a, const BlasOperand& b, int m, int n, int k, float* c, int ldc);

// Eigen's packed panels for the GEMMs that run on one lane (parallel.hpp): kept, so a GEMM does not
// take a fresh heap block for them on every call as Eigen's product does above 128 KiB.
struct GemmPanels {
    Scratch a, b;
};

// The blocking Eigen's product chooses for a row-major (rows × cols) result of depth `depth` (its
// gemm_blocking_space, one thread: Eigen computes a row-major result as the transposed product),
// with the panels in a GemmPanels.
class PanelBlocking : public Eigen::internal::level3_blocking<float, float> {
public:
    PanelBlocking(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) {
        m_mc = cols;
        m_nc = rows;
        m_kc = depth;
        Eigen::internal::computeProductBlockingSizes<float, float, 1, Eigen::Index>(m_kc, m_mc, m_nc, Eigen::Index{1});
    }
    void use(GemmPanels& p) {
        m_blockA = p.a.shape(1, m_mc * m_kc).data();
        m_blockB = p.b.shape(1, m_kc * m_nc).data();
    }
};

// out = a · b. GemmKernel::blas: one OpenBLAS sgemm. GemmKernel::eigen: exactly as
// `out.noalias() = a * b` computes it (the same kernel, blocking and order of sums), with Eigen's
// panels in `panels`; products Eigen computes without panels (a small one coefficient by
// coefficient, a matrix-vector one) go to Eigen as they are.
template <class Out, class A, class B>
void gemm_into(Out out, const A& a, const B& b, GemmPanels& panels, GemmKernel kernel = GemmKernel::eigen) {
    namespace ei = Eigen::internal;
    if (kernel == GemmKernel::blas && a.cols() > 0) {
        const auto lhs = ei::blas_traits<A>::extract(a);
        const auto rhs = ei::blas_traits<B>::extract(b);
        const auto operand = [](const auto& x) {
            return BlasOperand{x.data(), static_cast<int>(x.outerStride()),
                               !(std::decay_t<decltype(x)>::Flags & Eigen::RowMajorBit)};
        };
        blas_gemm(operand(lhs), operand(rhs), static_cast<int>(out.rows()), static_cast<int>(out.cols()),
                  static_cast<int>(a.cols()), out.data(), static_cast<int>(out.outerStride()));
        return;
    }
    if (b.rows() + out.rows() + out.cols() < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD || out.rows() == 1 ||
        out.cols() == 1 || a.cols() == 0) {
        out.noalias() = a * b;
        return;
    }
    const auto lhs = ei::blas_traits<A>::extract(a);
    const auto rhs = ei::blas_traits<B>::extract(b);
    constexpr int lhs_order = (decltype(lhs)::Flags & Eigen::RowMajorBit) ? Eigen::RowMajor : Eigen::ColMajor;
    constexpr int rhs_order = (decltype(rhs)::Flags & Eigen::RowMajorBit) ? Eigen::RowMajor : Eigen::ColMajor;
    using Gemm = ei::general_matrix_matrix_product<Eigen::Index, float, lhs_order, false, float, rhs_order, false,
                                                   Eigen::RowMajor, 1>;
    PanelBlocking blocking(out.rows(), out.cols(), a.cols());
    blocking.use(panels);
    out.setZero();
    Gemm::run(out.rows(), out.cols(), a.cols(), lhs.data(), lhs.outerStride(), rhs.data(), rhs.outerStride(),
              out.data(), 1, out.outerStride(), 1.0f, blocking, nullptr);
}

// GEMMs of at least this many FLOPs are cut into row blocks.
inline constexpr double k_parallel_flops = 1e6;

// out = a · b. A large product is cut into blocks of out's rows by its shape alone (at least 32 rows
// a block, at most 16 blocks), each block its own GEMM over the whole reduction dimension: never
// split along it, so the thread count changes no bit. The products cut into blocks run on OpenBLAS
// where it serves (blas_serves); smaller ones stay on Eigen, which is as fast or faster there
// (docs/benchmarks.md). `panels` holds a GemmPanels per lane, grown here before the blocks run.
template <class A, class B>
void product(Map out, const A& a, const B& b, std::vector<GemmPanels>& panels) {
    const auto rows = static_cast<std::size_t>(out.rows());
    const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(out.cols()) * static_cast<double>(a.cols());
    const std::size_t blocks = flops < k_parallel_flops ? 1 : std::clamp<std::size_t>(rows / 32, 1, 16);
    const std::size_t lanes = lane_count(blocks);
    if (panels.size() < lanes) panels.resize(lanes);
    if (blocks == 1) return gemm_into(out, a, b, panels[0]);
    const GemmKernel kernel = blas_serves() ? GemmKernel::blas : GemmKernel::eigen;
    // Every lane's panels sized for the largest block first: which thread runs which block varies,
    // the memory it needs does not.
    const auto largest = static_cast<Eigen::Index>((rows + blocks - 1) / blocks);
    if (kernel == GemmKernel::eigen)
        for (std::size_t l = 0; l < lanes; ++l) PanelBlocking(largest, out.cols(), a.cols()).use(panels[l]);
    parallel_for_lanes(blocks, [&](std::size_t i, unsigned lane) {
        const auto [r0, r1] = piece_range(rows, blocks, i);
        const auto r = static_cast<Eigen::Index>(r0), n = static_cast<Eigen::Index>(r1 - r0);
        gemm_into(out.middleRows(r, n), a.middleRows(r, n), b, panels[lane], kernel);
    });
}

// out = a · b with every element one core::accumulate_dot under p (engine/core/accumulate.hpp): a
// GEMM under an accumulation model, in k order. Rows spread over the pool; each element is one
// sequential dot product, so the bits do not depend on the thread count.
template <class A, class B>
void product_under_model(Map out, const A& a, const B& b, const AccumulateParams& p) {
    const int depth = static_cast<int>(a.cols()), cols = static_cast<int>(out.cols());
    parallel_for(static_cast<std::size_t>(out.rows()), [&](std::size_t i) {
        const auto r = static_cast<Eigen::Index>(i);
        for (int j = 0; j < cols; ++j)
            out(r, j) = core::accumulate_dot(
                p, depth, [&](int k) { return static_cast<float>(a(r, k)); },
                [&](int k) { return static_cast<float>(b(k, j)); });
    });
}

// out = a · b: the FP32 GEMM above (FP32 accumulation), or the model p names where it is not exact.
template <class A, class B>
void product(Map out, const A& a, const B& b, std::vector<GemmPanels>& panels, const AccumulateParams* p) {
    if (p && p->model != AccumulateModel::exact) return product_under_model(out, a, b, *p);
    product(out, a, b, panels);
}

}  // namespace mpx::cpu
