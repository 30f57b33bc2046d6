// mpx-cli: the headless side of mpx (format, run, bench, selftest, sweep, gemm, gemm-error, quantize,
// compare). Builds without Qt.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "engine/io/export.hpp"

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
            // An option format does not take is named as unknown (as run does), not left to fail
            // as "give at least one value" once the values are found missing.
            const std::string name = a.substr(0, a.find('='));
            if (name != "--csv" && name != "--formats" && name != "--overflow" && name != "-h" && name != "--help")
                throw CLI::ArgumentMismatch("unknown option '" + name + "'; format takes --csv, --formats, --overflow "
                                            "and values, e.g. mpx-cli format --csv 65520 1e-8");
            opts.push_back(a);
            if (a == "--formats" || a == "--overflow") {
                // The value is taken here, whatever it looks like; a missing one is said by name.
                if (i + 1 >= args.size()) throw CLI::ArgumentMismatch(a + ": needs a value");
                opts.push_back(args[++i]);
            }
        }
    }
    opts.push_back("--");
    opts.insert(opts.end(), values.begin(), values.end());
    return opts;
}
}  // namespace

int main(int argc, char** argv) {
    mpx::install_temporary_cleanup();  // no *.tmp-<pid> file outlives Ctrl-C, a kill or a size limit
    CLI::App app{"mpx-cli — Mixed-Precision Explorer, headless: number formats, training runs, "
                 "benchmarks and self-tests"};
    app.set_version_flag("--version", MPX_VERSION);
    app.require_subcommand(1);
    mpx::cli::add_format_command(app);
    mpx::cli::add_run_command(app);
    mpx::cli::add_bench_command(app);
    mpx::cli::add_selftest_command(app);
    mpx::cli::add_sweep_command(app);
    mpx::cli::add_gemm_command(app);
    mpx::cli::add_gemm_error_command(app);
    mpx::cli::add_quantize_command(app);
    mpx::cli::add_compare_command(app);
    mpx::cli::add_export_torch_command(app);
    mpx::cli::add_trace_command(app);
    std::string commands;
    for (const CLI::App* sub : app.get_subcommands({}))
        commands += (commands.empty() ? "" : ", ") + sub->get_name();
    // CLI11's own words for these ("A subcommand is required") do not name what was wrong.
    if (argc < 2) {
        std::cerr << "mpx-cli: a command is required: " << commands << " (mpx-cli --help)\n";
        return 2;
    }
    const std::string first = argv[1];
    if (first != "-h" && first != "--help" && first != "--version" && !first.empty() && first[0] == '-') {
        std::cerr << "mpx-cli: unknown option '" << first << "'; a command comes first: " << commands
                  << " (mpx-cli --help)\n";
        return 2;
    }
    if (!first.empty() && first[0] != '-' && [&] { for (const CLI::App* sub : app.get_subcommands({})) if (sub->get_name() == first) return false; return true; }()) {
        std::cerr << "mpx-cli: unknown command '" << first << "'; choose " << commands << " (mpx-cli --help)\n";
        return 2;
    }
    try {
        auto args = values_after_separator(argc, argv);
        std::vector<char*> ptrs;
        for (auto& a : args) ptrs.push_back(a.data());
        app.parse(static_cast<int>(ptrs.size()), ptrs.data());
    } catch (const CLI::Success& e) {  // --help, --version
        return app.exit(e);
    } catch (const CLI::RuntimeError& e) {  // a command's own failure, already reported
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        const std::string where = "mpx-cli" + (first.empty() || first[0] == '-' ? "" : " " + first);
        std::string what = e.what();
        if (e.get_name() == "RequiredError" && what.rfind("values", 0) == 0)
            what = "give at least one value, e.g. mpx-cli format 65520 1e-8";
        else if (what == "A subcommand is required")
            what = "a command is required: " + commands;
        std::cerr << where << ": " << what << " (" << where << " --help)\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "mpx-cli: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
