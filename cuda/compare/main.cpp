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
#include "engine/run/session.hpp"

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

// The linear layers' rate in TFLOP/s: `layers` layers of n×n weights at batch n, each iteration a
// forward and both backward GEMMs of every layer as a training step runs them (the operand casts,
// cuBLASLt, the rounding and counting kernels), then the step's one wait; 6·n³ FLOP per layer.
double gemm_rate(Backend& be, const compare::Policy& p, int n, int layers, int iterations) {
    std::vector<float> v(static_cast<std::size_t>(n) * n);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 64.0f;
    const Format act = p.act;
    std::vector<Tensor> w, y;
    Tensor x = be.alloc(act, n, n, MemCategory::activations), dy = be.alloc(act, n, n, MemCategory::activations);
    Tensor dx = be.alloc(act, n, n, MemCategory::activations);
    Tensor dw = be.alloc(Format::fp32, n, n, MemCategory::grads);
    be.set_uncounted();
    for (Tensor* t : {&x, &dy}) be.upload(v, *t);
    for (int l = 0; l < layers; ++l) {
        w.push_back(be.alloc(p.weight, n, n, MemCategory::weights));
        y.push_back(be.alloc(act, n, n, MemCategory::activations));
        be.upload(v, w.back());
    }
    const auto iteration = [&] {
        be.begin_step();
        for (int l = 0; l < layers; ++l) {
            be.set_site(l, TensorKind::output);
            be.linear_forward(l ? y[static_cast<std::size_t>(l - 1)] : x, w[static_cast<std::size_t>(l)], nullptr,
                              p.compute, y[static_cast<std::size_t>(l)]);
        }
        for (int l = layers - 1; l >= 0; --l) {
            be.set_site(l, TensorKind::grad_input);
            be.linear_backward(dy, l ? y[static_cast<std::size_t>(l - 1)] : x, w[static_cast<std::size_t>(l)],
                               p.compute, act, dw, nullptr, Accumulate::overwrite, &dx);
        }
        be.read_stats();
    };
    iteration();  // warm-up: scratch, cuBLASLt plans
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) iteration();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return 6.0 * n * static_cast<double>(n) * n * layers * iterations / sec / 1e12;
}

void usage() {
    std::puts(
        "usage: mpx-cuda-check [--device N] [--steps N] [--ops-only] [--cpu] [--gemm N]\n"
        "  --device N   the GPU to test (default 0)\n"
        "  --steps N    steps of the default preset in the whole-run comparison (default 100)\n"
        "  --ops-only   skip the whole-run comparisons and the measurements\n"
        "  --cpu        compare the CPU backend with itself (checks the comparisons, no GPU)\n"
        "  --gemm N     the linear layers' rate on four N×N layers at batch N (default on a GPU:\n"
        "               4096; 0: not measured)\n"
        "Every op must match the CPU backend bit for bit, except the GEMMs' accumulation order\n"
        "and expf/logf/tanhf (bounds in cuda/compare/tolerance.hpp).");
}

}  // namespace

int main(int argc, char** argv) {
    int device = 0, steps = 100, gemm = -1;
    bool ops_only = false, cpu_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--device" && i + 1 < argc)
            device = std::atoi(argv[++i]);
        else if (a == "--steps" && i + 1 < argc)
            steps = std::atoi(argv[++i]);
        else if (a == "--gemm" && i + 1 < argc)
            gemm = std::atoi(argv[++i]);
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
        run("records one step late equal step()'s (" + std::to_string(steps) + " steps)",
            [&] { return compare::records_one_step_late(make_dut, steps); });
    }
    // How a session is stepped in the measurements: step() (each step's records read before the
    // next is queued), step_ahead() (records one step late: the host reads step N while N+1
    // runs), or step() with every step captured into a CUDA graph.
    enum class Stepping { plain, ahead, graphs };
    const auto stepping_name = [](Stepping m) {
        return m == Stepping::plain ? "" : m == Stepping::ahead ? ", records one step late" : " with CUDA graphs";
    };
    // At least n lockstep steps of s as `m` steps them, every record back (none left pending);
    // returns how many.
    const auto advance = [](Session& s, Stepping m, int n) {
        if (m != Stepping::ahead) {
            for (int i = 0; i < n; ++i) s.step();
            return n;
        }
        int done = 0;
        while (done < n) done += static_cast<int>(s.step_ahead().size());
        return done + (s.finish_pending().empty() ? 0 : 1);
    };
    if (!cpu_only && !ops_only) {  // speed and waits of the default preset's runs, one at a time
        for (const Stepping m : {Stepping::plain, Stepping::ahead, Stepping::graphs})
            for (const char* label : {"fp32", "amp-fp16", "amp-bf16"}) {
                SessionConfig c = load_config("default");
                c.runs = {label};
                c.eval_every = 0;
                c.steps = 2000;
                const bool graphs = m == Stepping::graphs;
                std::vector<cuda::CudaBackend*> gpus;
                const auto made = [&] {
                    auto be = cuda::make_cuda_backend(device, {.graphs = graphs});
                    gpus.push_back(static_cast<cuda::CudaBackend*>(be.get()));
                    return be;
                };
                try {
                    Session s(c, made);
                    advance(s, m, 50);  // warm-up: allocations, cuBLASLt heuristics
                    const long long syncs0 = gpus.back()->host_syncs();
                    const long long made0 = gpus.back()->graph_instantiations();
                    const auto t0 = std::chrono::steady_clock::now();
                    const int n = advance(s, m, 1000);
                    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    std::printf("note %s%s, 2-64-64-2 batch 256: %.1f steps/s, %.2f host waits per step",
                                label, stepping_name(m), n / sec,
                                static_cast<double>(gpus.back()->host_syncs() - syncs0) / n);
                    if (graphs)
                        std::printf(", %lld graphs instantiated in %d steps",
                                    gpus.back()->graph_instantiations() - made0, n);
                    std::printf("\n");
                } catch (const std::exception& e) {
                    std::printf("FAIL %s%s: %s\n", label, stepping_name(m), e.what());
                    ++g_failed;
                }
            }
        run("training tracks the CPU with CUDA graphs (" + std::to_string(steps) + " steps)", [&] {
            return compare::training_tracks([device] { return cuda::make_cuda_backend(device, {.graphs = true}); },
                                            steps);
        });
    }
    if (!cpu_only && !ops_only)  // the three runs together: the session overlaps their steps
        for (const Stepping m : {Stepping::plain, Stepping::ahead, Stepping::graphs}) {
            SessionConfig c = load_config("default");
            c.runs = {"fp32", "amp-fp16", "amp-bf16"};
            c.eval_every = 0;
            c.steps = 2000;
            std::vector<cuda::CudaBackend*> gpus;
            try {
                Session s(c, [&] {
                    auto be = cuda::make_cuda_backend(device, {.graphs = m == Stepping::graphs});
                    gpus.push_back(static_cast<cuda::CudaBackend*>(be.get()));
                    return be;
                });
                advance(s, m, 50);
                long long syncs0 = 0;
                for (const auto* g : gpus) syncs0 += g->host_syncs();
                const auto t0 = std::chrono::steady_clock::now();
                const int n = advance(s, m, 1000);
                const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                long long syncs = -syncs0;
                for (const auto* g : gpus) syncs += g->host_syncs();
                std::printf("note fp32+amp-fp16+amp-bf16 in one session%s, 2-64-64-2 batch 256: %.1f "
                            "session steps/s, %.2f host waits per run and step\n",
                            stepping_name(m), n / sec, static_cast<double>(syncs) / (n * 3.0));
            } catch (const std::exception& e) {
                std::printf("FAIL three runs in one session%s: %s\n", stepping_name(m), e.what());
                ++g_failed;
            }
        }
    if (gemm < 0) gemm = cpu_only || ops_only ? 0 : 4096;
    if (gemm > 0)
        for (const compare::Policy& p : compare::policies()) {
            if (p.name != "fp32" && p.name != "tf32" && p.name != "amp-fp16" && p.name != "amp-bf16") continue;
            try {
                auto be = make_dut();
                const double tflops = gemm_rate(*be, p, gemm, 4, cpu_only ? 1 : 20);
                std::printf("note %s linear layers, four %dx%d at batch %d: %.2f TFLOP/s\n", p.name.c_str(),
                            gemm, gemm, gemm, tflops);
            } catch (const std::exception& e) {
                std::printf("FAIL %s linear layers at %d: %s\n", p.name.c_str(), gemm, e.what());
                ++g_failed;
            }
        }
    std::printf("%s: %d check%s failed\n", g_failed ? "FAILED" : "OK", g_failed,
                g_failed == 1 ? "" : "s");
    return g_failed ? 1 : 0;
}
