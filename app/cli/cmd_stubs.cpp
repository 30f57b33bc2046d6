// Subcommands still being built register here so the CLI's shape is fixed from the start.
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.hpp"

namespace mpx::cli {

void add_run_command(CLI::App&) {}
void add_bench_command(CLI::App&) {}
void add_selftest_command(CLI::App&) {}

}  // namespace mpx::cli
