// The CPU backend's backward ops against central finite differences of its own FP32 forward ops, and
// the rounding at storage boundaries (and what RoundStats counts there). The optimizer step against
// PyTorch's formulas: test_optimizer_step.cpp.
//
// Finite differences: a scalar L = Σ R ⊙ out (R fixed, random) is summed in double from the FP32
// outputs; the perturbation is the exact FP32 step fl(v ± h) − v with h = 2^-7, so the only errors are
// the forward's own FP32 rounding, about 6e-8 · Σ|R ⊙ out| / 2h ≈ 4e-6 · Σ|terms|, and truncation,
// h²/6 · |f'''| ≈ 1e-5 · |f'''|. Measured worst |g − fd| over all cases: 2.3e-5 (LayerNorm). The
// tolerance |g − fd| ≤ 3e-4 + 1e-3 |fd| keeps >10× margin over that and still fails for any wrong
// term: a missing factor or a dropped path changes gradients of size ~0.1–1 by far more.
#include "engine/compute/backend.hpp"
#include "engine/core/rng.hpp"
#include "engine/model/gpt.hpp"
#include "engine/model/model.hpp"
#include "backend_test_support.hpp"

#include <QtTest>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

using namespace mpx;
using namespace mpx::test;

namespace {

constexpr double k_h = 0x1p-7;

// A loss op alone: the mean loss it adds to the step record.
template <class Op>
double loss_of(Backend& be, Op&& op) {
    be.begin_step();
    op();
    const double loss = be.read_stats().loss_sum;
    be.begin_step();
    return loss;
}
std::vector<float> random_values(std::uint64_t seed, std::size_t n, double lo, double hi) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
    return v;
}
double dot(const std::vector<float>& a, const std::vector<float>& b) {
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0, std::plus<>(),
                              [](float x, float y) { return static_cast<double>(x) * y; });
}

// The worst |analytic − finite difference| over every element of each checked FP32 tensor.
struct Case {
    std::vector<std::pair<QString, double>> excess;  // per tensor: worst excess over the tolerance
    QString where;                                   // the first element beyond it
    double worst_abs = 0.0;
    void add(Tensor& t, const std::vector<float>& g, const std::function<double()>& loss,
             const QString& name) {
        float* p = static_cast<float*>(t.data());
        double worst = -std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < t.size(); ++i) {
            const float v = p[i], up = static_cast<float>(v + k_h), down = static_cast<float>(v - k_h);
            p[i] = up;
            const double lp = loss();
            p[i] = down;
            const double lm = loss();
            p[i] = v;
            const double fd = (lp - lm) / (static_cast<double>(up) - down);
            const double err = std::abs(g[i] - fd), excess_i = err - (3e-4 + 1e-3 * std::abs(fd));
            worst_abs = std::max(worst_abs, err);
            worst = std::max(worst, excess_i);
            if (excess_i > 0.0 && where.isEmpty())
                where = QStringLiteral("%1[%2]: analytic %3, finite difference %4")
                            .arg(name).arg(i).arg(g[i], 0, 'g', 9).arg(fd, 0, 'g', 9);
        }
        excess.emplace_back(name, worst);
    }
};

Tensor ws(Backend& be, int r, int c) { return be.alloc(Format::fp32, r, c, MemCategory::workspace); }

Case grad_linear(Backend& be) {
    const int B = 4, in = 3, out = 5;
    Tensor x = make(be, Format::fp32, B, in, random_values(1, B * in, -1, 1));
    Tensor w = make(be, Format::fp32, out, in, random_values(2, out * in, -1, 1));
    Tensor b = make(be, Format::fp32, 1, out, random_values(3, out, -1, 1));
    const auto R = random_values(4, B * out, -1, 1);
    Tensor y = ws(be, B, out), dx = ws(be, B, in), dw = ws(be, out, in), db = ws(be, 1, out);
    Tensor dy = make(be, Format::fp32, B, out, R);
    be.linear_backward_input(dy, w, Format::fp32, dx);
    be.linear_backward_weight(dy, x, Format::fp32, Format::fp32, dw, &db, Accumulate::overwrite);
    auto loss = [&] {
        be.linear_forward(x, w, &b, Format::fp32, y);
        return dot(get(be, y), R);
    };
    Case c;
    c.add(x, get(be, dx), loss, "x");
    c.add(w, get(be, dw), loss, "w");
    c.add(b, get(be, db), loss, "b");
    return c;
}

Case grad_activation(Backend& be, Activation a) {
    const int B = 4, D = 6;
    auto zv = random_values(5, B * D, -2.5, 2.5);
    if (a == Activation::relu)  // keep every value 10 steps away from the kink at 0
        for (auto& v : zv) v = v < 0 ? std::min(v, -0.1f) : std::max(v, 0.1f);
    Tensor z = make(be, Format::fp32, B, D, zv);
    const auto R = random_values(6, B * D, -1, 1);
    Tensor h = ws(be, B, D), dz = ws(be, B, D), dh = make(be, Format::fp32, B, D, R);
    be.activation_backward(a, z, dh, dz);
    Case c;
    c.add(z, get(be, dz), [&] { be.activation_forward(a, z, h); return dot(get(be, h), R); }, "z");
    return c;
}

Case grad_layernorm(Backend& be) {
    const int B = 3, D = 6;
    Tensor x = make(be, Format::fp32, B, D, random_values(7, B * D, -2, 2));
    Tensor gamma = make(be, Format::fp32, 1, D, random_values(8, D, 0.5, 1.5));
    Tensor beta = make(be, Format::fp32, 1, D, random_values(9, D, -0.5, 0.5));
    const auto R = random_values(10, B * D, -1, 1);
    Tensor y = ws(be, B, D), mean = ws(be, B, 1), rstd = ws(be, B, 1), dx = ws(be, B, D), dg = ws(be, 1, D),
           dbt = ws(be, 1, D), dy = make(be, Format::fp32, B, D, R);
    be.layernorm_forward(x, gamma, beta, y, mean, rstd);
    be.layernorm_backward(x, gamma, mean, rstd, dy, dx, dg, dbt, Accumulate::overwrite);
    auto loss = [&] {
        be.layernorm_forward(x, gamma, beta, y, mean, rstd);
        return dot(get(be, y), R);
    };
    Case c;
    c.add(x, get(be, dx), loss, "x");
    c.add(gamma, get(be, dg), loss, "gamma");
    c.add(beta, get(be, dbt), loss, "beta");
    return c;
}

Case grad_loss(Backend& be, bool cross_entropy) {
    const int B = 4, C = 3;
    Tensor logits = make(be, Format::fp32, B, C, random_values(11, B * C, -2, 2));
    Tensor target = make(be, Format::fp32, B, C, random_values(12, B * C, -1, 1));
    const std::vector<int> labels{0, 2, 1, 2};
    Tensor d = ws(be, B, C);
    auto loss = [&] {
        return loss_of(be, [&] {
            if (cross_entropy) be.softmax_cross_entropy(logits, labels, 1.0f, d);
            else be.mse(logits, target, 1.0f, d);
        });
    };
    loss();
    const auto g = get(be, d);
    Case c;
    c.add(logits, g, loss, "logits");
    // The scale multiplies the stored gradient (a power of two: exactly).
    cross_entropy ? be.softmax_cross_entropy(logits, labels, 1024.0f, d) : be.mse(logits, target, 1024.0f, d);
    const auto g1024 = get(be, d);
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g1024[i] != g[i] * 1024.0f) c.excess.emplace_back("scale 1024", 1.0);
    return c;
}

// Cross-entropy plus the z-loss λ·mean (log Z)² (train.z_loss) on logits of about ±6 (log Z ≈ 6, so
// the z-loss's gradient 2λ·log Z·p is a tenth of the cross-entropy's at λ = 0.01).
Case grad_z_loss(Backend& be) {
    const int B = 4, C = 5;
    Tensor logits = make(be, Format::fp32, B, C, random_values(13, B * C, -6, 6));
    const std::vector<int> labels{0, 4, 1, 2};
    Tensor d = ws(be, B, C);
    auto loss = [&] { return loss_of(be, [&] { be.softmax_cross_entropy_z(logits, labels, 0.01f, 1.0f, d); }); };
    loss();
    Case c;
    c.add(logits, get(be, d), loss, "logits");
    return c;
}

Case grad_mlp(Backend& be, Activation a, bool layernorm) {
    ModelConfig m;
    m.sizes = {3, 5, 4, 3};
    m.activation = a;
    m.layernorm = layernorm;
    const int B = 4;
    Mlp mlp(be, m, layer_precisions(RunSpec{}, m.layers(), {}), B, init_weights(m, 7), OptimizerKind::adam);
    const auto xv = random_values(13, B * 3, -1.5, 1.5);
    mlp.set_input(Eigen::Map<const RowMatrix>(xv.data(), B, 3));
    const std::vector<int> labels{2, 0, 1, 1};
    // Biases and LayerNorm's gamma/beta (start 1/0): random, so their gradients are generic.
    std::uint64_t seed = 100;
    for (Param& p : mlp.params())
        if (p.working.format() == Format::fp32 && p.working.rows() == 1)
            be.upload(random_values(seed++, p.working.size(), -0.8, 0.8), p.working);
    auto loss = [&] {
        return loss_of(be, [&] {
            const Tensor& logits = mlp.forward(0, false);
            be.softmax_cross_entropy(logits, labels, 1.0f, mlp.dlogits());
        });
    };
    loss();
    mlp.backward(mlp.dlogits(), 0, Accumulate::overwrite);
    std::vector<std::vector<float>> grads;
    for (Param& p : mlp.params()) grads.push_back(get(be, p.grad));
    Case c;
    for (std::size_t k = 0; k < mlp.params().size(); ++k)
        c.add(mlp.params()[k].working, grads[k], loss, QStringLiteral("param%1").arg(k));
    return c;
}

// The GPT's attention op alone (B 2, T 5, 2 heads of 3): q, k, v against L = Σ R ⊙ y. Values up to
// ±1.5 make the softmax far from uniform, so every term of its backward matters.
Case grad_attention(Backend& be, AttentionScale where, float softcap) {
    const AttentionShape s{2, 5, 2, 6};
    const int N = s.batch * s.T, C = s.embd, rows = s.batch * s.heads * s.T;
    AttentionOptions o;
    o.factors = core::attention_factors(where, s.head_size());
    o.softcap = softcap;
    Tensor qkv = make(be, Format::fp32, N, 3 * C, random_values(21, static_cast<std::size_t>(N) * 3 * C, -1.5, 1.5));
    Tensor scores = ws(be, rows, s.T), probs = ws(be, rows, s.T), y = ws(be, N, C), dqkv = ws(be, N, 3 * C);
    const auto R = random_values(22, static_cast<std::size_t>(N) * C, -1, 1);
    Tensor dy = make(be, Format::fp32, N, C, R);
    be.attention_forward(qkv, s, o, scores, probs, y);
    be.attention_backward(qkv, probs, dy, s, o, dqkv);
    Case c;
    c.add(qkv, get(be, dqkv), [&] {
        be.attention_forward(qkv, s, o, scores, probs, y);
        return dot(get(be, y), R);
    }, "qkv");
    return c;
}

// Embeddings (a repeated token: its rows add) and the residual add, against L = Σ R ⊙ out.
Case grad_embedding(Backend& be) {
    const int V = 5, T = 3, C = 4, N = 6;
    const std::vector<int> tokens{1, 4, 1, 0, 1, 3};
    Tensor wte = make(be, Format::fp32, V, C, random_values(23, V * C, -1, 1));
    Tensor wpe = make(be, Format::fp32, T, C, random_values(24, T * C, -1, 1));
    Tensor other = make(be, Format::fp32, N, C, random_values(25, N * C, -1, 1));
    const auto R = random_values(26, N * C, -1, 1);
    Tensor x = ws(be, N, C), sum = ws(be, N, C), dwte = ws(be, V, C), dwpe = ws(be, T, C);
    Tensor dx = make(be, Format::fp32, N, C, R);
    be.embedding_backward(tokens, T, dx, dwte, Accumulate::overwrite, dwpe, Accumulate::overwrite);
    auto loss = [&] {
        be.embedding_forward(tokens, T, wte, wpe, x);
        be.add(x, other, sum);
        return dot(get(be, sum), R);
    };
    Case c;
    c.add(wte, get(be, dwte), loss, "wte");
    c.add(wpe, get(be, dwpe), loss, "wpe");
    c.add(other, R, loss, "add");
    return c;
}

// A whole GPT (2 blocks, 2 heads, width 8, context 4, 7 symbols, batch 2) in FP32: every parameter
// against the mean cross-entropy of the next tokens. Weights drawn 10× nanoGPT's 0.02, LayerNorm's
// γ and β random, so no gradient is negligibly small.
Case grad_gpt(Backend& be, AttentionScale where, float softcap, bool tied, float z_loss = 0.0f, bool qk_norm = false) {
    ModelConfig m;
    m.kind = ModelKind::gpt;
    m.gpt = GptConfig{2, 2, 8, 4, tied, 7};
    m.attention.scale = where;
    m.attention.softcap = softcap;
    m.attention.qk_norm = qk_norm;
    const int B = 2;
    InitialWeights init = init_weights(m, 5);
    for (RowMatrix& t : init.tensors) t *= 10.0f;
    std::vector<std::string> names;
    for (int l = 0; l < m.layers(); ++l) names.push_back(layer_name(m, l));
    PolicyOptions opt;
    opt.names = names;
    const auto model = make_model(be, m, layer_precisions(RunSpec{}, m.layers(), opt), B, init, OptimizerKind::adam);
    std::uint64_t seed = 200;
    for (Param& p : model->params())
        if (p.working.rows() == 1) be.upload(random_values(seed++, p.working.size(), -0.8, 0.8), p.working);
    const std::vector<float> tokens{3, 0, 6, 2, 5, 5, 1, 4};
    model->set_input(Eigen::Map<const RowMatrix>(tokens.data(), B, 4));
    const std::vector<int> labels{0, 6, 2, 1, 5, 1, 4, 3};
    auto loss = [&] {
        return loss_of(be, [&] {
            const Tensor& logits = model->forward(0, true);
            be.softmax_cross_entropy_z(logits, labels, z_loss, 1.0f, model->dlogits());
        });
    };
    loss();
    model->backward(model->dlogits(), 0, Accumulate::overwrite);
    std::vector<std::vector<float>> grads;
    for (Param& p : model->params()) grads.push_back(get(be, p.grad));
    const auto pnames = gpt_param_names(m.gpt, m.attention.qk_norm);
    Case c;
    for (std::size_t k = 0; k < model->params().size(); ++k)
        c.add(model->params()[k].working, grads[k], loss, QString::fromStdString(pnames[k]));
    return c;
}

// Counts what rounding `ref` into format f does, by hand.
RoundStats count_by_hand(Format f, const std::vector<float>& ref) {
    RoundStats s;
    for (float v : ref) {
        const float r = round_to(f, v);
        if (std::isfinite(v) && std::isinf(r)) ++s.overflow;
        if (v != 0.0f && !std::isnan(v) && r == 0.0f) ++s.underflow;
        if (r != 0.0f && std::abs(r) < info(f).min_normal) ++s.subnormal;
    }
    return s;
}

// (rows, cols) values sign · U[0.5, 1) · 2^(a_r + b_c): row exponents a_r spread evenly over −14..8,
// column exponents b_c random in −2..2. Products of two such matrices reach past FP16's 65504 in
// some rows and below its smallest subnormal 2^-24 in others.
std::vector<float> wide_values(std::uint64_t seed, int rows, int cols) {
    Rng rng(seed);
    std::vector<double> b(static_cast<std::size_t>(cols));
    for (auto& e : b) e = rng.uniform(-2, 2);
    std::vector<float> v;
    for (int r = 0; r < rows; ++r) {
        const double a = rows > 1 ? -14.0 + 22.0 * r / (rows - 1) : 0.0;
        for (int c = 0; c < cols; ++c)
            v.push_back(static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) * rng.uniform(0.5, 1.0) *
                                           std::exp2(a + b[static_cast<std::size_t>(c)])));
    }
    return v;
}

}  // namespace

class TestGradients : public QObject {
    Q_OBJECT

private slots:
    void backward_matches_finite_difference_data() {
        QTest::addColumn<QString>("kind");
        for (const char* k : {"linear", "relu", "gelu", "tanh", "layernorm", "cross_entropy", "mse",
                              "mlp_3_5_4_3_gelu_layernorm", "mlp_3_5_4_3_tanh_layernorm",
                              "mlp_3_5_4_3_gelu_plain", "attention_after", "attention_before", "attention_split",
                              "attention_softcap_2", "embedding_and_add", "gpt_tied_after", "gpt_untied_split",
                              "gpt_softcap_3_before", "cross_entropy_z_loss", "gpt_tied_z_loss_0.01", "gpt_qk_norm_after",
                              "gpt_qk_norm_split_untied"})
            QTest::newRow(k) << QString::fromLatin1(k);
    }
    void backward_matches_finite_difference() {
        QFETCH(QString, kind);
        auto be = make_cpu_backend();
        Case c;
        if (kind == "linear") c = grad_linear(*be);
        else if (kind == "relu") c = grad_activation(*be, Activation::relu);
        else if (kind == "gelu") c = grad_activation(*be, Activation::gelu);
        else if (kind == "tanh") c = grad_activation(*be, Activation::tanh);
        else if (kind == "layernorm") c = grad_layernorm(*be);
        else if (kind == "cross_entropy") c = grad_loss(*be, true);
        else if (kind == "mse") c = grad_loss(*be, false);
        else if (kind == "mlp_3_5_4_3_gelu_layernorm") c = grad_mlp(*be, Activation::gelu, true);
        else if (kind == "mlp_3_5_4_3_tanh_layernorm") c = grad_mlp(*be, Activation::tanh, true);
        else if (kind == "attention_after") c = grad_attention(*be, AttentionScale::after, 0.0f);
        else if (kind == "attention_before") c = grad_attention(*be, AttentionScale::before, 0.0f);
        else if (kind == "attention_split") c = grad_attention(*be, AttentionScale::split, 0.0f);
        else if (kind == "attention_softcap_2") c = grad_attention(*be, AttentionScale::after, 2.0f);
        else if (kind == "embedding_and_add") c = grad_embedding(*be);
        else if (kind == "gpt_tied_after") c = grad_gpt(*be, AttentionScale::after, 0.0f, true);
        else if (kind == "gpt_untied_split") c = grad_gpt(*be, AttentionScale::split, 0.0f, false);
        else if (kind == "gpt_softcap_3_before") c = grad_gpt(*be, AttentionScale::before, 3.0f, true);
        else if (kind == "cross_entropy_z_loss") c = grad_z_loss(*be);
        else if (kind == "gpt_tied_z_loss_0.01") c = grad_gpt(*be, AttentionScale::after, 0.0f, true, 0.01f);
        else if (kind == "gpt_qk_norm_after") c = grad_gpt(*be, AttentionScale::after, 0.0f, true, 0.0f, true);
        else if (kind == "gpt_qk_norm_split_untied") c = grad_gpt(*be, AttentionScale::split, 0.0f, false, 0.0f, true);
        else c = grad_mlp(*be, Activation::gelu, false);
        QVERIFY(!c.excess.empty());
        qInfo("%s: worst |analytic - fd| = %.3g", qPrintable(kind), c.worst_abs);
        for (const auto& [name, e] : c.excess) QVERIFY2(e <= 0.0, qPrintable(name + ": " + c.where));
    }

    // The z-loss against an independent double computation: log Z_r = log Σ_c exp(x_rc) in double;
    // loss = mean_r (log Z_r − x_r,label) + λ·mean_r (log Z_r)²; ∂/∂x_rc = (p_rc − [c = label] +
    // 2λ·log Z_r·p_rc) / B. The engine's FP32 loss within 1e-6 relative, each gradient within 1e-6 of
    // the largest; λ·mean (log Z)² is what z_loss adds to the plain cross-entropy (within 1e-6).
    void z_loss_matches_double_computation() {
        auto be = make_cpu_backend();
        const int B = 6, C = 7;
        const double lambda = 1e-2;
        const std::vector<float> x = random_values(21, B * C, -8, 8);
        const std::vector<int> labels{0, 6, 3, 2, 5, 1};
        Tensor logits = make(*be, Format::fp32, B, C, x);
        Tensor d = ws(*be, B, C);
        const double with = loss_of(*be, [&] { be->softmax_cross_entropy_z(logits, labels, static_cast<float>(lambda), 1.0f, d); });
        const std::vector<float> g = get(*be, d);
        const double plain = loss_of(*be, [&] { be->softmax_cross_entropy(logits, labels, 1.0f, d); });
        double ce = 0.0, z = 0.0, gmax = 0.0, worst = 0.0;
        std::vector<double> ref(x.size());
        for (int r = 0; r < B; ++r) {
            double m = -1e300, s = 0.0;
            for (int c = 0; c < C; ++c) m = std::max(m, static_cast<double>(x[r * C + c]));
            for (int c = 0; c < C; ++c) s += std::exp(x[r * C + c] - m);
            const double lse = m + std::log(s);
            ce += lse - x[r * C + labels[r]];
            z += lse * lse;
            for (int c = 0; c < C; ++c) {
                const double p = std::exp(x[r * C + c] - lse);
                ref[r * C + c] = (p - (c == labels[r] ? 1.0 : 0.0) + 2.0 * lambda * lse * p) / B;
                gmax = std::max(gmax, std::abs(ref[r * C + c]));
            }
        }
        const double want = ce / B + lambda * z / B;
        for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(g[i] - ref[i]));
        qInfo("z-loss: loss %.9g (double %.9g), z part %.6g; worst gradient error %.3g of %.3g", with, want, lambda * z / B, worst, gmax);
        QVERIFY2(std::abs(with - want) <= 1e-6 * want, qPrintable(QString::number(with - want)));
        QVERIFY(std::abs((with - plain) - lambda * z / B) <= 1e-6 * want);
        QVERIFY(lambda * z / B > 0.1);  // the z-loss is a visible part of this loss
        QVERIFY2(worst <= 1e-6 * gmax, qPrintable(QString::number(worst)));
    }

    // The engine's own tanh (GELU, tanh, the soft-cap): within 2 ulp of the exact value on every
    // 997th float of every binade, both signs; odd; ±inf → ±1, NaN → NaN.
    void engine_tanh_is_within_two_ulp() {
        const auto ulps = [](float a, float b) {
            if (a == b) return 0LL;
            if (std::signbit(a) != std::signbit(b)) return 1LL << 40;
            return std::llabs(static_cast<long long>(std::bit_cast<std::int32_t>(a)) - std::bit_cast<std::int32_t>(b));
        };
        long long worst = 0;
        float at = 0.0f;
        for (std::uint32_t b = 0; b < 0x7f800000u; b += 997)
            for (const float x : {std::bit_cast<float>(b), -std::bit_cast<float>(b)}) {
                const long long d = ulps(core::tanh_f32(x), static_cast<float>(std::tanh(static_cast<double>(x))));
                if (d > worst) worst = d, at = x;
            }
        QVERIFY2(worst <= 2, qPrintable(QStringLiteral("%1 ulp at %2").arg(worst).arg(at, 0, 'g', 9)));
        QVERIFY(worst >= 1);  // not the library's function under another name
        QCOMPARE(core::tanh_f32(std::numeric_limits<float>::infinity()), 1.0f);
        QCOMPARE(core::tanh_f32(-std::numeric_limits<float>::infinity()), -1.0f);
        QVERIFY(std::isnan(core::tanh_f32(std::numeric_limits<float>::quiet_NaN())));
        QVERIFY(std::signbit(core::tanh_f32(-0.0f)));
        QCOMPARE(core::tanh_f32(0.3f), -core::tanh_f32(-0.3f));
    }

    // Every op computes in FP32 and rounds only when it stores: an FP16/BF16 destination holds exactly
    // round_to(format, the FP32 destination's value), and RoundStats counts what that rounding did.
    void low_precision_result_is_rounded_fp32_result_data() {
        QTest::addColumn<QString>("op");
        QTest::addColumn<int>("format");
        for (const char* op : {"linear_forward", "linear_backward_input", "linear_backward_weight",
                               "linear_backward_weight_through", "gelu_forward", "tanh_backward",
                               "layernorm_forward", "cross_entropy_grad", "mse_grad"})
            for (Format f : {Format::fp16, Format::bf16})
                QTest::addRow("%s_%s", op, to_string(f).data()) << QString::fromLatin1(op) << int(f);
    }
    void low_precision_result_is_rounded_fp32_result() {
        QFETCH(QString, op);
        QFETCH(int, format);
        const Format f = static_cast<Format>(format);
        auto be = make_cpu_backend();
        const int B = 8, in = 16, out = 12;
        Tensor x = make(*be, Format::fp32, B, in, wide_values(1, B, in));
        Tensor w = make(*be, Format::fp32, out, in, wide_values(2, out, in));
        auto bias = wide_values(3, out, 1);  // spread like w's rows, but small enough not to swamp
        for (auto& v : bias) v *= 0x1p-20f;   // the tiny products
        Tensor b = make(*be, Format::fp32, 1, out, bias);
        Tensor dy = make(*be, Format::fp32, B, out, wide_values(4, B, out));
        Tensor z = make(*be, Format::fp32, B, out, random_values(5, B * out, -4, 4));
        Tensor g = make(*be, Format::fp32, 1, out, wide_values(6, 1, out));
        Tensor bt = make(*be, Format::fp32, 1, out, random_values(7, out, -1, 1));
        const std::vector<int> labels{0, 1, 2, 3, 4, 5, 6, 7};
        // The op's result (and stats) with a destination in format dst.
        auto run = [&](Format dst, RoundStats& st) {
            Tensor o = be->alloc(dst, B, op == "linear_backward_input" ? in : out, MemCategory::workspace);
            std::vector<float> extra;
            if (op == "linear_forward") st = counted(*be, [&] { be->linear_forward(x, w, &b, Format::fp32, o); });
            else if (op == "linear_backward_input")
                st = counted(*be, [&] { be->linear_backward_input(dy, w, Format::fp32, o); });
            else if (op.startsWith("linear_backward_weight")) {
                // "through": FP32 dw and db written through the low format (autocast's GEMM output).
                const bool through = op.endsWith("through");
                const Format d = through ? Format::fp32 : dst;
                o = be->alloc(d, out, in, MemCategory::workspace);
                Tensor db = be->alloc(d, 1, out, MemCategory::workspace);
                st = counted(*be, [&] {
                    be->linear_backward_weight(dy, x, Format::fp32, through ? dst : Format::fp32, o, &db,
                                               Accumulate::overwrite);
                });
                extra = get(*be, db);
            } else if (op == "gelu_forward") st = counted(*be, [&] { be->activation_forward(Activation::gelu, z, o); });
            else if (op == "tanh_backward")
                st = counted(*be, [&] { be->activation_backward(Activation::tanh, z, dy, o); });
            else if (op == "layernorm_forward") {
                Tensor mean = ws(*be, B, 1), rstd = ws(*be, B, 1);
                st = counted(*be, [&] { be->layernorm_forward(z, g, bt, o, mean, rstd); });
            } else if (op == "cross_entropy_grad")
                st = counted(*be, [&] { be->softmax_cross_entropy(z, labels, 0x1p20f, o); });
            else st = counted(*be, [&] { be->mse(z, dy, 1e-3f, o); });
            auto res = get(*be, o);
            res.insert(res.end(), extra.begin(), extra.end());
            return res;
        };
        RoundStats st32, stlo;
        const auto ref = run(Format::fp32, st32);
        const auto low = run(f, stlo);
        QCOMPARE(low.size(), ref.size());
        for (std::size_t i = 0; i < ref.size(); ++i)
            QVERIFY2(std::bit_cast<std::uint32_t>(low[i]) == std::bit_cast<std::uint32_t>(round_to(f, ref[i])),
                     qPrintable(QStringLiteral("element %1: stored %2, round_to(fp32 result %3) = %4")
                                    .arg(i).arg(low[i]).arg(ref[i]).arg(round_to(f, ref[i]))));
        const RoundStats hand = count_by_hand(f, ref);
        QCOMPARE(stlo.overflow, hand.overflow);
        QCOMPARE(stlo.underflow, hand.underflow);
        QCOMPARE(stlo.subnormal, hand.subnormal);
        QCOMPARE(st32.overflow + st32.underflow, std::size_t(0));
        // The wide inputs must really reach FP16's limits (else the row proves little).
        if (f == Format::fp16 && op.startsWith("linear")) QVERIFY(hand.overflow > 0);
        if (f == Format::fp16 && op == "linear_forward") QVERIFY(hand.underflow > 0);
    }

    // Crafted values, counted by hand; the same values through upload and through a 1×1 · (n×1)ᵀ GEMM
    // (multiplying by 1 is exact in FP32) must count the same.
    void round_stats_count_crafted_values_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<QList<float>>("values");
        QTest::addColumn<int>("overflow");
        QTest::addColumn<int>("underflow");
        QTest::addColumn<int>("subnormal");
        const float m = std::numeric_limits<float>::max(), inf = std::numeric_limits<float>::infinity();
        QTest::newRow("fp16_65520_and_1e5_overflow") << int(Format::fp16) << QList<float>{65520.0f, -1e5f, 65504.0f, 1.0f} << 2 << 0 << 0;
        QTest::newRow("fp16_gemm_256x256_sum_overflows") << int(Format::fp16) << QList<float>{131072.0f, 512.0f} << 1 << 0 << 0;
        // 2^-26 and the tie 2^-25 go to 0; 3·2^-26 rounds up to 2^-24; 2^-24 stays (subnormal).
        QTest::newRow("fp16_below_half_min_subnormal_underflows")
            << int(Format::fp16) << QList<float>{0x1p-26f, -0x1p-26f, 0x1p-25f, 3 * 0x1p-26f, 0x1p-24f, 0.0f, 0x1p-14f} << 0 << 3 << 2;
        QTest::newRow("fp16_inf_nan_zero_not_counted") << int(Format::fp16) << QList<float>{inf, -inf, std::nanf(""), 0.0f, -0.0f} << 0 << 0 << 0;
        QTest::newRow("bf16_flt_max_overflows") << int(Format::bf16) << QList<float>{m, -m, 1e38f, 65520.0f} << 2 << 0 << 0;
        QTest::newRow("bf16_no_underflow_where_fp16_would") << int(Format::bf16) << QList<float>{0x1p-26f, 0x1p-40f, 1e-30f} << 0 << 0 << 0;
    }
    void round_stats_count_crafted_values() {
        QFETCH(int, format);
        QFETCH(QList<float>, values);
        QFETCH(int, overflow);
        QFETCH(int, underflow);
        QFETCH(int, subnormal);
        const Format f = static_cast<Format>(format);
        auto be = make_cpu_backend();
        const int n = static_cast<int>(values.size());
        const std::vector<float> v(values.begin(), values.end());
        Tensor up = be->alloc(f, 1, n, MemCategory::workspace);
        const RoundStats a = counted(*be, [&] { be->upload(v, up); });
        Tensor one = make(*be, Format::fp32, 1, 1, {1.0f});
        Tensor w = make(*be, Format::fp32, n, 1, v);
        Tensor y = be->alloc(f, 1, n, MemCategory::workspace);
        const RoundStats g = counted(*be, [&] { be->linear_forward(one, w, nullptr, Format::fp32, y); });
        for (const RoundStats& s : {a, g}) {
            QCOMPARE(int(s.overflow), overflow);
            QCOMPARE(int(s.underflow), underflow);
            QCOMPARE(int(s.subnormal), subnormal);
        }
        const auto vy = get(*be, y), vu = get(*be, up);
        for (int i = 0; i < n; ++i)
            QVERIFY(vy[i] == vu[i] || (std::isnan(vy[i]) && std::isnan(vu[i])));
    }

    void gemm_256x256_overflows_fp16_not_bf16() {
        auto be = make_cpu_backend();
        Tensor x = make(*be, Format::fp32, 1, 2, {256.0f, 256.0f});
        Tensor w = make(*be, Format::fp32, 2, 2, {256.0f, 256.0f, 1.0f, 1.0f});
        Tensor y16 = be->alloc(Format::fp16, 1, 2, MemCategory::workspace),
               y_bf = be->alloc(Format::bf16, 1, 2, MemCategory::workspace);
        QCOMPARE(int(counted(*be, [&] { be->linear_forward(x, w, nullptr, Format::fp32, y16); }).overflow), 1);
        QCOMPARE(int(counted(*be, [&] { be->linear_forward(x, w, nullptr, Format::fp32, y_bf); }).overflow), 0);
        QCOMPARE(get(*be, y16), (std::vector<float>{std::numeric_limits<float>::infinity(), 512.0f}));
        QCOMPARE(get(*be, y_bf), (std::vector<float>{131072.0f, 512.0f}));
    }
};

QTEST_APPLESS_MAIN(TestGradients)
#include "test_gradients.moc"
