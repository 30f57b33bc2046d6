// Hessian-vector products (Pearlmutter's R-operator, engine/core/r_op.hpp): the R-rules, run in
// double over a small MLP, against central differences of that MLP's gradient written here
// independently in double (every activation, LayerNorm, dropout with a fixed mask, both losses), to
// 1e-6 relative; then the engine's FP32 R-passes (Mlp::r_forward / r_backward on the CPU backend)
// against those double values, and their bits on 1, 2 and 3 threads.
#include <QtTest>

#include <cmath>
#include <functional>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/compute/backend.hpp"
#include "engine/core/r_op.hpp"
#include "engine/model/model.hpp"

using namespace mpx;

#include "hvp_reference.hpp"

using namespace mpx::test;

namespace {

// The engine's H·v: an FP32 Mlp on the CPU backend at θ (as floats), one forward, the loss op,
// one backward, then r_forward(v), the loss's R-op and r_backward into the gradients.
Vec engine_hv(const Net& n, const Vec& th, const Vec& v) {
    auto be = make_cpu_backend();
    ModelConfig mc;
    mc.sizes = n.sizes;
    mc.activation = n.act;
    mc.layernorm = n.ln;
    mc.dropout = n.p;
    const auto off = n.offsets();
    InitialWeights init;
    for (int l = 0; l < n.layers(); ++l) {
        const int in = n.sizes[l], out = n.sizes[l + 1];
        RowMatrix w(out, in), b(1, out);
        for (int i = 0; i < out * in; ++i) w.data()[i] = static_cast<float>(th[off[l].w + i]);
        for (int i = 0; i < out; ++i) b.data()[i] = static_cast<float>(th[off[l].b + i]);
        init.w.push_back(w);
        init.b.push_back(b);
    }
    auto model = make_model(*be, mc, layer_precisions(RunSpec{}, n.layers(), {}), n.B, init, OptimizerKind::sgd);
    auto& params = model->params();
    std::vector<Tensor> dirs;
    std::vector<Tensor*> vp;
    std::vector<int> starts;  // each parameter's offset in the flat order
    for (int l = 0; l < n.layers(); ++l) {
        starts.push_back(off[l].w), starts.push_back(off[l].b);
        if (off[l].g >= 0) starts.push_back(off[l].g), starts.push_back(off[l].be);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor& w = params[i].working;
        std::vector<float> vals(w.size()), dv(w.size());
        for (std::size_t k = 0; k < vals.size(); ++k) {
            vals[k] = static_cast<float>(th[starts[i] + k]);
            dv[k] = static_cast<float>(v[starts[i] + k]);
        }
        be->upload(vals, w);
        dirs.push_back(be->alloc(Format::fp32, w.rows(), w.cols(), MemCategory::workspace));
        be->upload(dv, dirs.back());
    }
    for (Tensor& d : dirs) vp.push_back(&d);
    model->enable_hessian_vector();
    RowMatrix x(n.B, n.sizes[0]);
    for (int i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(n.X[i]);
    be->begin_step();
    model->set_input(x);
    const Tensor& logits = model->forward(n.seed, true);
    if (n.mse) {
        std::vector<float> t(n.Y.begin(), n.Y.end());
        be->upload(t, model->target());
        be->mse(logits, model->target(), 1.0f, model->dlogits());
    } else {
        be->softmax_cross_entropy(logits, n.labels, 1.0f, model->dlogits());
    }
    model->backward(model->dlogits(), n.seed, Accumulate::overwrite);
    const Tensor& rl = model->r_forward(vp, n.seed);
    if (n.mse) be->mse_r(rl, 1.0f, model->r_dlogits());
    else be->softmax_cross_entropy_r(logits, rl, 1.0f, model->r_dlogits());
    model->r_backward(vp, n.seed, Accumulate::overwrite);
    Vec h(th.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        std::vector<float> g(params[i].grad.size());
        be->download(params[i].grad, g);
        for (std::size_t k = 0; k < g.size(); ++k) h[starts[i] + k] = g[k];
    }
    return h;
}

}  // namespace

class TestHvp : public QObject {
    Q_OBJECT
    static Net fetched_net() {
        QFETCH(int, act);
        QFETCH(bool, ln);
        QFETCH(double, dropout);
        QFETCH(bool, mse);
        return make_net(static_cast<Activation>(act), ln, static_cast<float>(dropout), mse);
    }
private slots:
    void r_operator_matches_central_differences_data() {
        QTest::addColumn<int>("act");
        QTest::addColumn<bool>("ln");
        QTest::addColumn<double>("dropout");
        QTest::addColumn<bool>("mse");
        for (const auto& [name, a] : {std::pair{"relu", Activation::relu}, std::pair{"tanh", Activation::tanh},
                                      std::pair{"gelu", Activation::gelu}}) {
            QTest::addRow("%s", name) << int(a) << false << 0.0 << false;
            QTest::addRow("%s layernorm", name) << int(a) << true << 0.0 << false;
            QTest::addRow("%s dropout 0.3", name) << int(a) << false << 0.3 << false;
            QTest::addRow("%s layernorm dropout mse", name) << int(a) << true << 0.3 << true;
        }
    }
    // The R-rules in double against (g(θ + εv) − g(θ − εv)) / 2ε of an independent double MLP, ε = 1e-5
    // (truncation ~ε², rounding ~1e-16/ε: both far below 1e-6); and a wrong rule fails: dropping
    // σ″ (the R-rule ReLU needs alone) parts from the differences for tanh and GELU.
    void r_operator_matches_central_differences() {
        const Net n = fetched_net();
        Vec th, v;
        make_point(n, th, v);
        const Vec fd = hv_differences(n, th, v, 1e-5);
        const Vec r = hv_r_operator(n, th, v);
        const double err = rel_error(r, fd);
        qInfo("relative error against differences: %.3g", err);
        QVERIFY2(err < 1e-6, qPrintable(QString("relative error %1").arg(err)));
        double largest = 0;
        for (std::size_t i = 0; i < fd.size(); ++i) largest = std::max(largest, std::fabs(fd[i]));
        for (std::size_t i = 0; i < fd.size(); ++i) QVERIFY(std::fabs(r[i] - fd[i]) <= 1e-6 * largest);
        QVERIFY(largest > 1e-2);  // a real curvature, not zeros agreeing
    }

    // The engine's FP32 passes reproduce the double R-operator to FP32's accuracy (measured below
    // 3e-7 relative; bound 1e-5), the same bits on 1, 2 and 3 threads.
    void engine_hv_matches_double_data() { r_operator_matches_central_differences_data(); }
    void engine_hv_matches_double() {
        const Net n = fetched_net();
        Vec th, v;
        make_point(n, th, v);
        const Vec r = hv_r_operator(n, th, v);
        Vec first;
        for (unsigned threads : {1u, 2u, 3u}) {
            set_thread_count(threads);
            const Vec e = engine_hv(n, th, v);
            const double err = rel_error(e, r);
            if (threads == 1) qInfo("FP32 engine against double: %.3g", err);
            QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1").arg(err)));
            if (first.empty()) first = e;
            else QVERIFY(e == first);
        }
        set_thread_count(core_count());
    }

    // σ″ of each activation against central differences of this file's σ′ (ReLU's is 0), over a
    // range of inputs.
    void second_derivatives_match_differences() {
        for (double z = -3.0; z <= 3.0; z += 0.37) {
            QCOMPARE(core::act_second<Activation::relu>(z), 0.0);
            const double h = 1e-4;
            const double tanh2 = (act_d(Activation::tanh, z + h) - act_d(Activation::tanh, z - h)) / (2 * h);
            const double gelu2 = (act_d(Activation::gelu, z + h) - act_d(Activation::gelu, z - h)) / (2 * h);
            QVERIFY(std::fabs(core::act_second<Activation::tanh>(z) - tanh2) < 1e-7);
            QVERIFY(std::fabs(core::act_second<Activation::gelu>(z) - gelu2) < 1e-7);
            QVERIFY(std::fabs(core::act_first<Activation::gelu>(z) - act_d(Activation::gelu, z)) < 1e-10);
        }
    }
};

QTEST_APPLESS_MAIN(TestHvp)
#include "test_hvp.moc"
