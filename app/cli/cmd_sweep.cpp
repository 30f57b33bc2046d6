// `mpx-cli sweep`: trains one run per grid point on all cores and writes one long CSV plus a JSON
// sidecar; --shard spreads a sweep over machines, --merge joins the parts, --explain prints the
// `mpx-cli run` line of a point. Ctrl-C stops the workers and keeps the finished points.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "matrix_io.hpp"
#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/io/export.hpp"
#include "engine/sweep/sweep.hpp"
#include "engine/sweep/trace_sweep.hpp"

namespace mpx::cli {
namespace {

// Lock-free, so the signal handler may store to it.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_interrupt(int) { g_stop.store(true); }

struct SweepOptions_ {
    ConfigFlags flags;
    std::optional<std::string> runs;
    std::vector<std::string> grid;
    std::string csv;
    std::string shard;
    std::vector<std::string> merge;
    std::optional<long long> explain;
    std::string trace;
    unsigned threads = 0;
    bool quiet = false;
};

std::pair<std::size_t, std::size_t> parse_shard(const std::string& s) {
    const auto slash = s.find('/');
    try {
        if (slash != std::string::npos) {
            std::size_t a = 0, b = 0;
            const long long i = std::stoll(s.substr(0, slash), &a), n = std::stoll(s.substr(slash + 1), &b);
            if (a == slash && b == s.size() - slash - 1 && i >= 0 && n >= 1 && i < n)
                return {static_cast<std::size_t>(i), static_cast<std::size_t>(n)};
        }
    } catch (const std::exception&) {
    }
    throw ConfigError("--shard", quoted_text(s) + " is not I/N with 0 <= I < N (e.g. --shard 0/4 ... --shard 3/4)");
}

// --quiet is accepted in every mode: it promises no progress line, which merging, explaining and a
// trace's replays never print anyway.
int run_sweep_command(const SweepOptions_& o, const CLI::App& cmd) {
    if (!o.merge.empty()) {
        refuse_unused(cmd, {"--merge", "--quiet"}, "with --merge, which joins the parts as they were swept");
        if (o.merge.size() < 2) throw ConfigError("--merge", "give OUT.csv and then the part CSVs");
        std::vector<std::filesystem::path> parts(o.merge.begin() + 1, o.merge.end());
        std::vector<NamedPath> inputs;
        for (const auto& part : parts) {
            inputs.push_back({"a part given to --merge", part});
            inputs.push_back({"the sidecar of a part given to --merge", sidecar_path(part)});
        }
        check_outputs({{"--merge", o.merge.front()}, {"the sidecar of --merge's output", sidecar_path(o.merge.front())}},
                      inputs);
        std::size_t missing = 0;
        const std::size_t n = merge_sweeps(o.merge.front(), parts, missing);
        std::cerr << "mpx-cli sweep: merged " << n << " points from " << parts.size() << " parts into " << o.merge.front();
        if (missing) std::cerr << " (" << missing << (missing == 1 ? " grid point is" : " grid points are") << " in no part)";
        std::cerr << "\n";
        return 0;
    }
    if (o.explain) {
        refuse_unused(cmd, {"--explain", "--csv", "--quiet"}, "with --explain, which reads the sweep's sidecar");
        if (o.csv.empty()) throw ConfigError("--explain", "name the sweep with --csv FILE (its sidecar is read)");
        if (*o.explain < 0) throw ConfigError("--explain", "a point number is at least 0");
        const SweepSpec spec = read_sweep_sidecar(o.csv);
        if (spec.sidecar.contains("trace")) {  // a replay, not a training run
            const auto point = static_cast<std::size_t>(*o.explain);
            if (point >= spec.grid.size())
                throw ConfigError("--explain", "the sweep has points 0 to " + std::to_string(spec.grid.size() - 1));
            std::string line = "mpx-cli replay " + spec.sidecar["trace"].get<std::string>() + " --scaler " +
                               spec.base.scaler.preset;
            for (const std::string& s : spec.grid.assignments(point)) line += " --set " + s;
            std::cout << line << "\n";
            return 0;
        }
        std::cout << explain_point(spec, static_cast<std::size_t>(*o.explain)) << "\n";
        return 0;
    }
    if (o.csv.empty()) throw ConfigError("--csv", "name the output file (a sidecar .json is written beside it)");
    // The sidecar records the trace's and the configuration's names (--explain repeats them), and
    // JSON carries only UTF-8: a Latin-1 name is refused before any work, not at the end.
    for (const auto& [flag, name] : {std::pair<const char*, const std::string*>{"--trace", &o.trace}, {"--config", &o.flags.config}})
        if (!valid_utf8(*name))
            throw ConfigError(flag, "the name " + quoted_text(*name) + " is not UTF-8 text, and the sweep's sidecar (JSON) "
                                    "records it; rename the file, or link it under a UTF-8 name");
    std::vector<NamedPath> inputs{config_input(o.flags)};
    if (!o.trace.empty()) {
        inputs.push_back({"the trace given to --trace", o.trace});
        inputs.push_back({"the histograms of --trace", trace_histograms_path(o.trace)});
    }
    check_outputs({{"--csv", o.csv}, {"the sidecar of --csv", sidecar_path(o.csv)}}, inputs);
    ConfigFlags flags = o.flags;
    if (o.runs) flags.precision = o.runs;
    if (!o.trace.empty()) {
        // A trace stands for one FP16 run that follows the session's scaler.
        if (o.runs || flags.precision) throw ConfigError("--trace", "a sweep over a trace has one run, the replay; drop --runs");
        if (!o.shard.empty()) throw ConfigError("--trace", "a sweep over a trace takes seconds: it is not sharded");
        // The trace fixes the steps, the model and the data; only the scaler is replayed.
        refuse_unused(cmd, {"--trace", "--csv", "--grid", "--config", "--set", "--scaler", "--quiet"},
                      "in a sweep over a trace (--trace replays the recorded steps; only scaler settings apply)");
        for (const std::string& set : o.flags.sets)
            if (!set.starts_with("scaler."))
                throw ConfigError("--set", quoted_text(set) + " does nothing in a sweep over a trace (--trace replays the "
                                           "recorded steps; only scaler.* settings apply); drop it");
        flags.precision = "amp-fp16";
        const SessionConfig base = build_config(flags);
        std::vector<GridAxis> axes;
        for (const auto& g : o.grid) axes.push_back(parse_grid_arg(g));
        const SweepGrid grid(std::move(axes), base);
        const Trace trace = with_flag("--trace", [&] { return read_trace(o.trace); });
        const SweepResult result = sweep_trace(grid, base, trace);
        nlohmann::json sidecar = sweep_sidecar(grid, base, flags.config, 0, 1);
        sidecar["trace"] = o.trace;
        write_sweep(o.csv, grid, result, sidecar);
        std::cerr << "mpx-cli sweep: " << result.points.size() << " replays of " << plain_or_quoted(trace.name) << " ("
                  << trace.steps.size() << " steps) in " << result.wall_s << " s; wrote " << o.csv << " and "
                  << sidecar_path(o.csv).string() << "\n";
        return 0;
    }
    const SessionConfig base = build_config(flags);
    std::vector<GridAxis> axes;
    for (const auto& g : o.grid) axes.push_back(parse_grid_arg(g));
    const SweepGrid grid(std::move(axes), base);
    const auto [shard_i, shard_n] = o.shard.empty() ? std::pair<std::size_t, std::size_t>{0, 1} : parse_shard(o.shard);

    std::string device_name, note;
    SweepOptions opt;
    opt.factory = backend_for(base.device, device_name, note);
    if (!note.empty()) std::cerr << "mpx-cli: " << note << "\n";
    opt.threads = o.threads ? o.threads : (base.device == "cpu" ? 0u : 1u);  // one GPU: one point at a time
    opt.shard_index = shard_i;
    opt.shard_count = shard_n;
    opt.stop = &g_stop;
    const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    opt.on_point = [&](const SweepPoint&, std::size_t done, std::size_t planned) {
        if (!progress) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double eta = s / static_cast<double>(done) * static_cast<double>(planned - done);
        std::fprintf(stderr, "\rsweep: %zu/%zu points, %.1f s, ETA %.0f s   ", done, planned, s, eta);
        std::fflush(stderr);
    };

    struct sigaction sa {}, old_int {}, old_term {};
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the program at once
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    SweepResult result;
    try {
        result = run_sweep(grid, base, opt);
    } catch (...) {
        sigaction(SIGINT, &old_int, nullptr);
        sigaction(SIGTERM, &old_term, nullptr);
        throw;
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    if (progress) std::fprintf(stderr, "\n");
    write_sweep(o.csv, grid, result, sweep_sidecar(grid, base, flags.config, shard_i, shard_n));
    std::cerr << "mpx-cli sweep: " << result.points.size() << "/" << result.planned << " points in "
              << result.wall_s << " s on " << result.threads << " threads; wrote " << o.csv << " and "
              << sidecar_path(o.csv).string() << "\n";
    if (result.cancelled) {
        std::cerr << "mpx-cli sweep: interrupted; the CSV keeps the finished points\n";
        return 130;
    }
    return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("sweep", "Train one run per grid point (up to two settings and one categorical) "
                                            "on all cores; one CSV row per point and run, JSON sidecar beside it");
    auto o = std::make_shared<SweepOptions_>();
    add_config_flags(cmd, o->flags);
    cmd->add_option("--runs", o->runs, "Runs to compare at every point, e.g. amp-fp16 (as --precision)");
    cmd->add_option("--grid", o->grid,
                    "FIELD=VALUES: a list 16,256,65536, a range 0.1:1:0.1, a geometric range 2^8..2^32*4, or names "
                    "(scaler.preset=pytorch,deepspeed); up to two numeric fields and one of names");
    cmd->add_option("--csv", o->csv, "Output CSV (sidecar .json beside it); with --explain, the sweep to read");
    add_threads_flag(cmd, o->threads, "Worker threads, one grid point each (default 0: one per core)");
    cmd->add_option("--shard", o->shard, "Run every N-th point starting at I (I/N, 0-based: Slurm's array index)");
    cmd->add_option("--merge", o->merge, "OUT.csv PART.csv...: merge the parts of a sharded sweep")->expected(-1);
    cmd->add_option("--explain", o->explain, "Print the `mpx-cli run` line that reproduces point ROW of --csv");
    cmd->add_flag("--quiet", o->quiet, "No progress line on stderr");
    cmd->add_option("--trace", o->trace, "Replay each point's scaler over this recorded trace (mpx-cli trace) instead "
                                         "of training: thousands of points a second; the grid varies scaler.* only");
    cmd->callback([o, cmd] {
        int code = 0;
        try {
            code = run_sweep_command(*o, *cmd);
        } catch (const ConfigError& e) {
            std::cerr << "mpx-cli sweep: " << e.what() << "\n";
            throw CLI::RuntimeError(2);
        } catch (const std::exception& e) {
            std::cerr << "mpx-cli sweep: " << e.what() << "\n";
            throw CLI::RuntimeError(1);
        }
        if (code) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpx::cli
