// Op-by-op and whole-run comparisons of a backend under test against a reference backend (the CPU
// twin), each returning a Report instead of asserting. Rule: Qt-free, so the same checks run in
// tests/test_cuda_backend.cpp (QtTest) and in mpx-cuda-check on a GPU machine that has no Qt.
// Tolerances: cuda/compare/tolerance.hpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/compute/backend.hpp"

namespace mpx::compare {

class Report {
public:
    void fail(std::string what) {  // keeps the first 20; counts them all
        if (++m_failed <= 20) m_failures.push_back(std::move(what));
    }
    void note(std::string what) { m_notes.push_back(std::move(what)); }
    void expect(bool ok, const std::string& what) {
        if (!ok) fail(what);
    }
    // Compares two buffers within per-element bounds; returns how many elements differ in bits.
    std::size_t close(const std::string& what, const std::vector<float>& ref,
                      const std::vector<float>& got, const std::vector<double>& bound);
    // RoundStats within `allowed` of each other (see tolerance.hpp).
    void counts(const std::string& what, const RoundStats& ref, const RoundStats& got,
                std::size_t allowed);

    bool ok() const { return m_failures.empty(); }
    const std::vector<std::string>& failures() const { return m_failures; }
    const std::vector<std::string>& notes() const { return m_notes; }
    std::size_t failed() const { return m_failed; }
    std::string text() const;  // failures, then notes, one per line

private:
    std::vector<std::string> m_failures, m_notes;
    std::size_t m_failed = 0;
};

// A precision policy as the ops see it: activations' storage, GEMM compute, weights' storage.
struct Policy {
    std::string name;
    Format act, compute, weight;
};
const std::vector<Policy>&
policies();  // fp32, tf32, amp-fp16, amp-bf16, half-fp16, pure-bf16, fp8-e4m3

// Each op compares `dut` against `ref` on the same random inputs (uploaded to both).
Report linear_ops(Backend& ref, Backend& dut, const Policy& p);       // forward, both backwards
Report elementwise_ops(Backend& ref, Backend& dut, const Policy& p);  // activations, dropout,
                                                                      // layernorm, transfers
Report losses(Backend& ref, Backend& dut, const Policy& p);           // CE, MSE, accuracy
Report unscale_and_optimizer(Backend& ref, Backend& dut, const Policy& p);

// Allocating an absurd tensor throws DeviceError naming the fix, and the backend stays usable.
Report out_of_memory(Backend& dut);

using Factory = std::function<std::unique_ptr<Backend>()>;
// `steps` steps of the default preset on CPU backends and on `dut`: losses per step within the
// bounds documented in backend_compare.cpp; the worst deviations go into the notes.
Report training_tracks(const Factory& dut, int steps = 100);
// The overflow-storm preset: the same steps skipped and the same scales on both.
Report overflow_storm(const Factory& dut);
// Records one step late (Session::step_ahead) on the device under test against its own step():
// the default and overflow-storm presets (the storm without histograms), every record bit for
// bit (a step read while the next runs reads what it would have read alone), and steps were
// left pending.
Report records_one_step_late(const Factory& dut, int steps = 100);

}  // namespace mpx::compare
