// The CPU backend's R-operator ops (Hessian-vector products; the rules: engine/core/r_op.hpp) and the
// gradient penalty, with the refusals of a backend that has none (the CUDA backend's, for now).
// Rule: an R-value is stored in its first-order twin's format and counted at the site the model sets
// (a backward one); operands the first-order pass already cast (x, w, dy) are cast again uncounted,
// new ones (V, R{x}, R{dy}) counted under grad_operand.
#include <cmath>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/core/r_op.hpp"

namespace mpx {
namespace {
[[noreturn]] void no_r_ops(const std::string& backend) {
    throw ConfigError("train.gradient_penalty", backend + " has no Hessian-vector products yet (the R-operator's ops "
                                                          "wait for a GPU run to measure them); train the penalty on "
                                                          "the CPU backend (device = cpu)");
}
}  // namespace

void Backend::linear_r_forward(const Tensor&, const Tensor*, const Tensor&, const Tensor&, const Tensor*, Format,
                               Tensor&) { no_r_ops(name()); }
void Backend::linear_r_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor&,
                                const Tensor&, Format, Format, Tensor&, Tensor*, Accumulate, Tensor*) {
    no_r_ops(name());
}
void Backend::activation_r_forward(Activation, const Tensor&, const Tensor&, Tensor&) { no_r_ops(name()); }
void Backend::activation_r_backward(Activation, const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&) {
    no_r_ops(name());
}
void Backend::layernorm_r_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, const Tensor&, Tensor&) { no_r_ops(name()); }
void Backend::layernorm_r_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                   const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor&, Accumulate) {
    no_r_ops(name());
}
void Backend::softmax_cross_entropy_r(const Tensor&, const Tensor&, ScaleBy, Tensor&) { no_r_ops(name()); }
void Backend::mse_r(const Tensor&, ScaleBy, Tensor&) { no_r_ops(name()); }
void Backend::gradient_penalty(std::span<const PenaltyRef>, const PenaltyOptions&) { no_r_ops(name()); }

namespace cpu {

// The R-ops' roundings count at their sites; their values are not binned (Sink without bins).
Sink CpuBackend::counted() { return {&counts(), nullptr}; }
Sink CpuBackend::counted(TensorKind kind) { return {&counts_at(kind), nullptr}; }

void CpuBackend::linear_r_forward(const Tensor& x, const Tensor* rx, const Tensor& w, const Tensor& v, const Tensor* c,
                                  Format compute, Tensor& rz) {
    CMap xv = operand(x, m_a, compute, Sink{});                          // (B, in): the forward pass counted it
    CMap vv = operand(v, m_b, compute, counted(TensorKind::grad_operand));       // (out, in)
    Map out = m_c.shape(x.rows(), w.rows());                             // (B, out)
    product(out, xv, vv.transpose(), m_panels, model(&GemmAccumulation::fprop));
    if (rx) {
        CMap rxv = operand(*rx, m_d, compute, counted(TensorKind::grad_operand));  // (B, in)
        CMap wv = operand(w, m_e, compute, Sink{});                         // (out, in)
        Map second = m_f.shape(x.rows(), w.rows());
        product(second, rxv, wv.transpose(), m_panels, model(&GemmAccumulation::fprop));
        out += second;
    }
    if (c) {
        CMap cv = operand(*c, m_d, core::bias_format(compute), Sink{});  // (1, out)
        out.rowwise() += cv.row(0);
    }
    store(out.data(), rz, counted());
}

void CpuBackend::linear_r_backward(const Tensor& dy, const Tensor& rdy, const Tensor& x, const Tensor* rx,
                                   const Tensor& w, const Tensor& v, Format compute, Format round_through, Tensor& hw,
                                   Tensor* hb, Accumulate acc, Tensor* rdx) {
    CMap rdyv = operand(rdy, m_a, compute, counted(TensorKind::grad_operand));  // (B, out)
    CMap dyv = operand(dy, m_d, compute, Sink{});                            // (B, out): counted by backward
    if (rdx) {  // rdx (B, in) = rdy · W + dy · V
        CMap wv = operand(w, m_e, compute, Sink{});
        Map out = m_c.shape(dy.rows(), w.cols());
        product(out, rdyv, wv, m_panels, model(&GemmAccumulation::dgrad));
        CMap vv = operand(v, m_e, compute, Sink{});  // counted by the R-forward pass
        Map second = m_f.shape(dy.rows(), w.cols());
        product(second, dyv, vv, m_panels, model(&GemmAccumulation::dgrad));
        out += second;
        const Format written = core::gemm_output_format(compute);
        if (written != Format::fp32 && written != rdx->format())
            accumulate_into(out.data(), rdx->size(), written, *rdx, Accumulate::overwrite, counted(TensorKind::grad_input));
        else
            store(out.data(), *rdx, counted(TensorKind::grad_input));
    }
    // hw (out, in) = rdyᵀ · x + dyᵀ · rx
    CMap xv = operand(x, m_b, compute, Sink{});
    Map hwm = m_c.shape(dy.cols(), x.cols());
    product(hwm, rdyv.transpose(), xv, m_panels, model(&GemmAccumulation::wgrad));
    if (rx) {
        CMap rxv = operand(*rx, m_e, compute, Sink{});
        Map second = m_f.shape(dy.cols(), x.cols());
        product(second, dyv.transpose(), rxv, m_panels, model(&GemmAccumulation::wgrad));
        hwm += second;
    }
    accumulate_into(hwm.data(), hw.size(), round_through, hw, acc, counted(TensorKind::grad_weight));
    if (hb) bias_backward(view(rdy, m_d), *hb, round_through, acc, counted(TensorKind::grad_weight));  // rdy as stored
}

void CpuBackend::activation_r_forward(Activation a, const Tensor& z, const Tensor& rz, Tensor& rh) {
    const float* zi = view(z, m_a).data();
    const float* ri = view(rz, m_b).data();
    float* out = m_c.shape(z.rows(), z.cols()).data();
    core::with_activation(a, [&](auto k) {
        pieces(z.size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) out[i] = core::act_backward<decltype(k)::value>(zi[i], ri[i]);
        });
    });
    store(out, rh, counted());
}

void CpuBackend::activation_r_backward(Activation a, const Tensor& z, const Tensor& rz, const Tensor& dh,
                                       const Tensor& rdh, Tensor& rdz) {
    const float* zi = view(z, m_a).data();
    const float* rzi = view(rz, m_b).data();
    const float* gi = view(dh, m_d).data();
    const float* rgi = view(rdh, m_e).data();
    float* out = m_c.shape(z.rows(), z.cols()).data();
    core::with_activation(a, [&](auto k) {
        pieces(z.size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i)
                out[i] = core::act_r_backward<decltype(k)::value>(zi[i], rzi[i], gi[i], rgi[i]);
        });
    });
    store(out, rdz, counted());
}

void CpuBackend::layernorm_r_forward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                                     const Tensor& rbeta, const Tensor& mean, const Tensor& rstd, Tensor& ry) {
    CMap xv = view(x, m_a), rxv = view(rx, m_b), g = view(gamma, m_d), rg = view(rgamma, m_e), rb = view(rbeta, m_f);
    const int B = x.rows(), D = x.cols();
    const auto* mu = static_cast<const float*>(mean.data());
    const auto* rs = static_cast<const float*>(rstd.data());
    Map out = m_c.shape(B, D);
    for (int r = 0; r < B; ++r) {
        float m, s;
        core::layernorm_r_stats([&](int c) { return xv(r, c); }, [&](int c) { return rxv(r, c); }, D, mu[r], rs[r], m, s);
        for (int c = 0; c < D; ++c)
            out(r, c) = core::layernorm_r_value(xv(r, c), rxv(r, c), mu[r], rs[r], m, s, g(0, c), rg(0, c), rb(0, c));
    }
    store(out.data(), ry, counted());
}

void CpuBackend::layernorm_r_backward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                                      const Tensor& mean, const Tensor& rstd, const Tensor& dy, const Tensor& rdy,
                                      Tensor& rdx, Tensor& hgamma, Tensor& hbeta, Accumulate acc) {
    CMap xv = view(x, m_a), rxv = view(rx, m_b), g = view(gamma, m_d), rg = view(rgamma, m_e);
    CMap dyv = view(dy, m_f), rdyv = view(rdy, m_q);
    const int B = x.rows(), D = x.cols();
    const auto* mu = static_cast<const float*>(mean.data());
    const auto* rs = static_cast<const float*>(rstd.data());
    Map rstat = m_t.shape(2, B);  // each row's R-statistics m, s
    Map out = m_c.shape(B, D);
    for (int r = 0; r < B; ++r) {
        const auto X = [&](int c) { return xv(r, c); };
        const auto RX = [&](int c) { return rxv(r, c); };
        const auto G = [&](int c) { return g(0, c); };
        const auto RG = [&](int c) { return rg(0, c); };
        const auto DY = [&](int c) { return dyv(r, c); };
        const auto RDY = [&](int c) { return rdyv(r, c); };
        float m, s, s1, s2, rs1, rs2;
        core::layernorm_r_stats(X, RX, D, mu[r], rs[r], m, s);
        core::layernorm_row_sums(X, G, DY, D, mu[r], rs[r], s1, s2);
        core::layernorm_r_row_sums(X, RX, G, RG, DY, RDY, D, mu[r], rs[r], m, s, rs1, rs2);
        rstat(0, r) = m;
        rstat(1, r) = s;
        for (int c = 0; c < D; ++c)
            out(r, c) = core::layernorm_r_dx(xv(r, c), rxv(r, c), dyv(r, c), rdyv(r, c), g(0, c), rg(0, c), mu[r],
                                             rs[r], m, s, D, s1, s2, rs1, rs2);
    }
    store(out.data(), rdx, counted());
    Map sums = m_s.shape(2, D);  // R{dγ}, R{dβ}: column sums in row order, from 0
    for (int c = 0; c < D; ++c) {
        float hg = 0.0f, hb = 0.0f;
        for (int r = 0; r < B; ++r) {
            hg += core::layernorm_r_dgamma(xv(r, c), rxv(r, c), dyv(r, c), rdyv(r, c), mu[r], rs[r], rstat(0, r),
                                           rstat(1, r));
            hb += rdyv(r, c);
        }
        sums(0, c) = hg;
        sums(1, c) = hb;
    }
    accumulate_into(sums.data(), static_cast<std::size_t>(D), hgamma.format(), hgamma, acc, counted());
    accumulate_into(sums.data() + D, static_cast<std::size_t>(D), hbeta.format(), hbeta, acc, counted());
}

void CpuBackend::softmax_cross_entropy_r(const Tensor& logits, const Tensor& rlogits, ScaleBy by, Tensor& rdlogits) {
    const float scale = by.resolve(m_scaler.scale);
    const int B = logits.rows(), C = logits.cols();
    CMap lv = view(logits, m_a), rv = view(rlogits, m_b);
    Map d = m_c.shape(B, C);
    const float inv_b = 1.0f / static_cast<float>(B);
    for (int r = 0; r < B; ++r)
        core::softmax_xent_r_row([&](int c) { return lv(r, c); }, [&](int c) { return rv(r, c); }, C, inv_b, scale,
                                 [&](int c, float v) { d(r, c) = v; });
    store(d.data(), rdlogits, counted());
}

void CpuBackend::mse_r(const Tensor& rpred, ScaleBy by, Tensor& rdpred) {
    const float scale = by.resolve(m_scaler.scale);
    CMap rv = view(rpred, m_a);
    Map d = m_c.shape(rpred.rows(), rpred.cols());
    const float n = static_cast<float>(rpred.size());
    for (Eigen::Index i = 0; i < d.size(); ++i) d.data()[i] = core::mse_r_grad(rv.data()[i], n, scale);
    store(d.data(), rdpred, counted());
}

void CpuBackend::gradient_penalty(std::span<const PenaltyRef> ps, const PenaltyOptions& o) {
    const double S = m_scaler.scale;
    const float k = o.unscale ? core::inverse_scale(S) : 1.0f;  // PyTorch's `p * (1/scaler.get_scale())`
    float total = 0.0f;
    for (const PenaltyRef& p : ps) {
        if (p.direction->format() != Format::fp32 || p.direction->size() != p.grad->size())
            throw ConfigError("", "gradient_penalty: a direction must be FP32 and of its gradient's shape");
        const float* g = view(*p.grad, m_a).data();
        auto* d = static_cast<float*>(p.direction->data());
        const std::size_t n = p.grad->size();
        const Format gf = p.grad->format();  // `p * inv_scale` keeps the gradient's dtype (half-*: FP16)
        // ĝ = g·k; Σ ĝ² in FP32 by k_sum_chunk chunks (element order), the chunks added in order.
        const std::size_t chunks = (n + core::k_sum_chunk - 1) / core::k_sum_chunk;
        if (m_chunk_sums.size() < chunks) m_chunk_sums.resize(chunks);
        double* sums = m_chunk_sums.data();
        pieces(chunks, [&](std::size_t c0, std::size_t c1) {
            for (std::size_t c = c0; c < c1; ++c) {
                const std::size_t end = std::min(n, (c + 1) * core::k_sum_chunk);
                float chunk = 0.0f;
                for (std::size_t i = c * core::k_sum_chunk; i < end; ++i) {
                    d[i] = core::round_value(gf, g[i] * k);
                    chunk += d[i] * d[i];
                }
                sums[c] = chunk;
            }
        });
        float tensor = 0.0f;
        for (std::size_t c = 0; c < chunks; ++c) tensor += static_cast<float>(sums[c]);
        total += tensor;
    }
    const float P = o.kind == PenaltyKind::norm ? std::sqrt(total) : total;
    stats().penalty_sum += static_cast<double>(static_cast<float>(o.lambda) * P);
    const double coef = o.kind == PenaltyKind::norm ? S * o.lambda * static_cast<double>(k) / static_cast<double>(P)
                                                    : 2.0 * S * o.lambda * static_cast<double>(k);
    const float cf = static_cast<float>(coef);
    for (const PenaltyRef& p : ps) {
        auto* d = static_cast<float*>(p.direction->data());
        pieces(p.direction->size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) d[i] *= cf;
        });
    }
}

}  // namespace cpu
}  // namespace mpx
