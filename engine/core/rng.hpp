// Deterministic random numbers for data, initial weights, dropout and batch order. Rule: never use
// <random>'s distributions here (their output differs between standard libraries); everything is
// derived from SplitMix64 so a seed gives the same numbers on every machine and compiler.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "engine/core/host_device.hpp"

namespace mpx {

// Counter-based uniform in [0, 1): the i-th draw of a stream is a pure function of (seed, i), so a
// GPU thread can make element i's draw without a sequence (dropout masks on CPU and GPU agree).
MPX_HOST_DEVICE inline double hash_uniform(std::uint64_t seed, std::uint64_t i) {
    std::uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1p-53;
}

class Rng {
public:
    explicit Rng(std::uint64_t seed) : m_state(seed) {}

    std::uint64_t next_u64() {
        std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    // Uniform integer in [0, n) (n > 0), without modulo bias worth measuring for n < 2^32.
    std::uint64_t below(std::uint64_t n) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
    }
    // Standard normal by Box–Muller (both values used).
    double normal() {
        if (m_has_spare) {
            m_has_spare = false;
            return m_spare;
        }
        double u1 = uniform();
        while (u1 <= 0.0) u1 = uniform();
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        m_spare = r * std::sin(2.0 * std::numbers::pi * u2);
        m_has_spare = true;
        return r * std::cos(2.0 * std::numbers::pi * u2);
    }
    double normal(double mean, double stddev) { return mean + stddev * normal(); }

    // An independent stream for a named purpose, so adding draws in one place never shifts another.
    static Rng derive(std::uint64_t seed, std::uint64_t stream) {
        Rng r(seed ^ (0x6a09e667f3bcc909ull * (stream + 1)));
        r.next_u64();
        return r;
    }

private:
    std::uint64_t m_state;
    double m_spare = 0.0;
    bool m_has_spare = false;
};

}  // namespace mpx
