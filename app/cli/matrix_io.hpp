// Shared by mpx-cli's matrix commands (gemm, quantize): a matrix read from CSV with every problem
// named by file and line, matrices written as exact hex floats, and the one-line error reporting.
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "engine/base/error.hpp"
#include "engine/precision/accumulation.hpp"

namespace mpx::cli {

// A matrix file is text: 256 MiB holds a 4096 x 4096 matrix of hex floats.
inline constexpr std::size_t k_max_matrix_bytes = 256u << 20;

// One row per line, cells separated by commas: decimal or hex floats (0x1p-3), nan, inf. Trailing
// empty lines are allowed; every other problem names file:line and what to give instead.
FloatMatrix read_matrix(const std::string& path, const std::string& flag);
// The same from the file's text (`path` names it in messages): what read_matrix reads, and the fuzz target.
FloatMatrix parse_matrix(const std::string& text, const std::string& path, const std::string& flag);
// %a is exact and reads back with strtod; NaN is written "nan" whatever its sign (engine/base/text.hpp).
std::string hex_float(float v);
// rows × cols values, a row per line, comma-separated, as hex_float.
std::string matrix_text(const float* values, int rows, int cols);

// read() with the flag that named its file put first in a ConfigError that names none (a reader's
// "trace.csv:3: ..."): "--from-megatron-log: trace.csv:3: ...".
template <class F>
auto with_flag(const char* flag, F&& read) {
    try {
        return read();
    } catch (const ConfigError& e) {
        if (!e.field().empty()) throw;
        throw ConfigError(flag, e.message());
    }
}

// ConfigError: the user's flags or files (exit 2); anything else, e.g. a file that cannot be
// written (exit 1). One line each, the command named.
template <class F>
void report_errors(const char* name, F&& run) {
    try {
        run();
    } catch (const ConfigError& e) {
        std::cerr << "mpx-cli " << name << ": " << e.what() << "\n";
        throw CLI::RuntimeError(2);
    } catch (const std::exception& e) {
        std::cerr << "mpx-cli " << name << ": " << e.what() << "\n";
        throw CLI::RuntimeError(1);
    }
}

}  // namespace mpx::cli
