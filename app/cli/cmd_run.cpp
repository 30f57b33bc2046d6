// `mpx-cli run`: trains a comparison headless, writes the CSV and its sidecar atomically, prints
// progress on stderr and a summary per run.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <iostream>
#include <optional>

#include "cli_common.hpp"
#include "commands.hpp"
#include "engine/config/write_back_snippet.hpp"
#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/parallel.hpp"
#include "engine/base/text.hpp"
#include "engine/compute/overflow_verdict.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/config/device_choice.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/mismatch_csv.hpp"
#include "engine/io/samples_csv.hpp"
#include "engine/io/export.hpp"
#include "engine/precision/fp8_snippet.hpp"
#include "engine/run/claims_check.hpp"

namespace mpx::cli {
namespace {

struct RunOptions {
    ConfigFlags flags;
    std::string csv;
    std::string histograms;
    std::string fp8_scales;
    std::string snippet;
    std::string save_state, resume;
    bool print_config = false;
    bool check_claims = false;  // judge the lesson's claims on the records (engine/run/claims_check.hpp)
    bool quiet = false;
    unsigned threads = 0;  // 0: one per core
    std::set<std::string> given;  // the flags on the command line, by name
};

struct Summary {
    double first_loss = 0, last_loss = 0, tail_loss = 0;
    long long steps = 0, skipped = 0, tail_n = 0, overflow = 0;
    double scale = 1;
    double underflow_max = 0;
    std::optional<double> eval_loss, eval_accuracy;  // the last evaluation's
    // The first step that stored an inf/NaN: where, and what overflowed there.
    long long first_nonfinite_step = -1;
    int first_nonfinite = -1;
    std::optional<double> first_nonfinite_magnitude;
    // The steps whose inf/NaN reached the gradients or the loss, and each one's first site
    // (run_forward_verdict).
    std::vector<long long> bad_steps;
    std::vector<int> bad_sites;
};

// The scaler the snippet describes, as a run trains with it (scaler_overrides applied): the run
// whose scaler is the framework's own preset, else the first run with a dynamic scaler, else the
// session's scaler settings.
ScalerConfig snippet_scaler(const SessionConfig& cfg, const std::string& framework) {
    std::optional<ScalerConfig> first_dynamic;
    for (const auto& label : cfg.runs) {
        const ScalerConfig s = resolve_run(label, cfg).scaler;
        if (s.preset == framework) return s;
        if (s.kind == ScalerKind::dynamic && !first_dynamic) first_dynamic = s;
    }
    return first_dynamic.value_or(cfg.scaler);
}

// "step 412: amp-fp16+deepspeed scaler edited: hysteresis 2 → 4": each live change of the
// configuration as it lands, so a replayed export says what it replays.
void print_live_effects(Session& session, bool& mid_line) {
    for (const LiveEffect& e : session.take_live_effects()) {
        std::string who;
        for (int r : e.runs) who += (who.empty() ? "" : ", ") + session.run(static_cast<std::size_t>(r)).info().label;
        std::string line = "step " + std::to_string(e.step) + ": ";
        switch (e.target) {
            case LiveTarget::run_scalers: line += who + " scaler edited: " + e.changes; break;
            case LiveTarget::session_scaler:
                line += "session scaler edited: " + e.changes + (who.empty() ? "" : " (runs " + who + ")");
                break;
            case LiveTarget::train: line += "training edited: " + e.changes; break;
        }
        std::cerr << (mid_line ? "\n" : "") << "mpx-cli: " << line << "\n";
        mid_line = false;
    }
}

// Everything about the outputs that can be checked before a step is trained: each target can
// receive a file, and no output replaces an input or another output.
void check_outputs(const RunOptions& o) {
    const auto given = [&](const char* flag) { return o.given.count(flag) > 0; };
    for (const char* flag : {"--csv", "--histograms", "--fp8-scales", "--save-state", "--resume", "--snippet", "--config"}) {
        const std::string& v = std::string(flag) == "--csv"          ? o.csv
                               : std::string(flag) == "--histograms" ? o.histograms
                               : std::string(flag) == "--fp8-scales" ? o.fp8_scales
                               : std::string(flag) == "--save-state" ? o.save_state
                               : std::string(flag) == "--resume"     ? o.resume
                               : std::string(flag) == "--snippet"    ? o.snippet
                                                                     : o.flags.config;
        if (given(flag) && v.empty()) throw ConfigError(flag, "needs a value; an empty one was given");
    }
    std::vector<NamedPath> outputs;
    if (!o.csv.empty()) {
        outputs.push_back({"--csv", o.csv});
        outputs.push_back({"the sidecar of --csv", sidecar_path(o.csv)});
    }
    if (!o.histograms.empty()) outputs.push_back({"--histograms", o.histograms});
    if (!o.fp8_scales.empty()) outputs.push_back({"--fp8-scales", o.fp8_scales});
    if (!o.save_state.empty()) outputs.push_back({"--save-state", o.save_state});
    // A continued run saved over the state it came from is what checkpoints are for: the state is
    // read whole before the first step and replaced atomically after the last, so the old one stays
    // intact until the new one is complete. Any other output would destroy it.
    mpx::check_outputs(outputs, {config_input(o.flags), {"the state given to --resume", o.resume, "--save-state"}});
}

// Each run's last sample, one short line: its step, held-out loss and first characters (a line
// break shown as ⏎), so a GPT run ends with what each precision writes.
void print_final_samples(const std::vector<TextSample>& samples, const std::vector<RunInfo>& infos) {
    constexpr std::size_t k_shown = 72;  // characters of the text
    for (std::size_t i = 0; i < infos.size(); ++i) {
        const auto last = std::find_if(samples.rbegin(), samples.rend(),
                                       [&](const TextSample& t) { return t.run == static_cast<int>(i); });
        if (last == samples.rend()) continue;
        std::string shown;
        std::size_t chars = 0;
        for (std::size_t at = 0; at < last->text.size() && chars < k_shown; ++chars) {
            const auto b = static_cast<unsigned char>(last->text[at]);
            const std::size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
            const std::string symbol = last->text.substr(at, n);
            shown += symbol == "\n" ? "⏎" : symbol == "\r" || symbol == "\t" ? " " : symbol;
            at += n;
        }
        if (chars == k_shown) shown += "…";
        if (last->nonfinite) shown += " [logits inf/NaN: nothing more drawn]";
        char loss[32] = "-";
        if (last->eval_loss) std::snprintf(loss, sizeof loss, "%.4f", *last->eval_loss);
        std::printf("%s writes (step %lld, held-out loss %s): %s\n", infos[i].label.c_str(), last->step, loss,
                    shown.c_str());
    }
}

// The log-probability mismatch's last measurement, one line a policy: mean and largest |Δ log p| and
// the ratio of each mean to the first policy's (engine/run/logprob_mismatch.hpp).
void print_final_mismatch(const std::vector<MismatchResult>& results) {
    if (results.empty()) return;
    const long long step = results.back().step;
    const MismatchResult* first = nullptr;
    for (const MismatchResult& r : results) {
        if (r.step != step) continue;
        if (!first) first = &r;
        std::printf("log p mismatch, %s's weights at step %lld, %s vs %s over %lld tokens: mean |Δ| %.3g, max %.3g nats",
                    r.weights.c_str(), r.step, r.policy.c_str(), r.reference.c_str(), r.tokens, r.mean_abs, r.max_abs);
        if (first != &r && first->mean_abs > 0.0) std::printf(" (%.2f× %s's)", r.mean_abs / first->mean_abs, first->policy.c_str());
        std::printf("\n");
    }
}

int run_run(const RunOptions& o) {
    set_thread_count(o.threads);
    if (!o.resume.empty()) {
        // A resumed run is the saved one: its configuration comes from the state file, so a flag
        // that would change it cannot take effect and is refused rather than ignored.
        for (const char* flag : {"--config", "--set", "--precision", "--scaler", "--model", "--dataset", "--seed",
                                 "--print-config", "--snippet"})
            if (o.given.count(flag))
                throw ConfigError(flag, "cannot apply to a resumed run (its configuration is the saved state's); "
                                        "only --steps, --device, --threads, --csv, --histograms, --fp8-scales, --save-state and --quiet go with --resume");
    }
    if (o.check_claims && !o.resume.empty())
        throw ConfigError("--check-claims", "judges a whole session from its first step; a resumed run has only "
                                            "its later steps. Run the configuration from the start");
    check_outputs(o);
    SessionConfig cfg = build_config(o.flags);
    if (!o.histograms.empty() && o.resume.empty() && cfg.instruments.every < 1)
        throw ConfigError("--histograms", "instruments.every is 0, so no histograms are collected; "
                                          "set instruments.every to a step count");
    if (o.print_config) {
        std::cout << to_json(cfg).dump(2) << "\n";
        return 0;
    }
    if (o.snippet == "transformer-engine") {  // the FP8 recipe of the first FP8 run
        for (const auto& label : cfg.runs) {
            const RunInfo info = resolve_run(label, cfg);
            if (is_fp4(info.spec.mode)) {
                std::cout << fp4_recipe_snippet(info.spec.mode, info.fp4);
                return 0;
            }
            if (!is_fp8(info.spec.mode)) continue;
            std::cout << fp8_recipe_snippet(cfg.fp8, info.spec.mode, info.spec.fp8_recipe, info.accumulation);
            return 0;
        }
        throw ConfigError("--snippet", "transformer-engine describes an FP8 or FP4 run; add fp8-hybrid, fp8-e4m3, "
                                       "mxfp8, nvfp4 or mxfp4 to the runs");
    }
    if (!o.snippet.empty()) {
        const auto fw = parse_framework(o.snippet);
        if (!fw) throw ConfigError("--snippet", "choose " + enum_choices<Framework>());
        std::cout << framework_snippet(snippet_scaler(cfg, o.snippet), *fw) << "\n";
        for (const auto& label : cfg.runs)  // the cures' library calls, for runs that use one
            if (const std::string wb = write_back_snippet(
                    resolve_run(label, cfg), cfg.train);
                !wb.empty())
                std::cout << "\n" << wb;
        return 0;
    }
    std::string device_name, note;
    BackendFactory factory = backend_for(cfg.device, device_name, note);
    if (!note.empty()) std::cerr << "mpx-cli: " << note << "\n";
    std::unique_ptr<Session> owned;
    if (!o.resume.empty()) {
        const std::string text = read_input_file(o.resume, "the saved state (--resume)", k_max_state_bytes);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(text);  // the whole file: trailing content is an error too
        } catch (const nlohmann::json::exception& e) {
            throw ConfigError("--resume", o.resume + " is not valid JSON: " + e.what());
        }
        owned = load_session_state(j, factory);
        const long long saved_step = owned->steps_done();
        if (o.flags.steps != ConfigFlags::steps_not_given && o.flags.steps <= saved_step)
            throw ConfigError("--steps", "the saved state is already at step " + std::to_string(saved_step) +
                                             "; give more than " + std::to_string(saved_step) + " steps to continue it");
        if (o.flags.steps > owned->config().steps) owned->extend_to(o.flags.steps);
        if (owned->finished())
            throw ConfigError("--resume", "the saved state has trained all its " + std::to_string(saved_step) +
                                              " steps; give --steps above " + std::to_string(saved_step) +
                                              " to continue it");
        cfg = owned->config();
        std::cerr << "mpx-cli: resuming at step " << owned->steps_done() << " of " << cfg.steps << "\n";
    } else {
        owned = std::make_unique<Session>(cfg, factory);
    }
    Session& session = *owned;
    std::vector<RunInfo> infos;
    for (std::size_t i = 0; i < session.run_count(); ++i) infos.push_back(session.run(i).info());
    if (!o.fp8_scales.empty() &&
        std::none_of(infos.begin(), infos.end(), [](const RunInfo& i) { return scales_gemms(i.spec.mode); }))
        throw ConfigError("--fp8-scales", "no run trains in FP8 or FP4, so there are no scales to write; "
                                          "add fp8-hybrid, fp8-e4m3, mxfp8, nvfp4 or mxfp4 to the runs (--precision)");

    // A GPT session's samples go beside the CSV (engine/io/samples_csv.hpp).
    const bool gpt = cfg.model.kind == ModelKind::gpt;
    if (gpt && !o.csv.empty())
        mpx::check_outputs({{"the samples of --csv", samples_path(o.csv)}, {"the mismatch of --csv", mismatch_path(o.csv)}},
                           {config_input(o.flags), {"the state given to --resume", o.resume}});
    std::vector<TextSample> samples;
    std::vector<MismatchResult> mismatches;  // the log-probability mismatch (mismatch.policies)
    std::unique_ptr<CsvWriter> csv;
    if (!o.csv.empty()) csv = std::make_unique<CsvWriter>(o.csv);
    std::vector<Summary> sum(infos.size());
    std::vector<std::vector<StepRecord>> kept(o.check_claims ? infos.size() : 0);  // every step, for the claims
    const long long tail_from = cfg.steps - std::max<long long>(1, cfg.steps / 10);
    auto last_report = std::chrono::steady_clock::now();
    long long recorded = 0;
    bool mid_line = false;  // a progress line is open on stderr
    if (!o.quiet) print_live_effects(session, mid_line);  // changes at the first step
    // Records one step late (Session::step_ahead): on a GPU the host writes step N while N+1 runs.
    const auto take = [&](const std::vector<StepRecord>& recs) {
        const long long step = recs.front().step;
        const bool keep = step % cfg.record_every == 0 || step + 1 == cfg.steps;
        if (keep) ++recorded;
        for (std::size_t i = 0; i < recs.size(); ++i) {
            const StepRecord& r = recs[i];
            if (csv && keep) csv->write(r, infos[i]);
            if (o.check_claims) kept[i].push_back(r);
            Summary& s = sum[i];
            if (s.steps++ == 0) s.first_loss = r.loss;
            s.last_loss = r.loss;
            s.skipped += r.skipped;
            s.overflow += r.overflow_count;
            s.scale = r.new_scale;
            s.underflow_max = std::max(s.underflow_max, r.underflow_frac);
            if (r.eval_loss) s.eval_loss = r.eval_loss, s.eval_accuracy = r.eval_accuracy;
            if (s.first_nonfinite_step < 0 && r.first_nonfinite >= 0) {
                s.first_nonfinite_step = r.step;
                s.first_nonfinite = r.first_nonfinite;
                s.first_nonfinite_magnitude = r.first_nonfinite_magnitude;
            }
            if (r.first_nonfinite >= 0 && (r.found_inf || !std::isfinite(r.loss))) {
                s.bad_steps.push_back(r.step);
                s.bad_sites.push_back(r.first_nonfinite);
            }
            if (step >= tail_from) {
                s.tail_loss += r.loss;
                ++s.tail_n;
            }
        }
        const auto now = std::chrono::steady_clock::now();
        if (!o.quiet && (now - last_report > std::chrono::milliseconds(500) || session.finished())) {
            last_report = now;
            std::fprintf(stderr, "\rstep %lld/%lld", step + 1, cfg.steps);
            for (std::size_t i = 0; i < recs.size(); ++i)
                std::fprintf(stderr, "  %s %.4g", infos[i].label.c_str(), recs[i].loss);
            std::fflush(stderr);
            mid_line = true;
        }
    };
    while (!session.finished()) {
        for (const auto& recs : session.step_ahead()) take(recs);
        for (TextSample& t : session.take_samples()) samples.push_back(std::move(t));
        for (MismatchResult& m : session.take_mismatches()) mismatches.push_back(std::move(m));
        if (!o.quiet) print_live_effects(session, mid_line);
    }
    if (const auto recs = session.finish_pending(); !recs.empty()) take(recs);  // none: the last step is never left
    if (!o.quiet) std::fprintf(stderr, "\n");
    for (std::size_t i = 0; i < session.run_count(); ++i)
        if (session.run(i).failed())
            std::cerr << "mpx-cli: run " << infos[i].label << " stopped: " << session.run(i).failure() << "\n";
    if (csv) {
        // Sidecar first: a CSV never appears without the configuration that reproduces it.
        nlohmann::json sidecar = sidecar_json(session.config(), infos, device_name, recorded);
        if (gpt) write_samples_csv(samples_path(o.csv), samples, infos, sidecar);
        if (cfg.mismatch.enabled()) write_mismatch_csv(mismatch_path(o.csv), mismatches, sidecar);
        csv->commit(sidecar_path(o.csv), sidecar.dump(2) + "\n");
        std::cerr << "mpx-cli: wrote " << o.csv << " and " << sidecar_path(o.csv).string() << "\n";
    }
    if (!o.histograms.empty()) {
        std::vector<const HistogramLog*> logs;
        for (std::size_t i = 0; i < session.run_count(); ++i) logs.push_back(&session.run(i).histograms());
        write_histograms_csv(o.histograms, infos, logs);
        std::cerr << "mpx-cli: wrote " << o.histograms << " (histograms every "
                  << cfg.instruments.every * (logs.empty() ? 1 : logs.front()->stride()) << " steps)\n";
    }
    if (!o.fp8_scales.empty()) {
        std::vector<const std::vector<Fp8ScaleRow>*> rows;
        for (std::size_t i = 0; i < session.run_count(); ++i) rows.push_back(&session.run(i).fp8_scales());
        write_fp8_scales_csv(o.fp8_scales, infos, rows);
        std::cerr << "mpx-cli: wrote " << o.fp8_scales << "\n";
    }
    if (!o.save_state.empty()) {  // after the CSV: a bad state path must not cost the export
        write_file_atomic(o.save_state, save_state(session).dump() + "\n");
        std::cerr << "mpx-cli: saved the session state to " << o.save_state << "\n";
    }
    std::printf("%-26s %12s %12s %12s %8s %12s %10s %12s %9s\n", "run", "first_loss", "last_loss",
                "tail_mean", "skipped", "final_scale", "overflows", "eval_loss", "eval_acc");
    // The held-out columns: the last evaluation's, "-" where there was none.
    const auto cell = [](const std::optional<double>& v, const char* format) {
        char buf[32] = "-";
        if (v) std::snprintf(buf, sizeof buf, format, *v);
        return std::string(buf);
    };
    for (std::size_t i = 0; i < infos.size(); ++i) {
        const Summary& s = sum[i];
        std::printf("%-26s %12.6g %12.6g %12.6g %8lld %12.6g %10lld %12s %9s\n", infos[i].label.c_str(),
                    s.first_loss, s.last_loss, s.tail_n ? s.tail_loss / s.tail_n : s.last_loss,
                    s.skipped, s.scale, s.overflow, cell(s.eval_loss, "%.6g").c_str(),
                    cell(s.eval_accuracy, "%.4f").c_str());
    }
    for (std::size_t i = 0; i < infos.size(); ++i)
        if (const Summary& s = sum[i]; s.first_nonfinite_step >= 0)
            std::printf("%s: first inf/NaN on step %lld at %s\n", infos[i].label.c_str(), s.first_nonfinite_step,
                        first_nonfinite_text(s.first_nonfinite, s.first_nonfinite_magnitude, cfg.model).c_str());
    for (std::size_t i = 0; i < infos.size(); ++i)
        if (const std::string v = run_forward_verdict(sum[i].bad_steps, sum[i].bad_sites, sum[i].steps, cfg.model); !v.empty())
            std::printf("%s: %s\n", infos[i].label.c_str(), v.c_str());
    print_final_samples(samples, infos);
    print_final_mismatch(mismatches);
    if (o.check_claims) {
        if (cfg.claims.empty())
            std::printf("claims: this configuration declares none\n");
        std::vector<std::string> labels;
        for (const RunInfo& info : infos) labels.push_back(info.label);
        int failed = 0;
        const auto results = check_claims(cfg, labels, kept, cfg.steps - 1, mismatches);
        for (const ClaimResult& r : results) {
            failed += !r.holds;
            std::printf("%s\n", describe(r).c_str());
        }
        if (failed) {
            std::cerr << "mpx-cli: " << failed << " of " << results.size() << " claims do not hold\n";
            return 1;
        }
    }
    return 0;
}

}  // namespace

void add_config_flags(CLI::App* cmd, ConfigFlags& f) {
    cmd->add_option("--config", f.config, "Preset name or path to a JSON configuration");
    cmd->add_option("--set", f.sets, "Override any field: key=value (e.g. scaler.growth_interval=50)");
    cmd->add_option("--precision", f.precision, "Runs to compare, e.g. fp32,amp-fp16,amp-bf16");
    cmd->add_option("--scaler", f.scaler, "Scaler preset for dynamic runs (pytorch, deepspeed, ...)");
    cmd->add_option("--model", f.model, "Layer sizes, e.g. 2-64-64-2");
    cmd->add_option("--dataset", f.dataset, "Data set: " + enum_choices<DatasetKind>());
    cmd->add_option("--steps", f.steps, "Number of steps");
    cmd->add_option("--seed", f.seed, "Seed for data, weights and batch order");
    cmd->add_option("--device", f.device, "Device: " + enum_choices<DeviceSetting>());
}

void add_threads_flag(CLI::App* cmd, unsigned& threads, const std::string& help) {
    cmd->add_option("--threads", threads,
                    help.empty() ? "Threads for the runs and their GEMMs (default 0: one per core); the results are "
                                   "the same bits for any count"
                                 : help)
        ->check(CLI::Range(0u, k_max_thread_count));
}

void add_run_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("run", "Train a comparison headless and export CSV + JSON sidecar");
    auto o = std::make_shared<RunOptions>();
    add_config_flags(cmd, o->flags);
    add_threads_flag(cmd, o->threads);
    cmd->add_option("--csv", o->csv, "Write every recorded step to this CSV (sidecar beside it)");
    cmd->add_option("--snippet", o->snippet,
                    "Print the scaler settings for a framework (" + enum_choices<Framework>() +
                        "), or transformer-engine for the FP8 recipe, and exit");
    cmd->add_option("--histograms", o->histograms,
                    "Write the exponent histograms (every instruments.every steps) to this CSV, long form");
    cmd->add_option("--fp8-scales", o->fp8_scales,
                    "Write every FP8/FP4 tensor's amax and scale per step to this CSV, long form (FP8 and FP4 runs only)");
    cmd->add_option("--save-state", o->save_state, "After the last step, save everything needed to resume (JSON)");
    cmd->add_option("--resume", o->resume, "Continue a saved state up to its step count (--steps raises it)");
    cmd->add_flag("--print-config", o->print_config, "Print the resolved configuration as JSON and exit");
    cmd->add_flag("--check-claims", o->check_claims,
                  "After training, judge the lesson's declared claims on the records and print each; exit 1 if one "
                  "does not hold");
    cmd->add_flag("--quiet", o->quiet, "No progress on stderr");
    cmd->callback([o, cmd] {
        o->given.clear();
        for (const CLI::Option* opt : cmd->get_options())
            if (opt->count() > 0) o->given.insert(opt->get_name());
        int code = 0;
        try {
            code = run_run(*o);
        } catch (const ConfigError& e) {
            std::cerr << "mpx-cli run: " << e.what() << "\n";
            throw CLI::RuntimeError(2);
        } catch (const std::bad_alloc&) {
            std::cerr << "mpx-cli run: not enough memory for this configuration; lower model.sizes, "
                         "train.batch, data.n_train or the number of runs\n";
            throw CLI::RuntimeError(1);
        } catch (const std::exception& e) {
            std::cerr << "mpx-cli run: " << e.what() << "\n";
            throw CLI::RuntimeError(1);
        }
        if (code != 0) throw CLI::RuntimeError(code);  // a claim that does not hold
    });
}

}  // namespace mpx::cli
