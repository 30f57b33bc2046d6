// `mpx-cli format VALUE...`: how each value is stored in every format (bits, decoded value,
// rounding error, class, overflow/underflow). Values go to FP32 first, as every engine value does.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "engine/base/text.hpp"
#include "engine/precision/format.hpp"

namespace mpx::cli {
namespace {

struct Parsed {
    float as_float;
    double exact;  // the decimal as a double: the reference the errors are measured against
    bool finite;   // the text names a finite number (1e39 does, though it is inf as FP32)
};

// Decimal or hex-float, nan, inf, with an optional sign; the whole string must be used.
bool parse_value(const std::string& s, Parsed& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return false;
    const bool beyond_double = errno == ERANGE && std::isinf(d);
    end = nullptr;
    const float f = std::strtof(s.c_str(), &end);  // correctly rounded: no double rounding
    out = {f, d, std::isfinite(d) || beyond_double};
    return true;
}

std::string hex_bits(Format f, std::uint32_t bits) {
    // The whole container, except that E2M1's 4-bit code (one a byte in buffers) is one digit.
    const int digits = f == Format::e2m1 ? 1 : info(f).storage_bytes * 2;
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*X", digits, bits);
    return buf;
}

struct Row {
    std::string bits, value, abs_error, rel_error, cls;
    bool overflow, underflow;
};

Row describe(Format f, const Parsed& p, Overflow mode) {
    const std::uint32_t bits = encode(f, p.as_float, mode);
    const float v = decode(f, bits);
    double abs_err;
    if (std::isnan(p.exact) || std::isnan(v)) {
        abs_err = (std::isnan(p.exact) && std::isnan(v)) ? 0.0 : NAN;
    } else if (std::isinf(p.exact) || std::isinf(v)) {
        abs_err = (static_cast<double>(v) == p.exact) ? 0.0 : INFINITY;
    } else {
        abs_err = std::fabs(static_cast<double>(v) - p.exact);
    }
    double rel_err = abs_err;
    if (std::isfinite(p.exact) && p.exact != 0.0) rel_err = abs_err / std::fabs(p.exact);
    else if (p.exact == 0.0 && abs_err == 0.0) rel_err = 0.0;
    return {hex_bits(f, bits),
            format_number(v),
            format_number(abs_err),
            format_number(rel_err),
            std::string(to_string(classify(f, bits))),
            // A value already out of FP32's range overflowed (or underflowed) on its way in.
            rounding_overflows(f, p.as_float) || (p.finite && std::isinf(p.as_float)),
            rounding_underflows(f, p.as_float, mode) ||
                (p.exact != 0.0 && !std::isnan(p.exact) && v == 0.0f)};
}

std::string note(const Row& r, Format f, Overflow mode, float x) {
    const FormatInfo& fi = info(f);
    if (!fi.has_nan && std::isnan(x)) return "no NaN in " + std::string(fi.name) + ": +0";
    if (!fi.has_nan && std::isinf(x)) return "no inf in " + std::string(fi.name) + ": saturated";
    if (r.overflow) {
        if (mode == Overflow::saturate || !fi.has_nan) return "overflow (saturated)";
        return fi.has_inf ? "overflow" : "overflow (no inf: NaN)";
    }
    if (r.underflow) return "underflow";
    return "";
}

// "fp32, tf32, ...": the names a --formats list may use, from the one table.
std::string format_names() {
    std::string s;
    for (Format f : all_formats) s += (s.empty() ? "" : ", ") + std::string(to_string(f));
    return s;
}

int run_format(const std::vector<std::string>& values, bool csv, const std::optional<std::string>& formats_opt,
               const std::string& overflow_opt) {
    std::vector<Format> formats;
    if (!formats_opt) {
        formats.assign(std::begin(all_formats), std::end(all_formats));
    } else {
        // getline drops a trailing empty entry: "fp16," and "" must not pass as a list.
        if (formats_opt->empty() || formats_opt->back() == ',') {
            std::cerr << "mpx-cli format: --formats has an empty entry in '" << *formats_opt
                      << "' (choose from " << format_names() << ", e.g. --formats fp16,bf16)\n";
            return 2;
        }
        std::stringstream ss(*formats_opt);
        std::string name;
        while (std::getline(ss, name, ',')) {
            const auto f = parse_format(name);
            if (!f) {
                std::cerr << "mpx-cli format: unknown format '" << name
                          << "' (choose from " << format_names() << ")\n";
                return 2;
            }
            formats.push_back(*f);
        }
    }
    int rc = 0;
    if (csv) std::cout << "input,format,bits,value,abs_error,rel_error,class,overflow,underflow\n";
    for (const std::string& s : values) {
        Parsed p{};
        if (!parse_value(s, p)) {
            std::cerr << "mpx-cli format: '" << s
                      << "' is not a number (give a decimal or hex-float value, nan or inf)\n";
            rc = 2;
            continue;
        }
        if (!csv) {
            std::cout << s << "  (as FP32: " << format_number(p.as_float) << ")\n";
            char head[256];
            std::snprintf(head, sizeof head, "  %-5s %-11s %-16s %-24s %-24s %-10s %s\n", "fmt",
                          "bits", "value", "abs_error", "rel_error", "class", "note");
            std::cout << head;
        }
        for (Format f : formats) {
            Overflow mode = info(f).default_overflow;
            if (overflow_opt == "saturate") mode = Overflow::saturate;
            else if (overflow_opt == "infinity") mode = Overflow::infinity;
            const Row r = describe(f, p, mode);
            if (csv) {
                std::cout << csv_field(s) << ',' << to_string(f) << ',' << r.bits << ','
                          << r.value << ',' << r.abs_error << ',' << r.rel_error << ',' << r.cls
                          << ',' << (r.overflow ? 1 : 0) << ',' << (r.underflow ? 1 : 0) << '\n';
            } else {
                char line[256];
                std::snprintf(line, sizeof line, "  %-5s %-11s %-16s %-24s %-24s %-10s %s\n",
                              std::string(to_string(f)).c_str(), r.bits.c_str(), r.value.c_str(),
                              r.abs_error.c_str(), r.rel_error.c_str(), r.cls.c_str(),
                              note(r, f, mode, p.as_float).c_str());
                std::cout << line;
            }
        }
    }
    std::cout.flush();
    return rc;
}

}  // namespace

void add_format_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("format", "Show how values are stored in each number format");
    auto values = std::make_shared<std::vector<std::string>>();
    auto csv = std::make_shared<bool>(false);
    auto formats = std::make_shared<std::optional<std::string>>();
    auto overflow = std::make_shared<std::string>("default");
    cmd->add_option("values", *values, "Values: decimal or hex-float (0x1p-24), nan, inf")
        ->required();
    cmd->add_flag("--csv", *csv, "Print CSV (one row per value per format)");
    cmd->add_option("--formats", *formats, "Comma-separated subset, e.g. fp16,bf16");
    cmd->add_option("--overflow", *overflow,
                    "Overflow rule: default (IEEE; E4M3 and E2M1 saturate), infinity, saturate")
        ->check(CLI::IsMember({"default", "infinity", "saturate"}));
    cmd->callback([=] {
        const int rc = run_format(*values, *csv, *formats, *overflow);
        if (rc != 0) throw CLI::RuntimeError(rc);
    });
}

}  // namespace mpx::cli
