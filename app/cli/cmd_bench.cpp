// `mpx-cli bench`: training steps per second, one run per precision, same model/batch/optimizer.
// Reported as figures to compare in one process (ratios), never asserted as timings.
#include <algorithm>
#include <ctime>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "engine/base/error.hpp"
#include "engine/base/fma_peak.hpp"
#include "engine/base/fields.hpp"
#include "engine/base/parallel.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/config/device_choice.hpp"

namespace mpx::cli {
namespace {

struct BenchOptions {
    std::string model = "2-64-64-2";
    long long batch = 256;
    std::string precision = "fp32,amp-fp16,amp-bf16";
    bool csv = false;
    double seconds = 1.0;
    std::string device = "cpu";
    std::string optimizer = "adam";
    int instruments_every = InstrumentsConfig{}.every;  // as a session collects by default
    bool instruments_cost = false;  // measure with and without histograms, alternately
    unsigned threads = 0;           // 0: one per core
};

// The cores' clock as /proc/cpuinfo tells it (0 where it cannot be read: not Linux, a virtual
// machine that hides it), to say how many FLOP a cycle the measured peak makes.
double cpu_ghz() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("cpu MHz", 0) == 0) {
            const auto colon = line.find(':');
            return colon == std::string::npos ? 0.0 : std::atof(line.c_str() + colon + 1) / 1000.0;
        }
    return 0.0;
}

// The measuring time: long enough to mean something, short enough that a typo cannot hang a script.
constexpr FieldInfo k_seconds{.name = "--seconds", .min = 0, .max = 600, .min_open = true,
                              .hint = "seconds of measuring per precision"};

// Every flag checked before anything runs, with the ranges of the settings they stand for.
std::vector<std::string> checked_runs(const BenchOptions& o) {
    if (const std::string e = range_error(k_seconds, o.seconds, false); !e.empty()) throw ConfigError("--seconds", e);
    if (o.instruments_every < 0 || o.instruments_every > 1'000'000)
        throw ConfigError("--instruments-every", "must be 0 (no histograms) to 1000000 steps");
    if (o.instruments_cost && o.instruments_every == 0)
        throw ConfigError("--instruments-cost", "compares with histograms every N steps; give --instruments-every N > 0");
    // bench trains on max(2048, 2 × batch) examples, which must stay within data.n_train's range.
    FieldInfo batch = *find_field(train_fields(), "batch");
    batch.max = std::min(batch.max, static_cast<double>(k_max_samples / 2));
    if (const std::string e = range_error(batch, static_cast<double>(o.batch), true); !e.empty())
        throw ConfigError("--batch", e);
    std::vector<std::string> runs;
    if (!o.precision.empty() && o.precision.back() == ',')  // getline drops a trailing empty entry
        throw ConfigError("--precision", "has an empty entry in " + quoted_text(o.precision) + "; e.g. --precision fp32,amp-fp16");
    std::stringstream ss(o.precision);
    for (std::string p; std::getline(ss, p, ',');) {
        if (p.empty()) throw ConfigError("--precision", "has an empty entry in " + quoted_text(o.precision) + "; e.g. --precision fp32,amp-fp16");
        runs.push_back(p);
    }
    if (runs.empty()) throw ConfigError("--precision", "must name at least one run, e.g. --precision fp32,amp-fp16");
    return runs;
}

SessionConfig bench_config(const BenchOptions& o, const std::string& run) {
    SessionConfig c;
    c.model.sizes = parse_model_sizes(o.model, "--model");
    const int in = c.model.sizes.front(), out = c.model.sizes.back();
    if (in == 784) {
        c.data.kind = DatasetKind::digits;
        if (out != 10) throw ConfigError("--model", "784-input models train on digits and need 10 outputs");
    } else if (in == 1) {
        c.data.kind = DatasetKind::sine;
    } else {
        // Any other width: blobs in 2-D repeated to the input width is not defined; keep 2-D sets.
        if (in != 2) throw ConfigError("--model", "bench models take 2 (2-D sets), 1 (sine) or 784 (digits) inputs");
        c.data.kind = DatasetKind::spirals;
        c.data.classes = out;
    }
    c.data.n_train = static_cast<int>(std::max<long long>(2048, o.batch * 2));
    c.data.n_test = 0;
    c.train.batch = static_cast<int>(o.batch);
    c.train.optimizer = enum_parse<OptimizerKind>(o.optimizer).value_or(OptimizerKind::adam);
    c.train.lr = 1e-3;
    c.runs = {run};
    c.steps = k_max_steps;
    c.device = o.device;
    c.instruments.every = o.instruments_every;
    // The configuration's own checks, reported under the flag the user gave instead of a field
    // bench set on its behalf.
    try {
        validate(c);
    } catch (const ConfigError& e) {
        const std::string& f = e.field();
        const char* flag = f.rfind("model", 0) == 0 || f == "selective_layers" ? "--model"
                           : f == "runs" || f.rfind("scaler", 0) == 0   ? "--precision"
                           : f == "device"                              ? "--device"
                           : f.rfind("data", 0) == 0                    ? "--model"
                                                                        : "--batch";
        throw ConfigError(flag, e.message() + (f.empty() ? "" : " (" + f + ")"));
    }
    return c;
}

double measure(const SessionConfig& cfg, const BackendFactory& factory, double seconds) {
    Session s(cfg, factory);
    for (int i = 0; i < 20; ++i) s.step();  // warm-up: caches, allocator, branch predictors
    long long n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0.0;
    do {
        for (int i = 0; i < 10; ++i) s.step();
        n += 10;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed < seconds);
    return static_cast<double>(n) / elapsed;
}

// Steps per second of CPU time of this thread for two configurations trained in alternating slices
// of 100 steps (the same process, the same moments): a busy machine slows both alike, and CPU time
// leaves out the time other processes hold the core.
std::pair<double, double> measure_pair(const SessionConfig& a, const SessionConfig& b,
                                       const BackendFactory& factory, double seconds) {
    Session sa(a, factory), sb(b, factory);
    for (int i = 0; i < 20; ++i) sa.step(), sb.step();
    const auto cpu_now = [] {
        timespec t{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
    };
    double ta = 0.0, tb = 0.0;
    long long n = 0;
    while (ta + tb < 2.0 * seconds) {
        for (auto [s, t] : {std::pair{&sa, &ta}, std::pair{&sb, &tb}}) {
            const double t0 = cpu_now();
            for (int i = 0; i < 100; ++i) s->step();
            *t += cpu_now() - t0;
        }
        n += 100;
    }
    return {static_cast<double>(n) / ta, static_cast<double>(n) / tb};
}

int run_bench(const BenchOptions& o) {
    const std::vector<std::string> runs = checked_runs(o);
    set_thread_count(o.threads);
    for (const auto& r : runs) bench_config(o, r);  // every run checked before the first is measured
    std::string device_name, note;
    const BackendFactory factory = backend_for(o.device, device_name, note);
    if (!note.empty()) std::cerr << "mpx-cli: " << note << "\n";
    if (o.instruments_cost) {
        // With and without histograms in alternating slices; the cost as a ratio of CPU time.
        std::printf("%-22s %16s %16s %10s   (histograms every %d steps; steps per CPU second)\n",
                    "precision", "steps/s off", "steps/s on", "cost", o.instruments_every);
        for (const auto& r : runs) {
            SessionConfig on = bench_config(o, r), off = on;
            off.instruments.every = 0;
            const auto [a, b] = measure_pair(off, on, factory, o.seconds);
            std::printf("%-22s %16.1f %16.1f %9.1f%%\n", r.c_str(), a, b, 100.0 * (a / b - 1.0));
            std::fflush(stdout);
        }
        return 0;
    }
    // GFLOP/s: the linear layers' GEMMs (gemm_flops_per_step); the peak is the CPU's, so a GPU run
    // shows its rate alone.
    const unsigned threads = thread_count();
    const bool on_cpu = device_name.find("CPU") != std::string::npos;
    // Measured before the runs, on as many threads as they use (the cores' FMA throughput).
    const FmaPeak peak = on_cpu ? measure_fma_peak(std::min(threads, core_count())) : FmaPeak{};
    const auto fraction_text = [&](double gflops) { return peak.gflops > 0 ? format_number(gflops / peak.gflops) : std::string(); };
    if (o.csv) std::cout << "model,batch,precision,device,steps_per_s,threads,gflop_per_s,peak_fraction\n";
    else std::printf("%-14s %6s %-22s %-16s %7s %12s %9s %6s %8s\n", "model", "batch", "precision", "device", "threads",
                     "steps/s", "GFLOP/s", "peak", "vs first");
    double first = 0.0;
    for (const auto& r : runs) {
        const SessionConfig cfg = bench_config(o, r);
        const double sps = measure(cfg, factory, o.seconds);
        const double gflops = sps * gemm_flops_per_step(cfg.model, cfg.train.batch) / 1e9;
        if (first == 0.0) first = sps;
        if (o.csv) {
            std::cout << o.model << ',' << o.batch << ',' << r << ',' << csv_field(device_name) << ','
                      << format_number(sps) << ',' << (on_cpu ? threads : 1) << ',' << format_number(gflops) << ','
                      << fraction_text(gflops) << '\n';
        } else {
            const std::string share = peak.gflops > 0 ? std::to_string(static_cast<int>(std::lround(100.0 * gflops / peak.gflops))) + "%" : "-";
            std::printf("%-14s %6lld %-22s %-16s %7u %12.1f %9.1f %6s %8.3f\n", o.model.c_str(), o.batch, r.c_str(),
                        device_name.c_str(), on_cpu ? threads : 1u, sps, gflops, share.c_str(), sps / first);
        }
        std::fflush(stdout);
    }
    if (!o.csv && peak.gflops > 0) {
        std::printf("GFLOP/s: the linear layers' GEMMs a step; peak: %.0f GFLOP/s FP32 measured on %u thread%s (%s)",
                    peak.gflops, peak.threads, peak.threads == 1 ? "" : "s", peak.method.c_str());
        if (const double ghz = cpu_ghz(); ghz > 0)
            std::printf(", %.0f FLOP a cycle a core at the %.2f GHz /proc/cpuinfo gives", peak.gflops / peak.threads / ghz, ghz);
        std::printf("\n");
    }
    return 0;
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Training steps per second for each precision");
    auto o = std::make_shared<BenchOptions>();
    cmd->add_option("--model", o->model, "Layer sizes, e.g. 2-64-64-2 or 784-512-10");
    cmd->add_option("--batch", o->batch, "Batch size");
    cmd->add_option("--precision", o->precision, "Runs, e.g. fp32,tf32,amp-fp16,amp-bf16");
    cmd->add_flag("--csv", o->csv, "CSV: model,batch,precision,device,steps_per_s,threads,gflop_per_s,peak_fraction");
    add_threads_flag(cmd, o->threads);
    cmd->add_option("--seconds", o->seconds, "Measuring time per precision (default 1)");
    cmd->add_option("--device", o->device, "Device: " + enum_choices<DeviceSetting>());
    cmd->add_option("--instruments-every", o->instruments_every,
                    "Collect exponent histograms every N steps (0: never; default as a session: " +
                        std::to_string(InstrumentsConfig{}.every) + ")");
    cmd->add_flag("--instruments-cost", o->instruments_cost,
                  "Measure with and without histograms, alternately, and print the cost as a ratio");
    std::vector<std::string> optimizers;
    for (const auto& e : optimizer_names) optimizers.emplace_back(e.name);
    cmd->add_option("--optimizer", o->optimizer, "Optimizer: " + enum_choices<OptimizerKind>())
        ->check(CLI::IsMember(optimizers));
    cmd->callback([o] {
        try {
            run_bench(*o);
        } catch (const ConfigError& e) {
            std::cerr << "mpx-cli bench: " << e.what() << "\n";
            throw CLI::RuntimeError(2);
        } catch (const std::bad_alloc&) {
            std::cerr << "mpx-cli bench: not enough memory for this model at this batch; lower --model or --batch\n";
            throw CLI::RuntimeError(1);
        } catch (const std::exception& e) {
            std::cerr << "mpx-cli bench: " << e.what() << "\n";
            throw CLI::RuntimeError(1);
        }
    });
}

}  // namespace mpx::cli
