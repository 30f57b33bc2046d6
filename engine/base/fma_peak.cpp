// A register-only FMA kernel per thread. Rule: enough independent accumulator chains to cover the
// FMA units' latency (16 chains: 4-cycle latency × 2 units × 2 to spare), vectors as wide as the
// build's target, and the accumulators summed into a result the caller cannot see through, so the
// compiler keeps every FMA.
#include "engine/base/fma_peak.hpp"

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace mpx {

namespace {

constexpr int k_chains = 16;

// An empty statement the compiler must assume reads and changes v, in its register: without it the
// chains of constants fold away (an unmeasurably fast "kernel"). It adds no instruction.
template <class V>
inline void keep(V& v) {
#if defined(__GNUC__)
    asm volatile("" : "+x"(v));
#else
    volatile V sink = v;
    v = sink;
#endif
}

#if defined(__AVX512F__)
constexpr int k_lanes = 16;
const char* const k_kind = "AVX-512 FMA";
double run_block(long long iterations) {
    __m512 acc[k_chains];
    for (int c = 0; c < k_chains; ++c) acc[c] = _mm512_set1_ps(1.0f + 1e-3f * static_cast<float>(c));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long long i = 0; i < iterations; ++i) {
        for (int c = 0; c < k_chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
        for (int c = 0; c < k_chains; ++c) keep(acc[c]);
    }
    __m512 s = acc[0];
    for (int c = 1; c < k_chains; ++c) s = _mm512_add_ps(s, acc[c]);
    return static_cast<double>(_mm512_reduce_add_ps(s));
}
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int k_lanes = 8;
const char* const k_kind = "AVX2 FMA";
double run_block(long long iterations) {
    __m256 acc[k_chains];
    for (int c = 0; c < k_chains; ++c) acc[c] = _mm256_set1_ps(1.0f + 1e-3f * static_cast<float>(c));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long long i = 0; i < iterations; ++i) {
        for (int c = 0; c < k_chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
        for (int c = 0; c < k_chains; ++c) keep(acc[c]);
    }
    alignas(32) float out[8];
    __m256 s = acc[0];
    for (int c = 1; c < k_chains; ++c) s = _mm256_add_ps(s, acc[c]);
    _mm256_store_ps(out, s);
    double t = 0.0;
    for (float v : out) t += v;
    return t;
}
#else
constexpr int k_lanes = 1;
const char* const k_kind = "scalar fmaf";
double run_block(long long iterations) {
    float acc[k_chains];
    for (int c = 0; c < k_chains; ++c) acc[c] = 1.0f + 1e-3f * static_cast<float>(c);
    for (long long i = 0; i < iterations; ++i) {
        for (int c = 0; c < k_chains; ++c) acc[c] = std::fma(acc[c], 0.999999f, 1e-7f);
        for (int c = 0; c < k_chains; ++c) keep(acc[c]);
    }
    double t = 0.0;
    for (float v : acc) t += v;
    return t;
}
#endif

// One window of `seconds`, every thread at once: the FLOPs a second they finished together.
FmaPeak measure_window(unsigned threads, double seconds) {
    constexpr long long block = 1 << 16;  // iterations between clock reads
    std::vector<double> flops(threads, 0.0), sink(threads, 0.0);
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    const auto work = [&](unsigned t) {
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        const auto start = std::chrono::steady_clock::now();
        long long done = 0;
        double elapsed = 0.0;
        do {
            sink[t] += run_block(block);
            done += block;
            elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        } while (elapsed < seconds);
        flops[t] = 2.0 * k_lanes * k_chains * static_cast<double>(done) / elapsed;
    };
    std::vector<std::thread> pool;
    try {
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    } catch (const std::exception& e) {  // system_error, or bad_alloc under a memory limit
        const auto started = static_cast<unsigned>(pool.size()) + 1;
        go.store(true);
        for (auto& th : pool) th.join();
        throw ConfigError("--threads", "the system refused thread " + std::to_string(started + 1) + " of " +
                                           std::to_string(threads) + " (" + thread_refusal_reason(e) + "); ask for fewer threads");
    }
    while (ready.load() + 1 < threads) std::this_thread::yield();
    go.store(true);
    work(0);
    for (auto& th : pool) th.join();
    FmaPeak p;
    p.threads = threads;
    p.lanes = k_lanes;
    for (double f : flops) p.gflops += f / 1e9;
    // The sums keep the kernel's work observable; a value no FMA chain can reach never occurs.
    double all = 0.0;
    for (double s : sink) all += s;
    p.method = std::string(k_kind) + ", " + std::to_string(k_chains) + " independent chains a thread" +
               (std::isnan(all) ? " (NaN)" : "");
    return p;
}

}  // namespace

// The best of k_windows windows: on a shared machine (a virtual one) another tenant can take cycles
// from any one window, and a peak read low put a GEMM above 100 % of it (147.7 GFLOP/s of GEMMs
// against a 0.2 s window's 129 on this 2-core EPYC).
FmaPeak measure_fma_peak(unsigned threads, double seconds) {
    constexpr int k_windows = 5;
    threads = std::max(1u, threads);
    FmaPeak best;
    for (int w = 0; w < k_windows; ++w) {
        FmaPeak p = measure_window(threads, seconds / k_windows);
        if (p.gflops > best.gflops) best = std::move(p);
    }
    best.method += ", the best of " + std::to_string(k_windows) + " windows";
    return best;
}

}  // namespace mpx
