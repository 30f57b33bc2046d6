// The bad-input catalogue's rows (bad_input_rows.hpp), first part: the command line itself, shortcut
// flags, --config, --set (the GPT's switches, the gradient penalty, FP4, samples), outputs, --resume
// and every field of a saved state, bench and format.
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

void add_command_line_rows() {
    // --- the command line itself
    cli("no_command", {}, 2, "a command is required");
    cli("unknown_command", {"trian"}, 2, "unknown command 'trian'");
    cli("unknown_command_case", {"RUN"}, 2, "unknown command 'RUN'");
    cli("unknown_top_option", {"--bogus"}, 2, "--bogus");
    run("unknown_option", {"--bogus"}, 2, "--bogus");
    run("extra_argument", {"extra"}, 2, "extra");
    run("steps_missing_value", {"--steps"}, 2, "--steps");
    run("steps_not_number", {"--steps", "many"}, 2, "--steps");
    run("steps_empty", {"--steps", ""}, 2, "--steps");
    run("steps_zero", {"--steps", "0"}, 2, "--steps: must be between 1");
    run("steps_negative", {"--steps", "-1"}, 2, "--steps");
    run("steps_too_many", {"--steps", "100000001"}, 2, "--steps: must be between 1");
    run("steps_huge", {"--steps", "99999999999999999999"}, 2, "--steps");
    run("steps_fraction", {"--steps", "1.5"}, 2, "--steps");
    run("threads_too_many", {"--threads", "65"}, 2, "--threads: Value 65 not in range 0 to 64");
    run("threads_negative", {"--threads", "-1"}, 2, "--threads");
    bench("threads_not_number", {"--threads", "x"}, 2, "--threads");
    run("seed_negative", {"--seed", "-1"}, 2, "--seed");
    run("seed_not_number", {"--seed", "x"}, 2, "--seed");
    // --- shortcut flags
    run("precision_empty", {"--precision", ""}, 2, "--precision");
    run("precision_commas", {"--precision", ",,"}, 2, "--precision");
    run("precision_unknown", {"--precision", "fp64"}, 2, "fp64");
    run("precision_fp8", {"--precision", "amp-fp8"}, 2, "amp-fp8");
    run("precision_twice", {"--precision", "fp32,fp32"}, 2, "twice");
    run("precision_bad_scaler", {"--precision", "amp-fp16+nosuch"}, 2, "nosuch");
    run("scaler_empty", {"--scaler", ""}, 2, "--scaler");
    run("scaler_unknown", {"--scaler", "tensorflow1"}, 2, "tensorflow1");
    run("model_empty", {"--model", ""}, 2, "--model");
    run("model_trailing_dash", {"--model", "2-64-2-"}, 2, "2-64-2-");
    run("model_leading_dash", {"--model", "-2-64-2"}, 2, "model.sizes");
    run("model_double_dash", {"--model", "2--64-2"}, 2, "2--64-2");
    run("model_letters", {"--model", "2-x-2"}, 2, "2-x-2");
    run("model_zero_width", {"--model", "2-0-2"}, 2, "model.sizes");
    run("model_overflow", {"--model", "2-99999999999-2"}, 2, "model.sizes");
    run("model_wrong_input", {"--model", "3-64-2"}, 2, "input size");
    run("model_wrong_output", {"--model", "2-64-3"}, 2, "output size");
    run("model_one_layer", {"--model", "2"}, 2, "model.sizes");
    run("dataset_empty", {"--dataset", ""}, 2, "--dataset");
    run("dataset_unknown", {"--dataset", "mnist"}, 2, "data.kind");
    run("device_empty", {"--device", ""}, 2, "--device");
    run("device_unknown", {"--device", "tpu"}, 2, "device");
    run("snippet_empty", {"--snippet", ""}, 2, "--snippet");
    run("snippet_unknown", {"--snippet", "jax"}, 2, "--snippet");
    // --- --config
    run("config_empty", {"--config", ""}, 2, "--config");
    run("config_unknown_preset", {"--config", "nosuch"}, 2, "unknown preset 'nosuch'");
    run("config_missing_file", {"--config", "@F/missing.json"}, 1, "missing.json");
    run("config_directory", {"--config", "@F/dir"}, 1, "is a directory");
    run("config_directory_json", {"--config", "@F/dir.json"}, 1, "is a directory");
    run("config_fifo", {"--config", "@F/fifo.json"}, 1, "not a regular file");
    run("config_dev_zero", {"--config", "/dev/zero"}, 1, "not a regular file");
    run("config_dev_null", {"--config", "/dev/null"}, 1, "not a regular file");
    run("config_huge", {"--config", "@F/huge.json"}, 1, "at most");
    run("config_not_json", {"--config", "@F/bad.json"}, 2, "bad.json is not valid JSON");
    run("config_trailing", {"--config", "@F/trailing.json"}, 2, "trailing.json is not valid JSON");
    run("config_empty_file", {"--config", "@F/empty.json"}, 2, "empty.json is not valid JSON");
    run("config_array", {"--config", "@F/array.json"}, 2, "must be a JSON object");
    run("config_unknown_key", {"--config", "@F/unknown_key.json"}, 2, "stepz: unknown setting");
    run("config_wrong_type", {"--config", "@F/wrong_type.json"}, 2, "steps");
    run("config_sizes_trailing", {"--config", "@F/sizes_trailing.json"}, 2, "2-64-2-");
    run("config_invalid_utf8", {"--config", "@F/invalid_utf8.json"}, 2, "invalid_utf8.json is not valid JSON");
    run("config_sidecar_without_config", {"--config", "@F/sidecar_noconfig.json"}, 2, "without its \"config\"");
    run("config_number_overflow", {"--config", "@F/number_overflow.json"}, 2, "number_overflow.json is not valid JSON");
    run("config_is_state", {"--config", "@F/state.json"}, 2, "--resume");
    // --- --set
    run("set_no_equals", {"--set", "steps"}, 2, "not key=value");
    run("set_empty_key", {"--set", "=5"}, 2, "not key=value");
    run("set_empty", {"--set", ""}, 2, "--set");
    set("set_unknown_key", "stepz=5", "stepz: unknown setting");
    set("set_unknown_nested", "train.lrr=0.1", "train.lrr");
    set("set_unknown_section", "trainer.lr=0.1", "trainer");
    set("set_lr_negative", "train.lr=-1", "train.lr");
    set("set_lr_nan", "train.lr=nan", "train.lr");
    set("set_lr_inf", "train.lr=inf", "train.lr");
    set("set_lr_text", "train.lr=fast", "train.lr");
    set("set_lr_beyond_double", "train.lr=1e400", "train.lr");
    set("set_steps_beyond_double", "steps=1e400", "steps");
    set("set_lr_object", "train.lr={}", "train.lr");
    set("set_batch_zero", "train.batch=0", "train.batch");
    set("set_batch_huge", "train.batch=1e12", "train.batch");
    set("set_batch_fraction", "train.batch=1.5", "train.batch");
    set("set_batch_over_data", "train.batch=4096", "train.batch");
    set("set_accumulation_zero", "train.accumulation=0", "train.accumulation");
    set("set_accumulation_huge", "train.accumulation=5000", "train.accumulation");
    set("set_optimizer_unknown", "train.optimizer=rmsprop", "train.optimizer");
    set("set_clip_negative", "train.clip_norm=-1", "train.clip_norm");
    set("set_growth_factor_one", "scaler.growth_factor=1", "scaler.growth_factor");
    set("set_backoff_one", "scaler.backoff_factor=1", "scaler.backoff_factor");
    set("set_backoff_zero", "scaler.backoff_factor=0", "scaler.backoff_factor");
    set("set_growth_interval_zero", "scaler.growth_interval=0", "scaler.growth_interval");
    set("set_growth_interval_huge", "scaler.growth_interval=1e20", "scaler.growth_interval");
    set("set_hysteresis_zero", "scaler.hysteresis=0", "scaler.hysteresis");
    set("set_init_scale_nan", "scaler.init_scale=nan", "scaler.init_scale");
    set("set_init_scale_negative", "scaler.init_scale=-8", "scaler.init_scale");
    set("set_scaler_kind", "scaler.kind=weird", "scaler.kind");
    set("set_scaler_preset", "scaler.preset=nosuch", "nosuch");
    set("set_at_min", "scaler.at_min=explode", "scaler.at_min");
    set("set_scaler_unknown", "scaler.growth=2", "scaler.growth");
    set("set_sizes_trailing", "model.sizes=2-64-2-", "2-64-2-");
    set("set_sizes_empty_list", "model.sizes=[]", "model.sizes");
    set("set_sizes_floats", "model.sizes=[2.5,2]", "model.sizes");
    set("set_dropout_two", "model.dropout=2", "model.dropout");
    set("set_activation", "model.activation=swish", "model.activation");
    set("set_layernorm_text", "model.layernorm=maybe", "model.layernorm");
    // The GPT's switches (docs/gpt.md): a bad value, and the switch on an MLP, which it reaches no run of.
    set("set_norm_stats_on_mlp", "norm.stats=storage", "norm.stats: is set but the MLP's LayerNorm keeps FP32 statistics");
    run("set_norm_stats_unknown", {"--config", "gpt-classroom", "--steps", "2", "--set", "norm.stats=bf16"}, 2,
        "norm.stats: must be one of");
    set("set_z_loss_on_mlp", "train.z_loss=0.0001", "train.z_loss: is the GPT's");
    run("set_qk_norm_text", {"--config", "gpt-classroom", "--steps", "2", "--set", "attention.qk_norm=maybe"}, 2,
        "attention.qk_norm");
    run("set_z_loss_negative", {"--config", "gpt-classroom", "--steps", "2", "--set", "train.z_loss=-1"}, 2, "train.z_loss");
    // The gradient penalty (docs/penalty.md): λ's range, switches that reach no run, what it refuses.
    set("set_penalty_negative", "train.gradient_penalty=-1", "train.gradient_penalty: must be between 0");
    set("set_penalty_nan", "train.gradient_penalty=nan", "train.gradient_penalty: must be between 0");
    set("set_penalty_inf", "train.gradient_penalty=inf", "train.gradient_penalty: must be between 0");
    set("set_penalty_unscale_without_penalty", "train.penalty_unscale=false", "train.penalty_unscale: reaches no run");
    set("set_penalty_form_without_penalty", "train.penalty=squared_norm", "train.penalty: reaches no run");
    run("set_penalty_two_mistakes", {"--steps", "2", "--set", "train.gradient_penalty=1", "--set",
        "train.penalty_unscale=false", "--set", "train.penalty_scaled_grads=false"}, 2, "keep one mistake at a time");
    run("run_penalty_mistake_without_penalty", {"--steps", "2", "--precision", "amp-fp16+no-unscale"}, 2,
        "+no-unscale is a gradient-penalty mistake, and train.gradient_penalty is 0");
    run("run_penalty_mistake_without_scale", {"--steps", "2", "--precision", "fp32+unscaled-grads", "--set",
        "train.gradient_penalty=1"}, 2, "+unscaled-grads changes nothing without a loss scale");
    run("set_penalty_on_fp8", {"--steps", "2", "--precision", "fp8-hybrid", "--set", "train.gradient_penalty=1"}, 2,
        "train.gradient_penalty: run 'fp8-hybrid': FP8/FP4 recipes scale the three GEMMs");
    run("set_penalty_on_fp4", {"--steps", "2", "--precision", "nvfp4", "--set", "train.gradient_penalty=1"}, 2,
        "train.gradient_penalty: run 'nvfp4': FP8/FP4 recipes");
    run("set_penalty_on_gpt", {"--config", "gpt-classroom", "--steps", "2", "--set", "train.gradient_penalty=1"}, 2,
        "train.gradient_penalty: the GPT has no Hessian-vector products");
    run("set_penalty_with_recompute", {"--steps", "2", "--set", "train.gradient_penalty=1", "--set",
        "model.recompute=true"}, 2, "set model.recompute = false");
    run("set_gpt_dropout_one", {"--config", "gpt-classroom", "--steps", "2", "--set", "model.dropout=1"}, 2,
        "model.dropout: must be in [0, 1)");
    // FP4's first/last count the GPT's Linear layers: gpt-classroom's 2 blocks have 9.
    run("set_gpt_fp4_keeps_every_linear", {"--config", "gpt-classroom", "--steps", "2", "--precision",
        "nvfp4+bf16-first-5+bf16-last-4"}, 2, "and this model has 9: no layer would train in FP4");
    // The GPT's samples (engine/config/sample_config.hpp).
    const auto gpt = [&](const char* name, const char* assignment, const char* needle) {
        run(name, {"--config", "gpt-classroom", "--steps", "2", "--set", assignment}, 2, needle);
    };
    gpt("set_sample_every_negative", "sample.every=-1", "sample.every: must be 0");
    gpt("set_sample_length_zero", "sample.length=0", "sample.length: must be 1 to 4096");
    gpt("set_sample_length_huge", "sample.length=5000", "sample.length: must be 1 to 4096");
    gpt("set_sample_prompt_empty", "sample.prompt=\"\"", "sample.prompt: is empty");
    gpt("set_sample_prompt_foreign", "sample.prompt=\"Жук\"", "sample.prompt: 'Ж' is not one of the 99 symbols");
    gpt("set_sample_prompt_number", "sample.prompt=5", "sample.prompt: must be text");
    gpt("set_sample_unknown", "sample.temperature=2", "sample.temperature");
    set("set_n_train_zero", "data.n_train=0", "data.n_train");
    set("set_n_train_huge", "data.n_train=2000000", "data.n_train");
    set("set_n_test_negative", "data.n_test=-1", "data.n_test");
    set("set_noise_negative", "data.noise=-1", "data.noise");
    set("set_data_kind", "data.kind=nope", "data.kind");
    set("set_classes_many", "data.classes=99", "data.classes");
    set("set_steps_zero", "steps=0", "steps");
    set("set_steps_fraction", "steps=1.5", "steps");
    set("set_steps_text", "steps=ten", "steps");
    set("set_seed_negative", "seed=-1", "seed");
    set("set_record_every_zero", "record_every=0", "record_every");
    set("set_eval_every_negative", "eval_every=-1", "eval_every");
    set("set_device", "device=tpu", "device");
    set("set_runs_empty", "runs=", "runs");
    set("set_runs_twice", "runs=fp32,fp32", "twice");
    set("set_runs_too_many", "runs=fp32,tf32,amp-fp16,amp-bf16,half-fp16,pure-fp16,selective-fp16,"
        "adaptive-fp16,scaling-only,amp-fp16+deepspeed,amp-fp16+apex,amp-fp16+keras,amp-fp16+megatron,"
        "amp-fp16+nemo,amp-fp16+static,amp-fp16+none,amp-fp16+tf-keras-legacy", "runs");
    shell("set_name_invalid_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"name=$(printf '\\377\\376')\"",
          "--set: an assignment is not valid UTF-8");
    shell("set_description_invalid_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"description=caf$(printf '\\303')\"",
          "--set: an assignment is not valid UTF-8");
    shell("set_name_overlong_utf8", "exec \"$CLI\" run --quiet --steps 2 --set \"name=$(printf '\\300\\257')\"",
          "--set: an assignment is not valid UTF-8");
    run("set_selective_unknown_layer",
        {"--steps", "2", "--set", "runs=selective-fp16", "--set", "selective_layers=fc9"}, 2, "fc9");
    set("set_adaptive_zero", "adaptive_threshold=0", "adaptive_threshold");
    set("set_memory_budget_zero", "memory_budget=0", "memory_budget");
    set("set_overrides_dotted", "scaler_overrides.growth_interval=5", "scaler_overrides");
    set("set_overrides_kind", "scaler_overrides={\"kind\":\"none\"}", "scaler_overrides");
    set("set_overrides_not_object", "scaler_overrides=5", "scaler_overrides");
    set("set_overrides_bad_value", "scaler_overrides={\"growth_interval\":0}", "growth_interval");
    cli("data_too_large_for_memory",
        {"run", "--quiet", "--steps", "2", "--set", "data.kind=digits", "--set", "model.sizes=784-10",
         "--set", "data.n_train=1000000", "--set", "data.n_test=1000000"},
        2, "data.n_train", Limit::memory_2g);
    // --- outputs: checked before a step is trained
    run("csv_empty", {"--steps", "2", "--csv", ""}, 2, "--csv");
    run("csv_directory", {"--steps", "2", "--csv", "@F/dir"}, 1, "is a directory");
    run("csv_dot", {"--steps", "2", "--csv", "."}, 1, "is a directory");
    run("csv_missing_directory", {"--steps", "2", "--csv", "no/such/a.csv"}, 1, "does not exist");
    run("csv_device", {"--steps", "2", "--csv", "/dev/null"}, 1, "not a regular file");
    run("csv_sidecar_directory", {"--steps", "2", "--csv", "@F/dir.csv"}, 1, "sidecar");
    run("save_state_empty", {"--steps", "2", "--save-state", ""}, 2, "--save-state");
    run("save_state_directory", {"--steps", "2", "--save-state", "@F/dir"}, 1, "is a directory");
    run("save_state_is_csv", {"--steps", "2", "--csv", "a.csv", "--save-state", "a.csv"}, 2, "--save-state");
    run("save_state_is_sidecar", {"--steps", "2", "--csv", "a.csv", "--save-state", "a.json"}, 2, "sidecar");
    run("save_state_is_config", {"--steps", "2", "--config", "@F/good.json", "--save-state", "@F/good.json"},
        2, "--config file");
    run("csv_sidecar_is_config", {"--steps", "2", "--config", "@F/good.json", "--csv", "@F/good.csv"}, 2,
        "--config file");
    run("save_state_missing_directory", {"--steps", "2", "--save-state", "no/s.json"}, 1, "does not exist");
    // --- --resume: the state is validated like a configuration; flags that cannot apply are refused
    resume("resume_empty", {""}, 2, "--resume");
    resume("resume_missing", {"@F/missing.json"}, 1, "missing.json");
    resume("resume_directory", {"@F/dir"}, 1, "is a directory");
    resume("resume_fifo", {"@F/fifo.json"}, 1, "not a regular file");
    resume("resume_dev_zero", {"/dev/zero"}, 1, "not a regular file");
    resume("resume_not_json", {"@F/bad.json"}, 2, "not valid JSON");
    resume("resume_empty_file", {"@F/empty.json"}, 2, "not valid JSON");
    resume("resume_cut_short", {"@F/state_cut.json"}, 2, "not valid JSON");
    resume("resume_trailing", {"@F/state_trailing.json"}, 2, "not valid JSON");
    resume("resume_number_overflow", {"@F/state_number_overflow.json"}, 2, "not valid JSON");
    resume("resume_a_config", {"@F/good.json"}, 2, "not an mpx session state");
    resume("resume_array", {"@F/array.json"}, 2, "not an mpx session state");
    resume("resume_inf_scale", {"@F/state_inf_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
    resume("resume_nan_scale", {"@F/state_nan_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
    resume("resume_negative_scale", {"@F/state_neg_scale.json", "--steps", "5"}, 2, "scaler.state.scale");
    resume("resume_param_1e300", {"@F/state_1e300.json", "--steps", "5"}, 2, "FP32 range");
    resume("resume_param_text", {"@F/state_param_text.json", "--steps", "5"}, 2, "params[0][0]: the saved state holds \"x\", not a number");
    resume("resume_params_short", {"@F/state_params_short.json", "--steps", "5"}, 2, "does not match");
    resume("resume_params_number", {"@F/state_params_number.json", "--steps", "5"}, 2, "params");
    resume("resume_version", {"@F/state_version.json", "--steps", "5"}, 2, "version");
    resume("resume_format", {"@F/state_format.json", "--steps", "5"}, 2, "not an mpx session state");
    resume("resume_step_mismatch", {"@F/state_step.json", "--steps", "5"}, 2, "batch order");
    resume("resume_negative_step", {"@F/state_neg_step.json", "--steps", "5"}, 2, "\"step\"");
    resume("resume_huge_step", {"@F/state_big_step.json", "--steps", "5"}, 2, "\"step\"");
    resume("resume_no_runs", {"@F/state_no_runs.json", "--steps", "5"}, 2, "\"runs\" is missing");
    resume("resume_run_count", {"@F/state_run_count.json", "--steps", "5"}, 2, "number of runs");
    resume("resume_label", {"@F/state_label.json", "--steps", "5"}, 2, "does not match");
    resume("resume_unknown_key", {"@F/state_unknown_key.json", "--steps", "5"}, 2, "extra");
    resume("resume_applied_steps", {"@F/state_applied.json", "--steps", "5"}, 2, "applied_steps");
    resume("resume_growth_tracker", {"@F/state_tracker.json", "--steps", "5"}, 2, "growth_tracker");
    resume("resume_bad_config", {"@F/state_bad_config.json", "--steps", "5"}, 2, "train.lr");
    resume("resume_no_config", {"@F/state_no_config.json", "--steps", "5"}, 2, "\"config\" is missing");
    resume("resume_sampler", {"@F/state_sampler.json", "--steps", "5"}, 2, "batch order");
    resume("resume_finished", {"@F/state.json"}, 2, "trained all its 3 steps");
    resume("resume_steps_equal", {"@F/state.json", "--steps", "3"}, 2, "--steps: the saved state is already at step 3");
    resume("resume_steps_below", {"@F/state.json", "--steps", "1"}, 2, "--steps");
    resume("resume_steps_zero", {"@F/state.json", "--steps", "0"}, 2, "--steps");
    resume("resume_with_set", {"@F/state.json", "--steps", "5", "--set", "train.lr=0.1"}, 2, "--set: cannot apply to a resumed run");
    resume("resume_with_precision", {"@F/state.json", "--steps", "5", "--precision", "fp32"}, 2, "--precision: cannot apply");
    resume("resume_with_config", {"@F/state.json", "--steps", "5", "--config", "default"}, 2, "--config: cannot apply");
    resume("resume_with_scaler", {"@F/state.json", "--steps", "5", "--scaler", "apex"}, 2, "--scaler: cannot apply");
    resume("resume_with_model", {"@F/state.json", "--steps", "5", "--model", "2-8-2"}, 2, "--model: cannot apply");
    resume("resume_with_dataset", {"@F/state.json", "--steps", "5", "--dataset", "moons"}, 2, "--dataset: cannot apply");
    resume("resume_with_seed", {"@F/state.json", "--steps", "5", "--seed", "3"}, 2, "--seed: cannot apply");
    resume("resume_with_print_config", {"@F/state.json", "--print-config"}, 2, "--print-config: cannot apply");
    resume("resume_with_snippet", {"@F/state.json", "--snippet", "pytorch"}, 2, "--snippet: cannot apply");
    resume("resume_csv_over_state", {"@F/state_copy.json", "--steps", "5", "--csv", "@F/state_copy.json"}, 2,
           "the state given to --resume");
    // --- issue 41, class 5: every field of a saved state range-checked, the field named
    // (FP8 delayed scaling's scale, next slot and amaxes; a Kahan run's compensation and
    // compensation_max; the scaler state's counters, which would wrap; every key's presence)
    const auto resume_new = [&](const char* name, const char* file, const char* needle) {
        resume(name, {QStringLiteral("@F/") + file, "--steps", "5"}, 2, needle);
    };
    resume_new("resume_fp8_scale_nan", "state_fp8_scale_nan.json",
               "--resume: fp8_amax[0][0]: the FP8 scale is nan; a saved scale is > 0 (or \"inf\") (run 1");
    resume_new("resume_fp8_scale_zero", "state_fp8_scale_zero.json", "fp8_amax[0][0]: the FP8 scale is 0;");
    resume_new("resume_fp8_scale_negative", "state_fp8_scale_negative.json", "fp8_amax[2][0]: the FP8 scale is -1;");
    resume_new("resume_fp8_next_fraction", "state_fp8_next_fraction.json",
               "fp8_amax[1][1]: the next slot of the amax history is 1.5, not a whole number from 0 to 1023");
    resume_new("resume_fp8_next_beyond", "state_fp8_next_beyond.json", "fp8_amax[1][1]: the next slot");
    resume_new("resume_fp8_amax_negative", "state_fp8_amax_negative.json", "fp8_amax[1][3]: an amax is -2");
    resume_new("resume_fp8_amax_text", "state_fp8_amax_text.json", "fp8_amax[1][3]: the saved state holds \"x\", not a number");
    resume_new("resume_fp8_history_short", "state_fp8_history_short.json",
               "fp8_amax[1]: holds 1025 values, not the scale, the next slot and 1024 amaxes");
    resume_new("resume_fp8_tensor_missing", "state_fp8_tensor_missing.json", "fp8_amax: the saved state has 5 FP8 tensors");
    resume_new("resume_fp8_on_kahan_run", "state_fp8_on_kahan.json", "fp8_amax: the saved state's FP8 scaling does not match");
    resume_new("resume_compensation_max_negative", "state_comp_max_negative.json",
               "compensation_max: is -5, not a whole number from 0 to 2147483647 (run 2");
    resume_new("resume_compensation_max_sign_bit", "state_comp_max_sign_bit.json", "compensation_max: is 4294967291");
    resume_new("resume_compensation_max_text", "state_comp_max_text.json", "compensation_max: is \"big\"");
    resume_new("resume_compensation_max_missing", "state_comp_max_missing.json", "compensation_max: is missing");
    resume_new("resume_compensation_max_alone", "state_comp_max_alone.json", "compensation_max: belongs to a Kahan run's");
    resume_new("resume_compensation_text", "state_comp_value_text.json", "compensation[0][0]: the saved state holds \"y\"");
    resume_new("resume_compensation_short", "state_comp_short.json", "compensation: the saved state does not match this model");
    resume_new("resume_label_missing", "state_label_missing.json", "label: is missing from a run's saved state (run 2");
    resume_new("resume_failure_number", "state_failure_number.json", "failure: must be text, got 5");
    resume_new("resume_params_missing", "state_params_missing.json", "params: is missing");
    resume_new("resume_scaler_state_missing", "state_scaler_state_missing.json", "scaler_state: is missing");
    resume_new("resume_growth_tracker_beyond_int", "state_tracker_beyond_int.json",
               "scaler.state.growth_tracker: is 4294967296, not a whole number");
    resume_new("resume_last_overflow_wraps", "state_last_overflow_wraps.json",
               "scaler.state.last_overflow_iteration: is 18446744073709551615");
    resume_new("resume_iteration_beyond_step", "state_iteration_beyond_step.json",
               "\"iteration\" of the scaler state of run 2 is 99, not a whole number from 0 to 3");
    resume_new("resume_unknown_top_key", "state_top_unknown.json", "\"extra\" is an unknown key in the saved state");
    resume_new("resume_sampler_unknown_key", "state_sampler_unknown.json", "\"extra\" of the sampler is an unknown key");
    // --- bench
    bench("bench_seconds_inf", {"--seconds", "inf"}, 2, "--seconds");
    bench("bench_seconds_minus_inf", {"--seconds", "-inf"}, 2, "--seconds");
    bench("bench_seconds_1e308", {"--seconds", "1e308"}, 2, "--seconds");
    bench("bench_seconds_1e9", {"--seconds", "1e9"}, 2, "--seconds");
    bench("bench_seconds_601", {"--seconds", "601"}, 2, "--seconds");
    bench("bench_seconds_negative", {"--seconds", "-1"}, 2, "--seconds");
    bench("bench_seconds_zero", {"--seconds", "0"}, 2, "--seconds");
    bench("bench_seconds_nan", {"--seconds", "nan"}, 2, "--seconds");
    bench("bench_seconds_text", {"--seconds", "long"}, 2, "--seconds");
    bench("bench_seconds_empty", {"--seconds", ""}, 2, "--seconds");
    bench("bench_batch_zero", {"--batch", "0"}, 2, "--batch");
    bench("bench_batch_negative", {"--batch", "-1"}, 2, "--batch");
    bench("bench_batch_1500000000", {"--batch", "1500000000"}, 2, "--batch: must be between 1 and 500000");
    bench("bench_batch_beyond_int", {"--batch", "99999999999"}, 2, "--batch");
    bench("bench_batch_500001", {"--batch", "500001"}, 2, "--batch");
    bench("bench_batch_text", {"--batch", "big"}, 2, "--batch");
    bench("bench_batch_too_wide", {"--batch", "500000", "--model", "2-4096-2"}, 2, "--batch");
    bench("bench_precision_empty", {"--precision", ""}, 2, "--precision");
    bench("bench_precision_commas", {"--precision", ",,"}, 2, "--precision");
    bench("bench_precision_inner_empty", {"--precision", "fp32,,amp-fp16"}, 2, "--precision");
    bench("bench_precision_trailing_comma", {"--precision", "fp32,"}, 2, "--precision");
    bench("bench_precision_unknown", {"--precision", "fp64"}, 2, "--precision");
    bench("bench_precision_bad_late", {"--precision", "fp32,fp128"}, 2, "fp128");
    bench("bench_model_empty", {"--model", ""}, 2, "--model");
    bench("bench_model_trailing_dash", {"--model", "2-64-2-"}, 2, "--model");
    bench("bench_model_inputs", {"--model", "3-64-2"}, 2, "--model");
    bench("bench_model_digits_outputs", {"--model", "784-512-9"}, 2, "--model");
    bench("bench_model_zero", {"--model", "2-0-2"}, 2, "--model");
    bench("bench_model_text", {"--model", "abc"}, 2, "--model");
    bench("bench_device_unknown", {"--device", "tpu"}, 2, "--device");
    bench("bench_device_empty", {"--device", ""}, 2, "--device");
    bench("bench_optimizer_unknown", {"--optimizer", "rmsprop"}, 2, "--optimizer");
    bench("bench_unknown_option", {"--bogus"}, 2, "--bogus");
    bench("bench_extra_argument", {"extra"}, 2, "extra");
    // --- format
    format("format_no_values", {}, 2, "give at least one value");
    format("format_formats_missing_value", {"1", "--formats"}, 2, "--formats: needs a value");
    format("format_overflow_missing_value", {"1", "--overflow"}, 2, "--overflow: needs a value");
    format("format_formats_unknown", {"--formats", "fp64", "1"}, 2, "fp64");
    format("format_formats_empty", {"--formats", "", "1"}, 2, "--formats");
    format("format_formats_trailing_comma", {"--formats", "fp16,", "1"}, 2, "--formats");
    format("format_formats_inner_empty", {"--formats", "fp16,,bf16", "1"}, 2, "unknown format ''");
    format("format_overflow_unknown", {"--overflow", "wrap", "1"}, 2, "--overflow");
    format("format_value_text", {"abc"}, 2, "'abc' is not a number");
    format("format_value_empty", {""}, 2, "'' is not a number");
    format("format_value_hex_cut", {"0x1p"}, 2, "'0x1p' is not a number");
    format("format_value_two_dots", {"1.2.3"}, 2, "'1.2.3' is not a number");
    format("format_value_trailing", {"1e5x"}, 2, "'1e5x' is not a number");
    format("format_unknown_option", {"--bogus", "1"}, 2, "unknown option '--bogus'");
    format("format_unknown_option_alone", {"--zzz"}, 2, "unknown option '--zzz'; format takes --csv");
    format("format_unknown_short_option", {"-x", "1"}, 2, "unknown option '-x'");
}

}  // namespace bad_input
