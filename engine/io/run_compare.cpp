// Reading run CSVs and comparing two of them (engine/io/run_compare.hpp).
#include "engine/io/run_compare.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/io/export.hpp"

namespace mpx {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();

// Bad input: one line, the file (and line) first. ConfigError without a field, so what() is the line.
[[noreturn]] void bad(const std::string& where, const std::string& message) {
    throw ConfigError("", where + ": " + message);
}

// The same about a whole file: "B.csv is empty; ...".
[[noreturn]] void bad_file(const std::string& name, const std::string& message) {
    throw ConfigError("", plain_or_quoted(name) + " " + message);
}

std::string at(const std::string& name, int line) { return plain_or_quoted(name) + ":" + std::to_string(line); }

// A cell as a message quotes it: at most 40 characters, "empty" for an empty one.
std::string shown(std::string_view s) {
    if (s.empty()) return "empty";
    if (s.size() > 40) return quoted_text(std::string(s.substr(0, 37)) + "...");
    return quoted_text(s);
}
// A cell as a note on a difference shows it: "nan vs 1", "empty vs 0.5".
std::string as_written(std::string_view s) {
    if (s.empty()) return "empty";
    return plain_or_quoted(s.size() > 40 ? std::string(s.substr(0, 37)) + "..." : std::string(s));
}

// A decimal number, nan, inf or -inf (any case), read whole in the C locale; nullopt otherwise.
std::optional<double> read_number(std::string_view s) {
    if (s.empty()) return std::nullopt;
    double v = 0.0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<long long> read_integer(std::string_view s) {
    long long v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

// One record from `pos`: appends each field's unquoted text to `cells` and its end to `ends`;
// returns the number of fields and leaves `pos` after the record's line end, `line` counting the
// lines it spanned (a quoted field may hold line breaks).
std::size_t read_record(std::string_view text, std::size_t& pos, int& line, std::string& cells,
                        std::vector<std::uint32_t>& ends, const std::string& name) {
    const std::size_t size = text.size();
    // A record ends at LF, at CRLF, or at the end of the text; a lone CR is data.
    const auto record_end = [&](std::size_t p) {
        return p >= size || text[p] == '\n' || (text[p] == '\r' && (p + 1 == size || text[p + 1] == '\n'));
    };
    std::size_t fields = 0;
    for (;;) {
        if (pos < size && text[pos] == '"') {
            const int opened = line;
            ++pos;
            for (;;) {
                const std::size_t q = text.find('"', pos);
                if (q == std::string_view::npos)
                    bad(at(name, opened), "field " + std::to_string(fields + 1) +
                                              " opens a quote that is never closed; end the field with \"");
                const std::string_view part = text.substr(pos, q - pos);
                line += static_cast<int>(std::count(part.begin(), part.end(), '\n'));
                cells += part;
                pos = q + 1;
                if (pos < size && text[pos] == '"') {  // "" inside quotes is one quote
                    cells += '"';
                    ++pos;
                    continue;
                }
                break;
            }
            if (pos < size && text[pos] != ',' && !record_end(pos))
                bad(at(name, line), "field " + std::to_string(fields + 1) +
                                        " has text after its closing quote; write \"\" for a quote inside a quoted field");
        } else {
            const std::size_t start = pos;
            while (pos < size && text[pos] != ',' && !record_end(pos)) {
                if (text[pos] == '"')
                    bad(at(name, line), "field " + std::to_string(fields + 1) +
                                            " has a quote but does not start with one; quote the whole field "
                                            "(\"...\") and write \"\" for each quote inside it");
                ++pos;
            }
            cells += text.substr(start, pos - start);
        }
        ends.push_back(static_cast<std::uint32_t>(cells.size()));
        ++fields;
        if (pos < size && text[pos] == ',') {
            ++pos;
            continue;
        }
        if (pos < size && text[pos] == '\r') ++pos;
        if (pos < size && text[pos] == '\n') {
            ++pos;
            ++line;
        }
        return fields;
    }
}

// Skips blank lines, and lines starting with '#' when `comments`; false at the end of the text.
bool skip_blank(std::string_view text, std::size_t& pos, int& line, bool comments) {
    while (pos < text.size()) {
        const char c = text[pos];
        const bool blank = c == '\n' || (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n');
        if (!blank && !(comments && c == '#')) return true;
        const std::size_t nl = text.find('\n', pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line;
    }
    return false;
}

constexpr DefaultColumn k_default_columns[] = {
    {"loss", false},        {"loss_scale", false}, {"found_inf", false},
    {"skipped", false},     {"scale_event", true}, {"grad_norm", true},
    {"lr", false},          {"eval_loss", true},   {"eval_accuracy", true}};

// "3.1e-4", "0.02", "1e-5": two significant digits for measured differences, exponents unpadded.
std::string short_number(double v, int digits) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0.0) return "0";
    char buf[48];
    const double m = std::fabs(v);
    if (m >= 1e-3 && m < 1e5) {
        std::snprintf(buf, sizeof buf, "%.*g", digits + 1, v);
        return buf;
    }
    std::snprintf(buf, sizeof buf, "%.*e", digits, v);
    std::string s = buf;  // "3.10e-04": drop trailing zeros of the mantissa and of the exponent
    const auto e = s.find('e');
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    if (mant.find('.') != std::string::npos) {
        while (mant.back() == '0') mant.pop_back();
        if (mant.back() == '.') mant.pop_back();
    }
    const bool neg = exp[0] == '-';
    exp = exp.substr(1);
    while (exp.size() > 1 && exp[0] == '0') exp.erase(0, 1);
    return mant + "e" + (neg ? "-" : "") + exp;
}
// A tolerance as the user gave it: every digit kept, exponent unpadded ("1e-05" -> "1e-5").
std::string tolerance_text(double v) {
    std::string s = format_number(v);
    const auto e = s.find('e');
    if (e == std::string::npos) return s;
    std::size_t d = e + 1;
    if (d < s.size() && (s[d] == '-' || s[d] == '+')) ++d;
    while (d + 1 < s.size() && s[d] == '0') s.erase(d, 1);
    if (s[e + 1] == '+') s.erase(e + 1, 1);
    return s;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + plain_or_quoted(s);
    return out;
}

std::string plural(long long n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The width of UTF-8 text in terminal columns (one per code point: Δ and — are one wide).
std::size_t text_width(std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}
std::string padded(std::string s, std::size_t width) {
    const std::size_t w = text_width(s);
    if (w < width) s.append(width - w, ' ');
    return s;
}

}  // namespace

RunTable RunTable::parse(std::string_view text, const std::string& name) {
    if (text.size() > k_max_run_csv_bytes)
        bad_file(name, "is " + std::to_string(text.size()) + " bytes; at most " + std::to_string(k_max_run_csv_bytes) +
                      " are read");
    RunTable t;
    t.m_name = name;
    if (text.empty()) bad_file(name, "is empty; a run CSV starts with a header row (run,step,loss,...) as mpx-cli run --csv writes");
    std::size_t pos = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    int line = 1;
    if (!skip_blank(text, pos, line, true))
        bad_file(name, "has no header row, only comments or blank lines; a run CSV starts with one (run,step,loss,...)");

    const int header_line = line;
    std::string names;
    std::vector<std::uint32_t> ends{0};
    const std::size_t ncols = read_record(text, pos, line, names, ends, name);
    for (std::size_t c = 0; c < ncols; ++c) {
        std::string col = names.substr(ends[c], ends[c + 1] - ends[c]);
        if (col.empty()) bad(at(name, header_line), "header column " + std::to_string(c + 1) + " has no name");
        if (std::find(t.m_columns.begin(), t.m_columns.end(), col) != t.m_columns.end())
            bad(at(name, header_line), "the header names " + quoted_text(col) + " twice");
        t.m_columns.push_back(std::move(col));
    }
    const int run_col = t.column("run"), step_col = t.column("step");
    for (const char* key : {"run", "step"})
        if (t.column(key) < 0)
            bad(at(name, header_line), std::string("the header has no '") + key +
                                           "' column; a run CSV (mpx-cli run --csv) has one row per run and step");

    t.m_offsets.push_back(0);
    while (skip_blank(text, pos, line, false)) {
        const int row_line = line;
        const std::size_t fields = read_record(text, pos, line, t.m_cells, t.m_offsets, name);
        if (fields != ncols)
            bad(at(name, row_line), plural(static_cast<long long>(fields), "field", "fields") + ", but the header has " +
                                        std::to_string(ncols) + " columns; every row needs one field per column");
        const std::size_t row = t.m_lines.size();
        t.m_lines.push_back(row_line);
        const std::string run(t.cell(row, run_col));
        if (run.empty()) bad(at(name, row_line), "the run cell is empty; every row names its run");
        const auto step = read_integer(t.cell(row, step_col));
        if (!step) bad(at(name, row_line), "step " + shown(t.cell(row, step_col)) + " is not a whole number");
        auto [it, fresh] = t.m_index.try_emplace(run);
        if (fresh) t.m_runs.push_back(run);
        const auto [prev, added] = it->second.emplace(*step, row);
        if (!added)
            bad(at(name, row_line), "run " + quoted_text(run) + " step " + std::to_string(*step) + " appears twice (first on line " +
                                        std::to_string(t.m_lines[prev->second]) + "); a run CSV has one row per run and step");
    }
    if (t.m_lines.empty()) bad_file(name, "has a header but no rows");
    return t;
}

int RunTable::column(std::string_view name) const {
    const auto it = std::find(m_columns.begin(), m_columns.end(), name);
    return it == m_columns.end() ? -1 : static_cast<int>(it - m_columns.begin());
}

const std::map<long long, std::size_t>& RunTable::steps_of(const std::string& run) const {
    static const std::map<long long, std::size_t> none;
    const auto it = m_index.find(run);
    return it == m_index.end() ? none : it->second;
}

std::string_view RunTable::cell(std::size_t row, int column) const {
    const std::size_t i = row * m_columns.size() + static_cast<std::size_t>(column);
    return std::string_view(m_cells).substr(m_offsets[i], m_offsets[i + 1] - m_offsets[i]);
}

RunTable read_run_csv(const std::filesystem::path& path) {
    return RunTable::parse(read_input_file(path, "the run CSV", k_max_run_csv_bytes), path.string());
}

std::optional<ColumnRule> column_rule(std::string_view column) {
    if (column == "run" || column == "step") return std::nullopt;  // the key rows are lined up by
    if (std::find(std::begin(k_csv_columns), std::end(k_csv_columns), column) == std::end(k_csv_columns))
        return std::nullopt;
    if (column == "loss_scale" || column == "found_inf" || column == "skipped") return ColumnRule{CompareKind::exact, 0.0};
    if (column == "precision" || column == "mode" || column == "scale_event" || column == "first_nonfinite")
        return ColumnRule{CompareKind::text, 0.0};
    // Relative: FP32 accumulation in another order moves the loss in its sixth digit; the norm
    // sums more terms; the schedule's lr is one formula in FP64 or FP32.
    if (column == "loss" || column == "eval_loss") return ColumnRule{CompareKind::relative, 1e-5};
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
    const auto x = read_number(value);
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
    const auto x = read_number(value);
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
    const auto first = read_integer(text.substr(0, dash == std::string_view::npos ? text.size() : dash));
    const auto last = dash == std::string_view::npos ? std::nullopt : read_integer(text.substr(dash + 1));
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
    std::string column;
    ColumnRule rule;
    int col_a, col_b;
    double absolute = 0.0;
};

std::optional<double> number_cell(const RunTable& t, std::size_t row, int col, const std::string& column) {
    const std::string_view s = t.cell(row, col);
    if (s.empty()) return std::nullopt;
    const auto v = read_number(s);
    if (!v)
        bad(at(t.name(), t.line(row)), column + " " + shown(s) +
                                           " is not a number; give a decimal number, nan, inf or -inf, or leave the cell empty");
    return v;
}

ColumnResult compare_column(const RunTable& a, const RunTable& b, const ColumnJob& job,
                            const std::vector<std::pair<long long, std::pair<std::size_t, std::size_t>>>& rows) {
    ColumnResult r;
    r.column = job.column;
    r.kind = job.rule.kind;
    r.tolerance = job.rule.tolerance;
    r.absolute = job.absolute;
    if (r.kind == CompareKind::text) r.max_abs = r.max_rel = k_nan;
    for (const auto& [step, ab] : rows) {
        ++r.steps;
        const std::string_view sa = a.cell(ab.first, job.col_a), sb = b.cell(ab.second, job.col_b);
        bool apart = false;
        std::string note;
        if (r.kind == CompareKind::text) {
            apart = sa != sb;
            if (apart) note = as_written(sa) + " vs " + as_written(sb);
        } else {
            const auto va = number_cell(a, ab.first, job.col_a, job.column);
            const auto vb = number_cell(b, ab.second, job.col_b, job.column);
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
                apart = r.kind == CompareKind::exact || d_abs > r.absolute + r.tolerance * m;
                if (apart && r.kind == CompareKind::relative)
                    note = r.absolute > 0.0 ? "|Δ| " + short_number(d_abs, 1) + " > " + tolerance_text(r.absolute) +
                                                  " + " + tolerance_text(r.tolerance) + "·" + short_number(m, 1)
                                            : "rel " + short_number(rel, 1) + " > " + tolerance_text(r.tolerance);
            }
            if (apart && note.empty()) note = as_written(sa) + " vs " + as_written(sb);
            r.max_abs = std::max(r.max_abs, d_abs);
            r.max_rel = std::max(r.max_rel, rel);
        }
        if (apart) {
            if (++r.differing == 1) {
                r.first_apart = step;
                r.first_note = note;
            }
        }
    }
    if (r.kind == CompareKind::relative) r.ok = r.differing == 0;
    else r.ok = r.steps == 0 || static_cast<double>(r.differing) / static_cast<double>(r.steps) <= r.tolerance;
    return r;
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
            jobs.push_back({column, *rule, ca, cb, absolute});
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

    // The runs: those asked for, each in both files, or the same set in both.
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
        for (const std::string& r : b.runs())
            if (a.steps_of(r).empty()) only_b.push_back(r);
        if (!only_a.empty() || !only_b.empty()) {
            std::string m = "the files hold different runs:";
            if (!only_a.empty()) m += " only in " + plain_or_quoted(a.name()) + ": " + join(only_a) + (only_b.empty() ? "" : ";");
            if (!only_b.empty()) m += " only in " + plain_or_quoted(b.name()) + ": " + join(only_b);
            throw ConfigError("", m + " (--runs picks the ones to compare)");
        }
        runs = a.runs();
    }

    const long long first = options.steps ? options.steps->first : std::numeric_limits<long long>::min();
    const long long last = options.steps ? options.steps->second : std::numeric_limits<long long>::max();
    for (const std::string& run : runs) {
        // The steps in range, walked together: the first one on one side only is the error.
        const auto& sa = a.steps_of(run);
        const auto& sb = b.steps_of(run);
        auto ia = sa.lower_bound(first), ib = sb.lower_bound(first);
        const auto ea = sa.upper_bound(last), eb = sb.upper_bound(last);
        std::vector<std::pair<long long, std::pair<std::size_t, std::size_t>>> rows;
        while (ia != ea || ib != eb) {
            const bool in_a = ib == eb || (ia != ea && ia->first < ib->first);
            if (in_a || ia == ea || ib->first < ia->first) {
                const RunTable& has = in_a ? a : b;
                const RunTable& lacks = in_a ? b : a;
                const auto& it = in_a ? ia : ib;
                throw ConfigError("", "run " + quoted_text(run) + ": step " + std::to_string(it->first) + " is in " + plain_or_quoted(has.name()) +
                                          " (line " + std::to_string(has.line(it->second)) + ") but not in " +
                                          plain_or_quoted(lacks.name()) + "; both files need the same steps (--steps FIRST-LAST "
                                          "limits the comparison)");
            }
            rows.push_back({ia->first, {ia->second, ib->second}});
            ++ia, ++ib;
        }
        if (rows.empty())
            throw ConfigError("--steps", "run " + quoted_text(run) + " has no step in " + std::to_string(first) + "-" +
                                             std::to_string(last) + " (its steps: " + std::to_string(sa.begin()->first) +
                                             "-" + std::to_string(sa.rbegin()->first) + ")");
        RunResult rr;
        rr.run = run;
        rr.steps = static_cast<long long>(rows.size());
        rr.first_step = rows.front().first;
        rr.last_step = rows.back().first;
        for (const ColumnJob& job : jobs) rr.columns.push_back(compare_column(a, b, job, rows));
        report.runs.push_back(std::move(rr));
    }
    return report;
}

std::string summary_line(const CompareReport& report) {
    if (report.agree()) {
        long long steps = 0;
        for (const RunResult& r : report.runs) steps += r.steps;
        return "agree: every column within tolerance (" + plural(static_cast<long long>(report.runs.size()), "run", "runs") +
               ", " + plural(steps, "step", "steps") + ")";
    }
    std::string out;
    for (const RunResult& r : report.runs)
        for (const ColumnResult& c : r.columns) {
            if (c.ok) continue;
            out += out.empty() ? "differ: " : "; ";
            out += c.column + " of " + r.run + " from step " + std::to_string(*c.first_apart) + " (" + c.first_note;
            if (c.kind != CompareKind::relative)
                out += "; " + std::to_string(c.differing) + "/" + std::to_string(c.steps) + " steps differ > share " +
                       tolerance_text(c.tolerance);
            out += ")";
        }
    return out;
}

std::string report_text(const CompareReport& report) {
    std::string out = "compare " + plain_or_quoted(report.name_a) + " with " + plain_or_quoted(report.name_b) + "\n";
    static constexpr std::size_t w[] = {16, 10, 11, 13, 22, 13, 7};
    const auto row = [&](const std::vector<std::string>& cells) {
        std::string line = "  ";
        for (std::size_t i = 0; i < cells.size(); ++i)
            line += i + 1 < cells.size() ? padded(cells[i], w[i]) : cells[i];
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return line + "\n";
    };
    const auto number = [](double v) { return std::isnan(v) ? std::string("—") : short_number(v, 1); };
    for (const RunResult& r : report.runs) {
        out += "\nrun " + plain_or_quoted(r.run) + ": " + plural(r.steps, "step", "steps") + " (" + std::to_string(r.first_step) + "-" +
               std::to_string(r.last_step) + ")\n";
        out += row({"column", "max |Δ|", "max rel Δ", "first apart", "tolerance", "identical", "result"});
        for (const ColumnResult& c : r.columns) {
            const bool share = c.kind != CompareKind::relative;
            out += row({c.column, number(c.max_abs), number(c.max_rel),
                        c.first_apart ? std::to_string(*c.first_apart) : "—",
                        share ? "share " + tolerance_text(c.tolerance)
                        : c.absolute > 0.0 ? "abs " + tolerance_text(c.absolute) + "+rel " + tolerance_text(c.tolerance)
                                           : "rel " + tolerance_text(c.tolerance),
                        share ? std::to_string(c.steps - c.differing) + "/" + std::to_string(c.steps) : "—",
                        c.ok ? "ok" : "FAIL"});
        }
    }
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
