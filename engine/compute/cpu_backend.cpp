// The CPU backend's transfers, activations, norms, dropout, losses and the step's state (its
// scaler, counts, schedules and amax histories); the class is in cpu_backend.hpp.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx::cpu {

void CpuBackend::collect_histograms(int layers) {
    m_collecting = layers > 0;
    if (!m_collecting) return;
    if (!m_hist) m_hist = std::make_unique<StepHistograms>();
    const int n = std::min(layers, k_max_layers);
    std::fill_n(m_hist->site, n * k_tensor_kinds, core::Bins{});
    std::fill_n(m_hist->update_ulp, n, core::Bins{});
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
    if (src.format() == dst.format()) {
        std::memcpy(dst.data(), src.data(), src.bytes());
        return;
    }
    CMap v = view(src, m_a);
    encode_pieces(dst.format(), v.data(), dst.size(), dst.data());
}

void CpuBackend::activation_forward(Activation a, const Tensor& z, Tensor& h) {
    if (!bins()) {  // a step that bins takes the path below: the bins see the whole buffer
        counts() += core::with_activation(a, [&](auto k) {
            return store_blocks(h, [&](std::size_t at, std::size_t m, float* out) {
                float zb[k_fused_block];
                const float* in = block_of(z, at, m, zb);
                for (std::size_t i = 0; i < m; ++i) out[i] = core::act_forward<decltype(k)::value>(in[i]);
            });
        });
        return;
    }
    const float* in = view(z, m_a).data();
    float* out = m_c.shape(z.rows(), z.cols()).data();
    core::with_activation(a, [&](auto k) {
        pieces(z.size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) out[i] = core::act_forward<decltype(k)::value>(in[i]);
        });
    });
    store(out, h);
}

void CpuBackend::activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) {
    if (!bins()) {
        counts() += core::with_activation(a, [&](auto k) {
            return store_blocks(dz, [&](std::size_t at, std::size_t m, float* out) {
                float zb[k_fused_block], gb[k_fused_block];
                const float* zi = block_of(z, at, m, zb);
                const float* gi = block_of(dh, at, m, gb);
                for (std::size_t i = 0; i < m; ++i)
                    out[i] = core::act_backward<decltype(k)::value>(zi[i], gi[i]);
            });
        });
        return;
    }
    const float* zi = view(z, m_a).data();
    const float* gi = view(dh, m_b).data();
    float* out = m_c.shape(z.rows(), z.cols()).data();
    core::with_activation(a, [&](auto k) {
        pieces(z.size(), [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) out[i] = core::act_backward<decltype(k)::value>(zi[i], gi[i]);
        });
    });
    store(out, dz);
}

void CpuBackend::layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                       Tensor& mean, Tensor& rstd) {
    CMap xv = view(x, m_a);
    CMap g = view(gamma, m_b);
    CMap bt = view(beta, m_d);
    const int B = x.rows(), D = x.cols();
    Map out = m_c.shape(B, D);
    auto* mu = static_cast<float*>(mean.data());
    auto* rs = static_cast<float*>(rstd.data());
    for (int r = 0; r < B; ++r) {
        core::layernorm_row_stats([&](int c) { return xv(r, c); }, D, mu[r], rs[r]);
        for (int c = 0; c < D; ++c)
            out(r, c) = core::layernorm_value(xv(r, c), mu[r], rs[r], g(0, c), bt(0, c));
    }
    store(out.data(), y);
}

void CpuBackend::layernorm_forward_stats_in(Format stats, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                            Tensor& y, Tensor& mean, Tensor& rstd) {
    if (stats == Format::fp32) return layernorm_forward(x, gamma, beta, y, mean, rstd);
    CMap xv = view(x, m_a);
    CMap g = view(gamma, m_b);
    CMap bt = view(beta, m_d);
    const int B = x.rows(), D = x.cols();
    Map out = m_c.shape(B, D);
    auto* mu = static_cast<float*>(mean.data());
    auto* rs = static_cast<float*>(rstd.data());
    core::Counts c;
    for (int r = 0; r < B; ++r) {  // one thread, row order, as layernorm_forward
        core::layernorm_row_stats_in(stats, [&](int k) { return xv(r, k); }, D, mu[r], rs[r], c);
        for (int k = 0; k < D; ++k)
            out(r, k) = core::layernorm_value(xv(r, k), mu[r], rs[r], g(0, k), bt(0, k));
    }
    counts() += c;
    store(out.data(), y);
}

void CpuBackend::layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                        const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                        Tensor& dbeta, Accumulate acc) {
    CMap xv = view(x, m_a);
    CMap g = view(gamma, m_b);
    CMap dyv = view(dy, m_d);
    const int B = x.rows(), D = x.cols();
    const auto* mu = static_cast<const float*>(mean.data());
    const auto* rs = static_cast<const float*>(rstd.data());
    // dγ, dβ first (row 0 of m_e): dx may be dy's own storage.
    Map sums = m_e.shape(2, D);
    for (int c = 0; c < D; ++c)
        core::layernorm_column_sums([&](int r) { return xv(r, c); },
                                  [&](int r) { return dyv(r, c); }, mu, rs, B, sums(0, c),
                                  sums(1, c));
    Map out = m_c.shape(B, D);
    for (int r = 0; r < B; ++r) {
        float s1, s2;
        core::layernorm_row_sums([&](int c) { return xv(r, c); }, [&](int c) { return g(0, c); },
                               [&](int c) { return dyv(r, c); }, D, mu[r], rs[r], s1, s2);
        for (int c = 0; c < D; ++c)
            out(r, c) = core::layernorm_dx(xv(r, c), dyv(r, c), g(0, c), mu[r], rs[r], D, s1, s2);
    }
    store(out.data(), dx);
    accumulate_into(sums.data(), static_cast<std::size_t>(D), dgamma.format(), dgamma, acc, sink());
    accumulate_into(sums.data() + D, static_cast<std::size_t>(D), dbeta.format(), dbeta, acc,
                    sink());
}

void CpuBackend::dropout(Tensor& h, float p, std::uint64_t seed) {
    const float keep = core::dropout_keep_scale(p);
    // In place; the values were binned when first stored.
    counts() += store_blocks(h, [&](std::size_t at, std::size_t m, float* out) {
        float hb[k_fused_block];
        const float* in = block_of(h, at, m, hb);
        for (std::size_t i = 0; i < m; ++i) out[i] = core::dropout_value(in[i], p, keep, seed, at + i);
    });
}

void CpuBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, ScaleBy by,
                           Tensor& dlogits) {
    const float scale = by.resolve(m_scaler.scale);
    const int B = logits.rows(), C = logits.cols();
    check_labels(labels, B, C);
    CMap lv = view(logits, m_a);
    Map d = m_c.shape(B, C);
    double total = 0.0;
    const float inv_b = 1.0f / static_cast<float>(B);
    for (int r = 0; r < B; ++r) {
        const float row = core::softmax_xent_row(
            [&](int c) { return lv(r, c); }, C, labels[r], inv_b, scale,
            [&](int c, float v) { d(r, c) = v; });
        total += static_cast<double>(row);
    }
    if (loss_recorded()) stats().loss_sum += core::mean_loss(total, B);
    store(d.data(), dlogits);
}

void CpuBackend::softmax_cross_entropy_z(const Tensor& logits, std::span<const int> labels, float z_loss, ScaleBy by,
                                         Tensor& dlogits) {
    if (z_loss == 0.0f) return softmax_cross_entropy(logits, labels, by, dlogits);
    const float scale = by.resolve(m_scaler.scale);
    const int B = logits.rows(), C = logits.cols();
    check_labels(labels, B, C);
    CMap lv = view(logits, m_a);
    Map d = m_c.shape(B, C);
    double total = 0.0;
    const float inv_b = 1.0f / static_cast<float>(B);
    for (int r = 0; r < B; ++r) {
        const float row = core::softmax_xent_z_row(
            [&](int c) { return lv(r, c); }, C, labels[r], z_loss, inv_b, scale,
            [&](int c, float v) { d(r, c) = v; });
        total += static_cast<double>(row);
    }
    if (loss_recorded()) stats().loss_sum += core::mean_loss(total, B);
    store(d.data(), dlogits);
}

void CpuBackend::mse(const Tensor& pred, const Tensor& target, ScaleBy by, Tensor& dpred) {
    const float scale = by.resolve(m_scaler.scale);
    CMap pv = view(pred, m_a);
    CMap tv = view(target, m_b);
    Map d = m_c.shape(pred.rows(), pred.cols());
    const float n = static_cast<float>(pred.size());
    double total = 0.0;
    for (Eigen::Index i = 0; i < d.size(); ++i) {
        float squared;
        d.data()[i] = core::mse_grad(pv.data()[i], tv.data()[i], n, scale, squared);
        total += static_cast<double>(squared);
    }
    if (loss_recorded()) stats().loss_sum += core::mean_loss(total, n);
    store(d.data(), dpred);
}

double CpuBackend::accuracy(const Tensor& logits, std::span<const int> labels) {
    CMap lv = view(logits, m_a);
    const int B = logits.rows(), C = logits.cols();
    if (B == 0 || C == 0) return 0.0;
    int correct = 0;
    for (int r = 0; r < B; ++r)
        if (core::argmax_row([&](int c) { return lv(r, c); }, C) == labels[r]) ++correct;
    return static_cast<double>(correct) / B;
}

void CpuBackend::set_amax_histories(std::span<const core::AmaxHistoryState> states, std::span<const float> hist) {
    if (states.size() > static_cast<std::size_t>(k_max_layers * k_fp8_tensors))
        throw ConfigError("", "set_amax_histories: more histories than the step record has FP8 tensors");
    m_amax.clear();
    for (const core::AmaxHistoryState& s : states) {
        if (s.len < 1 || s.offset < 0 || s.offset + s.len > static_cast<long long>(hist.size()))
            throw ConfigError("", "set_amax_histories: a history lies outside the values given");
        m_amax.emplace_back(s, hist.subspan(static_cast<std::size_t>(s.offset), static_cast<std::size_t>(s.len)));
    }
}

void CpuBackend::read_amax_histories(std::vector<core::AmaxHistoryState>& states, std::vector<float>& hist) {
    states.clear();
    hist.clear();
    for (const AmaxHistory& h : m_amax) {
        states.push_back(h.state());
        states.back().offset = static_cast<long long>(hist.size());
        hist.insert(hist.end(), h.history().begin(), h.history().end());
    }
}

void CpuBackend::check_labels(std::span<const int> labels, int rows, int classes) {
    if (labels.size() < static_cast<std::size_t>(rows))
        throw ConfigError("labels", "fewer labels than rows");
    for (int r = 0; r < rows; ++r)
        if (labels[r] < 0 || labels[r] >= classes)
            throw ConfigError("labels", "label " + std::to_string(labels[r]) +
                                            " is outside 0.." + std::to_string(classes - 1));
}

}  // namespace mpx::cpu

namespace mpx {

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

}  // namespace mpx
