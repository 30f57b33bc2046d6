// A run CSV as read for comparing (mpx's `run --csv` export, a framework script's, or either after a
// round trip through pandas), and the few text helpers compare's messages and reports share.
// Rule: the reader accepts what the writers write and nothing else silently: a malformed row, a step
// twice, a non-number in a number cell is a ConfigError naming file and line; NaN, inf and empty cells
// are data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpx {

// A run CSV as read: RFC 4180 (quoted fields, "" inside quotes, LF or CRLF), a header row naming
// the columns, one row per (run, step). Lines starting with '#' and blank lines before the header
// are skipped (a script may say there which scaler it mirrored); a UTF-8 byte-order mark is dropped.
// pandas' index column (`df.to_csv()`: a first column with an empty name, or "Unnamed: 0" after a
// read and write back) is dropped too: it numbers rows, it is no measurement.
class RunTable {
public:
    // `name` is how messages call the file ("A.csv"). Throws ConfigError naming name:line.
    static RunTable parse(std::string_view text, const std::string& name);
    const std::string& name() const { return m_name; }
    const std::vector<std::string>& columns() const { return m_columns; }
    int column(std::string_view name) const;  // its index, or -1 when the header lacks it
    // Run labels in the order the file first mentions them.
    const std::vector<std::string>& runs() const { return m_runs; }
    // The rows of a run by step (empty map for a label the file does not hold).
    const std::map<long long, std::size_t>& steps_of(const std::string& run) const;
    std::size_t row_count() const { return m_lines.size(); }
    std::string_view cell(std::size_t row, int column) const;
    // A number cell: read_cell_number's value, nullopt for an empty cell; ConfigError naming file,
    // line and `column` for anything else.
    std::optional<double> number(std::size_t row, int column) const;
    int line(std::size_t row) const { return m_lines[row]; }  // where the row starts, from 1

private:
    std::string m_name;
    std::vector<std::string> m_columns;
    std::vector<std::string> m_runs;
    std::map<std::string, std::map<long long, std::size_t>> m_index;
    // Every cell's text, unquoted, back to back: cell (r, c) is [m_offsets[i], m_offsets[i + 1])
    // with i = r · columns + c. 32-bit offsets: a file is at most k_max_run_csv_bytes.
    std::string m_cells;
    std::vector<std::uint32_t> m_offsets;
    std::vector<int> m_lines;  // (rows)
};

// A long run's CSV is tens of MiB; the cap keeps the offsets 32-bit and the memory bounded.
inline constexpr std::size_t k_max_run_csv_bytes = 1u << 30;

// Reads `path` (engine/base/input_file.hpp: IoError when it cannot be read) and parses it; the
// file's name as given is what messages call it.
RunTable read_run_csv(const std::filesystem::path& path);

// A number cell's value: a decimal number, nan, inf or -inf (any case), read whole in the C locale,
// or pandas' booleans True and False (a bool column such as found_inf written by `df.to_csv`) as 1
// and 0; nullopt otherwise (an empty cell too).
std::optional<double> read_cell_number(std::string_view s);
std::optional<long long> read_whole_number(std::string_view s);

namespace compare_text {
// "3.1e-4", "0.02", "1e-5": `digits` significant digits after the first, exponents unpadded.
std::string short_number(double v, int digits);
// A tolerance as the user gave it: every digit kept, exponent unpadded ("1e-05" -> "1e-5").
std::string tolerance_text(double v);
std::string join(const std::vector<std::string>& names);  // "a, b, 'c d'"
std::string plural(long long n, const char* one, const char* many);
std::string padded(std::string s, std::size_t width);  // to `width` terminal columns (UTF-8)
}  // namespace compare_text

}  // namespace mpx
