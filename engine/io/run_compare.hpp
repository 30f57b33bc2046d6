// Two run CSVs (mpx's `run --csv` export, or a framework's script that writes the same column names)
// lined up by (run, step) and compared column by column, as `mpx-cli compare` reports it.
// Rule: nothing is re-aligned or interpolated — a run or step present on one side only (unless
// Lineup::common asks for the common ones, each left out counted), a missing column, a malformed row or a non-number in a compared numeric cell is bad input (ConfigError
// naming file and line), never a difference; NaN, inf and empty cells are data and compare as values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/io/run_table.hpp"

namespace mpx {

// How a column is judged. relative: numbers within a relative tolerance per step; exact: numbers
// equal per step; text: cells equal as text per step. For exact and text the tolerance is the
// largest share of steps allowed to differ.
enum class CompareKind { relative, exact, text };
constexpr EnumName<CompareKind> compare_kind_names[] = {
    {CompareKind::relative, "relative"}, {CompareKind::exact, "exact"}, {CompareKind::text, "text"}};
constexpr std::span<const EnumName<CompareKind>> names_of(CompareKind) { return compare_kind_names; }

// The kind and default tolerance of a column of mpx's run CSV; nullopt for a name that is not one
// of its columns or is a key (run, step).
struct ColumnRule {
    CompareKind kind;
    double tolerance;
};
std::optional<ColumnRule> column_rule(std::string_view column);

// How the two files' runs and steps are lined up. same: a run or step on one side only is bad input
// (plain compare: nothing is dropped silently); common: the runs and steps both hold are compared and
// the rest counted as not compared (compare --expect: an export recording every 10th step, a script
// asked for fewer runs or steps).
enum class Lineup { same, common };

// A column's rule over one run's steps, where it is not the column's default (compare --expect's
// per-format rule, engine/io/run_expect.hpp). Steps up to `strict_last` (inclusive) are judged by
// `strict_tolerance` (relative) alone; later ones by rule.tolerance plus `absolute`; steps after
// `judged_last` are compared and shown but not judged.
struct ColumnPlan {
    std::string column;
    ColumnRule rule;
    double absolute = 0.0;
    std::optional<long long> strict_last;
    double strict_tolerance = 0.0;
    std::optional<long long> judged_last;
};

struct CompareOptions {
    // --tol COLUMN=X, in the order given (a later one for the same column wins).
    std::vector<std::pair<std::string, double>> tolerances;
    // --atol COLUMN=X: an absolute tolerance added to a relative column's (numpy.isclose's rule:
    // |a−b| <= atol + tol·max(|a|,|b|)); for quantities that approach 0, such as a loss.
    std::vector<std::pair<std::string, double>> absolute;
    // --columns a,b: compare only these (each must be in both files); empty: the defaults and --tol's.
    std::vector<std::string> columns;
    std::optional<std::pair<long long, long long>> steps;  // FIRST-LAST, inclusive
    std::vector<std::string> runs;                         // empty: every run (the files must hold the same)
    Lineup lineup = Lineup::same;
    // Per run label, rules that replace the defaults (and --tol's) of their columns for that run; a
    // column not compared is left alone.
    std::map<std::string, std::vector<ColumnPlan>> run_rules;
};

// "COLUMN=X" as --tol takes it; ConfigError("--tol", ...) for an unknown or uncomparable column, or
// an X that is not a number, negative, or (for exact and text columns) a share above 1.
std::pair<std::string, double> parse_tolerance(std::string_view text);
// "COLUMN=X" as --atol takes it: a relative column, X a number >= 0. ConfigError("--atol", ...).
std::pair<std::string, double> parse_absolute_tolerance(std::string_view text);
// "a,b" as --columns takes it: each a compared column of a run CSV. ConfigError("--columns", ...).
std::vector<std::string> parse_column_list(std::string_view text);
// "FIRST-LAST" as --steps takes it: whole numbers, FIRST <= LAST. ConfigError("--steps", ...).
std::pair<long long, long long> parse_step_range(std::string_view text);
// "a,b" as --runs takes it. ConfigError("--runs", ...) for an empty label.
std::vector<std::string> parse_run_list(std::string_view text);


// The columns compared unless --tol names more; `optional` ones only where both files have them
// (a script may not evaluate, compute the norm, or name the scaler's event).
struct DefaultColumn {
    std::string_view name;
    bool optional;
};
std::span<const DefaultColumn> default_compared_columns();
// Those columns with their rules, for help text: "loss (rel 1e-5), loss_scale (exact), ...,
// scale_event* (text), ...; * where both files have it".
std::string default_columns_text();

struct ColumnResult {
    std::string column;
    CompareKind kind = CompareKind::relative;
    double tolerance = 0.0;
    double absolute = 0.0;    // relative columns: the absolute tolerance added (--atol)
    std::optional<long long> strict_last, judged_last;  // ColumnPlan's, where one applied
    double strict_tolerance = 0.0;
    long long steps = 0;      // steps compared
    long long differing = 0;  // relative: beyond the tolerance; exact/text: not equal
    // Over the steps where both cells are numbers (nan when there were none, or a text column);
    // inf where one side is nan, inf or empty and the other is not.
    double max_abs = 0.0, max_rel = 0.0;
    std::optional<long long> first_apart;  // the first step counted in `differing`
    std::string first_note;                // what happened there: "rel 3.1e-4 > 1e-5", "nan vs 1"
    bool ok = true;
};

struct RunResult {
    std::string run;
    long long steps = 0, first_step = 0, last_step = 0;
    long long only_a = 0, only_b = 0;  // Lineup::common: steps on one side only, not compared
    std::vector<ColumnResult> columns;
};

struct CompareReport {
    std::string name_a, name_b;
    std::vector<RunResult> runs;
    std::vector<std::string> not_compared;  // "eval_loss (only in A.csv)", "run fp16 (only in B.csv)"
    bool agree() const;
};

// Lines the two tables up and compares them. ConfigError (one line, naming the file, run, step or
// column) for anything that makes them incomparable; see the rule at the top of this file.
CompareReport compare_runs(const RunTable& a, const RunTable& b, const CompareOptions& options);

// The report as mpx-cli compare prints it: a fixed-width table per run, the columns not compared,
// then one line "agree: ..." or "differ: ...".
std::string report_text(const CompareReport& report);
// "agree: ..." or "differ: " with, per run that parts, the column that parts first (its step and
// note) and the names of the others: one short line however many columns part.
std::string summary_line(const CompareReport& report);
// One run's block of report_text: its steps and the table of its columns.
std::string run_block_text(const RunResult& run);
// The column of a run that parts first (the earliest step; the first in order among equals), or null.
const ColumnResult* first_parting(const RunResult& run);
// One row per run and column: run,column,kind,tolerance,steps,differing,max_abs,max_rel,first_apart,note,ok.
std::string report_csv(const CompareReport& report);

}  // namespace mpx
