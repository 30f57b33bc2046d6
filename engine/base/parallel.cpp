// The worker pool behind parallel_for (parallel.hpp): jobs in an intrusive list under one mutex,
// each piece claimed under the lock (pieces are coarse: a run's step, a GEMM's row block, a loop's
// chunk of thousands of elements).
#include "engine/base/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mpx {
namespace {

struct Job {
    std::size_t n = 0;
    void* context = nullptr;
    void (*call)(void*, std::size_t) = nullptr;
    std::size_t next = 0;  // the next unclaimed piece
    std::size_t done = 0;  // pieces finished
    std::size_t failed_at = 0;
    std::exception_ptr error;  // that of the lowest failed piece
    Job* later = nullptr;      // the list of jobs with unclaimed pieces
};

class Pool {
public:
    ~Pool() { resize(1); }

    unsigned threads() const { return m_threads.load(std::memory_order_relaxed); }

    void resize(unsigned threads) {
        threads = std::max(1u, threads);
        std::lock_guard<std::mutex> one_resize(m_resize);
        if (threads == m_threads.load()) return;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_stop = true;
        }
        m_work.notify_all();
        for (std::thread& t : m_workers) t.join();
        m_workers.clear();
        m_stop = false;
        m_threads.store(threads);
        for (unsigned i = 1; i < threads; ++i) m_workers.emplace_back([this] { work(); });
    }

    void run(Job& job) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            Job** tail = &m_jobs;
            while (*tail) tail = &(*tail)->later;
            *tail = &job;
        }
        m_work.notify_all();
        std::unique_lock<std::mutex> lock(m_mutex);
        while (job.next < job.n) run_piece(job, lock);  // the caller works on its own job
        m_finished.wait(lock, [&] { return job.done == job.n; });
    }

private:
    // Claims piece job.next, runs it unlocked, counts it done; called and returns with `lock` held.
    void run_piece(Job& job, std::unique_lock<std::mutex>& lock) {
        const std::size_t i = job.next++;
        if (job.next == job.n) unlink(job);
        lock.unlock();
        std::exception_ptr error;
        try {
            job.call(job.context, i);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && (!job.error || i < job.failed_at)) {
            job.error = error;
            job.failed_at = i;
        }
        if (++job.done == job.n) m_finished.notify_all();
    }

    void unlink(Job& job) {
        for (Job** at = &m_jobs; *at; at = &(*at)->later)
            if (*at == &job) {
                *at = job.later;
                job.later = nullptr;
                return;
            }
    }

    void work() {
        std::unique_lock<std::mutex> lock(m_mutex);
        for (;;) {
            m_work.wait(lock, [&] { return m_stop || m_jobs; });
            if (m_stop) return;
            run_piece(*m_jobs, lock);
        }
    }

    std::mutex m_resize;
    std::mutex m_mutex;
    std::condition_variable m_work;
    std::condition_variable m_finished;
    Job* m_jobs = nullptr;
    bool m_stop = false;
    std::atomic<unsigned> m_threads{1};
    std::vector<std::thread> m_workers;
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

unsigned core_count() { return std::max(1u, std::thread::hardware_concurrency()); }

void set_thread_count(unsigned n) { pool().resize(n ? n : core_count()); }

unsigned thread_count() { return pool().threads(); }

namespace detail {

void parallel_for_impl(std::size_t n, void* context, void (*call)(void*, std::size_t)) {
    if (n == 0) return;
    if (n == 1 || thread_count() == 1) {  // every piece runs, as on the pool; the first error wins
        std::exception_ptr error;
        for (std::size_t i = 0; i < n; ++i) try {
                call(context, i);
            } catch (...) {
                if (!error) error = std::current_exception();
            }
        if (error) std::rethrow_exception(error);
        return;
    }
    Job job;
    job.n = n;
    job.context = context;
    job.call = call;
    pool().run(job);
    if (job.error) std::rethrow_exception(job.error);
}

}  // namespace detail
}  // namespace mpx
