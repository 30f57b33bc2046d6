// mpx-cli: the headless side of mpx (format, run, bench, selftest). Builds without Qt.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"mpx-cli — Mixed-Precision Explorer, headless: number formats, training runs, "
                 "benchmarks and self-tests"};
    app.set_version_flag("--version", MPX_VERSION);
    app.require_subcommand(1);
    mpx::cli::add_format_command(app);
    mpx::cli::add_run_command(app);
    mpx::cli::add_bench_command(app);
    mpx::cli::add_selftest_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::cerr << "mpx-cli: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
