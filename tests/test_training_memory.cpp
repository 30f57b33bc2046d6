// Memory and recomputation in whole training runs through Session: each precision policy keeps the
// bytes DESIGN.md's table gives it, and recomputing activations trades memory for time, never
// results (every other record field bit-identical, forward roundings counted once).
// Rule: byte counts are asserted exactly, from the parameter count; results are compared bit for bit.
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

#include <QtTest>

#include <numeric>

using namespace mpx;
using namespace mpx::test;

class TestTrainingMemory : public QObject {
    Q_OBJECT

private slots:
    void memory_follows_the_policy() {
        SessionConfig c = small_config({"fp32", "amp-fp16", "half-fp16", "pure-fp16"}, 5);
        Session s(c);
        const auto r = s.step();
        const auto mem = [&](int run, MemCategory cat) { return r[static_cast<std::size_t>(run)].mem[cat]; };
        // 2·32 + 32 + 32·32 + 32 + 32·2 + 2 = 1218 parameters.
        QCOMPARE(mem(0, MemCategory::weights), std::int64_t(1218 * 4));
        QCOMPARE(mem(0, MemCategory::master), std::int64_t(0));
        QCOMPARE(mem(1, MemCategory::master), std::int64_t(0));
        QCOMPARE(mem(1, MemCategory::weights), mem(0, MemCategory::weights));
        QCOMPARE(mem(2, MemCategory::weights) * 2, mem(0, MemCategory::weights));
        QCOMPARE(mem(2, MemCategory::master), mem(0, MemCategory::weights));
        QCOMPARE(mem(3, MemCategory::master), std::int64_t(0));
        QCOMPARE(mem(0, MemCategory::optimizer), std::int64_t(2 * 1218 * 4));  // Adam: two FP32 moments
        // half-fp16: FP16 gradients plus their FP32 unscaled copy, FP32 moments (Apex O2).
        QCOMPARE(mem(2, MemCategory::grads), std::int64_t(1218 * (2 + 4)));
        QCOMPARE(mem(2, MemCategory::optimizer), mem(0, MemCategory::optimizer));
        // pure-fp16 (plain .half() with a standard Adam): FP16 gradients unscaled in place, FP16
        // moments: half of FP32's bytes in each of the three categories.
        QCOMPARE(mem(3, MemCategory::weights), std::int64_t(1218 * 2));
        QCOMPARE(mem(3, MemCategory::grads), std::int64_t(1218 * 2));
        QCOMPARE(mem(3, MemCategory::optimizer), std::int64_t(2 * 1218 * 2));
        QVERIFY(mem(1, MemCategory::activations) < mem(0, MemCategory::activations));
        for (const auto& rec : r) {
            QVERIFY(rec.step_time_us > 0.0);
            QCOMPARE(rec.mem.total(), std::accumulate(rec.mem.bytes.begin(), rec.mem.bytes.end(), std::int64_t(0)));
        }
    }

    // Recomputation trades memory for time, never results: every record field but memory is
    // bit-identical, forward roundings are not counted twice, and activation memory shrinks. Rows
    // with hidden layers of different widths or formats (selective) exercise the shared buffer.
    void recompute_changes_memory_not_results_data() {
        QTest::addColumn<QString>("sizes");
        QTest::addColumn<QString>("runs");
        QTest::addColumn<bool>("layernorm");
        QTest::addColumn<double>("input_scale");
        QTest::newRow("equal_widths") << "2-32-32-2" << "fp32,amp-fp16,half-bf16" << false << 1.0;
        QTest::newRow("narrowing_64_32") << "2-64-32-2" << "fp32,amp-fp16,half-bf16" << false << 1.0;
        QTest::newRow("widening_16_64") << "2-16-64-2" << "fp32,amp-fp16,pure-fp16" << true << 1.0;
        QTest::newRow("selective_fc1_layernorm") << "2-32-32-32-2" << "selective-fp16,fp32" << true << 1.0;
        QTest::newRow("fp16_overflows") << "2-64-64-2" << "amp-fp16,half-fp16" << false << 50000.0;
    }
    void recompute_changes_memory_not_results() {
        QFETCH(QString, sizes);
        QFETCH(QString, runs);
        QFETCH(bool, layernorm);
        QFETCH(double, input_scale);
        SessionConfig c = small_config({}, 5);
        apply_override(c, "runs=" + runs.toStdString());
        apply_override(c, "model.sizes=" + sizes.toStdString());
        c.model.layernorm = layernorm;
        c.model.activation = Activation::gelu;  // smooth: any rounding difference shows in the loss
        c.data.input_scale = input_scale;
        Session plain(c);
        c.model.recompute = true;
        Session rec(c);
        const auto a = train(plain, 5), b = train(rec, 5);
        for (std::size_t i = 0; i < a.size(); ++i)
            for (std::size_t k = 0; k < a[i].size(); ++k) {
                const QString d = differs(a[i][k], b[i][k], false);
                QVERIFY2(d.isEmpty(), qPrintable(d));
                QVERIFY(b[i][k].mem[MemCategory::activations] < a[i][k].mem[MemCategory::activations]);
                QCOMPARE(b[i][k].mem[MemCategory::weights], a[i][k].mem[MemCategory::weights]);
            }
        if (input_scale > 1.0) QVERIFY(a[0][0].overflow_count > 0);
    }

    // Recomputing a layer redoes roundings the forward pass already counted: they count once.
    // (Spiral inputs cannot overflow a hidden FP16 pre-activation, so this drives the model directly:
    // 65000 on both inputs pushes some of fc1's outputs past 65504.)
    void recompute_counts_forward_rounding_once() {
        std::size_t counts[2][2] = {};
        for (bool recompute : {false, true}) {
            auto be = make_cpu_backend();
            ModelConfig m;
            m.sizes = {2, 64, 64, 2};
            m.recompute = recompute;
            const RunSpec amp{Mode::amp, Format::fp16, std::nullopt};
            Mlp mlp(*be, m, layer_precisions(amp, m.layers(), {}), 4, init_weights(m, 1), OptimizerKind::adam);
            be->begin_step();
            mlp.set_input(RowMatrix::Constant(4, 2, 65000.0f));
            mlp.forward(0, true);
            counts[recompute][0] = be->read_stats().of(Pass::forward).overflow;
            be->fill(mlp.dlogits(), 0.01f);
            mlp.backward(mlp.dlogits(), 0, Accumulate::overwrite);
            counts[recompute][1] = be->read_stats().of(Pass::forward).overflow;
        }
        QVERIFY(counts[0][0] > 0);
        QCOMPARE(counts[0][1], counts[0][0]);
        QCOMPARE(counts[1][0], counts[0][0]);
        QCOMPARE(counts[1][1], counts[0][0]);
    }
};

QTEST_APPLESS_MAIN(TestTrainingMemory)
#include "test_training_memory.moc"
