// The bad-input catalogue's rows (bad_input_rows.hpp), second part: issue 41's readers and writers
// (an output that is an input, --threads, request sizes, histogram counts, flags that must change
// the result or be refused, echoed input quoted) and the app's command line.
// Rule: as bad_input_rows.hpp's: one row, one hostile command line, its exit code and its words.
#include <QtTest>

#include <QDirIterator>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <csignal>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/base/error.hpp"
#include "engine/io/export.hpp"

#include "bad_input_rows.hpp"

using nlohmann::json;
namespace fs = std::filesystem;
using namespace bad_input::rows;

namespace bad_input {

void add_reader_writer_rows() {
    // --- issue 41, class 1: an output that is an input, or two outputs on one path, by file
    // identity (hard links, symbolic links, ./ spellings, a file not written yet by its folder
    // and name), refused before any work: every input byte-identical, no file created
    cli("replay_csv_is_trace", {"replay", "@F/t.csv", "--csv", "@F/t.csv"}, 2,
        "--csv: '@F/t.csv' is the trace given to replay; write to another file");
    cli("replay_csv_is_trace_hard_link", {"replay", "@F/t.csv", "--csv", "@F/t_hard.csv"}, 2,
        "--csv: '@F/t_hard.csv' is the trace given to replay");
    cli("replay_csv_is_trace_symlink", {"replay", "@F/t.csv", "--csv", "@F/t_sym.csv"}, 2,
        "--csv: '@F/t_sym.csv' is the trace given to replay");
    cli("replay_csv_is_trace_dot", {"replay", "@F/t.csv", "--csv", "@F/./t.csv"}, 2,
        "--csv: '@F/./t.csv' is the trace given to replay");
    cli("replay_csv_is_histograms", {"replay", "@F/t.csv", "--csv", "@F/t.histograms.csv"}, 2,
        "--csv: '@F/t.histograms.csv' is the trace's histograms");
    cli("sweep_trace_csv_is_trace", {"sweep", "--trace", "@F/t.csv", "--csv", "@F/t_sym.csv", "--grid",
                                     "scaler.init_scale=1,2"}, 2, "--csv: '@F/t_sym.csv' is the trace given to --trace");
    cli("sweep_trace_csv_is_histograms", {"sweep", "--trace", "@F/t.csv", "--csv", "@F/t.histograms.csv", "--grid",
                                          "scaler.init_scale=1,2"}, 2, "is the histograms of --trace");
    cli("sweep_sidecar_is_config", {"sweep", "--config", "@F/good.json", "--csv", "@F/good.csv", "--grid",
                                    "scaler.init_scale=1,2"}, 2,
        "the sidecar of --csv: '@F/good.json' is the --config file");
    cli("sweep_merge_out_is_part", {"sweep", "--merge", "@F/part.csv", "@F/part.csv"}, 2,
        "--merge: '@F/part.csv' is a part given to --merge");
    cli("sweep_merge_out_is_part_sidecar", {"sweep", "--merge", "@F/part.json", "@F/part.csv"}, 2,
        "--merge: '@F/part.json' is the sidecar of a part given to --merge");
    cli("trace_deepspeed_out_is_log", {"trace", "--from-deepspeed-log", "@F/ds.log", "--out", "@F/ds.log"}, 2,
        "--out: '@F/ds.log' is the log given to --from-deepspeed-log");
    cli("trace_megatron_out_is_log_hard_link", {"trace", "--from-megatron-log", "@F/mg.log", "--out", "@F/mg_hard.log"},
        2, "--out: '@F/mg_hard.log' is the log given to --from-megatron-log");
    cli("quantize_out_is_in", {"quantize", "--in", "@F/m.csv", "--out", "@F/m.csv"}, 2, "--out: '@F/m.csv' is --in");
    cli("quantize_scales_is_in_symlink", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "@F/m_sym.csv"},
        2, "--scales: '@F/m_sym.csv' is --in");
    cli("quantize_scales_is_out", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "q.csv"}, 2,
        "--scales: 'q.csv' is also --out; give each output its own file");
    cli("quantize_scales_is_out_dot", {"quantize", "--in", "@F/m.csv", "--out", "q.csv", "--scales", "./q.csv"}, 2,
        "--scales: './q.csv' is also --out");
    cli("gemm_out_is_a", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "@F/m.csv"}, 2,
        "--out: '@F/m.csv' is --a");
    cli("gemm_out_is_b_hard_link", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "@F/m2_hard.csv"}, 2,
        "--out: '@F/m2_hard.csv' is --b");
    cli("compare_csv_is_b_symlink", {"compare", "@F/m.csv", "@F/m2.csv", "--csv", "@F/m2_sym.csv"}, 2,
        "--csv: '@F/m2_sym.csv' is B, one of the files compared");
    run("csv_is_config_hard_link", {"--steps", "2", "--config", "@F/good.json", "--csv", "@F/good_hard.json"}, 2,
        "--csv: '@F/good_hard.json' is the --config file");
    cli("export_torch_out_is_config", {"export-torch", "--config", "@F/good.json", "--out", "@F/good.json"}, 2,
        "--out: '@F/good.json' exists and is not an empty folder");
    // --- class 2: every --threads refused outside 0-64; a thread the system refuses (no room
    // for 64 stacks in 256 MiB) ends in one line, the started threads joined, nothing written
    cli("sweep_threads_100000", {"sweep", "--threads", "100000", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"},
        2, "--threads: Value 100000 not in range 0 to 64");
    cli("quantize_threads_65", {"quantize", "--threads", "65", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
        "--threads: Value 65 not in range 0 to 64");
    cli("gemm_threads_65", {"gemm", "--threads", "65", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 2,
        "--threads: Value 65 not in range 0 to 64");
    cli("gemm_error_threads_65", {"gemm-error", "--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
    bench("bench_threads_65", {"--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
    cli("sweep_thread_refused", {"sweep", "--threads", "64", "--csv", "s.csv", "--quiet", "--steps", "1", "--set",
                                 "model.sizes=2-8-2", "--grid", "scaler.init_scale=1:64:1"},
        1, "of 64 (Resource temporarily unavailable); ask for fewer threads (--threads)", Limit::memory_256m);
    cli("run_thread_refused", {"run", "--quiet", "--threads", "64", "--steps", "1", "--set", "model.sizes=2-8-2",
                               "--csv", "a.csv"},
        1, "ask for fewer threads (--threads)", Limit::memory_256m);
    cli("quantize_thread_refused", {"quantize", "--threads", "64", "--in", "@F/m.csv", "--out", "q.csv"}, 1,
        "ask for fewer threads (--threads)", Limit::memory_256m);
    cli("gemm_thread_refused", {"gemm", "--threads", "64", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 1,
        "ask for fewer threads (--threads)", Limit::memory_256m);
    // --- class 3: a request's size estimated before it is allocated, refused with the setting
    // and the size (under a 2 GiB limit it would otherwise end as std::bad_alloc)
    cli("export_torch_steps_huge", {"export-torch", "--steps", "100000000", "--out", "e"}, 2,
        "steps: an export of 100000000 steps (", Limit::memory_2g);
    cli("export_torch_masks_huge", {"export-torch", "--steps", "100000", "--set", "model.dropout=0.5", "--out", "e"},
        2, "of batches and dropout masks) is more than the 2.0 GiB an export may write; lower steps (--steps)",
        Limit::memory_2g);
    cli("export_torch_gpt_dropout", {"export-torch", "--config", "gpt-classroom", "--steps", "2", "--set",
                                     "model.dropout=0.1", "--out", "e"},
        2, "model.dropout: the GPT's dropout masks come from mpx's counter-based RNG");
    cli("export_torch_gpt_run_switch", {"export-torch", "--config", "gpt-classroom", "--steps", "2",
                                        "--precision", "fp32,amp-bf16+attn-before", "--out", "e"},
        2, "amp-bf16+attn-before: its GPT switch +attn-before is not carried by this exporter");
    run("gpt_switch_on_an_mlp", {"--steps", "2", "--precision", "amp-fp16+qk-norm"}, 2,
        "+qk-norm is a GPT switch and the model is an MLP; set model.kind = gpt or drop it");
    run("gpt_two_scale_places", {"--config", "gpt-classroom", "--steps", "2", "--precision", "amp-fp16+attn-before+attn-split"}, 2,
        "names two places for 1/√d (+attn-before, +attn-split); keep one");
    run("gpt_qk_init_scale_zero", {"--config", "gpt-classroom", "--steps", "2", "--set", "model.qk_init_scale=0"}, 2,
        "model.qk_init_scale: must be a positive factor up to 1e6");
    cli("export_torch_over_memory", {"export-torch", "--steps", "1000000", "--out", "e"}, 2,
        "this process may use; lower steps (--steps)", Limit::memory_2g);
    cli("megatron_log_2p24_iterations", {"trace", "--from-megatron-log", "@F/mg_huge.log", "--out", "t.csv"}, 2,
        "--from-megatron-log: @F/mg_huge.log:1: the trace would hold 16777216 steps", Limit::memory_2g);
    cli("megatron_log_lines_add_up", {"trace", "--from-megatron-log", "@F/mg_many.log", "--out", "t.csv"}, 2,
        "--from-megatron-log: @F/mg_many.log:2: the trace would hold 4194304 steps (1.5 GiB), more than the "
        "2796202 (1.0 GiB) a trace may hold in this process's memory", Limit::memory_2g);
    cli("gemm_error_65536_cubed", {"gemm-error", "--m", "65536", "--n", "65536", "--k", "65536"}, 2,
        "--k: a 65536 x 65536 by 65536 x 65536 point needs", Limit::memory_2g);
    cli("gemm_error_second_k_huge", {"gemm-error", "--m", "4096", "--n", "4096", "--k", "256,65536"}, 2,
        "--k: a 4096 x 65536 by 65536 x 4096 point needs", Limit::memory_2g);
    // --- class 6: histogram counts whose sum passes 2^64 - 1 refused by their line, in every
    // command that reads a trace's histograms (a share is never outside [0, 1])
    cli("replay_histogram_counts_wrap", {"replay", "@F/tw.csv", "--csv", "r.csv"}, 2,
        "@F/tw.histograms.csv:20: the counts add up past 2^64 - 1 (18446744073709551615)");
    cli("sweep_trace_histogram_counts_wrap", {"sweep", "--trace", "@F/tw.csv", "--csv", "s.csv", "--grid",
                                              "scaler.init_scale=1,2"},
        2, "@F/tw.histograms.csv:20: the counts add up past 2^64 - 1");
    // --- class 7: a flag either changes the result or is refused with one line, naming it
    // (trace --script takes no log and no --out; a sweep over a trace takes only scaler settings;
    // --merge and --explain take nothing else; a parameter no model or format reads; seeds are
    // read whole to 2^64 - 1, not clamped at 2^63 - 1; a format's largest value is finite)
    cli("trace_script_with_out", {"trace", "--script", "--out", "o.csv"}, 2,
        "--out: does nothing with --script, which prints the recorder to standard output");
    cli("trace_script_with_scaler", {"trace", "--script", "--scaler", "deepspeed"}, 2, "--scaler: does nothing with --script");
    cli("trace_script_with_set", {"trace", "--script", "--set", "scaler.init_scale=2"}, 2, "--set: does nothing with --script");
    cli("trace_script_with_deepspeed_log", {"trace", "--script", "--from-deepspeed-log", "@F/ds.log", "--out", "o.csv"}, 2,
        "--script: does nothing when a log is rebuilt into a trace");
    cli("trace_script_with_megatron_log", {"trace", "--script", "--from-megatron-log", "@F/mg.log", "--out", "o.csv"}, 2,
        "--script: does nothing when a log is rebuilt into a trace");
    const auto trace_sweep = [&](const char* name, QStringList extra, const char* needle) {
        cli(name, QStringList{"sweep", "--trace", "@F/t.csv", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"} + extra,
            2, needle);
    };
    trace_sweep("sweep_trace_steps", {"--steps", "5"}, "--steps: does nothing in a sweep over a trace (--trace replays the recorded steps");
    trace_sweep("sweep_trace_model", {"--model", "2-8-2"}, "--model: does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_dataset", {"--dataset", "moons"}, "--dataset: does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_seed", {"--seed", "3"}, "--seed: does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_device", {"--device", "cpu"}, "--device: does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_threads", {"--threads", "2"}, "--threads: does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_set_model", {"--set", "model.sizes=2-8-2"},
                "--set: 'model.sizes=2-8-2' does nothing in a sweep over a trace");
    trace_sweep("sweep_trace_runs", {"--runs", "amp-fp16"}, "--trace: a sweep over a trace has one run");
    cli("sweep_merge_with_grid", {"sweep", "--merge", "o.csv", "@F/part.csv", "--grid", "scaler.init_scale=1,2"}, 2,
        "--grid: does nothing with --merge");
    cli("sweep_merge_with_steps", {"sweep", "--merge", "o.csv", "@F/part.csv", "--steps", "3"}, 2,
        "--steps: does nothing with --merge");
    cli("sweep_explain_with_steps", {"sweep", "--explain", "1", "--csv", "@F/part.csv", "--steps", "3"}, 2,
        "--steps: does nothing with --explain");
    cli("quantize_nvfp4_mx_scale_rule", {"quantize", "--format", "nvfp4", "--mx-scale-rule", "floor", "--in", "@F/m.csv",
                                         "--out", "q.csv"},
        2, "--mx-scale-rule: is MXFP4's scale rule; NVFP4's block scales are E4M3");
    cli("quantize_metric_without_4over6", {"quantize", "--4over6-metric", "mae", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
        "--4over6-metric: measures 4over6's choice of block scale; give --4over6 too");
    cli("quantize_mxfp4_metric", {"quantize", "--format", "mxfp4", "--4over6-metric", "mae", "--in", "@F/m.csv", "--out",
                                  "q.csv"},
        2, "--4over6-metric");
    cli("quantize_sr_seed_2p64", {"quantize", "--sr-seed", "18446744073709551616", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
        "--sr-seed: '18446744073709551616' is not a whole number from 0 to 18446744073709551615 (2^64 - 1)");
    cli("quantize_sr_seed_negative", {"quantize", "--sr-seed", "-1", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
        "--sr-seed: '-1' is not a whole number");
    cli("quantize_sr_seed_hex", {"quantize", "--sr-seed", "0x10", "--in", "@F/m.csv", "--out", "q.csv"}, 2,
        "--sr-seed: '0x10' is not a whole number");
    cli("gemm_error_seed_2p64", {"gemm-error", "--seed", "18446744073709551616"}, 2,
        "--seed: '18446744073709551616' is not a whole number from 0 to 18446744073709551615");
    run("seed_2p64", {"--seed", "18446744073709551616"}, 2, "--seed: '18446744073709551616' is not a whole number");
    cli("sweep_seed_2p64", {"sweep", "--seed", "99999999999999999999", "--csv", "s.csv", "--grid", "scaler.init_scale=1,2"},
        2, "--seed: '99999999999999999999' is not a whole number");
    cli("export_torch_seed_2p64", {"export-torch", "--seed", "18446744073709551616", "--out", "e"}, 2,
        "--seed: '18446744073709551616' is not a whole number");
    cli("replay_max_finite_inf", {"replay", "@F/t.csv", "--max-finite", "inf"}, 2,
        "--max-finite: must be a finite number > 0, the largest finite value of the gradients' format");
    cli("replay_max_finite_nan", {"replay", "@F/t.csv", "--max-finite", "nan"}, 2, "--max-finite: must be a finite number");
    cli("gemm_bits_under_exact", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv", "--bits", "3"}, 2,
        "--bits: does nothing under --accumulate exact");
    cli("gemm_promote_every_under_fast", {"gemm", "--a", "@F/m.csv", "--b", "@F/m2.csv", "--out", "c.csv", "--accumulate",
                                          "fp8-fast", "--promote-every", "64"},
        2, "--promote-every: is read by the promote model only");
    cli("gemm_error_bits_under_exact", {"gemm-error", "--accumulate", "exact", "--bits", "3"}, 2,
        "--bits: does nothing under --accumulate exact");
    // The session's accumulate.* and fp4.* fields reach a run only where the engine, resolving
    // it, reads them (classes 7 and 8: bits under a +acc-fast run is taken, see
    // accumulate_bits_on_a_fast_plan_changes_the_losses); two labels of one resolved run are refused.
    run("accumulate_bits_under_exact_plan", {"--steps", "2", "--precision", "fp8-hybrid", "--set", "accumulate.bits=3"}, 2,
        "accumulate.bits: 3 reaches no run");
    run("fp4_set_reaches_no_run", {"--steps", "2", "--precision", "fp32", "--set", "fp4.bf16_last=1"}, 2,
        "fp4.bf16_last: 1 reaches no run");
    run("fp4_mx_rule_on_nvfp4", {"--steps", "2", "--precision", "nvfp4", "--set", "fp4.mx_scale_rule=floor"}, 2,
        "fp4.mx_scale_rule: \"floor\" reaches no run");
    run("fp4_switch_every_label_names", {"--steps", "2", "--precision", "nvfp4+no-sr", "--set", "fp4.sr=false"}, 2,
        "fp4.sr: false reaches no run");
    run("nvfp4_twice_by_switch", {"--steps", "2", "--precision", "nvfp4,nvfp4+sr"}, 2, "run 'nvfp4+sr' is run 'nvfp4' again");
    run("mxfp4_twice_by_rule", {"--steps", "2", "--precision", "mxfp4,mxfp4+rceil"}, 2,
        "run 'mxfp4+rceil' is run 'mxfp4' again");
    // --- class 10: every echoed input quoted with escapes (a cell that erases the terminal's
    // line, a Latin-1 file name), so the one-line message stays one readable line
    cli("gemm_cell_control_characters", {"gemm", "--a", "@F/esc.csv", "--b", "@F/m2.csv", "--out", "c.csv"}, 2,
        "--a: @F/esc.csv:2: cell 2 '\\x1b[2K\\rEVIL' is not a number");
    cli("quantize_cell_control_characters", {"quantize", "--in", "@F/esc.csv", "--out", "q.csv"}, 2,
        "--in: @F/esc.csv:2: cell 2 '\\x1b[2K\\rEVIL' is not a number");
    cli("replay_cell_control_characters", {"replay", "@F/te.csv"}, 2, "@F/te.csv:3: scale '\\x1b[2K\\rEVIL' is not a number");
    cli("sweep_trace_cell_control_characters", {"sweep", "--trace", "@F/te.csv", "--csv", "s.csv", "--grid",
                                                "scaler.init_scale=1,2"},
        2, "--trace: @F/te.csv:3: scale '\\x1b[2K\\rEVIL' is not a number");
    cli("megatron_log_control_characters", {"trace", "--from-megatron-log", "@F/mg_esc.log", "--out", "t.csv"}, 2,
        "--from-megatron-log: @F/mg_esc.log:1: the loss scale '\\x1b[2K");
    cli("compare_cell_control_characters", {"compare", "@F/run_a.csv", "@F/run_esc_cell.csv", "--columns", "loss"}, 2,
        "@F/run_esc_cell.csv:2: loss '\\x1b[2K\\rEVIL' is not a number");
    cli("compare_run_label_control_characters", {"compare", "@F/run_a.csv", "@F/run_esc_label.csv", "--columns", "loss"}, 2,
        "only in @F/run_esc_label.csv: '\\x1b[2K\\rEVIL'");
    resume("resume_label_control_characters", {"@F/state_label_control.json", "--steps", "4"}, 2,
           "saved run '\\x1b[2K\\rEVIL' does not match run");
    run("config_key_control_characters", {"--config", "@F/esc_key.json"}, 2, "'st\\x1b[2Keps': unknown setting");
    run("set_key_control_characters", {"--set", "st\x1b[2K\rEVIL=1", "--steps", "2"}, 2,
        "'st\\x1b[2K\\rEVIL': unknown setting (in --set 'st\\x1b[2K\\rEVIL=1')");
    run("precision_label_control_characters", {"--precision", "amp-fp16\x1b[2K\rEVIL", "--steps", "2"}, 2,
        "run 'amp-fp16\\x1b[2K\\rEVIL'");
    cli("gemm_format_control_characters", {"gemm", "--format", "\x1b[2K\rEVIL", "--a", "@F/m.csv", "--b", "@F/m2.csv",
                                           "--out", "c.csv"},
        2, "unknown format '\\x1b[2K\\rEVIL'");
    shell("sweep_trace_latin1_name",
          "exec \"$CLI\" sweep --trace \"@F/t$(printf '\\351').csv\" --csv s.csv --grid scaler.init_scale=1,2",
          "--trace: the name '@F/t\\xe9.csv' is not UTF-8 text");
    shell("sweep_config_latin1_name",
          "exec \"$CLI\" sweep --config \"@F/c$(printf '\\351').json\" --csv s.csv --grid scaler.init_scale=1,2",
          "--config: the name '@F/c\\xe9.json' is not UTF-8 text");
    shell("gemm_latin1_name",
          "exec \"$CLI\" gemm --a \"@F/n$(printf '\\351').csv\" --b @F/m2.csv --out c.csv",
          "--a: '@F/n\\xe9.csv':1: cell 2 'x' is not a number");
    // --- the app's command line: refused before any window opens, nothing written
    app("app_unknown_preset", {"--config", "nosuch"}, "nosuch");
    app("app_config_directory", {"--config", "@F/dir.json"}, "is a directory");
    app("app_config_fifo", {"--config", "@F/fifo.json"}, "not a regular file");
    app("app_config_dev_zero", {"--config", "/dev/zero"}, "not a regular file");
    app("app_config_huge", {"--config", "@F/huge.json"}, "at most");
    app("app_config_not_json", {"--config", "@F/bad.json"}, "not valid JSON");
    app("app_config_trailing", {"--config", "@F/trailing.json"}, "not valid JSON");
    app("app_config_state", {"--config", "@F/state.json"}, "saved session state");
    app("app_set_unknown", {"--set", "stepz=5"}, "stepz");
    // A scaler setting that reaches no run (every dynamic run names its own preset, or none has
    // one) is refused naming the field and the way that reaches a +preset run, not dropped.
    run("scaler_set_reaches_no_run", {"--precision", "amp-fp16+deepspeed", "--set", "scaler.init_scale=1048576"}, 2,
        "scaler.init_scale: reaches no run: every run with a dynamic scaler names its own preset");
    run("scaler_flag_reaches_no_run", {"--precision", "amp-fp16+deepspeed", "--scaler", "megatron"}, 2,
        "scaler.preset: reaches no run");
    run("scaler_set_no_dynamic_run", {"--precision", "fp32,amp-bf16", "--set", "scaler.growth_interval=10"}, 2,
        "scaler.growth_interval: reaches no run: no run has a dynamic loss scaler");
    run("config_scaler_reaches_no_run", {"--config", "@F/scaler_unused.json"}, 2,
        "set scaler_overrides={\"init_scale\":1048576}");
    run("check_claims_with_resume", {"--resume", "@F/state.json", "--check-claims"}, 2,
        "--check-claims: judges a whole session from its first step");
    app("app_scaler_reaches_no_run", {"--config", "@F/scaler_unused.json"}, "scaler.init_scale: reaches no run");
    app("app_set_range", {"--set", "train.lr=-1"}, "train.lr");
    app("app_set_sizes_trailing", {"--set", "model.sizes=2-64-2-"}, "2-64-2-");
    app("app_set_no_equals", {"--set", "steps"}, "key=value");
    shell("app_set_invalid_utf8", "[ -n \"$APP\" ] || exit 2; exec \"$APP\" --set \"name=$(printf '\\377')\"", "UTF-8");
    app("app_after_steps_negative", {"--after-steps", "-1", "--screenshot", "s.png"}, "--after-steps");
    app("app_after_steps_text", {"--after-steps", "x", "--screenshot", "s.png"}, "--after-steps");
    app("app_after_steps_alone", {"--after-steps", "5"}, "--screenshot");
    app("app_screenshot_directory", {"--screenshot", "@F/dir"}, "is a directory");
    app("app_screenshot_missing_directory", {"--screenshot", "no/such/s.png"}, "does not exist");
    app("app_view_unknown", {"--view", "graphs"}, "--view takes charts, boundaries, range, where, updates");
    app("app_unknown_option", {"--bogus"}, "bogus");
    app("app_extra_argument", {"extra"}, "extra");
}

}  // namespace bad_input
