// mpx-cli: the headless side of mpx (format, run, bench, selftest). Builds without Qt.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {
// `format` takes values such as -1.5 or -inf, which CLI11 would read as options: move every
// argument that reads fully as a number behind a "--" so it is always a value.
std::vector<std::string> values_after_separator(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    if (argc < 2 || args[1] != "format") return args;
    std::vector<std::string> opts(args.begin(), args.begin() + 2), values;
    bool after_separator = false;
    for (std::size_t i = 2; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (after_separator) {
            values.push_back(a);
            continue;
        }
        if (a == "--") {
            after_separator = true;
            continue;
        }
        char* end = nullptr;
        const bool number = !a.empty() && a[0] == '-' && (std::strtod(a.c_str(), &end), *end == '\0');
        if (number || a.empty() || a[0] != '-') values.push_back(a);
        else {
            opts.push_back(a);
            if ((a == "--formats" || a == "--overflow") && i + 1 < args.size()) opts.push_back(args[++i]);
        }
    }
    opts.push_back("--");
    opts.insert(opts.end(), values.begin(), values.end());
    return opts;
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"mpx-cli — Mixed-Precision Explorer, headless: number formats, training runs, "
                 "benchmarks and self-tests"};
    app.set_version_flag("--version", MPX_VERSION);
    app.require_subcommand(1);
    mpx::cli::add_format_command(app);
    mpx::cli::add_run_command(app);
    mpx::cli::add_bench_command(app);
    mpx::cli::add_selftest_command(app);
    mpx::cli::add_sweep_command(app);
    try {
        auto args = values_after_separator(argc, argv);
        std::vector<char*> ptrs;
        for (auto& a : args) ptrs.push_back(a.data());
        app.parse(static_cast<int>(ptrs.size()), ptrs.data());
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::cerr << "mpx-cli: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
