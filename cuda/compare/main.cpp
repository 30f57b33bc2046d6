// mpx-cuda-check: the CUDA backend against the CPU twin, op by op and over whole runs, with the
// comparisons of backend_compare.hpp. Qt-free, for GPU machines that have only a compiler, CMake
// and the CUDA toolkit. Exit status: 0 all passed, 1 a check failed, 2 no usable GPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cuda/compare/backend_compare.hpp"
#include "cuda/compare/self_check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device.hpp"
#include "engine/session.hpp"

using namespace mpx;

namespace {

int g_failed = 0;

template <typename F>
void run(const std::string& name, F&& check) {
    compare::Report r;
    try {
        r = check();
    } catch (const std::exception& e) {
        r.fail(std::string("threw: ") + e.what());
    }
    std::printf("%s %s\n", r.ok() ? "PASS" : "FAIL", name.c_str());
    if (!r.ok()) ++g_failed;
    const std::string t = r.text();
    if (!t.empty()) std::printf("%s", t.c_str());
    std::fflush(stdout);
}

void usage() {
    std::puts(
        "usage: mpx-cuda-check [--device N] [--steps N] [--ops-only] [--cpu]\n"
        "  --device N   the GPU to test (default 0)\n"
        "  --steps N    steps of the default preset in the whole-run comparison (default 100)\n"
        "  --ops-only   skip the whole-run comparisons\n"
        "  --cpu        compare the CPU backend with itself (checks the comparisons, no GPU)\n"
        "Every op must match the CPU backend bit for bit, except the GEMMs' accumulation order\n"
        "and expf/logf/tanhf (bounds in cuda/compare/tolerance.hpp).");
}

}  // namespace

int main(int argc, char** argv) {
    int device = 0, steps = 100;
    bool ops_only = false, cpu_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--device" && i + 1 < argc)
            device = std::atoi(argv[++i]);
        else if (a == "--steps" && i + 1 < argc)
            steps = std::atoi(argv[++i]);
        else if (a == "--ops-only")
            ops_only = true;
        else if (a == "--cpu")
            cpu_only = true;
        else {
            usage();
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    compare::Factory make_dut;
    if (cpu_only) {
        make_dut = [] { return make_cpu_backend(); };
        std::puts("comparing the CPU backend with itself");
    } else {
        const cuda::DeviceProbe p = cuda::probe_device();
        if (!p.usable) {
            std::printf("SKIP no usable GPU: %s\n", p.reason.c_str());
            return 2;
        }
        make_dut = [device] { return cuda::make_cuda_backend(device); };
        try {
            auto be = make_dut();
            auto* gpu = static_cast<cuda::CudaBackend*>(be.get());
            std::printf("device %d: %s, compute capability %d.%d, %.1f of %.1f GiB free\n", device,
                        gpu->name().c_str(), gpu->compute_capability() / 10,
                        gpu->compute_capability() % 10, gpu->device_free_bytes() / 1073741824.0,
                        gpu->device_total_bytes() / 1073741824.0);
        } catch (const std::exception& e) {
            std::printf("FAIL the CUDA backend does not start: %s\n", e.what());
            return 1;
        }
    }

    if (!cpu_only) {  // what `--device auto` runs before it trains on this GPU
        auto dut = make_dut();
        const compare::SelfCheck s = compare::self_check(*dut);
        std::printf("%s startup self-check (%.3f s)\n%s", s.passed ? "PASS" : "FAIL", s.seconds,
                    s.report.c_str());
        g_failed += s.passed ? 0 : 1;
    }
    for (const compare::Policy& p : compare::policies()) {
        const auto pair = [&](compare::Report (*op)(Backend&, Backend&, const compare::Policy&)) {
            return [&, op] {
                auto ref = make_cpu_backend();
                auto dut = make_dut();
                return op(*ref, *dut, p);
            };
        };
        run("linear " + p.name, pair(compare::linear_ops));
        run("elementwise " + p.name, pair(compare::elementwise_ops));
        run("losses " + p.name, pair(compare::losses));
        run("unscale+optimizer " + p.name, pair(compare::unscale_and_optimizer));
    }
    if (!cpu_only)
        run("out of memory", [&] {
            auto dut = make_dut();
            return compare::out_of_memory(*dut);
        });
    if (!ops_only) {
        run("training tracks the CPU (" + std::to_string(steps) + " steps)",
            [&] { return compare::training_tracks(make_dut, steps); });
        run("overflow storm skips like the CPU", [&] { return compare::overflow_storm(make_dut); });
    }
    if (!cpu_only && !ops_only) {  // speed and waits of the default preset's runs, one at a time
        for (const std::string& label : {"fp32", "amp-fp16", "amp-bf16"}) {
            SessionConfig c = load_config("default");
            c.runs = {label};
            c.eval_every = 0;
            c.steps = 2000;
            std::vector<cuda::CudaBackend*> gpus;
            Session s(c, [&] {
                auto be = cuda::make_cuda_backend(device);
                gpus.push_back(static_cast<cuda::CudaBackend*>(be.get()));
                return be;
            });
            for (int i = 0; i < 50; ++i) s.step();  // warm-up: allocations, cuBLASLt heuristics
            const long long syncs0 = gpus.back()->host_syncs();
            const auto t0 = std::chrono::steady_clock::now();
            const int n = 1000;
            for (int i = 0; i < n; ++i) s.step();
            const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("note %s, 2-64-64-2 batch 256: %.1f steps/s, %.2f host waits per step\n",
                        label.c_str(), n / sec,
                        static_cast<double>(gpus.back()->host_syncs() - syncs0) / n);
        }
    }
    std::printf("%s: %d check%s failed\n", g_failed ? "FAILED" : "OK", g_failed,
                g_failed == 1 ? "" : "s");
    return g_failed ? 1 : 0;
}
