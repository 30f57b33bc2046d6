// Matrices in and out of mpx-cli (app/cli/matrix_io.hpp).
#include "matrix_io.hpp"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "engine/base/input_file.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/precision/format_probe.hpp"

namespace mpx::cli {

namespace {
std::string_view trimmed(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

FloatMatrix read_matrix(const std::string& path, const std::string& flag) {
    return parse_matrix(read_input_file(path, "the " + flag + " matrix", k_max_matrix_bytes), path, flag);
}

FloatMatrix parse_matrix(const std::string& text, const std::string& path, const std::string& flag) {
    FloatMatrix m;
    std::size_t pos = 0;
    int line_no = 0, blank_from = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::size_t len = nl == std::string::npos ? std::string::npos : nl - pos;
        const std::string_view line = trimmed(std::string_view(text).substr(pos, len));
        pos = nl == std::string::npos ? text.size() : nl + 1;
        ++line_no;
        if (line.empty()) {
            if (blank_from == 0) blank_from = line_no;
            continue;
        }
        const std::string where = plain_or_quoted(path) + ":" + std::to_string(line_no);
        if (blank_from != 0)
            throw ConfigError(flag, where + ": line " + std::to_string(blank_from) +
                                        " is empty; a matrix has no blank rows between its rows");
        int cells = 0;
        std::size_t start = 0;
        for (;;) {
            const std::size_t comma = line.find(',', start);
            const std::size_t len = comma == std::string_view::npos ? std::string_view::npos : comma - start;
            const std::string_view cell = trimmed(line.substr(start, len));
            const auto v = parse_typed_value(cell);
            if (!v)
                throw ConfigError(flag, where + ": cell " + std::to_string(cells + 1) + " " + quoted_text(cell) +
                                            " is not a number; give decimal or hex floats (0.5, 0x1p-3), nan or inf");
            m.values.push_back(v->as_float);
            ++cells;
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
        if (m.rows == 0) m.cols = cells;
        else if (cells != m.cols)
            throw ConfigError(flag, where + ": " + std::to_string(cells) + " cells, but line 1 has " +
                                        std::to_string(m.cols) + "; every row needs the same number of cells");
        ++m.rows;
    }
    if (m.rows == 0)
        throw ConfigError(flag, "the matrix " + quoted_text(path) +
                                    " is empty; give one row of comma-separated numbers per line");
    return m;
}

std::string hex_float(float v) {
    if (std::isnan(v)) return "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
    return buf;
}

std::string matrix_text(const float* values, int rows, int cols) {
    std::string text;
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            if (j) text += ',';
            text += hex_float(values[static_cast<std::size_t>(i) * cols + j]);
        }
        text += '\n';
    }
    return text;
}

}  // namespace mpx::cli
