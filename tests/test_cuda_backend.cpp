// The CUDA backend against the CPU backend. The kernels' arithmetic is engine/core/op_math.hpp and
// engine/core/format_core.hpp, which the CPU suites test directly; here, on every machine, the
// comparisons themselves are checked (CPU against CPU must pass, injected faults must fail), and on
// a GPU (skipping with the reason elsewhere) the comparisons of cuda/compare/backend_compare.hpp
// run per op and precision policy, over whole training runs, and for out-of-memory handling.
// Tolerances and why: cuda/compare/tolerance.hpp.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "engine/base/error.hpp"
#include "engine/compute/backend.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/compare/backend_compare.hpp"
#include "cuda/compare/self_check.hpp"
#include "cuda/device.hpp"
#endif

using namespace mpx;
#ifdef MPX_HAVE_CUDA
using namespace mpx::compare;
#endif

namespace {

[[maybe_unused]] std::string gpu_unavailable() {
#ifdef MPX_HAVE_CUDA
    const cuda::DeviceProbe p = cuda::probe_device();
    return p.usable ? std::string() : "no CUDA device: " + p.reason;
#else
    return "built without the CUDA backend (no nvcc, or tests not linked with mpx_cuda)";
#endif
}

#define REQUIRE_GPU()                               \
    do {                                            \
        const std::string why_ = gpu_unavailable(); \
        if (!why_.empty()) QSKIP(why_.c_str());     \
    } while (0)

// The comparisons (cuda/compare/backend_compare.cpp) are built with the CUDA backend.
#ifdef MPX_HAVE_CUDA
#define NEED_COMPARISONS() (void)0
#else
#define NEED_COMPARISONS() QSKIP("built without the CUDA backend, which holds the comparisons")
#endif

// The CPU backend with one fault injected, to prove the comparisons can fail (a harness that
// passes everything would pass a broken GPU backend too); with Fault::none, a CPU backend that
// counts the calls where a GPU backend waits for the device.
enum class Fault { none, gemm_scaled, gelu_as_relu, dropout_seed, adam_step, stats_off, param_sites, amax_frozen };

// Calls of the ops at which the CUDA backend synchronises with the host (cuda_backend.cpp:
// read_stats, download, accuracy; nothing else waits).
// Also: the calls of the ops over all parameters (one launch each on the GPU) and, per backend
// (its id), the order of step starts ("q<id> ") and waits for the record ("w<id> ").
struct Waits {
    int read_stats = 0, download = 0, accuracy = 0;
    int param_ops = 0;
    std::string order;
};

class Faulty final : public Backend {
public:
    explicit Faulty(Fault f, Waits* waits = nullptr, int id = 0) : m_fault(f), m_waits(waits), m_id(id) {}
    std::string name() const override { return "CPU with a fault"; }
    bool is_gpu() const override { return false; }
    void begin_step() override {
        if (m_waits) m_waits->order += "q" + std::to_string(m_id) + " ";
        m_cpu->begin_step();
    }
    void abort_step() noexcept override { ++aborts; }
    bool fail_next_step = false;  // the next step's unscale throws, once: a step failing part-way
    int aborts = 0;
    const StepStats& read_stats() override {
        if (m_waits) ++m_waits->read_stats, m_waits->order += "w" + std::to_string(m_id) + " ";
        m_stats = m_cpu->read_stats();
        if (m_fault == Fault::stats_off) m_stats.site[0].nonzero += 1;
        return m_stats;
    }
    bool holds_two_steps() const override { return m_cpu->holds_two_steps(); }
    const StepStats& read_previous_stats() override {  // "p<id> ": the wait for the step before
        if (m_waits) ++m_waits->read_stats, m_waits->order += "p" + std::to_string(m_id) + " ";
        m_stats = m_cpu->read_previous_stats();
        if (m_fault == Fault::stats_off) m_stats.site[0].nonzero += 1;
        return m_stats;
    }
    void collect_histograms(int layers) override { m_cpu->collect_histograms(layers); }
    const StepHistograms* read_histograms() override { return m_cpu->read_histograms(); }
    void upload(std::span<const float> s, Tensor& d) override { cpu().upload(s, d); }
    void download(const Tensor& s, std::span<float> d) override {
        if (m_waits) ++m_waits->download;
        cpu().download(s, d);
    }
    void copy(const Tensor& s, Tensor& d) override { cpu().copy(s, d); }
    void fill(Tensor& d, float v) override { cpu().fill(d, v); }
    void linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format c,
                        Tensor& y) override {
        cpu().linear_forward(x, w, b, c, y);
        if (m_fault == Fault::gemm_scaled) cpu().scale(y, 1.0f + 1e-3f);
    }
    void linear_backward_input(const Tensor& dy, const Tensor& w, Format c, Tensor& dx) override {
        cpu().linear_backward_input(dy, w, c, dx);
    }
    void linear_backward_weight(const Tensor& dy, const Tensor& x, Format c, Format t, Tensor& dw,
                                Tensor* db, Accumulate acc) override {
        cpu().linear_backward_weight(dy, x, c, t, dw, db, acc);
    }
    void activation_forward(Activation a, const Tensor& z, Tensor& h) override {
        cpu().activation_forward(
            m_fault == Fault::gelu_as_relu && a == Activation::gelu ? Activation::relu : a, z, h);
    }
    void activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) override {
        cpu().activation_backward(a, z, dh, dz);
    }
    void layernorm_forward(const Tensor& x, const Tensor& g, const Tensor& b, Tensor& y, Tensor& m,
                           Tensor& r) override {
        cpu().layernorm_forward(x, g, b, y, m, r);
    }
    void layernorm_backward(const Tensor& x, const Tensor& g, const Tensor& m, const Tensor& r,
                            const Tensor& dy, Tensor& dx, Tensor& dg, Tensor& db,
                            Accumulate acc) override {
        cpu().layernorm_backward(x, g, m, r, dy, dx, dg, db, acc);
    }
    void dropout(Tensor& h, float p, std::uint64_t seed) override {
        cpu().dropout(h, p, seed + (m_fault == Fault::dropout_seed ? 1 : 0));
    }
    void softmax_cross_entropy(const Tensor& l, std::span<const int> y, ScaleBy s,
                               Tensor& d) override {
        cpu().softmax_cross_entropy(l, y, s, d);
    }
    void mse(const Tensor& p, const Tensor& t, ScaleBy s, Tensor& d) override { cpu().mse(p, t, s, d); }
    double accuracy(const Tensor& l, std::span<const int> y) override {
        if (m_waits) ++m_waits->accuracy;
        return cpu().accuracy(l, y);
    }
    void set_scaler(const ScalerRule& r, const ScalerState& s) override { cpu().set_scaler(r, s); }
    void scaler_update() override { cpu().scaler_update(); }
    void set_bias_corrections(std::span<const core::BiasCorrection> t) override { cpu().set_bias_corrections(t); }
    void set_applied_steps(long long n) override { cpu().set_applied_steps(n); }
    void count_applied_step(OnInf on_inf) override { cpu().count_applied_step(on_inf); }
    void set_amax_histories(std::span<const core::AmaxHistoryState> s, std::span<const float> h) override {
        cpu().set_amax_histories(s, h);
    }
    void update_amax_histories() override {
        if (m_fault != Fault::amax_frozen) cpu().update_amax_histories();
    }
    void read_amax_histories(std::vector<core::AmaxHistoryState>& s, std::vector<float>& h) override {
        cpu().read_amax_histories(s, h);
    }
    void set_lr_schedule(std::span<const float> lrs) override { cpu().set_lr_schedule(lrs); }
    void set_schedule_steps(long long n) override { cpu().set_schedule_steps(n); }
    void count_schedule_step(OnInf on_inf, bool advance) override { cpu().count_schedule_step(on_inf, advance); }
    void unscale_and_check(const Tensor& g, ScaleBy inv, Tensor& u) override {
        cpu().unscale_and_check(g, inv, u);
    }
    void unscale_all(std::span<const ParamRef> ps, ScaleBy inv) override {
        if (fail_next_step) {
            fail_next_step = false;
            throw DeviceError("the device is gone (injected)");
        }
        if (m_waits) ++m_waits->param_ops;
        if (m_fault != Fault::param_sites) return Backend::unscale_all(ps, inv);
        for (const ParamRef& p : ps) {  // every tensor counted at fc1's site
            set_site(0, TensorKind::unscaled);
            unscale_and_check(*p.grad, inv, *p.unscaled);
        }
    }
    void clip_all(std::span<const ParamRef> ps, double max_norm) override {
        if (m_waits) ++m_waits->param_ops;
        Backend::clip_all(ps, max_norm);
    }
    void optimizer_all(const OptimizerStep& s, std::span<const ParamRef> ps, OnInf on_inf) override {
        if (m_waits) ++m_waits->param_ops;
        Backend::optimizer_all(s, ps, on_inf);
    }
    void scale(Tensor& t, float f) override { cpu().scale(t, f); }
    void clip_to_norm(Tensor& t, double n) override { cpu().clip_to_norm(t, n); }
    void optimizer_update(const OptimizerStep& s, const Tensor& g, Tensor* m, Tensor& w,
                          Tensor& s1, Tensor* s2, OnInf on_inf, Tensor* comp = nullptr, int param = 0) override {
        OptimizerStep st = s;
        if (m_fault == Fault::adam_step) st.t += 1;  // the wrong bias correction
        cpu().optimizer_update(st, g, m, w, s1, s2, on_inf, comp, param);
    }

protected:
    void* raw_alloc(std::size_t bytes) override {
        return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    }
    void raw_free(void* p) noexcept override { std::free(p); }

private:
    // The wrapped backend, counting into the pass this one is set to.
    Backend& cpu() {
        m_cpu->set_site_index(site());
        m_cpu->set_fp8(fp8());
        return *m_cpu;
    }
    Fault m_fault;
    Waits* m_waits;
    int m_id;
    StepStats m_stats;
    std::unique_ptr<Backend> m_cpu = make_cpu_backend();  // computes on our tensors' host memory
};

}  // namespace

class TestCudaBackend : public QObject {
    Q_OBJECT

private slots:
    // ---- GPU: construction and errors ----------------------------------------------------------

    void make_cuda_backend_without_a_device_throws_device_error() {
#ifndef MPX_HAVE_CUDA
        QSKIP("built without the CUDA backend (no nvcc, or tests not linked with mpx_cuda)");
#else
        // No usable GPU here: device 0 must fail; with one, a device number that cannot exist.
        const int device = cuda::probe_device().usable ? 4096 : 0;
        try {
            auto be = cuda::make_cuda_backend(device);
            QFAIL("expected DeviceError");
        } catch (const DeviceError& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("cannot use the GPU") && msg.contains("CPU backend"), e.what());
        }
#endif
    }

    // The comparisons themselves, CPU against CPU: every check must pass with equal bits. This runs
    // without a GPU and catches a broken harness before a GPU session spends time on it.
    void comparisons_pass_cpu_against_cpu() {
        NEED_COMPARISONS();
#ifdef MPX_HAVE_CUDA
        for (const Policy& p : policies()) {
            auto a = make_cpu_backend(), b = make_cpu_backend();
            for (auto op : {linear_ops, elementwise_ops, losses, unscale_and_optimizer}) {
                const Report r = op(*a, *b, p);
                QVERIFY2(r.ok(), qPrintable(QString::fromStdString(p.name + ":\n" + r.text())));
            }
        }
        const Factory cpu = [] { return make_cpu_backend(); };
        const Report t = training_tracks(cpu, 10);
        QVERIFY2(t.ok(), t.text().c_str());
        const Report o = overflow_storm(cpu);
        QVERIFY2(o.ok(), o.text().c_str());
        const Report late = records_one_step_late(cpu, 30);
        QVERIFY2(late.ok(), late.text().c_str());
        QVERIFY2(late.text().find("default: 26 of 30 steps read one step late, 0 records differ") != std::string::npos,
                 late.text().c_str());
#endif
    }

    // A training step waits for the device once: the engine reads the step record once per run and
    // step, and downloads nothing, with clipping, accumulation, dropout and recomputation on and a
    // step that overflows (its skip is decided by the backend). Evaluation waits apart from steps.
    // The session queues every run's step before it waits for any (on a GPU the runs' work
    // overlaps the host's queueing), and the update pass is three ops over all parameters.
    void a_training_step_waits_for_the_device_once() {
        SessionConfig c = load_config("overflow-storm");
        c.steps = 12;
        c.eval_every = 0;
        c.train.clip_norm = 1.0;
        c.train.accumulation = 2;
        c.model.dropout = 0.1f;
        c.model.recompute = true;
        Waits waits;
        int backends = 0;
        Session s(c, [&] { return std::make_unique<Faulty>(Fault::none, &waits, backends++); });
        const Waits setup = waits;
        waits.order.clear();
        long long skipped = 0;
        std::string expected;
        for (long long i = 0; i < c.steps; ++i) {
            for (const StepRecord& r : s.step()) skipped += r.skipped;
            for (const char* what : {"q", "w"})
                for (std::size_t k = 0; k < s.run_count(); ++k) expected += what + std::to_string(k) + " ";
        }
        const int steps = static_cast<int>(c.steps * s.run_count());
        QVERIFY(s.run_count() >= 2);
        QVERIFY(skipped > 0);  // the backend itself skipped those optimizer steps
        QCOMPARE(waits.read_stats - setup.read_stats, steps);
        QCOMPARE(waits.download - setup.download, 0);
        QCOMPARE(waits.accuracy - setup.accuracy, 0);
        QCOMPARE(waits.order, expected);
        QCOMPARE(waits.param_ops - setup.param_ops, 3 * steps);  // unscale, clip, optimizer
    }

    // Records one step late: step N+1 is queued on every run before step N's record is read
    // ("p": the wait for the step before the current one), still one wait per run and step;
    // the last step is read at once. What the CUDA backend does at these calls: docs/gpu.md.
    void records_one_step_late_wait_once_per_step_after_the_next_is_queued() {
        SessionConfig c = load_config("default");
        c.steps = 6;
        c.eval_every = 0;
        c.instruments.every = 0;
        Waits waits;
        int backends = 0;
        Session s(c, [&] { return std::make_unique<Faulty>(Fault::none, &waits, backends++); });
        const Waits setup = waits;
        waits.order.clear();
        std::string expected;
        const auto all = [&](const char* what) {
            for (std::size_t k = 0; k < s.run_count(); ++k) expected += what + std::to_string(k) + " ";
        };
        long long finished = 0;
        while (!s.finished()) {
            for (const auto& recs : s.step_ahead()) QCOMPARE(recs.front().step, finished++);
            all("q");
            if (s.steps_done() > 1) all("p");  // the step before, behind this one
            if (s.steps_done() == c.steps) all("w");  // the last, at once
        }
        QCOMPARE(finished, c.steps);
        QVERIFY(s.run_count() >= 3);
        QCOMPARE(waits.order, expected);
        QCOMPARE(waits.read_stats - setup.read_stats, static_cast<int>(c.steps * s.run_count()));
        QCOMPARE(waits.download - setup.download, 0);
    }

    // A step that fails to queue while the step before is pending: the error reaches the caller,
    // the pending step is finished and its records kept (finish_pending), the failed step is not
    // taken, and training goes on from it to the end. The runs that had not queued it match a
    // session without the failure; the one that had (run 0) took it, as step() has it.
    void a_step_failing_behind_a_pending_step_keeps_the_pending_records() {
        SessionConfig c = load_config("default");
        c.steps = 8;
        c.eval_every = 0;
        c.instruments.every = 0;
        std::vector<Faulty*> made;
        const auto factory = [&] {
            auto b = std::make_unique<Faulty>(Fault::none);
            made.push_back(b.get());
            return b;
        };
        Session s(c, factory), ref(c);
        const auto expected = mpx::test::train(ref, c.steps);
        std::vector<std::vector<StepRecord>> got;
        for (const auto& recs : s.step_ahead()) got.push_back(recs);
        for (const auto& recs : s.step_ahead()) got.push_back(recs);
        QVERIFY(s.pending());
        QCOMPARE(s.steps_done(), 2LL);  // step 1 is pending
        made[1]->fail_next_step = true;
        bool threw = false;
        try {
            s.step_ahead();
        } catch (const DeviceError& e) {
            threw = std::string(e.what()).find("injected") != std::string::npos;
        }
        QVERIFY(threw);
        QCOMPARE(made[1]->aborts, 1);
        QCOMPARE(made[0]->aborts + made[2]->aborts, 0);
        QCOMPARE(s.steps_done(), 2LL);  // step 2 was not taken
        QVERIFY_THROWS_EXCEPTION(std::logic_error, s.step_ahead());  // step 1's records come first
        got.push_back(s.finish_pending());
        QCOMPARE(got.back().front().step, 1LL);
        QVERIFY(s.finish_pending().empty());
        while (!s.finished())
            for (const auto& recs : s.step_ahead()) got.push_back(recs);
        QCOMPARE(got.size(), expected.size());
        for (int run : {1, 2})
            QVERIFY2(mpx::test::differs(got, expected, run).isEmpty(), qPrintable(mpx::test::differs(got, expected, run)));
        const std::vector<std::vector<StepRecord>> head(got.begin(), got.begin() + 2), ref_head(expected.begin(), expected.begin() + 2);
        QVERIFY(mpx::test::differs(head, ref_head).isEmpty());
        QVERIFY(!mpx::test::differs(got, expected, 0).isEmpty());  // run 0 trained step 2 twice
    }

    // A step that one run fails to queue part-way (a device error) is not taken by any run: the
    // error reaches the caller, that run's backend is told to drop the part-queued step, the runs
    // queued before it are finished and their records dropped, and every run steps again
    // afterwards, the failed one from where it stood.
    void a_step_one_run_fails_to_queue_is_dropped_and_training_goes_on() {
        SessionConfig c = load_config("default");
        c.steps = 6;
        c.eval_every = 0;
        std::vector<Faulty*> made;
        Session s(c, [&] {
            auto b = std::make_unique<Faulty>(Fault::none);
            made.push_back(b.get());
            return b;
        });
        QVERIFY(s.run_count() >= 3);
        s.step();
        made[1]->fail_next_step = true;
        bool threw = false;
        try {
            s.step();
        } catch (const DeviceError& e) {
            threw = std::string(e.what()).find("injected") != std::string::npos;
        }
        QVERIFY(threw);
        QCOMPARE(made[1]->aborts, 1);
        QCOMPARE(made[0]->aborts + made[2]->aborts, 0);
        const auto recs = s.step();  // no "previous step was not finished"
        QCOMPARE(recs.size(), s.run_count());
        for (const StepRecord& r : recs) {
            QCOMPARE(r.step, 1LL);  // the session's step did not advance
            QVERIFY(std::isfinite(r.loss));
        }
    }

    // ... and each injected fault makes its comparison fail.
    void comparisons_catch_injected_faults() {
        NEED_COMPARISONS();
#ifdef MPX_HAVE_CUDA
        const Policy& fp32 = policies()[0];
        const Policy& amp = policies()[2];
        const Policy& fp8 = policies().back();
        QCOMPARE(fp8.compute, Format::e4m3);
        struct Case {
            Fault fault;
            Report (*op)(Backend&, Backend&, const Policy&);
            const Policy* policy;
        };
        for (const Case& c : {Case{Fault::gemm_scaled, linear_ops, &fp32},
                              Case{Fault::gelu_as_relu, elementwise_ops, &fp32},
                              Case{Fault::dropout_seed, elementwise_ops, &amp},
                              Case{Fault::adam_step, unscale_and_optimizer, &amp},
                              Case{Fault::param_sites, unscale_and_optimizer, &fp32},
                              Case{Fault::amax_frozen, linear_ops, &fp8}, Case {
                                  Fault::stats_off,
                                  linear_ops,
                                  &amp
                              }}) {
            auto ref = make_cpu_backend();
            Faulty dut(c.fault);
            const Report r = c.op(*ref, dut, *c.policy);
            QVERIFY2(!r.ok(), qPrintable(QString("fault %1 went unnoticed").arg(int(c.fault))));
            qInfo("fault %d caught: %s", int(c.fault), r.failures().front().c_str());
        }
#endif
    }

    // The startup self-check that gates `auto`: it passes a backend that matches the CPU, fails
    // one with a fault (with the fault in its report), and takes well under a second of ops.
    void self_check_passes_the_cpu_and_fails_a_fault() {
        NEED_COMPARISONS();
#ifdef MPX_HAVE_CUDA
        auto cpu = make_cpu_backend();
        const SelfCheck ok = self_check(*cpu);
        QVERIFY2(ok.passed, ok.report.c_str());
        QVERIFY(ok.report.empty());
        qInfo("self-check, CPU against CPU: %.3f s", ok.seconds);
        Faulty broken(Fault::gelu_as_relu);
        const SelfCheck bad = self_check(broken);
        QVERIFY(!bad.passed);
        QVERIFY2(bad.report.find("gelu") != std::string::npos, bad.report.c_str());
#endif
    }

    // Without a usable GPU the check is not run and nothing is cached; the probe's reason stands.
    void checked_gpu_without_a_device_keeps_the_probe_reason() {
#ifndef MPX_HAVE_CUDA
        QSKIP("built without the CUDA backend (no nvcc, or tests not linked with mpx_cuda)");
#else
        if (cuda::probe_device().usable) QSKIP("a GPU is present: this row checks the fallback");
        QTemporaryDir home;
        qputenv("XDG_CACHE_HOME", home.path().toUtf8());
        const GpuProbe g = cuda::checked_gpu();
        qunsetenv("XDG_CACHE_HOME");
        QVERIFY(!g.usable);
        QCOMPARE(QString::fromStdString(g.reason), QString::fromStdString(cuda::probe_device().reason));
        QVERIFY(QDir(home.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty());
        const DeviceChoice c = choose_device("auto", g, "--device");
        QVERIFY(!c.gpu);
        QVERIFY(QString::fromStdString(c.fallback).startsWith("training on the CPU"));
#endif
    }

    void gpu_out_of_memory_is_a_clear_error_and_recoverable() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        auto gpu = cuda::make_cuda_backend();
        const Report r = out_of_memory(*gpu);
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }

    void gpu_ops_match_cpu_data() {
        QTest::addColumn<int>("policy");
#ifdef MPX_HAVE_CUDA
        for (std::size_t i = 0; i < policies().size(); ++i)
            QTest::newRow(policies()[i].name.c_str()) << static_cast<int>(i);
#else
        QTest::newRow("all") << 0;
#endif
    }
    // Every op, each precision policy: linear (forward, both backwards), element-wise (activations,
    // dropout, layernorm, transfers), losses, unscale and the three optimizers.
    void gpu_ops_match_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        QFETCH(int, policy);
        const Policy& p = policies()[static_cast<std::size_t>(policy)];
        auto cpu = make_cpu_backend();
        auto gpu = cuda::make_cuda_backend();
        for (auto op : {linear_ops, elementwise_ops, losses, unscale_and_optimizer}) {
            const Report r = op(*cpu, *gpu, p);
            QVERIFY2(r.ok(), r.text().c_str());
        }
#endif
    }

    // 100 steps of the default preset (fp32, amp-fp16+pytorch, amp-bf16) track the CPU run.
    void gpu_training_tracks_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        const Report r = training_tracks([] { return cuda::make_cuda_backend(); }, 100);
        for (const auto& n : r.notes()) qInfo("%s", n.c_str());
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }

    // overflow-storm: FP16 from 2^24 skips and halves until the scale fits; the GPU must skip the
    // same steps and carry the same scales (decided near 65504 vs inf, far from the last bits).
    void gpu_overflow_storm_skips_like_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        const Report r = overflow_storm([] { return cuda::make_cuda_backend(); });
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }
};

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "test_cuda_backend.moc"
