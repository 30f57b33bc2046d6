// `mpx-cli selftest`: quick agreement checks printed as a pass/fail table. On a machine with a GPU
// the CPU/GPU agreement rows run; without one they are listed as skipped with the reason.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "engine/precision/format.hpp"
#include "engine/run/session.hpp"
#include "engine/scaler/scaler.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/compare/backend_compare.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device.hpp"
#endif

namespace mpx::cli {
namespace {

struct Check {
    std::string name;
    std::function<std::string()> run;  // "" = pass, else what failed; "skip: ..." = skipped
};

std::vector<Check> checks() {
    std::vector<Check> c;
    c.push_back({"fp16: 65519.996 -> 65504, 65520 -> inf", [] {
                     if (round_to(Format::fp16, 65519.996f) != 65504.0f) return std::string("65519.996 wrong");
                     if (!std::isinf(round_to(Format::fp16, 65520.0f))) return std::string("65520 not inf");
                     return std::string();
                 }});
    c.push_back({"bf16: signalling NaN stays NaN", [] {
                     const float snan = std::bit_cast<float>(0x7f800001u);
                     return std::isnan(round_to(Format::bf16, snan)) ? std::string() : std::string("became inf");
                 }});
    c.push_back({"e4m3: 464 -> 448, 465 saturates", [] {
                     if (round_to(Format::e4m3, 464.0f) != 448.0f) return std::string("464 wrong");
                     if (!rounding_overflows(Format::e4m3, 465.0f)) return std::string("465 not overflow");
                     return std::string();
                 }});
    c.push_back({"scaler: pytorch backs off and regrows", [] {
                     ScalerConfig s = scaler_preset("pytorch");
                     s.growth_interval = 2;
                     LossScaler ls(s);
                     ls.update(true);
                     if (ls.scale() != 32768.0) return std::string("backoff wrong");
                     ls.update(false);
                     ls.update(false);
                     return ls.scale() == 65536.0 ? std::string() : std::string("growth wrong");
                 }});
    c.push_back({"cpu: same seed gives bit-identical losses", [] {
                     SessionConfig cfg;
                     cfg.steps = 5;
                     Session a(cfg), b(cfg);
                     for (int i = 0; i < 5; ++i) {
                         const auto ra = a.step(), rb = b.step();
                         for (std::size_t k = 0; k < ra.size(); ++k)
                             if (std::bit_cast<std::uint64_t>(ra[k].loss) != std::bit_cast<std::uint64_t>(rb[k].loss))
                                 return std::string("losses differ");
                     }
                     return std::string();
                 }});
#ifdef MPX_HAVE_CUDA
    // One row per policy: every op of the CUDA backend against the CPU twin (cuda/compare).
    for (const compare::Policy& pol : compare::policies()) {
        c.push_back({"gpu vs cpu, all ops: " + pol.name, [pol]() -> std::string {
                         const auto p = cuda::probe_device();
                         if (!p.usable) return "skip: " + p.reason;
                         auto ref = make_cpu_backend();
                         auto dut = cuda::make_cuda_backend();
                         for (const compare::Report& r :
                              {compare::linear_ops(*ref, *dut, pol), compare::elementwise_ops(*ref, *dut, pol),
                               compare::losses(*ref, *dut, pol), compare::unscale_and_optimizer(*ref, *dut, pol)})
                             if (!r.ok()) return r.failures().front();
                         return std::string();
                     }});
    }
#else
    c.push_back({"gpu vs cpu", [] { return std::string("skip: built without CUDA"); }});
#endif
    return c;
}

int run_selftest() {
    int failed = 0;
    std::printf("%-48s %s\n", "check", "result");
    for (const auto& c : checks()) {
        std::string r;
        try {
            r = c.run();
        } catch (const std::exception& e) {
            r = std::string("threw: ") + e.what();
        }
        const bool skip = r.rfind("skip: ", 0) == 0;
        if (!r.empty() && !skip) ++failed;
        std::printf("%-48s %s\n", c.name.c_str(), r.empty() ? "PASS" : skip ? ("SKIP (" + r.substr(6) + ")").c_str() : ("FAIL: " + r).c_str());
    }
    std::printf("%d failed\n", failed);
    return failed ? 1 : 0;
}

}  // namespace

void add_selftest_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("selftest", "Run the agreement checks and print a pass/fail table");
    cmd->callback([] {
        if (run_selftest() != 0) throw CLI::RuntimeError(1);
    });
}

}  // namespace mpx::cli
