// The worker pool behind parallel_for (parallel.hpp): jobs in an intrusive list under one mutex,
// each piece claimed under the lock (pieces are coarse: a run's step, a GEMM's row block, a loop's
// chunk of thousands of elements).
#include "engine/base/parallel.hpp"

#include "engine/base/error.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace mpx {

void throw_thread_refused(unsigned which, unsigned wanted, const std::system_error& e) {
    throw DeviceError("the system refused thread " + std::to_string(which) + " of " + std::to_string(wanted) + " (" +
                      e.code().message() + "); ask for fewer threads (--threads)");
}

namespace {

struct Job {
    std::size_t n = 0;
    void* context = nullptr;
    void (*call)(void*, std::size_t, unsigned) = nullptr;
    std::uint64_t lanes = 0;  // the lanes of the pieces running now, a bit each
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
        stop_workers();
        m_threads.store(threads);
        for (unsigned i = 1; i < threads; ++i) try {
                m_workers.emplace_back([this] { work(); });
            } catch (const std::system_error& e) {
                // The system refused a thread (a process or memory limit): the started ones are
                // joined, the pool is back to the caller's thread alone, and the caller is told.
                stop_workers();
                m_threads.store(1);
                throw_thread_refused(i + 1, threads, e);
            }
    }

    void run(Job& job) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            Job** tail = &m_jobs;
            while (*tail) tail = &(*tail)->later;
            *tail = &job;
            m_open.fetch_add(1, std::memory_order_release);
        }
        if (m_sleeping.load(std::memory_order_acquire) > 0) m_work.notify_all();
        std::unique_lock<std::mutex> lock(m_mutex);
        while (job.next < job.n) run_piece(job, lock);  // the caller works on its own job
        if (job.done == job.n) return;
        // The last pieces are running on other threads: usually microseconds, so spin a little
        // (helping with any other job meanwhile) before sleeping.
        for (int spin = 0; spin < k_spins && job.done < job.n; ++spin) {
            if (m_jobs) run_piece(*m_jobs, lock);
            else {
                lock.unlock();
                pause();
                lock.lock();
            }
        }
        m_finished.wait(lock, [&] { return job.done == job.n; });
    }

private:
    // Called under m_resize, with no job running.
    void stop_workers() {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_stop = true;
            m_stop_seen = true;
        }
        m_work.notify_all();
        for (std::thread& t : m_workers) t.join();
        m_workers.clear();
        m_stop = false;
        m_stop_seen = false;
    }

    // Claims piece job.next, runs it unlocked, counts it done; called and returns with `lock` held.
    void run_piece(Job& job, std::unique_lock<std::mutex>& lock) {
        const std::size_t i = job.next++;
        if (job.next == job.n) {
            unlink(job);
            m_open.fetch_sub(1, std::memory_order_release);
        }
        const auto lane = static_cast<unsigned>(std::countr_one(job.lanes));
        job.lanes |= std::uint64_t{1} << lane;
        lock.unlock();
        std::exception_ptr error;
        try {
            job.call(job.context, i, lane);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        job.lanes &= ~(std::uint64_t{1} << lane);
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
            if (!m_jobs && !m_stop) {
                // A step's ops follow each other closely: watch for the next job a while before
                // sleeping, so a small op does not wait for a wake-up.
                lock.unlock();
                for (int spin = 0; spin < k_spins && m_open.load(std::memory_order_acquire) == 0 && !m_stop_seen.load(std::memory_order_relaxed); ++spin)
                    pause();
                lock.lock();
                ++m_sleeping;
                m_work.wait(lock, [&] { return m_stop || m_jobs; });
                --m_sleeping;
            }
            if (m_stop) return;
            run_piece(*m_jobs, lock);
        }
    }

    static void pause() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
    }

    static constexpr int k_spins = 20000;  // pauses: tens of microseconds

    std::mutex m_resize;
    std::mutex m_mutex;
    std::condition_variable m_work;
    std::condition_variable m_finished;
    Job* m_jobs = nullptr;
    bool m_stop = false;
    std::atomic<bool> m_stop_seen{false};  // m_stop, for the spinning workers outside the lock
    std::atomic<int> m_open{0};            // jobs with unclaimed pieces (the length of m_jobs)
    std::atomic<int> m_sleeping{0};        // workers waiting on m_work
    std::atomic<unsigned> m_threads{1};
    std::vector<std::thread> m_workers;
};

thread_local bool t_serial = false;

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

SerialHere::SerialHere() : m_was(t_serial) { t_serial = true; }
SerialHere::~SerialHere() { t_serial = m_was; }

unsigned core_count() { return std::max(1u, std::thread::hardware_concurrency()); }

void set_thread_count(unsigned n) { pool().resize(std::min(n ? n : core_count(), k_max_thread_count)); }

unsigned lane_count(std::size_t n) {
    if (n <= 1 || t_serial) return 1;
    return static_cast<unsigned>(std::min<std::size_t>(n, thread_count()));
}

unsigned thread_count() { return pool().threads(); }

namespace detail {

void parallel_for_impl(std::size_t n, void* context, void (*call)(void*, std::size_t, unsigned)) {
    if (n == 0) return;
    if (n == 1 || t_serial || thread_count() == 1) {  // every piece runs, as on the pool; the first error wins
        std::exception_ptr error;
        for (std::size_t i = 0; i < n; ++i) try {
                call(context, i, 0);
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
