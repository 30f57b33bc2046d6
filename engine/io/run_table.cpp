// Reading run CSVs for compare (engine/io/run_table.hpp).
#include "engine/io/run_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"

namespace mpx {
namespace {

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
}  // namespace

std::optional<double> read_cell_number(std::string_view s) {
    if (s.empty()) return std::nullopt;
    if (s == "True") return 1.0;  // pandas writes a bool column so
    if (s == "False") return 0.0;
    double v = 0.0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<long long> read_whole_number(std::string_view s) {
    long long v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

namespace {
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
}  // namespace

namespace compare_text {

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

std::string padded(std::string s, std::size_t width) {
    // Terminal columns: one per code point (Δ and — are one wide).
    std::size_t w = 0;
    for (const char c : s) w += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (w < width) s.append(width - w, ' ');
    return s;
}

}  // namespace compare_text

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
    // pandas' index column: dropped from the header here and from each row below.
    const std::string_view first = std::string_view(names).substr(0, ends[1]);
    const bool index_column = ncols > 1 && (first.empty() || first == "Unnamed: 0");
    for (std::size_t c = index_column ? 1 : 0; c < ncols; ++c) {
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
            bad(at(name, row_line), compare_text::plural(static_cast<long long>(fields), "field", "fields") + ", but the header has " +
                                        std::to_string(ncols) + " columns; every row needs one field per column");
        if (index_column) {  // this row's first cell is the last row's end to its first field's end
            const std::size_t first_cell = t.m_offsets.size() - 1 - fields;
            const std::uint32_t from = t.m_offsets[first_cell], to = t.m_offsets[first_cell + 1];
            t.m_cells.erase(from, to - from);
            t.m_offsets.erase(t.m_offsets.begin() + static_cast<std::ptrdiff_t>(first_cell) + 1);
            for (std::size_t i = first_cell + 1; i < t.m_offsets.size(); ++i) t.m_offsets[i] -= to - from;
        }
        const std::size_t row = t.m_lines.size();
        t.m_lines.push_back(row_line);
        const std::string run(t.cell(row, run_col));
        if (run.empty()) bad(at(name, row_line), "the run cell is empty; every row names its run");
        const auto step = read_whole_number(t.cell(row, step_col));
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

std::optional<double> RunTable::number(std::size_t row, int column) const {
    const std::string_view s = cell(row, column);
    if (s.empty()) return std::nullopt;
    const auto v = read_cell_number(s);
    if (!v)
        bad(at(m_name, line(row)), m_columns[static_cast<std::size_t>(column)] + " " + shown(s) +
                                       " is not a number; give a decimal number, nan, inf or -inf, or leave the cell empty");
    return v;
}

RunTable read_run_csv(const std::filesystem::path& path) {
    return RunTable::parse(read_input_file(path, "the run CSV", k_max_run_csv_bytes), path.string());
}

}  // namespace mpx
