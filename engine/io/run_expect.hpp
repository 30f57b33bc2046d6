// `mpx-cli compare --expect`: two CSVs of one session trained twice (mpx's `run --csv` and the
// exported train.py, or mpx twice) judged by what docs/pytorch.md derives for each format, with the
// settings both sidecars record compared first, and a parting explained.
// Rule: a setting that differs is named before any column, and is itself a "differ" when it changes
// training; the per-format tolerance is stated once, in expected_rule, and nowhere else.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/run_compare.hpp"

namespace mpx {

// The settings a CSV was trained with: mpx-cli run --csv's sidecar (A.json beside A.csv,
// format "mpx-export") or export-torch's session.json (format "mpx-export-torch"); both hold the
// session's configuration under "config" and per run its label and CSV precision under "runs".
struct RunSidecar {
    std::string name;                              // as messages call it
    nlohmann::json config;                         // to_json(SessionConfig)
    std::map<std::string, std::string> precision;  // run label -> its CSV precision ("fp32", "bf16")
};
// ConfigError (one line naming the file) for a file that is not JSON or holds no "config" object.
RunSidecar read_run_sidecar(const std::filesystem::path& path);

// Where --expect finds the sidecar of `csv`: `given` when set (the file, or a folder holding
// session.json); else the CSV's own (A.json beside A.csv, as run --csv writes it); else session.json
// in the CSV's folder (train.py --csv written into its export's folder). ConfigError naming `option`
// (the flag that names it) when none is there.
std::filesystem::path find_run_sidecar(const std::filesystem::path& csv, const std::optional<std::filesystem::path>& given,
                                       const std::string& option);

struct SettingDifference {
    std::string key;  // dotted: "train.lr", "scaler_overrides.backoff_factor"
    std::string a, b;  // the values as JSON text; "absent" where a side lacks the key
    // false for what only changes what is recorded or shown (record_every, instruments, name, the
    // device field train.py does not read): reported, never a difference by itself.
    bool training = true;
};
// Every leaf of the two configurations that differs, in key order. An array is one leaf. "runs" is
// left out: the run sets are lined up by label (the runs both CSVs hold are compared).
std::vector<SettingDifference> setting_differences(const nlohmann::json& a, const nlohmann::json& b);

// The rule a run is judged by, from its CSV precision and its loss and gradient norm at its first
// compared step (the sizes FP32's summation-order differences scale with; BF16's spacing there).
struct ExpectedRule {
    std::string text;              // one line for the report
    std::vector<ColumnPlan> plans;  // the columns whose rule differs from column_rule's default
};
ExpectedRule expected_rule(std::string_view precision, double initial_loss, double initial_grad_norm);
// BF16's spacing at `x`: 2^(e-7) for 2^e <= |x| < 2^(e+1); 2^-8 at the initial loss 0.69 of a
// two-class cross-entropy. 2^-8 for a zero or non-finite x.
double bf16_spacing(double x);

// Why a run parts, in words: the first step and column, and whether the scaler's decisions (the
// loss_scale, found_inf, skipped and scale_event columns compared) still agree.
struct RunVerdict {
    std::string run, precision, rule;
    std::optional<long long> parted_at;
    std::string parting;  // "step 1, loss: rel 1.3e-4 > 1e-5"; empty when the run agrees
    std::string scaler;   // "the scaler's decisions agree on all 120 steps", "... part from step 7 (loss_scale: ...)"
};

struct ExpectReport {
    std::string sidecar_a, sidecar_b;
    std::vector<SettingDifference> settings;
    CompareReport compare;
    std::vector<RunVerdict> runs;
    bool agree() const;  // no training setting differs, and every run within its rule
};

// Lines the tables up on the runs and steps both hold (Lineup::common) and judges each run by
// expected_rule. `options` may pick columns, steps and runs; tolerances of its own are refused
// (ConfigError naming --tol or --atol): the rule is the format's.
ExpectReport compare_expected(const RunTable& a, const RunTable& b, const RunSidecar& sa, const RunSidecar& sb,
                              CompareOptions options);

// The settings first, then per run its rule, its table and its verdict, then one line "agree: ..."
// or "differ: ..." (expect_summary_line: short, however much differs).
std::string expect_report_text(const ExpectReport& report);
std::string expect_summary_line(const ExpectReport& report);

}  // namespace mpx
