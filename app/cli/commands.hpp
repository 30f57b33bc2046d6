// mpx-cli subcommands. Each add_* registers one subcommand on the CLI11 app; its callback throws
// CLI::RuntimeError(code) to set a non-zero exit code. Qt-free: links the engine only.
#pragma once

namespace CLI {
class App;
}

namespace mpx::cli {

void add_format_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_selftest_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_gemm_command(CLI::App& app);
void add_gemm_error_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_export_torch_command(CLI::App& app);
void add_trace_command(CLI::App& app);  // trace --script, and replay

}  // namespace mpx::cli
