// The CPU backend: Eigen GEMMs on FP32 blocks decoded from the operands' real storage, everything
// else in plain loops. It is the reference ("CPU twin") each CUDA kernel is tested against.
// Rule: results are deterministic for a given input (single-threaded, fixed summation order).
#include <Eigen/Core>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "engine/backend.hpp"
#include "engine/error.hpp"
#include "engine/rng.hpp"

namespace mpx {
namespace {

using Map = Eigen::Map<RowMatrix>;
using CMap = Eigen::Map<const RowMatrix>;

// Eigen's resize frees the old block before allocating the new one, so a failed allocation leaves a
// dangling pointer that the destructor frees again. Allocating first and swapping keeps the old
// block on failure: out of memory stays an exception, not heap corruption.
void sized(RowMatrix& m, Eigen::Index rows, Eigen::Index cols) {
    if (m.rows() == rows && m.cols() == cols) return;
    RowMatrix fresh(rows, cols);
    m.swap(fresh);
}

bool narrower(Format compute, Format storage) {
    return compute != Format::fp32 && compute != storage;
}

// FP32 view of a tensor: a direct map for FP32 storage, else a decoded copy in `scratch`. With a
// `compute` format, values are also rounded to it (the cast a GEMM does to its operands).
CMap view(const Tensor& t, RowMatrix& scratch, Format compute = Format::fp32) {
    if (t.format() == Format::fp32 && !narrower(compute, Format::fp32))
        return CMap(static_cast<const float*>(t.data()), t.rows(), t.cols());
    sized(scratch, t.rows(), t.cols());
    decode_buffer(t.format(), t.data(), {scratch.data(), t.size()});
    if (narrower(compute, t.format())) round_in_place(compute, {scratch.data(), t.size()});
    return CMap(scratch.data(), t.rows(), t.cols());
}

// Rounds FP32 results into the tensor's storage.
RoundStats store(const float* src, Tensor& dst) {
    return encode_buffer(dst.format(), {src, dst.size()}, dst.data());
}

inline float gelu(float x) {  // tanh approximation, as PyTorch's approximate='tanh'
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + std::tanh(c * (x + 0.044715f * x * x * x)));
}
inline float gelu_grad(float x) {
    const float c = 0.7978845608028654f;
    const float u = c * (x + 0.044715f * x * x * x);
    const float t = std::tanh(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

class CpuBackend final : public Backend {
public:
    std::string name() const override { return "CPU (Eigen)"; }
    bool is_gpu() const override { return false; }

    RoundStats upload(std::span<const float> src, Tensor& dst) override {
        return encode_buffer(dst.format(), src.first(dst.size()), dst.data());
    }
    void download(const Tensor& src, std::span<float> dst) override {
        decode_buffer(src.format(), src.data(), dst.first(src.size()));
    }
    void copy(const Tensor& src, Tensor& dst) override {
        if (src.format() == dst.format()) {
            std::memcpy(dst.data(), src.data(), src.bytes());
            return;
        }
        RowMatrix& s = m_a;
        CMap v = view(src, s);
        store(v.data(), dst);
    }
    void fill(Tensor& dst, float value) override {
        sized(m_c, dst.rows(), dst.cols());
        m_c.setConstant(value);
        store(m_c.data(), dst);
    }

    RoundStats linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                              Tensor& y) override {
        CMap xv = view(x, m_a, compute);  // (B, in)
        CMap wv = view(w, m_b, compute);  // (out, in)
        sized(m_c, x.rows(), w.rows());
        m_c.noalias() = xv * wv.transpose();
        if (b) {
            CMap bv = view(*b, m_d);  // (1, out)
            m_c.rowwise() += bv.row(0);
        }
        return store(m_c.data(), y);
    }

    RoundStats linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                                     Tensor& dx) override {
        CMap dyv = view(dy, m_a, compute);  // (B, out)
        CMap wv = view(w, m_b, compute);    // (out, in)
        sized(m_c, dy.rows(), w.cols());
        m_c.noalias() = dyv * wv;
        return store(m_c.data(), dx);
    }

    RoundStats linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                               Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                               Tensor* dx) override {
        RoundStats s = linear_backward_weight(dy, x, compute, round_through, dw, db, acc);
        if (dx) {
            // dy's decoded (and compute-rounded) copy is still in m_a unless dy is FP32 storage
            // that was mapped without a copy: reuse it rather than decode dy again.
            CMap dyv = dy_view(dy, compute);
            CMap wv = view(w, m_b, compute);  // (out, in)
            sized(m_c, dy.rows(), w.cols());
            m_c.noalias() = dyv * wv;
            s += store(m_c.data(), *dx);
        }
        return s;
    }

    RoundStats linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                      Format round_through, Tensor& dw, Tensor* db,
                                      Accumulate acc) override {
        m_a_holds = nullptr;
        CMap dyv = view(dy, m_a, compute);  // (B, out)
        CMap xv = view(x, m_b, compute);    // (B, in)
        sized(m_c, dy.cols(), x.cols());
        m_c.noalias() = dyv.transpose() * xv;
        RoundStats s = accumulate_into(m_c, round_through, dw, acc);
        if (db) {
            // Bias gradient: FP32 column sums of dy as stored (not rounded to the compute format).
            // dyv already holds exactly that unless the compute format narrowed dy's storage.
            if (narrower(compute, dy.format())) {
                CMap dys = view(dy, m_a);
                sized(m_c, 1, dy.cols());
                m_c = dys.colwise().sum();
            } else {
                sized(m_c, 1, dy.cols());
                m_c = dyv.colwise().sum();
            }
            s += accumulate_into(m_c, round_through, *db, acc);
        }
        if (!narrower(compute, dy.format()) || !db) m_a_holds = &dy;  // m_a = dy in `compute`
        m_a_compute = compute;
        return s;
    }

    RoundStats activation_forward(Activation a, const Tensor& z, Tensor& h) override {
        CMap zv = view(z, m_a);
        sized(m_c, z.rows(), z.cols());
        const float* in = zv.data();
        float* out = m_c.data();
        const std::size_t n = z.size();
        switch (a) {
            case Activation::relu:
                for (std::size_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
                break;
            case Activation::gelu:
                for (std::size_t i = 0; i < n; ++i) out[i] = gelu(in[i]);
                break;
            case Activation::tanh:
                for (std::size_t i = 0; i < n; ++i) out[i] = std::tanh(in[i]);
                break;
            case Activation::none: std::memcpy(out, in, n * sizeof(float)); break;
        }
        return store(out, h);
    }

    RoundStats activation_backward(Activation a, const Tensor& z, const Tensor& dh,
                                   Tensor& dz) override {
        CMap zv = view(z, m_a);
        CMap dhv = view(dh, m_b);
        sized(m_c, z.rows(), z.cols());
        const float* zi = zv.data();
        const float* gi = dhv.data();
        float* out = m_c.data();
        const std::size_t n = z.size();
        switch (a) {
            case Activation::relu:
                for (std::size_t i = 0; i < n; ++i) out[i] = zi[i] > 0.0f ? gi[i] : 0.0f;
                break;
            case Activation::gelu:
                for (std::size_t i = 0; i < n; ++i) out[i] = gi[i] * gelu_grad(zi[i]);
                break;
            case Activation::tanh:
                for (std::size_t i = 0; i < n; ++i) {
                    const float t = std::tanh(zi[i]);
                    out[i] = gi[i] * (1.0f - t * t);
                }
                break;
            case Activation::none: std::memcpy(out, gi, n * sizeof(float)); break;
        }
        return store(out, dz);
    }

    RoundStats layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 Tensor& y, Tensor& mean, Tensor& rstd) override {
        CMap xv = view(x, m_a);
        CMap g = view(gamma, m_b);
        CMap bt = view(beta, m_d);
        const int B = x.rows(), D = x.cols();
        sized(m_c, B, D);
        auto* mu = static_cast<float*>(mean.data());
        auto* rs = static_cast<float*>(rstd.data());
        for (int r = 0; r < B; ++r) {
            float m = 0.0f;
            for (int c = 0; c < D; ++c) m += xv(r, c);
            m /= static_cast<float>(D);
            float var = 0.0f;
            for (int c = 0; c < D; ++c) var += (xv(r, c) - m) * (xv(r, c) - m);
            var /= static_cast<float>(D);
            const float s = 1.0f / std::sqrt(var + 1e-5f);
            mu[r] = m;
            rs[r] = s;
            for (int c = 0; c < D; ++c) m_c(r, c) = (xv(r, c) - m) * s * g(0, c) + bt(0, c);
        }
        return store(m_c.data(), y);
    }

    RoundStats layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                  Tensor& dbeta, Accumulate acc) override {
        CMap xv = view(x, m_a);
        CMap g = view(gamma, m_b);
        CMap dyv = view(dy, m_d);
        const int B = x.rows(), D = x.cols();
        const auto* mu = static_cast<const float*>(mean.data());
        const auto* rs = static_cast<const float*>(rstd.data());
        sized(m_c, B, D);
        RowMatrix dg = RowMatrix::Zero(1, D), dbt = RowMatrix::Zero(1, D);
        for (int r = 0; r < B; ++r) {
            float sum_dyg = 0.0f, sum_dyg_xhat = 0.0f;
            for (int c = 0; c < D; ++c) {
                const float xhat = (xv(r, c) - mu[r]) * rs[r];
                const float dyg = dyv(r, c) * g(0, c);
                sum_dyg += dyg;
                sum_dyg_xhat += dyg * xhat;
                dg(0, c) += dyv(r, c) * xhat;
                dbt(0, c) += dyv(r, c);
            }
            const float inv_d = 1.0f / static_cast<float>(D);
            for (int c = 0; c < D; ++c) {
                const float xhat = (xv(r, c) - mu[r]) * rs[r];
                const float dyg = dyv(r, c) * g(0, c);
                m_c(r, c) = rs[r] * (dyg - inv_d * sum_dyg - xhat * inv_d * sum_dyg_xhat);
            }
        }
        RoundStats s = store(m_c.data(), dx);
        s += accumulate_into(dg, dgamma.format(), dgamma, acc);
        s += accumulate_into(dbt, dbeta.format(), dbeta, acc);
        return s;
    }

    RoundStats dropout(Tensor& h, float p, std::uint64_t seed) override {
        CMap hv = view(h, m_a);
        sized(m_c, h.rows(), h.cols());
        m_c = hv;
        const float keep = 1.0f / (1.0f - p);
        float* out = m_c.data();
        for (std::size_t i = 0; i < h.size(); ++i)
            out[i] = hash_uniform(seed, i) < static_cast<double>(p) ? 0.0f : out[i] * keep;
        return store(out, h);
    }

    LossResult softmax_cross_entropy(const Tensor& logits, std::span<const int> labels, float scale,
                                     Tensor& dlogits) override {
        CMap lv = view(logits, m_a);
        const int B = logits.rows(), C = logits.cols();
        sized(m_c, B, C);
        double total = 0.0;
        const float inv_b = 1.0f / static_cast<float>(B);
        for (int r = 0; r < B; ++r) {
            float mx = lv(r, 0);
            for (int c = 1; c < C; ++c) mx = std::max(mx, lv(r, c));
            float sum = 0.0f;
            for (int c = 0; c < C; ++c) sum += std::exp(lv(r, c) - mx);
            const float lse = mx + std::log(sum);
            total += static_cast<double>(lse - lv(r, labels[r]));
            for (int c = 0; c < C; ++c) {
                const float prob = std::exp(lv(r, c) - lse);
                const float grad = (prob - (c == labels[r] ? 1.0f : 0.0f)) * inv_b;
                m_c(r, c) = grad * scale;
            }
        }
        LossResult res;
        res.loss = static_cast<float>(total / B);
        res.rounding = store(m_c.data(), dlogits);
        return res;
    }

    LossResult mse(const Tensor& pred, const Tensor& target, float scale, Tensor& dpred) override {
        CMap pv = view(pred, m_a);
        CMap tv = view(target, m_b);
        sized(m_c, pred.rows(), pred.cols());
        const float n = static_cast<float>(pred.size());
        double total = 0.0;
        for (Eigen::Index i = 0; i < m_c.size(); ++i) {
            const float d = pv.data()[i] - tv.data()[i];
            total += static_cast<double>(d * d);
            m_c.data()[i] = (2.0f * d / n) * scale;
        }
        LossResult res;
        res.loss = static_cast<float>(total / n);
        res.rounding = store(m_c.data(), dpred);
        return res;
    }

    double accuracy(const Tensor& logits, std::span<const int> labels) override {
        CMap lv = view(logits, m_a);
        int correct = 0;
        for (int r = 0; r < logits.rows(); ++r) {
            Eigen::Index arg;
            lv.row(r).maxCoeff(&arg);
            if (static_cast<int>(arg) == labels[r]) ++correct;
        }
        return logits.rows() ? static_cast<double>(correct) / logits.rows() : 0.0;
    }

    GradCheck unscale_and_check(const Tensor& grad, float inv_scale, Tensor& master_grad) override {
        GradCheck res;
        CMap gv = view(grad, m_a);
        auto* out = static_cast<float*>(master_grad.data());
        double ss = 0.0;
        bool bad = false;
        for (std::size_t i = 0; i < grad.size(); ++i) {
            const float v = gv.data()[i] * inv_scale;
            out[i] = v;
            if (!std::isfinite(v)) bad = true;
            ss += static_cast<double>(v) * v;
        }
        res.found_inf = bad;
        res.sum_squares = ss;
        return res;
    }

    void scale(Tensor& t, float factor) override {
        CMap v = view(t, m_a);
        sized(m_c, t.rows(), t.cols());
        m_c = v * factor;
        store(m_c.data(), t);
    }

    UpdateStats optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                                 Tensor& working, Tensor& state1, Tensor* state2) override {
        UpdateStats u;
        CMap gv = view(grad, m_a);
        // The weights the optimizer reads: the FP32 master, else the working copy's values.
        RowMatrix& w = m_c;
        sized(m_c, working.rows(), working.cols());
        if (master) w = CMap(static_cast<const float*>(master->data()), master->rows(), master->cols());
        else w = view(working, m_b);
        auto* m1 = static_cast<float*>(state1.data());
        auto* m2 = state2 ? static_cast<float*>(state2->data()) : nullptr;
        float* wd = w.data();
        const std::size_t n = grad.size();
        // moved[i]: the optimizer computed a non-zero change for weight i (NaN counts), whatever
        // rounding then made of it; it is lost when the stored working copy does not change.
        m_moved.assign(n, 0);
        switch (s.kind) {
            case OptimizerKind::sgd:
                // PyTorch SGD: g += wd·w; buf = momentum·buf + g; w −= lr·buf.
                for (std::size_t i = 0; i < n; ++i) {
                    const float g = gv.data()[i] + s.weight_decay * wd[i];
                    m1[i] = s.momentum * m1[i] + g;
                    const float delta = s.lr * m1[i];
                    wd[i] -= delta;
                    m_moved[i] = delta != 0.0f;
                }
                break;
            case OptimizerKind::adam:
            case OptimizerKind::adamw: {
                const float bc1 = 1.0f - std::pow(s.beta1, static_cast<float>(s.t));
                const float bc2 = 1.0f - std::pow(s.beta2, static_cast<float>(s.t));
                const float step_size = s.lr / bc1;
                const float bc2_sqrt = std::sqrt(bc2);
                const bool decoupled = s.kind == OptimizerKind::adamw;
                for (std::size_t i = 0; i < n; ++i) {
                    float g = gv.data()[i];
                    bool decayed = false;
                    if (decoupled) {
                        decayed = wd[i] != 0.0f && s.lr * s.weight_decay != 0.0f;
                        wd[i] *= 1.0f - s.lr * s.weight_decay;
                    } else {
                        g += s.weight_decay * wd[i];
                    }
                    m1[i] = s.beta1 * m1[i] + (1.0f - s.beta1) * g;
                    m2[i] = s.beta2 * m2[i] + (1.0f - s.beta2) * g * g;
                    const float denom = std::sqrt(m2[i]) / bc2_sqrt + s.eps;
                    const float delta = step_size * (m1[i] / denom);
                    wd[i] -= delta;
                    m_moved[i] = decayed || delta != 0.0f;
                }
                break;
            }
        }
        if (master) std::memcpy(master->data(), wd, n * sizeof(float));
        // Write back and count updates the working copy cannot show (below half its ulp).
        RowMatrix& before = m_a;
        sized(before, working.rows(), working.cols());
        decode_buffer(working.format(), working.data(), {before.data(), n});
        u.rounding = store(wd, working);
        RowMatrix& after = m_b;
        sized(after, working.rows(), working.cols());
        decode_buffer(working.format(), working.data(), {after.data(), n});
        for (std::size_t i = 0; i < n; ++i) {
            if (m_moved[i]) {
                ++u.changed;
                if (after.data()[i] == before.data()[i]) ++u.lost;
            }
        }
        return u;
    }

protected:
    void* raw_alloc(std::size_t bytes) override {
        void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) throw std::bad_alloc();
        return p;
    }
    void raw_free(void* p) noexcept override { std::free(p); }

private:
    // dst (+)= values rounded through `through`, then stored in dst's format.
    RoundStats accumulate_into(RowMatrix& values, Format through, Tensor& dst, Accumulate acc) {
        RoundStats s;
        const bool through_first = through != Format::fp32 && through != dst.format();
        if (through_first)
            s += round_in_place(through, {values.data(), static_cast<std::size_t>(values.size())});
        if (acc == Accumulate::add) {
            CMap old = view(dst, m_e);
            values += old;
        }
        RoundStats stored = store(values.data(), dst);
        if (through_first) stored.nonzero = 0;  // the same values, already counted once
        s += stored;
        return s;
    }

    // dy as linear_backward_weight left it in m_a (null: m_a holds nothing reusable).
    CMap dy_view(const Tensor& dy, Format compute) {
        const bool mapped = dy.format() == Format::fp32 && !narrower(compute, Format::fp32);
        if (!mapped && m_a_holds == &dy && m_a_compute == compute)
            return CMap(m_a.data(), dy.rows(), dy.cols());
        return view(dy, m_a, compute);
    }

    RowMatrix m_a, m_b, m_c, m_d, m_e;  // scratch, reused between ops
    const Tensor* m_a_holds = nullptr;
    std::vector<std::uint8_t> m_moved;  // optimizer_update: which weights the optimizer moved
    Format m_a_compute = Format::fp32;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace mpx
