// `mpx-cli trace --script` prints the recorder a user drops into their own PyTorch training loop;
// `mpx-cli replay TRACE` runs any scaler rule over what it recorded (engine/io/trace.hpp).
#include <CLI/CLI.hpp>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "matrix_io.hpp"
#include "engine/base/quote.hpp"
#include "engine/io/export.hpp"
#include "engine/base/input_file.hpp"
#include "engine/io/trace.hpp"

namespace mpx::cli {
namespace {

struct ReplayOptions {
    std::string trace, scaler = "pytorch", csv;
    std::vector<std::string> sets;
    double max_finite = 65504.0;
};

// The preset, then each --set scaler.KEY=VALUE (VALUE read as JSON where it is JSON, else as text).
ScalerConfig scaler_from(const std::string& preset, const std::vector<std::string>& sets) {
    nlohmann::json j = {{"preset", preset}};
    for (const std::string& s : sets) {
        const auto eq = s.find('=');
        if (eq == std::string::npos || !s.starts_with("scaler."))
            throw ConfigError("--set", quoted_text(s) + ": give scaler.KEY=VALUE, e.g. scaler.growth_interval=100");
        const std::string key = s.substr(7, eq - 7), value = s.substr(eq + 1);
        nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
        j[key] = v.is_discarded() ? nlohmann::json(value) : v;
    }
    return scaler_config_from_json(j);
}
ScalerConfig replay_scaler(const ReplayOptions& o) { return scaler_from(o.scaler, o.sets); }

struct FromLogOptions {
    std::string log, megatron_log, out, scaler;
    std::vector<std::string> sets;
    bool script = false;
};

void run_from_log(const FromLogOptions& o) {
    if (o.out.empty()) throw ConfigError("--out", "name the trace to write, e.g. --out trace.csv");
    if (!o.log.empty() && !o.megatron_log.empty())
        throw ConfigError("--from-megatron-log", "give one log: --from-deepspeed-log or --from-megatron-log");
    const bool megatron = !o.megatron_log.empty();
    const std::string& path = megatron ? o.megatron_log : o.log;
    check_outputs({{"--out", o.out}}, {{megatron ? "the log given to --from-megatron-log" : "the log given to --from-deepspeed-log", path}});
    const ScalerConfig scaler = scaler_from(o.scaler.empty() ? (megatron ? "megatron" : "deepspeed") : o.scaler, o.sets);
    const std::string text = read_input_file(path, "the log", std::size_t{1} << 30);
    const Trace t = with_flag(megatron ? "--from-megatron-log" : "--from-deepspeed-log", [&] {
        return megatron ? trace_from_megatron_log(text, path, scaler) : trace_from_deepspeed_log(text, path, scaler);
    });
    write_file_atomic(o.out, trace_csv(t));
    long long overflows = 0;
    for (const TraceStep& s : t.steps) overflows += s.found_inf;
    std::cout << "mpx-cli: wrote " << o.out << ": " << t.steps.size() << " steps (" << t.steps.front().step << "-"
              << t.steps.back().step << "), " << overflows << " overflows; every " << (megatron ? "logged" : "attempted")
              << " loss scale in the log matches the " << scaler.preset << " rule with these settings\n";
}

void run_replay(const ReplayOptions& o) {
    // inf would make every headroom infinite and no step overflow: a format's largest finite value is finite.
    if (!(o.max_finite > 0.0) || !std::isfinite(o.max_finite))
        throw ConfigError("--max-finite", "must be a finite number > 0, the largest finite value of the gradients' "
                                          "format (FP16: 65504, BF16: 3.3895e38, E5M2: 57344)");
    const ScalerConfig scaler = replay_scaler(o);
    if (!o.csv.empty())
        check_outputs({{"--csv", o.csv}}, {{"the trace given to replay", o.trace},
                                           {"the trace's histograms", trace_histograms_path(o.trace)}});
    const Trace trace = read_trace(o.trace);
    const ReplayResult r = replay_trace(trace, scaler, o.max_finite);
    if (!o.csv.empty()) write_file_atomic(o.csv, replay_csv(trace, r));
    std::cout << "replay of " << plain_or_quoted(trace.name) << " (" << trace.steps.size() << " steps) with the " << scaler.preset
              << " rule\n"
              << "  steps whose overflow decision matches the recording: " << r.identical << " of " << r.steps.size()
              << " (a replay is exact per step on the recorded weights; skips change later weights)\n"
              << "verdict: " << r.verdict << "\n";
    if (!o.csv.empty()) std::cout << "mpx-cli: wrote " << o.csv << "\n";
}

}  // namespace

void add_trace_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("trace", "The recorder for your own PyTorch training (resources/torch/mpx_trace.py): "
                                            "three lines in the loop write a trace that mpx-cli replay reads");
    auto lo = std::make_shared<FromLogOptions>();
    cmd->add_flag("--script", lo->script, "Print the recorder (save it as mpx_trace.py beside your training script)");
    cmd->add_option("--from-deepspeed-log", lo->log, "Rebuild a trace from a DeepSpeed log with steps_per_print = 1 "
                                                   "(and \"log_level\": \"info\" from DeepSpeed 0.17.6; overflow "
                                                   "decisions and scales; no amaxes)");
    cmd->add_option("--from-megatron-log", lo->megatron_log, "Rebuild a trace from a Megatron-LM log (--log-interval 1, "
                                                            "or intervals skipped whole or not at all)");
    cmd->add_option("--out", lo->out, "With a log: the trace to write");
    cmd->add_option("--scaler", lo->scaler, "With a log: the run's rule (default deepspeed, or deepspeed-legacy for "
                                            "DeepSpeed <= 0.17.0; megatron for a Megatron log)");
    cmd->add_option("--set", lo->sets, "With a log: scaler.KEY=VALUE, the run's own settings "
                                       "(scaler.init_scale = 2^initial_scale_power or --initial-loss-scale, "
                                       "scaler.hysteresis, scaler.growth_interval = loss_scale_window, scaler.min_scale)")
        ->allow_extra_args(false);
    cmd->callback([lo, cmd] {
        // --script prints the recorder, a log is rebuilt into a trace: two requests, one command
        // each; a flag the chosen one does not read is refused, not dropped (issue 41, class 7).
        if (!lo->log.empty() || !lo->megatron_log.empty())
            return report_errors("trace", [&] {
                refuse_unused(*cmd, {"--from-deepspeed-log", "--from-megatron-log", "--out", "--scaler", "--set"},
                              "when a log is rebuilt into a trace (--script prints the recorder: run it alone, "
                              "mpx-cli trace --script > mpx_trace.py)");
                run_from_log(*lo);
            });
        if (lo->script)
            report_errors("trace", [&] {
                refuse_unused(*cmd, {"--script"},
                              "with --script, which prints the recorder to standard output (mpx-cli trace --script > "
                              "mpx_trace.py); --out, --scaler and --set go with --from-deepspeed-log or --from-megatron-log");
            });
        if (!lo->script) {
            std::cerr << "mpx-cli trace: give --script (mpx-cli trace --script > mpx_trace.py), --from-deepspeed-log LOG "
                         "or --from-megatron-log LOG\n";
            throw CLI::RuntimeError(2);
        }
        std::cout << trace_recorder_script();
    });

    auto* rep = app.add_subcommand("replay", "Run a scaler rule over a recorded trace: per step the scale, the "
                                             "predicted overflow and skip, the headroom, and a verdict");
    auto o = std::make_shared<ReplayOptions>();
    rep->add_option("TRACE", o->trace, "The trace (mpx_trace.py's CSV)")->required();
    rep->add_option("--scaler", o->scaler, "The rule: a scaler preset (pytorch, deepspeed, megatron, apex, keras, static, "
                                           "...; default pytorch)");
    rep->add_option("--set", o->sets, "scaler.KEY=VALUE, repeatable: a setting over the preset's "
                                      "(e.g. scaler.init_scale=1024, scaler.hysteresis=2)")
        ->allow_extra_args(false);
    rep->add_option("--csv", o->csv, "Write the replay per step (atomically)");
    rep->add_option("--max-finite", o->max_finite, "The largest finite value of the gradients' format (default FP16's 65504)");
    rep->callback([o] { report_errors("replay", [&] { run_replay(*o); }); });
}

}  // namespace mpx::cli
