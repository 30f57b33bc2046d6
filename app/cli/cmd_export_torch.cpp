// `mpx-cli export-torch`: a session as a folder PyTorch trains (engine/io/torch_export.hpp), with the
// same configuration flags as `run`; what to run next is printed.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "matrix_io.hpp"
#include "engine/io/torch_export.hpp"

namespace mpx::cli {
namespace {

struct ExportTorchOptions {
    ConfigFlags flags;
    std::string out;
};

void run_export_torch(const ExportTorchOptions& o) {
    if (o.out.empty()) throw ConfigError("--out", "name the folder to write, e.g. --out torch-run");
    const SessionConfig cfg = build_config(o.flags);
    const auto files = export_torch(cfg, o.out);
    const std::string folder = o.out.ends_with('/') ? o.out : o.out + "/";
    std::cout << "mpx-cli: wrote " << folder << " (train.py, session.json and " << files.size() - 2
              << " data files) for " << cfg.runs.size() << " run" << (cfg.runs.size() == 1 ? "" : "s") << "\n"
              << "Train it in PyTorch and compare with mpx's own run:\n"
              << "  python3 " << folder << "train.py --csv torch.csv        (--emulate where PyTorch cannot run a format on the CPU)\n"
              << "  mpx-cli run <the same flags> --csv mpx.csv\n"
              << "  mpx-cli compare mpx.csv torch.csv\n";
}

}  // namespace

void add_export_torch_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("export-torch", "Write the session as a PyTorch script (train.py) and the data it trains "
                                                   "from, to check mpx against PyTorch with `compare`");
    auto o = std::make_shared<ExportTorchOptions>();
    add_config_flags(cmd, o->flags);
    cmd->add_option("--out", o->out, "The folder to write (new, or empty); written whole or not at all")->required();
    cmd->callback([o] { report_errors("export-torch", [&] { run_export_torch(*o); }); });
}

}  // namespace mpx::cli
