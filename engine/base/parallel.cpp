// The worker pool behind parallel_for and Chains (parallel.hpp): jobs and chain sets in intrusive
// lists under one mutex, each piece claimed under the lock (pieces are coarse: a run's step, a GEMM's
// row block, a loop's chunk of thousands of elements). A chain's ready piece goes before a job's: the
// coarse work keeps every thread busy, and a parallel_for called while no thread idles runs on its
// caller alone, without the lock (its pieces are the same, so are its results).
#include "engine/base/parallel.hpp"

#include "engine/base/error.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace mpx {

std::string thread_refusal_reason(const std::exception& e) {
    if (const auto* s = dynamic_cast<const std::system_error*>(&e)) return s->code().message();
    if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory";
    return e.what();
}

void throw_thread_refused(unsigned which, unsigned wanted, const std::exception& e) {
    throw DeviceError("the system refused thread " + std::to_string(which) + " of " + std::to_string(wanted) + " (" +
                      thread_refusal_reason(e) + "); ask for fewer threads (--threads)");
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

}  // namespace

namespace detail {

struct ChainState {
    std::function<void(std::size_t, long long)> fn;
    std::vector<long long> next;  // per chain: its next piece (the running one, while it runs)
    std::vector<char> running;    // per chain
    long long open = std::numeric_limits<long long>::min();  // pieces up to this may start
    int running_count = 0;
    long long failed_at = std::numeric_limits<long long>::max();  // the lowest piece that threw
    std::size_t failed_chain = 0;
    std::exception_ptr error;
    ChainState* later = nullptr;  // the pool's list of chain sets
};

}  // namespace detail

namespace {

using detail::ChainState;

// Whether this thread runs a pool's piece now: a parallel_for there may run on its caller alone.
thread_local int t_in_piece = 0;
struct InPiece {
    InPiece() { ++t_in_piece; }
    ~InPiece() { --t_in_piece; }
};

class Pool {
public:
    ~Pool() { resize(1); }

    unsigned threads() const { return m_threads.load(std::memory_order_relaxed); }
    // Whether some thread waits for work now (a worker, or a caller waiting on its chains).
    bool anyone_idle() const { return m_idle.load(std::memory_order_relaxed) > 0; }

    void resize(unsigned threads) {
        threads = std::max(1u, threads);
        std::lock_guard<std::mutex> one_resize(m_resize);
        if (threads == m_threads.load()) return;
        stop_workers();
        m_threads.store(threads);
        for (unsigned i = 1; i < threads; ++i) try {
                m_workers.emplace_back([this] { work(); });
            } catch (const std::exception& e) {
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
        // (helping with any other job meanwhile, never a chain's piece: that would hold this job's
        // caller up for a whole piece) before sleeping.
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

    void add(ChainState& c) {
        std::lock_guard<std::mutex> lock(m_mutex);
        c.later = m_chains;
        m_chains = &c;
    }

    void remove(ChainState& c) {
        stop(c);
        std::lock_guard<std::mutex> lock(m_mutex);
        for (ChainState** at = &m_chains; *at; at = &(*at)->later)
            if (*at == &c) {
                *at = c.later;
                break;
            }
    }

    void restart(ChainState& c, long long first) {
        stop(c);
        std::lock_guard<std::mutex> lock(m_mutex);
        std::fill(c.next.begin(), c.next.end(), first);
        c.failed_at = std::numeric_limits<long long>::max();
        c.error = nullptr;
    }

    void open_to(ChainState& c, long long piece) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            c.open = std::max(c.open, piece);
            recount();
        }
        if (m_sleeping.load(std::memory_order_acquire) > 0) m_work.notify_all();
    }

    void wait_for(ChainState& c, long long piece) {
        std::unique_lock<std::mutex> lock(m_mutex);
        for (;;) {
            if (c.failed_at <= piece) {
                if (c.running_count == 0 && !ready(c, piece)) std::rethrow_exception(c.error);
            } else if (std::all_of(c.next.begin(), c.next.end(), [&](long long n) { return n > piece; })) {
                return;
            }
            // Any open piece, the next number's too: waiting idle for another thread's last piece
            // of this number cost a tenth of the threads' time (perf, the default preset on 2).
            if (const std::size_t k = ready(c); k) {
                run_chain_piece(c, k - 1, lock);
                continue;
            }
            if (m_jobs) {  // a running piece's parallel_for: help it
                run_piece(*m_jobs, lock);
                continue;
            }
            const unsigned long long seen = m_chain_done.load(std::memory_order_relaxed);
            idle(lock, Watch::pieces_done, [&] { return m_chain_done.load(std::memory_order_relaxed) != seen || m_jobs || ready(c); });
        }
    }

    void stop(ChainState& c) {
        std::unique_lock<std::mutex> lock(m_mutex);
        c.open = std::numeric_limits<long long>::min();
        recount();
        m_finished.wait(lock, [&] { return c.running_count == 0; });
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
        const InPiece in_piece;
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

    // 1 + the chain whose ready piece (at most `limit`) comes first, or 0 when none is ready.
    static std::size_t ready(const ChainState& c, long long limit = std::numeric_limits<long long>::max()) {
        const long long last = std::min({c.open, limit, c.failed_at - 1});
        std::size_t best = 0;
        for (std::size_t k = 0; k < c.next.size(); ++k)
            if (!c.running[k] && c.next[k] <= last && (!best || c.next[k] < c.next[best - 1])) best = k + 1;
        return best;
    }

    // The ready chain pieces of every set, for the spinning workers outside the lock; under the lock.
    void recount() {
        int n = 0;
        for (const ChainState* c = m_chains; c; c = c->later) n += ready(*c) != 0;
        m_chain_ready.store(n, std::memory_order_release);
    }

    // Runs piece c.next[k] of chain k unlocked; called and returns with `lock` held.
    void run_chain_piece(ChainState& c, std::size_t k, std::unique_lock<std::mutex>& lock) {
        const long long piece = c.next[k];
        c.running[k] = 1;
        ++c.running_count;
        recount();
        lock.unlock();
        std::exception_ptr error;
        const InPiece in_piece;
        try {
            c.fn(k, piece);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        c.running[k] = 0;
        --c.running_count;
        if (error) {  // the chain stays at the piece that threw
            if (piece < c.failed_at || (piece == c.failed_at && k < c.failed_chain)) {
                c.failed_at = piece;
                c.failed_chain = k;
                c.error = error;
            }
        } else {
            ++c.next[k];
        }
        recount();
        m_chain_done.fetch_add(1, std::memory_order_release);
        m_finished.notify_all();
        if (m_sleeping.load(std::memory_order_relaxed) > 0) m_work.notify_all();
    }

    void unlink(Job& job) {
        for (Job** at = &m_jobs; *at; at = &(*at)->later)
            if (*at == &job) {
                *at = job.later;
                job.later = nullptr;
                return;
            }
    }

    // Nothing to do now: watch for work a while (a step's ops follow each other closely, so a small
    // op does not wait for a wake-up), then sleep until `wake` holds; counted idle meanwhile. A
    // chain's waiter also watches for pieces finishing: its wait may be over.
    enum class Watch { work, pieces_done };
    template <class Wake>
    void idle(std::unique_lock<std::mutex>& lock, Watch watch, Wake wake) {
        m_idle.fetch_add(1, std::memory_order_relaxed);
        const unsigned long long seen = m_chain_done.load(std::memory_order_relaxed);
        lock.unlock();
        // A waiter does not watch for ready pieces: those past its wait are not its to take, and
        // one it may take is readied by a piece finishing.
        const auto nothing_new = [&] {
            return m_open.load(std::memory_order_acquire) == 0 && !m_stop_seen.load(std::memory_order_relaxed) &&
                   (watch == Watch::work ? m_chain_ready.load(std::memory_order_acquire) == 0
                                         : m_chain_done.load(std::memory_order_acquire) == seen);
        };
        for (int spin = 0; spin < k_spins && nothing_new(); ++spin) pause();
        lock.lock();
        ++m_sleeping;
        m_work.wait(lock, wake);
        --m_sleeping;
        m_idle.fetch_sub(1, std::memory_order_relaxed);
    }

    void work() {
        std::unique_lock<std::mutex> lock(m_mutex);
        for (;;) {
            if (m_stop) return;
            if (ChainState* c = first_ready()) run_chain_piece(*c, ready(*c) - 1, lock);
            else if (m_jobs) run_piece(*m_jobs, lock);
            else idle(lock, Watch::work, [&] { return m_stop || m_jobs || first_ready(); });
        }
    }

    ChainState* first_ready() const {
        if (m_chain_ready.load(std::memory_order_relaxed) == 0) return nullptr;
        for (ChainState* c = m_chains; c; c = c->later)
            if (ready(*c)) return c;
        return nullptr;
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
    std::condition_variable m_work;      // workers and chain waiters with nothing to do
    std::condition_variable m_finished;  // a job's caller, Chains::stop
    Job* m_jobs = nullptr;
    ChainState* m_chains = nullptr;
    bool m_stop = false;
    std::atomic<bool> m_stop_seen{false};  // m_stop, for the spinning workers outside the lock
    std::atomic<int> m_open{0};            // jobs with unclaimed pieces (the length of m_jobs)
    std::atomic<int> m_chain_ready{0};     // chain sets with a ready piece
    std::atomic<int> m_sleeping{0};        // threads waiting on m_work
    std::atomic<int> m_idle{0};            // threads waiting for work (spinning or asleep)
    std::atomic<unsigned long long> m_chain_done{0};  // chain pieces finished, ever (changed under the lock)
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

Chains::Chains(std::size_t chains, std::function<void(std::size_t, long long)> fn)
    : m_state(std::make_unique<detail::ChainState>()) {
    m_state->fn = std::move(fn);
    m_state->next.assign(chains, 0);
    m_state->running.assign(chains, 0);
    pool().add(*m_state);
}

Chains::~Chains() { pool().remove(*m_state); }
void Chains::restart(long long first) { pool().restart(*m_state, first); }
void Chains::open_to(long long piece) { pool().open_to(*m_state, piece); }
void Chains::wait_for(long long piece) { pool().wait_for(*m_state, piece); }
void Chains::stop() noexcept { pool().stop(*m_state); }

namespace detail {

void parallel_for_impl(std::size_t n, void* context, void (*call)(void*, std::size_t, unsigned)) {
    if (n == 0) return;
    // Inside a piece while every thread is busy (a session's runs each on a thread), the pool would
    // only add its lock to each piece: they run here, as on the pool.
    if (n == 1 || t_serial || thread_count() == 1 || (t_in_piece > 0 && !pool().anyone_idle())) {
        // every piece runs, as on the pool; the first error wins
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
