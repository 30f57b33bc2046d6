// `mpx-cli gemm` and `mpx-cli gemm-error`: a GEMM under an accumulation model (REFERENCE.md,
// "Accumulation models"; engine/core/accumulate.hpp), from CSV matrices to hex floats, and the
// model's relative error against FP64 on random matrices. The models are models, not bit-exact
// hardware; every output says so where a reader could mistake it for a measurement of a GPU.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "matrix_io.hpp"
#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/memory_budget.hpp"
#include "engine/base/parallel.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/io/export.hpp"
#include "engine/precision/accumulation.hpp"
#include "engine/precision/format_probe.hpp"

namespace mpx::cli {
namespace {

constexpr int k_max_dimension = 1 << 16;  // --m, --n and each --k of gemm-error

// The flags both commands share: the model and its parameters.
struct ModelFlags {
    int bits = AccumulateParams{}.bits;
    int promote_every = AccumulateParams{}.promote_every;
    unsigned threads = 0;
    const CLI::Option* bits_flag = nullptr;  // given or not: a parameter no model reads is refused
    const CLI::Option* promote_flag = nullptr;
};

void add_model_flags(CLI::App* cmd, ModelFlags& f) {
    f.bits_flag = cmd->add_option("--bits", f.bits,
                                  "Bits the register and the aligned products keep (1-" +
                                      std::to_string(k_max_accumulate_bits) + "; default 14, DeepSeek-V3)");
    f.promote_flag = cmd->add_option("--promote-every", f.promote_every,
                                     "Products between promotions to FP32 under 'promote' (default 128, DeepSeek-V3's N_C)");
    add_threads_flag(cmd, f.threads);
}

// A parameter flag given for none of the models asked for would change nothing, and is refused
// (issue 41, class 7); which model reads which parameter is engine/core/accumulate.hpp's reads_*.
void refuse_unread_parameters(const std::vector<AccumulateModel>& models, const ModelFlags& f) {
    const auto any = [&](auto&& reads) { return std::any_of(models.begin(), models.end(), reads); };
    if (f.bits_flag->count() && !any(reads_bits))
        throw ConfigError("--bits", "does nothing under --accumulate exact (FP32 accumulation has no narrow register); "
                                    "give fp8-fast, promote or bits, or drop it");
    if (f.promote_flag->count() && !any(reads_promote_every))
        throw ConfigError("--promote-every", "is read by the promote model only; give --accumulate promote, or drop it");
}

AccumulateParams params_for(AccumulateModel m, const ModelFlags& f) {
    AccumulateParams p;
    p.model = m;
    p.bits = f.bits;
    p.promote_every = f.promote_every;
    validate(p);
    return p;
}

// "a,b,c" → its entries; an empty entry (",,", a trailing comma, nothing at all) names the flag.
std::vector<std::string> split_list(const std::string& text, const std::string& flag, const std::string& example) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty()) throw ConfigError(flag, "has an empty entry in " + quoted_text(text) + ", e.g. " + flag + " " + example);
        out.push_back(item);
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

std::vector<Format> parse_formats(const std::string& text) {
    std::vector<Format> out;
    for (const auto& name : split_list(text, "--format", "e4m3,e5m2")) {
        const auto f = parse_format(name);
        if (!f)
            throw ConfigError("--format",
                              "unknown format " + quoted_text(name) + "; choose fp32, tf32, fp16, bf16, e4m3 or e5m2");
        out.push_back(*f);
    }
    return out;
}

std::vector<AccumulateModel> parse_models(const std::string& text) {
    std::vector<AccumulateModel> out;
    for (const auto& name : split_list(text, "--accumulate", "fp8-fast,promote"))
        out.push_back(parse_accumulate_model(name, "--accumulate"));
    return out;
}

int parse_dimension(const std::string& text, const std::string& flag) {
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || v < 1 || v > k_max_dimension)
        throw ConfigError(flag, quoted_text(text) + " is not a whole number from 1 to " + std::to_string(k_max_dimension));
    return static_cast<int>(v);
}

// ---- gemm: CSV in, hex floats out ------------------------------------------------------------

struct GemmOptions {
    ModelFlags model;
    std::string a, b, out, format = "fp32", accumulate = "exact";
};

int run_gemm(const GemmOptions& o) {
    const auto formats = parse_formats(o.format);
    const auto models = parse_models(o.accumulate);
    if (formats.size() != 1) throw ConfigError("--format", "gemm takes one format (gemm-error compares several)");
    if (models.size() != 1) throw ConfigError("--accumulate", "gemm takes one model (gemm-error compares several)");
    refuse_unread_parameters(models, o.model);
    const AccumulateParams p = params_for(models[0], o.model);
    check_outputs({{"--out", o.out}}, {{"--a", o.a}, {"--b", o.b}});
    const FloatMatrix a = read_matrix(o.a, "--a"), b = read_matrix(o.b, "--b");
    set_thread_count(o.model.threads);
    FloatMatrix c;
    try {
        c = gemm_under_model(a, b, formats[0], p);
    } catch (const ConfigError& e) {  // the shapes: the parameters passed validate() above
        throw ConfigError("--b", quoted_text(o.a) + " times " + quoted_text(o.b) + ": " + e.message());
    }
    write_file_atomic(o.out, matrix_text(c.values.data(), c.rows, c.cols));
    return 0;
}

// ---- gemm-error: the model's error on random matrices ----------------------------------------

struct GemmErrorOptions {
    ModelFlags model;
    std::string k = "256,1024,4096", format = "e4m3", accumulate = "fp8-fast,promote", csv;
    std::string m = "64", n = "64";
    std::string seed = "1";  // parse_seed: 0 to 2^64 - 1, never clamped
};

int run_gemm_error(const GemmErrorOptions& o) {
    std::vector<int> ks;
    for (const auto& k : split_list(o.k, "--k", "256,1024,4096")) ks.push_back(parse_dimension(k, "--k"));
    const int m = parse_dimension(o.m, "--m"), n = parse_dimension(o.n, "--n");
    const auto formats = parse_formats(o.format);
    const auto models = parse_models(o.accumulate);
    refuse_unread_parameters(models, o.model);
    std::vector<AccumulateParams> params;
    for (AccumulateModel model : models) params.push_back(params_for(model, o.model));
    const std::uint64_t seed = parse_seed(o.seed, "--seed");
    // One point at a time holds A and B, their rounded (and transposed) copies, an FP64 reference
    // per format and the model's C.
    for (int k : ks) {
        const std::uint64_t operands = saturating_mul(std::uint64_t(m) + std::uint64_t(n), std::uint64_t(k));
        const std::uint64_t outputs = saturating_mul(std::uint64_t(m), std::uint64_t(n));
        const std::uint64_t need = saturating_mul(operands, 3 * sizeof(float)) +
                                   saturating_mul(outputs, formats.size() * sizeof(double) + sizeof(float));
        check_memory(need, "--k", "a " + std::to_string(m) + " x " + std::to_string(k) + " by " + std::to_string(k) +
                                      " x " + std::to_string(n) + " point",
                     "lower --m, --n or --k");
    }
    if (!o.csv.empty()) check_outputs({{"--csv", o.csv}});
    set_thread_count(o.model.threads);

    std::printf("# C = A*B, A (%d x K) and B (K x %d) uniform in [0, 1), seed %llu, rounded to the format;\n"
                "# error against an FP64 GEMM of the same rounded operands. Accumulation MODELS (REFERENCE.md),\n"
                "# not bit-exact hardware: %d bits, groups of %d, promote every %d products.\n",
                m, n, static_cast<unsigned long long>(seed), o.model.bits, AccumulateParams{}.group, o.model.promote_every);
    std::printf("%-6s %-9s %6s %14s %14s %9s\n", "format", "model", "k", "max_rel_error", "mean_rel_error",
                "seconds");
    std::string csv = "format,model,k,m,n,bits,group,promote_every,max_rel_error,mean_rel_error,seconds\n";
    for (int k : ks) {
        // The experiment's definition, shared with the app's accumulator lab (one stream per K).
        RandomGemm point(seed, m, n, k);
        for (Format f : formats) {
            point.reference(f);  // computed here, so the seconds below time the model's GEMM only
            for (const AccumulateParams& p : params) {
                const auto t0 = std::chrono::steady_clock::now();
                const RelativeError e = point.error(f, p);
                const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const std::string fname(to_string(f)), model(to_string(p.model));
                std::printf("%-6s %-9s %6d %14.4e %14.4e %9.3f\n", fname.c_str(), model.c_str(), k, e.max, e.mean,
                            s);
                std::fflush(stdout);
                const std::string cells[] = {fname, model, std::to_string(k), std::to_string(m), std::to_string(n),
                                             std::to_string(p.bits), std::to_string(p.group),
                                             std::to_string(p.promote_every), format_number(e.max),
                                             format_number(e.mean), format_number(s)};
                for (const std::string& cell : cells) {
                    if (&cell != cells) csv += ',';
                    csv += cell;
                }
                csv += '\n';
            }
        }
    }
    if (!o.csv.empty()) write_file_atomic(o.csv, csv);
    return 0;
}

}  // namespace

void add_gemm_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("gemm", "C = A*B from CSV matrices under an accumulation model (a model, "
                                           "not bit-exact hardware); C written as hex floats");
    auto o = std::make_shared<GemmOptions>();
    cmd->add_option("--a", o->a, "A (m x k): a CSV file, one row per line, decimal or hex floats")->required();
    cmd->add_option("--b", o->b, "B (k x n): a CSV file like --a")->required();
    cmd->add_option("--out", o->out, "C (m x n), written atomically as hex floats (%a)")->required();
    cmd->add_option("--format", o->format, "Format A and B are rounded to first: fp32, tf32, fp16, bf16, e4m3, e5m2");
    cmd->add_option("--accumulate", o->accumulate, "Model: " + enum_choices<AccumulateModel>() + " (default exact)");
    add_model_flags(cmd, o->model);
    cmd->callback([o] { report_errors("gemm", [&] { run_gemm(*o); }); });
}

void add_gemm_error_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("gemm-error", "Max and mean relative error of accumulation models against "
                                                 "FP64 on random matrices (models, not bit-exact hardware)");
    auto o = std::make_shared<GemmErrorOptions>();
    cmd->add_option("--k", o->k, "Inner dimensions, e.g. 256,1024,4096");
    cmd->add_option("--format", o->format, "Operand formats, e.g. e4m3,e5m2 (default e4m3)");
    cmd->add_option("--accumulate", o->accumulate,
                    "Models, e.g. fp8-fast,promote (choose from " + enum_choices<AccumulateModel>() + ")");
    cmd->add_option("--m", o->m, "Rows of A and C (default 64)");
    cmd->add_option("--n", o->n, "Columns of B and C (default 64)");
    cmd->add_option("--seed", o->seed, "Seed of the random matrices (default 1)");
    cmd->add_option("--csv", o->csv, "Also write the table as CSV, atomically");
    add_model_flags(cmd, o->model);
    cmd->callback([o] { report_errors("gemm-error", [&] { run_gemm_error(*o); }); });
}

}  // namespace mpx::cli
