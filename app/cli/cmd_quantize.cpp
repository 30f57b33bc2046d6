// `mpx-cli quantize`: a matrix quantized to NVFP4 or MXFP4 with exactly the code training uses
// (engine/precision/fp4_quant.hpp), written as the values it decodes to and its block scales, so
// an outside oracle (tests/fp4/ref_quantize.py, or Transformer Engine's reference) can check it.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "matrix_io.hpp"
#include "engine/base/parallel.hpp"
#include "engine/base/quote.hpp"
#include "engine/io/export.hpp"
#include "engine/precision/fp4_quant.hpp"

namespace mpx::cli {
namespace {

struct QuantizeOptions {
    std::string format = "nvfp4", in, out, scales, mx_rule = "rceil", metric = "mse";
    bool two_d = false, rht = false, four_over_six = false;
    std::optional<std::string> sr_seed;  // parse_seed: 0 to 2^64 - 1, never clamped
    unsigned threads = 0;
    bool mx_rule_given = false, metric_given = false;
};

int run_quantize(const QuantizeOptions& o) {
    Fp4Options q;
    const auto kind = enum_parse<Fp4Kind>(o.format);
    if (!kind) throw ConfigError("--format", "unknown format " + quoted_text(o.format) + "; choose " + enum_choices<Fp4Kind>());
    q.kind = *kind;
    q.two_d = o.two_d;
    q.rht = o.rht;
    const auto rule = enum_parse<core::MxScaleRule>(o.mx_rule);
    if (!rule) throw ConfigError("--mx-scale-rule", "unknown rule " + quoted_text(o.mx_rule) + "; choose " + enum_choices<core::MxScaleRule>());
    q.mx_rule = *rule;
    // A flag that changes nothing is refused, not ignored (issue 41, class 7); --2d, --rht and
    // --4over6 on MXFP4 are refused by quantize_fp4 itself.
    if (o.mx_rule_given && q.kind != Fp4Kind::mxfp4)
        throw ConfigError("--mx-scale-rule", "is MXFP4's scale rule; NVFP4's block scales are E4M3, not powers of two. "
                                             "Give --format mxfp4, or drop it");
    if (o.metric_given && !o.four_over_six)
        throw ConfigError("--4over6-metric", "measures 4over6's choice of block scale; give --4over6 too, or drop it");
    q.four_over_six = o.four_over_six;
    const auto metric = enum_parse<Fp4Metric>(o.metric);
    if (!metric) throw ConfigError("--4over6-metric", "unknown measure " + quoted_text(o.metric) + "; choose " + enum_choices<Fp4Metric>());
    q.metric = *metric;
    if (o.sr_seed) q.sr_seed = parse_seed(*o.sr_seed, "--sr-seed");
    std::vector<NamedPath> outputs{{"--out", o.out}};
    if (!o.scales.empty()) outputs.push_back({"--scales", o.scales});
    check_outputs(outputs, {{"--in", o.in}});
    const FloatMatrix x = read_matrix(o.in, "--in");
    set_thread_count(o.threads);
    const Fp4Matrix r = quantize_fp4(x, q);
    // The values and their scales belong together: written all or nothing (a full disk after the
    // values leaves neither, and an old pair as it was).
    const std::string values = matrix_text(r.values.data(), r.rows, r.cols);
    if (o.scales.empty()) {
        write_file_atomic(o.out, values);
        return 0;
    }
    const std::string scales = "s_dec," + hex_float(r.s_dec) + "\n" + matrix_text(r.scales.data(), r.scale_rows, r.scale_cols);
    write_files_together(o.out, values, o.scales, scales);
    return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("quantize", "Quantize a CSV matrix to NVFP4 or MXFP4 as training does; write what "
                                               "it decodes to (hex floats) and its block scales");
    auto o = std::make_shared<QuantizeOptions>();
    cmd->add_option("--format", o->format, "nvfp4 (E2M1, E4M3 scale per 16, FP32 per tensor) or mxfp4 (E2M1, "
                                           "power-of-two scale per 32); default nvfp4");
    cmd->add_option("--in", o->in, "The matrix (CSV, a row per line; blocks run along rows)")->required();
    cmd->add_option("--out", o->out, "The decoded values, written atomically as hex floats (%a)")->required();
    cmd->add_option("--scales", o->scales, "Also the scales: a line 's_dec,<global decode scale>', then the block scales");
    cmd->add_flag("--2d", o->two_d, "NVFP4: one scale per 16x16 tile (TE's weights) instead of per 1x16");
    cmd->add_flag("--rht", o->rht, "NVFP4: the 16-point random Hadamard transform of each block first (TE's Wgrad inputs)");
    cmd->add_option("--sr-seed", o->sr_seed, "Stochastic rounding of the elements from this seed (default: nearest even)");
    cmd->add_option("--mx-scale-rule", o->mx_rule, "MXFP4 scale rule: floor (OCP), ceil, rceil (default, NVIDIA's "
                                                   "recommendation: the block's largest value never clamps), even");
    cmd->add_flag("--4over6", o->four_over_six, "NVFP4: per block the better of amax->6 and amax->4 (E4M3 bound 256 "
                                                "in the global scale)");
    cmd->add_option("--4over6-metric", o->metric, "4over6's measure of a block's error: mse (default) or mae");
    add_threads_flag(cmd, o->threads);
    cmd->callback([o, cmd] {
        o->mx_rule_given = cmd->count("--mx-scale-rule") > 0;
        o->metric_given = cmd->count("--4over6-metric") > 0;
        report_errors("quantize", [&] { run_quantize(*o); });
    });
}

}  // namespace mpx::cli
