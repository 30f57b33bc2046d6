// The gradient penalty of a run (train.gradient_penalty; engine/run/run_penalty.cpp) against the
// double reference of tests/hvp_reference.hpp: the recorded penalty λ·‖g‖ (or λ·‖g‖²) and the norm of
// the gradient the optimizer receives, ∇loss + λ·H·g/‖g‖ (or + 2λ·H·g), with accumulation summing
// the micro-batches' terms; the +no-unscale mistake's penalty exactly S times the right one; the
// same bits on 1, 2 and 3 threads.
#include <QtTest>

#include "engine/base/parallel.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "engine/run/run.hpp"
#include "hvp_reference.hpp"

using namespace mpx;
using namespace mpx::test;

namespace {

constexpr int k_batch = 8;

SessionConfig config(double lambda, PenaltyKind kind, int accumulation) {
    SessionConfig c;
    c.model.sizes = {2, 8, 6, 2};
    c.model.activation = Activation::tanh;
    c.train.batch = k_batch;
    c.train.accumulation = accumulation;
    c.train.optimizer = OptimizerKind::sgd;
    c.train.lr = 0.0;
    c.train.gradient_penalty = lambda;
    c.train.penalty = kind;
    c.runs = {"fp32"};
    return c;
}

Batch batch(std::uint64_t seed) {
    Batch b;
    b.x.resize(k_batch, 2);
    for (int i = 0; i < b.x.size(); ++i) b.x.data()[i] = static_cast<float>(uniform(seed) * 1.5);
    for (int i = 0; i < k_batch; ++i) b.labels.push_back(uniform(seed) > 0 ? 1 : 0);
    return b;
}

// The reference MLP of a batch at the session's initial weights (as the run holds them: floats).
Net net_of(const SessionConfig& c, const Batch& b, Vec& theta) {
    Net n;
    n.sizes = c.model.sizes;
    n.act = c.model.activation;
    n.B = k_batch;
    for (int i = 0; i < b.x.size(); ++i) n.X.push_back(b.x.data()[i]);
    n.labels = b.labels;
    const InitialWeights init = init_weights(c.model, c.seed);
    theta.clear();
    for (std::size_t l = 0; l < init.w.size(); ++l) {
        for (int i = 0; i < init.w[l].size(); ++i) theta.push_back(init.w[l].data()[i]);
        for (int i = 0; i < init.b[l].size(); ++i) theta.push_back(init.b[l].data()[i]);
    }
    return n;
}

double norm(const Vec& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
}

StepRecord first_step(const SessionConfig& c, const std::string& label, const std::vector<Batch>& micro) {
    validate(c);
    Run run(0, resolve_run(label, c), c, init_weights(c.model, c.seed), make_cpu_backend());
    return run.step(0, micro, LossKind::cross_entropy);
}

}  // namespace

class TestPenalty : public QObject {
    Q_OBJECT
private slots:
    void penalty_and_gradient_match_double_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("accumulation");
        QTest::newRow("norm") << int(PenaltyKind::norm) << 1;
        QTest::newRow("squared_norm") << int(PenaltyKind::squared_norm) << 1;
        QTest::newRow("norm, 2 micro-batches") << int(PenaltyKind::norm) << 2;
        QTest::newRow("squared_norm, 2 micro-batches") << int(PenaltyKind::squared_norm) << 2;
    }
    // Per micro-batch k of K: g_k = ∇(loss_k / K), the penalty λ·P(g_k), the gradient g_k + λ·∇P.
    void penalty_and_gradient_match_double() {
        QFETCH(int, kind);
        QFETCH(int, accumulation);
        const double lambda = 0.3;
        const auto pk = static_cast<PenaltyKind>(kind);
        const SessionConfig c = config(lambda, pk, accumulation);
        std::vector<Batch> micro;
        for (int k = 0; k < accumulation; ++k) micro.push_back(batch(11 + static_cast<std::uint64_t>(k)));
        double penalty = 0;
        Vec total;
        for (const Batch& b : micro) {
            Vec th;
            const Net n = net_of(c, b, th);
            Vec g = gradient(n, th);
            for (double& x : g) x /= accumulation;
            Vec hg = hv_r_operator(n, th, g);
            for (double& x : hg) x /= accumulation;
            const double p = norm(g);
            penalty += lambda * (pk == PenaltyKind::norm ? p : p * p);
            total.resize(g.size(), 0.0);
            for (std::size_t i = 0; i < g.size(); ++i)
                total[i] += g[i] + lambda * (pk == PenaltyKind::norm ? hg[i] / p : 2 * hg[i]);
        }
        const StepRecord r = first_step(c, "fp32", micro);
        QVERIFY(r.penalty.has_value());
        QVERIFY2(std::fabs(*r.penalty - penalty) <= 1e-6 * penalty, qPrintable(QString::number(*r.penalty / penalty - 1)));
        const double want = norm(total);
        QVERIFY2(std::fabs(r.grad_norm - want) <= 1e-5 * want, qPrintable(QString::number(r.grad_norm / want - 1)));
        // Not the plain gradient's norm: the penalty's part is there.
        Vec plain(total.size(), 0.0);
        for (const Batch& b : micro) {
            Vec th;
            const Vec g = gradient(net_of(c, b, th), th);
            for (std::size_t i = 0; i < g.size(); ++i) plain[i] += g[i] / accumulation;
        }
        QVERIFY(std::fabs(norm(plain) - want) > 1e-3 * want);
    }

    // PyTorch's mistake of forgetting × 1/S: ĝ = S·g, so the penalty is S·‖g‖ exactly (S a power of
    // two: every product, sum and the square root scale exactly) on the same weights and batch.
    void no_unscale_penalty_is_exactly_s_times() {
        SessionConfig c = config(0.3, PenaltyKind::norm, 1);
        c.runs = {"amp-fp16", "amp-fp16+no-unscale"};
        const std::vector<Batch> micro{batch(11)};
        const StepRecord right = first_step(c, "amp-fp16", micro), wrong = first_step(c, "amp-fp16+no-unscale", micro);
        QCOMPARE(right.loss_scale, 65536.0);
        QCOMPARE(*wrong.penalty, 65536.0 * *right.penalty);
        c.train.penalty = PenaltyKind::squared_norm;  // S² for the squared form
        QCOMPARE(*first_step(c, "amp-fp16+no-unscale", micro).penalty,
                 65536.0 * 65536.0 * *first_step(c, "amp-fp16", micro).penalty);
    }

    // Without a loss scale (FP32, S = 1) the gradients of the unscaled loss are the scaled ones: the
    // mistake's path (its own gradient tensors, the loss's gradient taken again, counted once) gives
    // the recipe's bits, loss included; one micro-batch and two.
    void unscaled_grads_path_equals_the_recipe_at_scale_one() {
        for (int accumulation : {1, 2}) {
            SessionConfig c = config(0.3, PenaltyKind::norm, accumulation);
            std::vector<Batch> micro;
            for (int k = 0; k < accumulation; ++k) micro.push_back(batch(21 + static_cast<std::uint64_t>(k)));
            const StepRecord right = first_step(c, "fp32", micro);
            c.train.penalty_scaled_grads = false;
            const StepRecord path = first_step(c, "fp32", micro);
            QCOMPARE(path.loss, right.loss);
            QCOMPARE(path.grad_norm, right.grad_norm);
            QCOMPARE(*path.penalty, *right.penalty);
        }
    }

    void same_bits_on_one_two_three_threads() {
        const SessionConfig c = config(0.3, PenaltyKind::norm, 2);
        const std::vector<Batch> micro{batch(11), batch(12)};
        std::optional<StepRecord> first;
        for (unsigned t : {1u, 2u, 3u}) {
            set_thread_count(t);
            const StepRecord r = first_step(c, "fp32", micro);
            if (!first) first = r;
            QCOMPARE(r.grad_norm, first->grad_norm);
            QCOMPARE(*r.penalty, *first->penalty);
        }
        set_thread_count(1);
    }
};

QTEST_APPLESS_MAIN(TestPenalty)
#include "test_penalty.moc"
