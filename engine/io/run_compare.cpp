// Comparing two run CSVs column by column, and the report (engine/io/run_compare.hpp).
#include "engine/io/run_compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/io/export.hpp"

namespace mpx {
namespace {

using compare_text::join;
using compare_text::padded;
using compare_text::plural;
using compare_text::short_number;
using compare_text::tolerance_text;

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();

// A file that lacks what is compared: one line naming it ("B.csv has no 'loss' column, ...").
[[noreturn]] void bad_file(const std::string& name, const std::string& message) {
    throw ConfigError("", plain_or_quoted(name) + " " + message);
}

// An option's number: as a cell's, but pandas' True and False are no tolerance.
std::optional<double> option_number(std::string_view s) {
    return s == "True" || s == "False" ? std::nullopt : read_cell_number(s);
}

// A cell as a note on a difference shows it: "nan vs 1", "empty vs 0.5".
std::string as_written(std::string_view s) {
    if (s.empty()) return "empty";
    return plain_or_quoted(s.size() > 40 ? std::string(s.substr(0, 37)) + "..." : std::string(s));
}

constexpr DefaultColumn k_default_columns[] = {
    {"loss", false},        {"loss_scale", false}, {"found_inf", false},
    {"skipped", false},     {"scale_event", true}, {"grad_norm", true},
    {"lr", false},          {"eval_loss", true},   {"eval_accuracy", true}};

// Compared by default only where both files have them, and never noted otherwise: mpx writes the
// column on every run (empty without a gradient penalty), the exported script only for a penalty session.
constexpr std::string_view k_where_both_columns[] = {"penalty"};


}  // namespace

std::optional<ColumnRule> column_rule(std::string_view column) {
    if (column == "run" || column == "step") return std::nullopt;  // the key rows are lined up by
    if (std::find(std::begin(k_csv_columns), std::end(k_csv_columns), column) == std::end(k_csv_columns))
        return std::nullopt;
    if (column == "loss_scale" || column == "found_inf" || column == "skipped") return ColumnRule{CompareKind::exact, 0.0};
    if (column == "precision" || column == "mode" || column == "scale_event" || column == "first_nonfinite")
        return ColumnRule{CompareKind::text, 0.0};
    // Relative: FP32 accumulation in another order moves the loss in its sixth digit; the norm
    // sums more terms; the schedule's lr is one formula in FP64 or FP32.
    // The gradient penalty λ·‖g‖ is a loss term: the loss's tolerance (an empty cell, no penalty, compares as a value).
    if (column == "loss" || column == "eval_loss" || column == "penalty") return ColumnRule{CompareKind::relative, 1e-5};
    if (column == "grad_norm") return ColumnRule{CompareKind::relative, 1e-4};
    if (column == "lr") return ColumnRule{CompareKind::relative, 1e-6};
    return ColumnRule{CompareKind::relative, 0.0};
}

std::span<const DefaultColumn> default_compared_columns() { return k_default_columns; }

std::string default_columns_text() {
    std::string out;
    for (const DefaultColumn& d : k_default_columns) {
        const ColumnRule rule = *column_rule(d.name);
        out += (out.empty() ? "" : ", ") + std::string(d.name) + (d.optional ? "*" : "") + " (" +
               (rule.kind == CompareKind::relative ? "rel " + tolerance_text(rule.tolerance)
                                                   : std::string(enum_name(rule.kind))) + ")";
    }
    return out + "; * where both files have it";
}

std::pair<std::string, double> parse_tolerance(std::string_view text) {
    const auto eq = text.find('=');
    if (eq == std::string_view::npos)
        throw ConfigError("--tol", quoted_text(text) + " is not COLUMN=X; e.g. --tol loss=1e-4");
    std::string column(text.substr(0, eq));
    const std::string_view value = text.substr(eq + 1);
    const auto rule = column_rule(column);
    if (!rule) {
        if (column == "run" || column == "step")
            throw ConfigError("--tol", quoted_text(column) + " is how rows are lined up, not a compared column");
        throw ConfigError("--tol", quoted_text(column) + " is not a column of a run CSV; give one of " +
                                       [] {
                                           std::string s;
                                           for (const char* c : k_csv_columns)
                                               if (column_rule(c)) s += (s.empty() ? "" : ", ") + std::string(c);
                                           return s;
                                       }());
    }
    const auto x = option_number(value);
    const bool share = rule->kind != CompareKind::relative;
    if (!x || !std::isfinite(*x) || *x < 0.0)
        throw ConfigError("--tol", column + "=" + std::string(value) + ": the tolerance must be a number >= 0 (" +
                                       (share ? "the share of steps allowed to differ" : "relative") + ")");
    if (share && *x > 1.0)
        throw ConfigError("--tol", column + "=" + std::string(value) +
                                       ": for this column the tolerance is the share of steps allowed to differ, "
                                       "between 0 and 1");
    return {column, *x};
}

std::pair<std::string, double> parse_absolute_tolerance(std::string_view text) {
    const auto eq = text.find('=');
    if (eq == std::string_view::npos)
        throw ConfigError("--atol", quoted_text(text) + " is not COLUMN=X; e.g. --atol loss=0.004");
    const std::string column(text.substr(0, eq));
    const std::string_view value = text.substr(eq + 1);
    const auto rule = column_rule(column);
    if (!rule || rule->kind != CompareKind::relative)
        throw ConfigError("--atol", quoted_text(column) + " is not a number column compared within a tolerance "
                                    "(loss, grad_norm, lr, eval_loss, eval_accuracy, ...)");
    const auto x = option_number(value);
    if (!x || !std::isfinite(*x) || *x < 0.0)
        throw ConfigError("--atol", column + "=" + std::string(value) + ": the absolute tolerance must be a number >= 0");
    return {column, *x};
}

std::vector<std::string> parse_column_list(std::string_view text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string column(text.substr(start, comma - start));
        if (!column_rule(column))
            throw ConfigError("--columns", quoted_text(column) + " is not a compared column of a run CSV");
        out.push_back(column);
        start = comma + 1;
    }
    return out;
}

std::pair<long long, long long> parse_step_range(std::string_view text) {
    const auto dash = text.find('-', 1);  // FIRST may not be negative, but say so instead of splitting "-3"
    const auto first = read_whole_number(text.substr(0, dash == std::string_view::npos ? text.size() : dash));
    const auto last = dash == std::string_view::npos ? std::nullopt : read_whole_number(text.substr(dash + 1));
    if (!first || !last)
        throw ConfigError("--steps", quoted_text(text) + " is not FIRST-LAST; e.g. --steps 0-99 (inclusive)");
    if (*first < 0 || *first > *last)
        throw ConfigError("--steps", quoted_text(text) + ": FIRST must be at least 0 and at most LAST");
    return {*first, *last};
}

std::vector<std::string> parse_run_list(std::string_view text) {
    std::vector<std::string> runs;
    std::size_t from = 0;
    for (;;) {
        const auto comma = text.find(',', from);
        std::string run(text.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
        if (run.empty())
            throw ConfigError("--runs", quoted_text(text) + " has an empty run label; give labels separated by "
                                                                  "commas, e.g. --runs fp32,amp-bf16");
        if (std::find(runs.begin(), runs.end(), run) == runs.end()) runs.push_back(std::move(run));
        if (comma == std::string_view::npos) return runs;
        from = comma + 1;
    }
}

bool CompareReport::agree() const {
    for (const RunResult& r : runs)
        for (const ColumnResult& c : r.columns)
            if (!c.ok) return false;
    return true;
}

namespace {

// One column of one run over the steps both files hold.
struct ColumnJob {
    ColumnPlan plan;
    int col_a, col_b;
};

using Rows = std::vector<std::pair<long long, std::pair<std::size_t, std::size_t>>>;  // (step, (row in A, row in B))

ColumnResult compare_column(const RunTable& a, const RunTable& b, const ColumnJob& job, const Rows& rows) {
    const ColumnPlan& plan = job.plan;
    ColumnResult r;
    r.column = plan.column;
    r.kind = plan.rule.kind;
    r.tolerance = plan.rule.tolerance;
    r.absolute = plan.absolute;
    r.strict_last = plan.strict_last;
    r.strict_tolerance = plan.strict_tolerance;
    r.judged_last = plan.judged_last;
    if (r.kind == CompareKind::text) r.max_abs = r.max_rel = k_nan;
    long long judged = 0;
    for (const auto& [step, ab] : rows) {
        ++r.steps;
        const bool judging = !plan.judged_last || step <= *plan.judged_last;  // later steps: shown, not judged
        judged += judging;
        const std::string_view sa = a.cell(ab.first, job.col_a), sb = b.cell(ab.second, job.col_b);
        bool apart = false;
        std::string note;
        if (r.kind == CompareKind::text) {
            apart = sa != sb;
            if (apart) note = as_written(sa) + " vs " + as_written(sb);
        } else {
            const auto va = a.number(ab.first, job.col_a);
            const auto vb = b.number(ab.second, job.col_b);
            const bool strict = plan.strict_last && step <= *plan.strict_last;
            const double tol = strict ? plan.strict_tolerance : r.tolerance, atol = strict ? 0.0 : r.absolute;
            double d_abs = 0.0, rel = 0.0;
            if (!va && !vb) {
            } else if (!va || !vb || std::isnan(*va) != std::isnan(*vb)) {
                apart = true, d_abs = rel = k_inf;  // a value against none, or a number against nan
            } else if (std::isnan(*va) || *va == *vb) {
            } else if (!std::isfinite(*va) || !std::isfinite(*vb)) {
                apart = true, d_abs = rel = k_inf;
            } else {
                const double m = std::max(std::fabs(*va), std::fabs(*vb));
                d_abs = std::fabs(*va - *vb);
                rel = d_abs / m;  // m > 0: the two differ
                apart = r.kind == CompareKind::exact || d_abs > atol + tol * m;
                if (apart && r.kind == CompareKind::relative)
                    note = atol > 0.0 ? "|Δ| " + short_number(d_abs, 1) + " > " + tolerance_text(atol) +
                                            (tol > 0.0 ? " + " + tolerance_text(tol) + "·" + short_number(m, 1) : "")
                                      : "rel " + short_number(rel, 1) + " > " + tolerance_text(tol);
            }
            if (apart && note.empty()) note = as_written(sa) + " vs " + as_written(sb);
            r.max_abs = std::max(r.max_abs, d_abs);
            r.max_rel = std::max(r.max_rel, rel);
        }
        if (apart && judging) {
            if (++r.differing == 1) {
                r.first_apart = step;
                r.first_note = note;
            }
        }
    }
    if (r.kind == CompareKind::relative) r.ok = r.differing == 0;
    else r.ok = judged == 0 || static_cast<double>(r.differing) / static_cast<double>(judged) <= r.tolerance;
    return r;
}

// The steps of `run` in [first, last] lined up: every one both hold; a step on one side only is
// bad input under Lineup::same and counted in only_a/only_b under Lineup::common.
Rows line_up(const RunTable& a, const RunTable& b, const std::string& run, long long first, long long last, Lineup lineup,
             RunResult& rr) {
    const auto& sa = a.steps_of(run);
    const auto& sb = b.steps_of(run);
    auto ia = sa.lower_bound(first), ib = sb.lower_bound(first);
    const auto ea = sa.upper_bound(last), eb = sb.upper_bound(last);
    Rows rows;
    while (ia != ea || ib != eb) {
        const bool in_a = ib == eb || (ia != ea && ia->first < ib->first);
        if (in_a || ia == ea || ib->first < ia->first) {
            const auto& it = in_a ? ia : ib;
            if (lineup == Lineup::common) {
                ++(in_a ? rr.only_a : rr.only_b);
                ++(in_a ? ia : ib);
                continue;
            }
            const RunTable& has = in_a ? a : b;
            const RunTable& lacks = in_a ? b : a;
            throw ConfigError("", "run " + quoted_text(run) + ": step " + std::to_string(it->first) + " is in " +
                                      plain_or_quoted(has.name()) + " (line " + std::to_string(has.line(it->second)) +
                                      ") but not in " + plain_or_quoted(lacks.name()) +
                                      "; both files need the same steps (--steps FIRST-LAST limits the comparison; --expect compares "
                                      "the steps both hold)");
        }
        rows.push_back({ia->first, {ia->second, ib->second}});
        ++ia, ++ib;
    }
    if (rows.empty() && lineup == Lineup::common && (rr.only_a > 0 || rr.only_b > 0))
        throw ConfigError("", "run " + quoted_text(run) + ": " + plain_or_quoted(a.name()) + " and " + plain_or_quoted(b.name()) +
                                  " hold no step in common (steps " + std::to_string(sa.begin()->first) + "-" +
                                  std::to_string(sa.rbegin()->first) + " and " + std::to_string(sb.begin()->first) + "-" +
                                  std::to_string(sb.rbegin()->first) + ")");
    if (rows.empty())
        throw ConfigError("--steps", "run " + quoted_text(run) + " has no step in " + std::to_string(first) + "-" +
                                         std::to_string(last) + " (its steps: " + std::to_string(sa.begin()->first) + "-" +
                                         std::to_string(sa.rbegin()->first) + ")");
    return rows;
}

}  // namespace

CompareReport compare_runs(const RunTable& a, const RunTable& b, const CompareOptions& options) {
    CompareReport report;
    report.name_a = a.name();
    report.name_b = b.name();

    // The columns: the defaults, then those --tol adds, each with its tolerance.
    // With --columns, exactly those (each required).
    std::vector<std::pair<std::string, bool>> wanted;  // (column, optional)
    if (!options.columns.empty()) {
        for (const std::string& column : options.columns) wanted.emplace_back(column, false);
    } else {
        for (const DefaultColumn& d : default_compared_columns()) wanted.emplace_back(std::string(d.name), d.optional);
        for (std::string_view c : k_where_both_columns)
            if (a.column(c) >= 0 && b.column(c) >= 0) wanted.emplace_back(std::string(c), true);
        for (const auto& tolerance : options.tolerances) {
            const std::string& column = tolerance.first;  // a plain reference: clang < 16 captures no binding
            if (std::none_of(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first == column; }))
                wanted.emplace_back(column, false);
        }
    }
    std::vector<ColumnJob> jobs;
    for (const auto& [column, optional] : wanted) {
        auto rule = column_rule(column);
        if (!rule) throw ConfigError("--tol", quoted_text(column) + " is not a compared column of a run CSV");
        for (const auto& [c, tol] : options.tolerances)
            if (c == column) rule->tolerance = tol;
        double absolute = 0.0;
        for (const auto& [c, x] : options.absolute)
            if (c == column) absolute = x;
        const int ca = a.column(column), cb = b.column(column);
        if (ca >= 0 && cb >= 0) {
            jobs.push_back({ColumnPlan{column, *rule, absolute, std::nullopt, 0.0, std::nullopt}, ca, cb});
        } else if (optional) {
            report.not_compared.push_back(column + (ca >= 0   ? " (only in " + plain_or_quoted(a.name()) + ")"
                                                    : cb >= 0 ? " (only in " + plain_or_quoted(b.name()) + ")"
                                                              : " (in neither file)"));
        } else {
            const RunTable& lacking = ca < 0 ? a : b;
            bad_file(lacking.name(), "has no " + quoted_text(column) + " column, which is compared" +
                                    (ca < 0 && cb < 0 ? " (nor has " + plain_or_quoted(b.name()) + ")" : "") +
                                    "; add it to the header (mpx-cli run --csv writes every column)");
        }
    }

    // The runs: those asked for, each in both files, or the same set in both (the common ones
    // under Lineup::common).
    std::vector<std::string> runs;
    if (!options.runs.empty()) {
        for (const std::string& run : options.runs)
            for (const RunTable* t : {&a, &b})
                if (t->steps_of(run).empty())
                    throw ConfigError("--runs", "run " + quoted_text(run) + " is not in " + plain_or_quoted(t->name()) + " (its runs: " +
                                                    join(t->runs()) + ")");
        runs = options.runs;
    } else {
        std::vector<std::string> only_a, only_b;
        for (const std::string& r : a.runs())
            if (b.steps_of(r).empty()) only_a.push_back(r);
            else runs.push_back(r);
        for (const std::string& r : b.runs())
            if (a.steps_of(r).empty()) only_b.push_back(r);
        if (options.lineup == Lineup::common && !runs.empty()) {
            for (const std::string& r : only_a) report.not_compared.push_back("run " + plain_or_quoted(r) + " (only in " + plain_or_quoted(a.name()) + ")");
            for (const std::string& r : only_b) report.not_compared.push_back("run " + plain_or_quoted(r) + " (only in " + plain_or_quoted(b.name()) + ")");
        } else if (!only_a.empty() || !only_b.empty()) {
            std::string m = "the files hold different runs:";
            if (!only_a.empty()) m += " only in " + plain_or_quoted(a.name()) + ": " + join(only_a) + (only_b.empty() ? "" : ";");
            if (!only_b.empty()) m += " only in " + plain_or_quoted(b.name()) + ": " + join(only_b);
            throw ConfigError("", m + (options.lineup == Lineup::common ? " (none in common)" : " (--runs picks the ones to compare)"));
        }
    }

    const long long first = options.steps ? options.steps->first : std::numeric_limits<long long>::min();
    const long long last = options.steps ? options.steps->second : std::numeric_limits<long long>::max();
    for (const std::string& run : runs) {
        RunResult rr;
        rr.run = run;
        const Rows rows = line_up(a, b, run, first, last, options.lineup, rr);
        rr.steps = static_cast<long long>(rows.size());
        rr.first_step = rows.front().first;
        rr.last_step = rows.back().first;
        const auto rules = options.run_rules.find(run);
        for (ColumnJob job : jobs) {
            if (rules != options.run_rules.end())
                for (const ColumnPlan& p : rules->second)
                    if (p.column == job.plan.column) job.plan = p;
            rr.columns.push_back(compare_column(a, b, job, rows));
        }
        report.runs.push_back(std::move(rr));
    }
    return report;
}

const ColumnResult* first_parting(const RunResult& run) {
    const ColumnResult* first = nullptr;
    for (const ColumnResult& c : run.columns)
        if (!c.ok && c.first_apart && (!first || *c.first_apart < *first->first_apart)) first = &c;
    return first;
}

std::string summary_line(const CompareReport& report) {
    if (report.agree()) {
        long long steps = 0;
        for (const RunResult& r : report.runs) steps += r.steps;
        return "agree: every column within tolerance (" + plural(static_cast<long long>(report.runs.size()), "run", "runs") +
               ", " + plural(steps, "step", "steps") + ")";
    }
    // Per run, the column that parts first; the others by name only, so the line stays short.
    constexpr int k_runs_named = 4;
    std::string out;
    int named = 0, more = 0;
    for (const RunResult& r : report.runs) {
        const ColumnResult* c = first_parting(r);
        if (!c) continue;
        if (named == k_runs_named) {
            ++more;
            continue;
        }
        ++named;
        out += out.empty() ? "differ: " : "; ";
        out += c->column + " of " + r.run + " from step " + std::to_string(*c->first_apart) + " (" + c->first_note;
        if (c->kind != CompareKind::relative)
            out += "; " + std::to_string(c->differing) + "/" + std::to_string(c->steps) + " steps differ > share " +
                   tolerance_text(c->tolerance);
        std::vector<std::string> others;
        for (const ColumnResult& o : r.columns)
            if (!o.ok && &o != c) others.push_back(o.column);
        if (!others.empty()) out += "; also " + join(others);
        out += ")";
    }
    if (more > 0) out += "; and " + plural(more, "more run", "more runs");
    return out;
}

namespace {

std::string tolerance_cell(const ColumnResult& c) {
    if (c.kind != CompareKind::relative)
        return "share " + tolerance_text(c.tolerance) + (c.judged_last ? " (steps ≤" + std::to_string(*c.judged_last) + ")" : "");
    std::string s = c.absolute > 0.0 ? "abs " + tolerance_text(c.absolute) + (c.tolerance > 0.0 ? "+rel " + tolerance_text(c.tolerance) : "")
                                     : "rel " + tolerance_text(c.tolerance);
    if (c.strict_last) s = "rel " + tolerance_text(c.strict_tolerance) + " (steps ≤" + std::to_string(*c.strict_last) + "), " + s;
    if (c.judged_last) s += " (steps ≤" + std::to_string(*c.judged_last) + ")";
    return s;
}

}  // namespace

std::string run_block_text(const RunResult& r) {
    static constexpr std::size_t w[] = {16, 10, 11, 13, 36, 11, 7};
    const auto row = [&](const std::vector<std::string>& cells) {
        std::string line = "  ";
        for (std::size_t i = 0; i < cells.size(); ++i) {
            line += i + 1 < cells.size() ? padded(cells[i], w[i]) : cells[i];
            if (i + 1 < cells.size() && line.back() != ' ') line += ' ';  // a long tolerance still parts from the next cell
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return line + "\n";
    };
    const auto number = [](double v) { return std::isnan(v) ? std::string("—") : short_number(v, 1); };
    std::string out = "\nrun " + plain_or_quoted(r.run) + ": " + plural(r.steps, "step", "steps") + " (" +
                      std::to_string(r.first_step) + "-" + std::to_string(r.last_step) + ")";
    if (r.only_a > 0 || r.only_b > 0)
        out += "; not compared: " + plural(r.only_a, "step", "steps") + " only in A, " + plural(r.only_b, "step", "steps") + " only in B";
    out += "\n";
    out += row({"column", "max |Δ|", "max rel Δ", "first apart", "tolerance", "identical", "result"});
    for (const ColumnResult& c : r.columns) {
        const bool share = c.kind != CompareKind::relative;
        out += row({c.column, number(c.max_abs), number(c.max_rel), c.first_apart ? std::to_string(*c.first_apart) : "—",
                    tolerance_cell(c), share ? std::to_string(c.steps - c.differing) + "/" + std::to_string(c.steps) : "—",
                    c.ok ? "ok" : "FAIL"});
    }
    return out;
}

std::string report_text(const CompareReport& report) {
    std::string out = "compare " + plain_or_quoted(report.name_a) + " with " + plain_or_quoted(report.name_b) + "\n";
    for (const RunResult& r : report.runs) out += run_block_text(r);
    if (!report.not_compared.empty()) out += "\nnot compared: " + join(report.not_compared) + "\n";
    return out + "\n" + summary_line(report) + "\n";
}

std::string report_csv(const CompareReport& report) {
    std::string out = "run,column,kind,tolerance,steps,differing,max_abs,max_rel,first_apart,note,ok\r\n";
    const auto number = [](double v) { return std::isnan(v) ? std::string() : format_number(v); };
    for (const RunResult& r : report.runs)
        for (const ColumnResult& c : r.columns)
            out += csv_field(r.run) + "," + c.column + "," + std::string(enum_name(c.kind)) + "," +
                   format_number(c.tolerance) + "," + std::to_string(c.steps) + "," + std::to_string(c.differing) + "," +
                   number(c.max_abs) + "," + number(c.max_rel) + "," +
                   (c.first_apart ? std::to_string(*c.first_apart) : "") + "," + csv_field(c.first_note) + "," +
                   (c.ok ? "1" : "0") + "\r\n";
    return out;
}

}  // namespace mpx
