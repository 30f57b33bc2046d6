// `mpx-cli compare A.csv B.csv`: two run CSVs (mpx's export and, say, a PyTorch script's) lined up
// by (run, step), each compared column judged against its tolerance (engine/io/run_compare.hpp), or
// with --expect as one training twice, by the sidecars' settings and each format's rule
// (engine/io/run_expect.hpp).
// Rule: exit 1 means only "they differ"; every error — a bad file, a bad option, a report that
// cannot be written — is exit 2, so a script can tell a difference from a broken comparison.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "engine/base/error.hpp"
#include "engine/io/export.hpp"
#include "engine/io/run_compare.hpp"
#include "engine/io/run_expect.hpp"

namespace mpx::cli {
namespace {

struct CompareCliOptions {
    std::string a, b, steps, runs, csv, columns, sidecar_a, sidecar_b;
    std::vector<std::string> tolerances, absolute;
    bool expect = false;
};

// 0: agree; 1: differ. Throws for everything else.
int run_compare(const CompareCliOptions& o) {
    CompareOptions opts;
    for (const std::string& t : o.tolerances) opts.tolerances.push_back(parse_tolerance(t));
    for (const std::string& t : o.absolute) opts.absolute.push_back(parse_absolute_tolerance(t));
    if (!o.columns.empty()) opts.columns = parse_column_list(o.columns);
    if (!o.steps.empty()) opts.steps = parse_step_range(o.steps);
    if (!o.runs.empty()) opts.runs = parse_run_list(o.runs);
    if (!o.csv.empty())
        check_outputs({{"--csv", o.csv}}, {{"A, one of the files compared", o.a}, {"B, one of the files compared", o.b}});
    if (!o.expect)
        for (const auto& [flag, value] : {std::pair{"--sidecar-a", &o.sidecar_a}, std::pair{"--sidecar-b", &o.sidecar_b}})
            if (!value->empty()) throw ConfigError(flag, "only with --expect, which reads the sidecars");
    if (o.expect) {
        const auto given = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::filesystem::path>(s); };
        // The sidecars first: a missing one is named before two long CSVs are read.
        const RunSidecar sa = read_run_sidecar(find_run_sidecar(o.a, given(o.sidecar_a), "--sidecar-a"));
        const RunSidecar sb = read_run_sidecar(find_run_sidecar(o.b, given(o.sidecar_b), "--sidecar-b"));
        const RunTable a = read_run_csv(o.a);
        const RunTable b = read_run_csv(o.b);
        const ExpectReport report = compare_expected(a, b, sa, sb, opts);
        if (!o.csv.empty()) write_file_atomic(o.csv, report_csv(report.compare));
        std::cout << expect_report_text(report) << std::flush;
        return report.agree() ? 0 : 1;
    }
    const RunTable a = read_run_csv(o.a);
    const RunTable b = read_run_csv(o.b);
    const CompareReport report = compare_runs(a, b, opts);
    if (!o.csv.empty()) write_file_atomic(o.csv, report_csv(report));
    std::cout << report_text(report) << std::flush;
    return report.agree() ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "compare",
        "Line up two run CSVs by (run, step) and say where they differ. A is typically mpx-cli run --csv, B a "
        "PyTorch script's export with mpx's column names (a subset will do; '#' lines before the header are "
        "skipped). Compared (plus any column --tol names): " + default_columns_text() + ". A rel column agrees on "
        "a step when both cells are empty, both nan, equal, or |a-b| <= tol*max(|a|,|b|). An exact or text "
        "column (the scaler's) must match per step; its tolerance is the share of steps allowed to differ "
        "(default 0). Both files must hold the same runs and steps. --expect instead expects one training twice "
        "(mpx-cli run --csv and the exported train.py): it reads both sidecars, names the settings that differ "
        "first, compares the runs and steps both files hold, and judges each run by its format: FP32 by the "
        "defaults; BF16, FP16, TF32 by rel 1e-6 on steps 0-2, then the loss within BF16's spacing at the "
        "initial loss; the scaler's columns identical on every step; a run that parts is explained (its first "
        "step and column, and whether the scaler's decisions still agree). Exit 0: agree; 1: differ; 2: bad input.");
    auto o = std::make_shared<CompareCliOptions>();
    cmd->add_option("A", o->a, "The first run CSV (e.g. mpx-cli run --csv A.csv)")->required();
    cmd->add_option("B", o->b, "The second run CSV, with mpx's column names")->required();
    cmd->add_option("--tol", o->tolerances,
                    "COLUMN=X, repeatable: the relative tolerance of a number column, or for loss_scale, found_inf, "
                    "skipped and the text columns the share of steps allowed to differ (0 to 1). Naming a column "
                    "not compared by default adds it (e.g. --tol underflow_frac=1e-3)")
        ->allow_extra_args(false);  // one value per --tol, so A and B after it stay positional
    cmd->add_option("--atol", o->absolute,
                    "COLUMN=X, repeatable: an absolute tolerance added to a number column's relative one "
                    "(|a-b| <= X + tol*max(|a|,|b|), as numpy.isclose), for values that approach 0 such as a loss")
        ->allow_extra_args(false);
    cmd->add_option("--columns", o->columns, "a,b: compare only these columns (each must be in both files), e.g. "
                                             "loss_scale,found_inf,skipped");
    cmd->add_option("--steps", o->steps, "FIRST-LAST: compare only these steps (inclusive), e.g. 0-99");
    cmd->add_option("--runs", o->runs, "a,b: compare only these runs (each must be in both files)");
    cmd->add_flag("--expect", o->expect,
                  "Expect one training twice and judge it by docs/pytorch.md's per-format rule (see above); "
                  "not with --tol or --atol");
    cmd->add_option("--sidecar-a", o->sidecar_a,
                    "With --expect: A's settings (default: A.json beside A.csv, as run --csv writes it, else "
                    "session.json beside A); a file, or export-torch's folder");
    cmd->add_option("--sidecar-b", o->sidecar_b,
                    "With --expect: B's settings, e.g. torch-run/session.json or torch-run (default: B.json beside "
                    "B, else session.json beside B: train.py writes no sidecar of its own)");
    cmd->add_option("--csv", o->csv, "Also write the per-run, per-column table to this CSV (atomically)");
    cmd->callback([o] {
        int code = 0;
        try {
            code = run_compare(*o);
        } catch (const std::bad_alloc&) {
            std::cerr << "mpx-cli compare: not enough memory to hold both files\n";
            throw CLI::RuntimeError(2);
        } catch (const std::exception& e) {  // ConfigError (the files, the flags), IoError (reading, writing)
            std::cerr << "mpx-cli compare: " << e.what() << "\n";
            throw CLI::RuntimeError(2);
        }
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpx::cli
