// The engine's worker threads: one process-wide pool that a session's runs, a run's GEMMs and its
// long element loops share. Rule: work is split into pieces whose boundaries depend on the data's
// shape only, never on the thread count, and no piece splits a sum; so every result is the same
// bit for bit whatever the count (a CSV from --threads 1 equals one from --threads 8).
// parallel_for allocates nothing: the job lives on the caller's stack and the caller works on it
// too, so nested calls (a run's GEMM inside a session's parallel step) cannot deadlock.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace mpx {

// The threads parallel_for may use, the caller included: n (at most k_max_thread_count), or one per
// core for 0. Called between steps (the CLI's --threads, the app's setting); the pool's workers
// start or stop to match.
inline constexpr unsigned k_max_thread_count = 64;
void set_thread_count(unsigned n);
// The count in force (1 before any set_thread_count: a program that never asks stays serial).
unsigned thread_count();
// One per core as the system reports it (at least 1).
unsigned core_count();

// While one lives, parallel_for on this thread runs every piece itself: a sweep's workers each
// train their own points, so nesting the pool's threads inside them would only crowd the cores.
class SerialHere {
public:
    SerialHere();
    ~SerialHere();
    SerialHere(const SerialHere&) = delete;
    SerialHere& operator=(const SerialHere&) = delete;

private:
    bool m_was;
};

namespace detail {
void parallel_for_impl(std::size_t n, void* context, void (*call)(void*, std::size_t, unsigned));
}

// fn(i) for every i in [0, n), spread over the pool; returns when all are done. An exception from
// fn is rethrown here (that of the lowest i); the other pieces still run.
template <class F>
void parallel_for(std::size_t n, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    detail::parallel_for_impl(n, const_cast<void*>(static_cast<const void*>(&fn)),
                              [](void* c, std::size_t i, unsigned) { (*static_cast<Fn*>(c))(i); });
}

// A thread that could not start (std::thread's std::system_error, or std::bad_alloc for its state
// or its stack under a memory limit) as the one message every thread starter gives, DeviceError "the
// system refused thread 12 of 64 (...); ask for fewer threads (--threads)". The starter catches
// std::exception and joins the threads it did start first (a std::thread destroyed unjoined ends the program).
[[noreturn]] void throw_thread_refused(unsigned which, unsigned wanted, const std::exception& e);
std::string thread_refusal_reason(const std::exception& e);  // "Resource temporarily unavailable", "out of memory"


// The lanes parallel_for_lanes(n, ...) may use: at most this many of its pieces run at once.
unsigned lane_count(std::size_t n);

// fn(i, lane) as parallel_for, with `lane` below lane_count(n) and no two running pieces on the
// same lane: a piece may use scratch of its lane's (sized by the caller before the call) unlocked.
template <class F>
void parallel_for_lanes(std::size_t n, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    detail::parallel_for_impl(n, const_cast<void*>(static_cast<const void*>(&fn)),
                              [](void* c, std::size_t i, unsigned lane) { (*static_cast<Fn*>(c))(i, lane); });
}

namespace detail {
struct ChainState;
}

// Chains of pieces that run in the background, on the pool's threads and the caller's: chain c's
// pieces first, first + 1, … run in order, one at a time, each once its number is opened; a free
// thread takes the ready piece of the lowest number (ties: the lowest chain), so one chain starts
// its next piece while another still finishes this one (a session's runs: a chain each, a step a
// piece). Pieces are whole units of work, each alone on its chain's data, so results do not depend
// on which thread runs them. Opened pieces may still run after open_to returns: nothing a running
// piece reads may change until wait_for has seen it finish.
class Chains {
public:
    Chains(std::size_t chains, std::function<void(std::size_t chain, long long piece)> fn);
    ~Chains();  // stop()
    Chains(const Chains&) = delete;
    Chains& operator=(const Chains&) = delete;

    // Back to piece `first` of every chain, none open; after stop(), or once wait_for has seen
    // every opened piece finish.
    void restart(long long first);
    // Pieces up to `piece` of every chain may start from now on.
    void open_to(long long piece);
    // Returns once every chain has finished `piece`; meanwhile the caller runs ready pieces itself
    // (of any opened number), or helps the pool's other work. A piece that threw keeps every piece of its
    // number and later from starting (earlier ones still run); once none runs, wait_for rethrows its
    // exception (the lowest piece's, then the lowest chain's) when that piece is at most `piece`.
    void wait_for(long long piece);
    // No other piece starts; returns once none runs. Its exception, if one threw, is dropped.
    void stop() noexcept;

private:
    std::unique_ptr<detail::ChainState> m_state;
};

// [begin, end) of piece i when `total` items are cut into `pieces` nearly equal parts.
inline std::pair<std::size_t, std::size_t> piece_range(std::size_t total, std::size_t pieces, std::size_t i) {
    return {total * i / pieces, total * (i + 1) / pieces};
}

}  // namespace mpx
