// mpx's Adam and AdamW against torch.optim's (Debian's python3-torch, CPU). Rule: the element
// arithmetic equals PyTorch's bit for bit (the same gradients in; every weight after every step and
// the final moments out), for `_single_tensor_adam` and `_multi_tensor_adam` alike, and a control
// with mpx's old FP32 β2 must part, so the check can see a one-rounding difference (issue 43, item
// 6). Whole training runs are not compared here: their GEMMs sum in another order than oneDNN's, and
// on the MLP presets that alone parts FP32 Adam runs by 1e-5 within 1,000 steps (PyTorch against
// itself with FP64 products parts at step 359 of the default preset). Without PyTorch the suite
// skips, saying so, except under scripts/test.sh (MPX_REQUIRE_TORCH=1), which installs it.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/compute/backend.hpp"
#include "torch_test_support.hpp"

using namespace mpx;

namespace {

using namespace mpx_torch_test;

bool write_floats(const QString& path, const std::vector<float>& v) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    const auto bytes = static_cast<qint64>(v.size() * sizeof(float));
    return f.write(reinterpret_cast<const char*>(v.data()), bytes) == bytes;
}
std::vector<float> read_floats(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QByteArray b = f.readAll();
    std::vector<float> v(static_cast<std::size_t>(b.size()) / sizeof(float));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
    return v;
}

// torch.optim on the gradients mpx was given: argv = dir kind foreach n steps beta1 beta2 eps wd.
// The learning rate is set per step from lr.bin (FP32 values, as the exported train.py sets them
// from data/lr.npy), and every step's weights, the final moments, are written raw.
const char* k_torch_script = R"(
import sys, torch
d, kind, foreach, n, steps = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5])
b1, b2, eps, wd = (float(x) for x in sys.argv[6:10])
torch.set_num_threads(1)
def load(name, shape):
    return torch.frombuffer(bytearray(open(f"{d}/{name}", "rb").read()), dtype=torch.float32).reshape(shape)
w = load("w0.bin", (n,)).clone().requires_grad_(True)
grads, lrs = load("grads.bin", (steps, n)), load("lr.bin", (steps,)).tolist()
cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
opt = cls([w], lr=0.0, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=foreach)
out = open(f"{d}/torch_w_{int(foreach)}.bin", "wb")
for k in range(steps):
    w.grad = grads[k].clone()
    opt.param_groups[0]["lr"] = lrs[k]
    opt.step()
    out.write(w.detach().numpy().tobytes())
st = opt.state[w]
open(f"{d}/torch_m_{int(foreach)}.bin", "wb").write(st["exp_avg"].numpy().tobytes())
open(f"{d}/torch_v_{int(foreach)}.bin", "wb").write(st["exp_avg_sq"].numpy().tobytes())
)";

// The first (step, element) where two per-step weight records differ in their bits; "" if none.
QString first_difference(const std::vector<float>& a, const std::vector<float>& b, std::size_t n) {
    if (a.size() != b.size()) return QStringLiteral("sizes %1 and %2").arg(a.size()).arg(b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return QStringLiteral("step %1, element %2: %3 vs %4")
                .arg(i / n).arg(i % n).arg(double(a[i]), 0, 'g', 9).arg(double(b[i]), 0, 'g', 9);
    return {};
}

}  // namespace

class TestTorchAdam : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        MPX_REQUIRE_PYTORCH_OR_SKIP();
    }

    // 1,000 steps of one 1,003-element tensor (PyTorch's vector body and its scalar tail) on the
    // CPU backend, as a run drives it (the learning rate and Adam's t from the backend's counts and
    // the host's tables), against torch.optim with foreach False and True: every weight after every
    // step, and the final moments, the same bits. Gradients span 10^-6..1 with exact zeros; the
    // learning rate warms up and decays (FP32 values).
    void adam_steps_equal_torch_bit_for_bit_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<double>("beta1");
        QTest::addColumn<double>("beta2");
        QTest::addColumn<double>("weight_decay");
        QTest::newRow("adam") << int(OptimizerKind::adam) << 0.9 << 0.999 << 0.0;
        QTest::newRow("adam_l2_0.01") << int(OptimizerKind::adam) << 0.9 << 0.999 << 0.01;
        QTest::newRow("adamw_0.01") << int(OptimizerKind::adamw) << 0.9 << 0.999 << 0.01;
        QTest::newRow("adamw_0.1_betas_0.9_0.95") << int(OptimizerKind::adamw) << 0.9 << 0.95 << 0.1;
    }
    void adam_steps_equal_torch_bit_for_bit() {
        QFETCH(int, kind);
        QFETCH(double, beta1);
        QFETCH(double, beta2);
        QFETCH(double, weight_decay);
        const std::size_t n = 1003;
        const long long steps = 1000;
        const double eps = 1e-8;
        std::mt19937_64 gen(43);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> decade(-6.0f, 0.0f);
        std::vector<float> w0(n), grads(n * steps), lrs(steps);
        for (float& x : w0) x = 0.5f * normal(gen);
        for (std::size_t i = 0; i < grads.size(); ++i)
            grads[i] = i % 97 == 5 ? 0.0f : normal(gen) * std::pow(10.0f, decade(gen));
        for (long long k = 0; k < steps; ++k)  // 50 steps of warm-up, then a cosine to 10 %
            lrs[k] = static_cast<float>(k < 50 ? 1e-3 * (k + 1) / 50.0
                                               : 1e-4 + 0.5 * 9e-4 * (1.0 + std::cos(M_PI * (k - 50) / 950.0)));
        const QString dir = m_dir.filePath(QString::fromLatin1(QTest::currentDataTag()));
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(write_floats(dir + QStringLiteral("/w0.bin"), w0));
        QVERIFY(write_floats(dir + QStringLiteral("/grads.bin"), grads));
        QVERIFY(write_floats(dir + QStringLiteral("/lr.bin"), lrs));

        auto be = make_cpu_backend();
        std::vector<core::BiasCorrection> table;
        for (long long t = 1; t <= steps; ++t) table.push_back(bias_correction(beta1, beta2, t));
        be->set_bias_corrections(table);
        be->set_lr_schedule(lrs);
        be->set_applied_steps(0);
        be->set_schedule_steps(0);
        Tensor w = be->alloc(Format::fp32, 1, static_cast<int>(n), MemCategory::weights);
        Tensor g = be->alloc(Format::fp32, 1, static_cast<int>(n), MemCategory::grads);
        Tensor m1 = be->alloc(Format::fp32, 1, static_cast<int>(n), MemCategory::optimizer);
        Tensor m2 = be->alloc(Format::fp32, 1, static_cast<int>(n), MemCategory::optimizer);
        be->set_uncounted();
        be->upload(w0, w);
        be->fill(m1, 0.0f);
        be->fill(m2, 0.0f);
        OptimizerStep st;
        st.kind = static_cast<OptimizerKind>(kind);
        st.beta1 = beta1;
        st.beta2 = beta2;
        st.eps = eps;
        st.weight_decay = weight_decay;
        st.count = StepCount::backend;
        std::vector<float> ours(n * steps), m(n), v(n);
        for (long long k = 0; k < steps; ++k) {
            be->begin_step();
            be->set_uncounted();
            be->upload(std::span<const float>(grads).subspan(static_cast<std::size_t>(k) * n, n), g);
            be->optimizer_update(st, g, nullptr, w, m1, &m2, OnInf::skip);
            be->count_applied_step(OnInf::skip);
            be->count_schedule_step(OnInf::skip, false);
            be->read_stats();
            be->download(w, std::span<float>(ours).subspan(static_cast<std::size_t>(k) * n, n));
        }
        be->download(m1, m);
        be->download(m2, v);

        const QString name = kind == int(OptimizerKind::adamw) ? QStringLiteral("adamw") : QStringLiteral("adam");
        for (const QString& foreach : {QStringLiteral("0"), QStringLiteral("1")}) {
            const Proc p = run(k_python, {QStringLiteral("-c"), QString::fromLatin1(k_torch_script), dir, name, foreach,
                                          QString::number(n), QString::number(steps), QString::number(beta1, 'g', 17),
                                          QString::number(beta2, 'g', 17), QString::number(eps, 'g', 17),
                                          QString::number(weight_decay, 'g', 17)});
            QVERIFY2(p.exit_code == 0, qPrintable(said(p)));
            const QString tag = QStringLiteral("foreach=%1: ").arg(foreach);
            const QString w_diff = first_difference(ours, read_floats(dir + QStringLiteral("/torch_w_%1.bin").arg(foreach)), n);
            QVERIFY2(w_diff.isEmpty(), qPrintable(tag + QStringLiteral("weights differ first at ") + w_diff));
            QVERIFY2(first_difference(m, read_floats(dir + QStringLiteral("/torch_m_%1.bin").arg(foreach)), n).isEmpty(),
                     qPrintable(tag + QStringLiteral("first moments differ")));
            QVERIFY2(first_difference(v, read_floats(dir + QStringLiteral("/torch_v_%1.bin").arg(foreach)), n).isEmpty(),
                     qPrintable(tag + QStringLiteral("second moments differ")));
        }
        // The control: PyTorch given β2 as mpx held it before (0.999 rounded to FP32, so 1 − β2 was
        // 1.3e-5 relative off PyTorch's fl(1 − 0.999)) must part within 20 steps (Adam's first steps
        // are near ±lr whatever v's scale; the bits part at steps 4–5).
        if (beta2 != static_cast<double>(static_cast<float>(beta2))) {
            const Proc p = run(k_python, {QStringLiteral("-c"), QString::fromLatin1(k_torch_script), dir, name, QStringLiteral("0"),
                                          QString::number(n), QString::number(steps), QString::number(beta1, 'g', 17),
                                          QString::number(double(float(beta2)), 'g', 17), QString::number(eps, 'g', 17),
                                          QString::number(weight_decay, 'g', 17)});
            QVERIFY2(p.exit_code == 0, qPrintable(said(p)));
            const QString diff = first_difference(ours, read_floats(dir + QStringLiteral("/torch_w_0.bin")), n);
            const int step = diff.section(QLatin1Char(','), 0, 0).section(QLatin1Char(' '), 1, 1).toInt();
            QVERIFY2(diff.startsWith(QStringLiteral("step ")) && step < 20,  // measured: steps 4 and 5
                     qPrintable(QStringLiteral("the FP32-β2 control: ") + (diff.isEmpty() ? QStringLiteral("no difference") : diff)));
        }
        // Not vacuous: the weights moved at the first step and at the last.
        QVERIFY(std::memcmp(ours.data(), w0.data(), n * sizeof(float)) != 0);
        QVERIFY(std::memcmp(ours.data() + (steps - 2) * n, ours.data() + (steps - 1) * n, n * sizeof(float)) != 0);
    }
};

QTEST_APPLESS_MAIN(TestTorchAdam)
#include "test_torch_adam.moc"
