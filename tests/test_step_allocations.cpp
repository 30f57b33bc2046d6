// A step allocates nothing after the first (DESIGN: buffers are allocated once and reused every
// step): every heap allocation in this process is counted, on every thread, and a run's step of
// every preset, after a warm-up, must make none, on one thread and on three.
//
// The count: where no sanitizer runs, this executable defines malloc and its family over glibc's
// own (__libc_malloc...), so operator new, Eigen's aligned_malloc and std::aligned_alloc all pass
// through it; under ASan or TSan, whose runtimes own malloc, the sanitizer's allocation hook counts.
#include <QtTest>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/base/parallel.hpp"
#include "engine/config/session_config.hpp"
#include "engine/model/dataset.hpp"
#include "engine/run/session.hpp"

namespace {
std::atomic<long long> g_allocations{0};
std::atomic<bool> g_counting{false};
inline void count_one() {
    if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
void on_malloc(const volatile void*, std::size_t) { count_one(); }
void on_free(const volatile void*) {}
const int g_hooked = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}  // namespace
#else
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) {
    count_one();
    return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
    count_one();
    return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
    count_one();
    return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
void* memalign(std::size_t align, std::size_t n) {
    count_one();
    return __libc_memalign(align, n);
}
void* aligned_alloc(std::size_t align, std::size_t n) {
    count_one();
    return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) {
    count_one();
    void* p = __libc_memalign(align, n);
    if (!p) return 12;  // ENOMEM
    *out = p;
    return 0;
}
}
namespace {
const int g_hooked = 1;
}  // namespace
#endif

using namespace mpx;

namespace {

// Heap allocations made while `fn` runs, on any thread.
template <class F>
long long allocations_in(F&& fn) {
    const long long before = g_allocations.load();
    g_counting = true;
    fn();
    g_counting = false;
    return g_allocations.load() - before;
}

// The micro-batches of step `k`: rows chosen by a fixed stride through the training split.
std::vector<Batch> batches_for(const Session& s, long long k) {
    const SessionConfig& c = s.config();
    const Dataset& d = s.dataset();
    std::vector<Batch> micro(static_cast<std::size_t>(c.train.accumulation));
    const auto n = static_cast<int>(d.text ? d.text->train_size - static_cast<std::size_t>(c.model.gpt.block_size)
                                           : static_cast<std::size_t>(d.x_train.rows()));
    for (std::size_t m = 0; m < micro.size(); ++m) {
        std::vector<int> idx(static_cast<std::size_t>(c.train.batch));
        for (std::size_t i = 0; i < idx.size(); ++i)
            idx[i] = static_cast<int>((static_cast<long long>(i) * 7 + k * 13 + static_cast<long long>(m) * 5) % n);
        if (d.text) {  // the GPT: windows of the text
            const std::vector<std::size_t> starts(idx.begin(), idx.end());
            gather_windows(*d.text, starts, c.model.gpt.block_size, micro[m].x, micro[m].labels);
            continue;
        }
        gather_rows(d.x_train, idx, micro[m].x);
        if (d.loss == LossKind::cross_entropy) {
            for (int i : idx) micro[m].labels.push_back(d.y_train[static_cast<std::size_t>(i)]);
        } else {
            gather_rows(d.t_train, idx, micro[m].targets);
        }
    }
    return micro;
}

}  // namespace

class TestStepAllocations : public QObject {
    Q_OBJECT

private slots:
    void init() {
#ifdef __SANITIZE_THREAD__
        QSKIP("ThreadSanitizer's allocation hook does not see aligned_alloc or posix_memalign: the count "
              "runs in the plain and AddressSanitizer builds");
#endif
    }

    void counter_sees_every_kind_of_allocation() {
        QVERIFY(g_hooked != 0);  // the sanitizer took the hook (or this file's malloc is in use)
        // operator new, malloc, aligned_alloc: each counted once (kept where the compiler cannot
        // drop them).
        static std::vector<int>* kept = nullptr;
        static void* volatile block = nullptr;
        const long long n = allocations_in([] {
            kept = new std::vector<int>(100);  // two: the vector and its elements
            block = std::malloc(64);
            std::free(block);
            block = std::aligned_alloc(64, 128);
            std::free(block);
        });
        delete kept;
        QCOMPARE(n, 4LL);
        QCOMPARE(allocations_in([] {}), 0LL);
    }

    void steps_of_every_preset_allocate_nothing_after_warm_up_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("sets");  // --set overrides, ';' between them
        QTest::addColumn<int>("threads");
        for (const std::string& p : preset_names())
            for (int t : {1, 3})
                QTest::newRow((p + "/" + std::to_string(t)).c_str()) << QString::fromStdString(p) << QString() << t;
        // The GPT with every switch on, under AMP, an FP8 and an FP4 recipe, the scale before and split.
        const std::string on = "attention.softmax=\"storage\";attention.qk_norm=true;attention.softcap=30;"
                               "norm.stats=\"storage\";train.z_loss=0.0001;model.dropout=0.1;"
                               "runs=[\"amp-fp16\",\"amp-bf16\",\"fp8-hybrid\",\"nvfp4\"]";
        for (const std::string scale : {"before", "split"})
            for (int t : {1, 3})
                QTest::newRow(("gpt-classroom+switches+scale-" + scale + "/" + std::to_string(t)).c_str())
                    << QStringLiteral("gpt-classroom") << QString::fromStdString(on + ";attention.scale=\"" + scale + "\"") << t;
    }
    void steps_of_every_preset_allocate_nothing_after_warm_up() {
        QFETCH(QString, preset);
        QFETCH(QString, sets);
        QFETCH(int, threads);
        set_thread_count(static_cast<unsigned>(threads));
        SessionConfig c = load_config(preset.toStdString());
        for (const QString& set : sets.split(';', Qt::SkipEmptyParts)) apply_override(c, set.toStdString());
        c.device = "cpu";
        // The GPT's buffers are all shaped by its first step, and its steps cost 100–1,000× an MLP's
        // (about 4 s under ASan): a few suffice (its histograms, every 10 or 50 steps, fall outside).
        const bool gpt = c.model.kind == ModelKind::gpt;
        const long long k_warm = gpt ? 2 : 40, k_counted = gpt ? 3 : 100;
        c.steps = k_warm + k_counted;
        // Every step's batches first: gathering them is the session's work, not the run's step.
        Session s(c);
        std::vector<std::vector<Batch>> micro;
        for (long long k = 0; k < c.steps; ++k) micro.push_back(batches_for(s, k));
        for (std::size_t r = 0; r < s.run_count(); ++r) {
            Run& run = s.run(r);
            const auto label = QString::fromStdString(run.info().label);
            for (long long k = 0; k < k_warm; ++k) run.step(k, micro[static_cast<std::size_t>(k)], s.dataset().loss);
            // The step's work (queue_step: forward, backward, unscale, scaler, optimizer on the
            // backend) and the record it returns (finish_step) on steps that keep no history: a
            // step that collects histograms appends a snapshot to the run's log, a record of the
            // step like a CSV row, and an FP8 run appends its scales to its log.
            long long in_queue = 0, in_finish = 0;
            for (long long k = k_warm; k < c.steps; ++k) {
                const std::size_t logged = run.histograms().bytes() + run.fp8_scales().size();
                in_queue += allocations_in([&] { run.queue_step(k, micro[static_cast<std::size_t>(k)], s.dataset().loss); });
                const long long finish = allocations_in([&] { run.finish_step(); });
                if (run.histograms().bytes() + run.fp8_scales().size() == logged) in_finish += finish;
            }
            QVERIFY2(in_queue == 0, qPrintable(QStringLiteral("%1: %2 allocations in %3 steps' work").arg(label).arg(in_queue).arg(k_counted)));
            QVERIFY2(in_finish == 0, qPrintable(QStringLiteral("%1: %2 allocations reading %3 steps' records").arg(label).arg(in_finish).arg(k_counted)));
        }
        set_thread_count(1);
    }

    // A GPT sample (engine/run/sample.hpp) allocates nothing after the sampler's first: its buffers
    // are made once; the model's own buffers are reused, read as one sequence's rows.
    void gpt_samples_allocate_nothing_after_the_first() {
        SessionConfig c = load_config("gpt-classroom");
        c.device = "cpu";
        c.steps = 2;
        c.sample.length = 24;
        Session s(c);
        s.step();
        TextSampler sampler(*s.dataset().text, c.sample, c.model.gpt.block_size);
        sampler.write(s.run(1), c.seed, 0);
        QCOMPARE(allocations_in([&] { sampler.write(s.run(1), c.seed, 1); }), 0LL);
        QCOMPARE(sampler.text().size(), c.sample.prompt.size() + 24);  // the prompt's ASCII, 24 characters
    }

    // The log-probability mismatch (engine/run/logprob_mismatch.hpp) allocates nothing after its
    // first measurement: its models and buffers are made once, the run's weights read into them.
    void a_mismatch_measurement_allocates_nothing_after_the_first() {
        SessionConfig c = load_config("fp16-for-rl");
        c.steps = 2;
        Session s(c);
        s.step();
        const SessionConfig& sc = s.config();
        const int T = sc.model.gpt.block_size, B = sc.train.batch;
        const auto starts = eval_window_starts(*s.dataset().text, T, B, sc.data.n_test);
        std::vector<EvalChunk> split(starts.size() / static_cast<std::size_t>(B));
        for (std::size_t k = 0; k < split.size(); ++k) {
            split[k].rows = B;
            gather_windows(*s.dataset().text, std::span(starts).subspan(k * static_cast<std::size_t>(B), static_cast<std::size_t>(B)), T,
                           split[k].data.x, split[k].data.labels);
        }
        LogprobMismatch m(sc, init_weights(sc.model, sc.seed), [] { return make_cpu_backend(); });
        for (int threads : {1, 3}) {
            set_thread_count(threads);
            m.measure(s.run(0), split, 0);  // a thread count's first pass may size the pool's own buffers
            QCOMPARE(allocations_in([&] { m.measure(s.run(0), split, 1); }), 0LL);
        }
        set_thread_count(1);
        QVERIFY(m.measure(s.run(0), split, 1)[1].mean_abs > 0.0);
    }
};

QTEST_GUILESS_MAIN(TestStepAllocations)
#include "test_step_allocations.moc"
