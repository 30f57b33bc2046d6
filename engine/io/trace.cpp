// Reading a recorded trace, and replaying a scaler rule over it (engine/io/trace.hpp); the
// DeepSpeed and Megatron log importers are in trace_logs.cpp.
#include "engine/io/trace.hpp"
#include "engine/io/trace_text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/memory_budget.hpp"
#include "engine/base/text.hpp"
#include "engine/compute/overflow_verdict.hpp"

namespace mpx {

namespace trace_detail {
[[noreturn]] void bad(const std::string& name, int line, const std::string& what) {
    throw ConfigError("", plain_or_quoted(name) + ":" + std::to_string(line) + ": " + what);  // the file and line name it
}

std::optional<double> number(std::string_view s) {
    if (s == "nan") return std::nan("");
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

}  // namespace trace_detail

namespace {
using trace_detail::bad;
using trace_detail::number;
using trace_detail::StepBudget;


constexpr const char* k_columns[] = {"step", "scale", "found_inf", "skipped", "loss", "amax", "amax_site", "censored",
                                     "forward_nonfinite", "forward_site", "grad_norm", "lr"};
enum Col { c_step, c_scale, c_found_inf, c_skipped, c_loss, c_amax, c_amax_site, c_censored, c_fwd, c_fwd_site,
           c_grad_norm, c_lr, c_count };

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = line.find(',', start);
        out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}


}  // namespace

bool forward_overflow_poisoned(const TraceStep& s) {
    return s.forward_nonfinite > 0 && (!std::isfinite(s.loss) || (s.found_inf && s.censored));
}

Trace parse_trace(std::string_view text, const std::string& name) {
    Trace t;
    t.name = name;
    std::vector<std::string_view> lines;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view l = text.substr(start, end - start);
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        lines.push_back(l);
        start = end + 1;
    }
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    if (lines.empty() || !lines[0].starts_with("# mpx-trace "))
        bad(name, 1, "not an mpx trace (its first line is '# mpx-trace 1; ...', written by mpx_trace.py: "
                     "mpx-cli trace --script)");
    if (!lines[0].starts_with("# mpx-trace 1;") && lines[0] != "# mpx-trace 1")
        bad(name, 1, "a trace of a newer format than this mpx reads (version 1)");
    t.amax_known = lines[0].find("amax unknown") == std::string_view::npos;
    if (lines.size() < 2) bad(name, 2, "no header row: the file was cut off");
    const auto header = fields(lines[1]);
    int at[c_count];
    for (int c = 0; c < c_count; ++c) {
        const auto it = std::find(header.begin(), header.end(), k_columns[c]);
        if (it == header.end())
            bad(name, 2, std::string("the header has no '") + k_columns[c] + "' column" +
                             (c == c_amax ? ": a trace without amaxes cannot be replayed" : ""));
        at[c] = static_cast<int>(it - header.begin());
    }
    if (lines.size() < 3) bad(name, 3, "no steps: the file holds only its header");
    StepBudget().check(lines.size() - 2, name, static_cast<int>(std::min<std::size_t>(lines.size(), std::numeric_limits<int>::max())));
    t.steps.reserve(lines.size() - 2);
    for (std::size_t i = 2; i < lines.size(); ++i) {
        const int line = static_cast<int>(i) + 1;
        const auto f = fields(lines[i]);
        if (f.size() != header.size())
            bad(name, line, std::to_string(f.size()) + " fields where the header has " + std::to_string(header.size()) +
                                (i + 1 == lines.size() ? " (the file was cut off?)" : ""));
        const auto num = [&](int c, bool empty_ok) -> std::optional<double> {
            const std::string_view s = f[static_cast<std::size_t>(at[c])];
            if (s.empty()) {
                if (empty_ok) return std::nullopt;
                bad(name, line, std::string(k_columns[c]) + " is empty");
            }
            const auto v = number(s);
            if (!v) bad(name, line, std::string(k_columns[c]) + " " + quoted_text(s) + " is not a number");
            return v;
        };
        const auto flag = [&](int c) {
            const std::string_view s = f[static_cast<std::size_t>(at[c])];
            if (s != "0" && s != "1") bad(name, line, std::string(k_columns[c]) + " must be 0 or 1, got " + quoted_text(s));
            return s == "1";
        };
        TraceStep s;
        const double step = *num(c_step, false);
        if (!(step >= 0.0) || step != std::floor(step) || step > 9e15)
            bad(name, line, "step must be a whole number >= 0");
        s.step = static_cast<long long>(step);
        if (!t.steps.empty() && s.step <= t.steps.back().step)
            bad(name, line, "step " + std::to_string(s.step) + " comes after step " + std::to_string(t.steps.back().step) +
                                ": steps must increase");
        s.scale = *num(c_scale, false);
        if (!(s.scale > 0.0) || !std::isfinite(s.scale)) bad(name, line, "scale must be a finite number > 0");
        s.found_inf = flag(c_found_inf);
        s.skipped = flag(c_skipped);
        s.censored = flag(c_censored);
        s.loss = *num(c_loss, false);
        s.amax = num(c_amax, !t.amax_known).value_or(0.0);
        if (!std::isfinite(s.amax) || s.amax < 0.0)
            bad(name, line, "amax must be a finite number >= 0 (the largest finite |gradient|), got " + format_number(s.amax));
        s.amax_site = std::string(f[static_cast<std::size_t>(at[c_amax_site])]);
        const double fwd = *num(c_fwd, false);
        if (!(fwd >= 0.0) || fwd != std::floor(fwd) || fwd > 9e15) bad(name, line, "forward_nonfinite must be a count >= 0");
        s.forward_nonfinite = static_cast<long long>(fwd);
        s.forward_site = std::string(f[static_cast<std::size_t>(at[c_fwd_site])]);
        s.grad_norm = num(c_grad_norm, true);
        s.lr = num(c_lr, true);
        t.steps.push_back(std::move(s));
    }
    return t;
}

unsigned long long TraceHistogram::nonzero() const {
    unsigned long long n = 0;
    for (unsigned long long c : bins) n += c;  // fits: a file's counts add up to at most 2^64 - 1
    return n;
}

std::optional<double> TraceHistogram::flushed_share(double at_scale) const {
    // Summed in double in one order, the flushed bins a subset of the non-zero ones: the share lies
    // in [0, 1] whatever the counts (rounding is monotone), where integer sums could wrap.
    double n = 0.0, flushed = 0.0;
    const double shift = std::log2(at_scale / scale);
    for (int b = 0; b < 128; ++b) {
        const double c = static_cast<double>(bins[b]);
        n += c;
        if (static_cast<double>(b - 64) + shift + 1.0 <= -25.0) flushed += c;  // the whole bin <= 2^-25
    }
    if (n == 0.0) return std::nullopt;
    return flushed / n;
}

void parse_trace_histograms(Trace& trace, std::string_view text, const std::string& name) {
    std::map<long long, std::size_t> step_at;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) step_at[trace.steps[i].step] = i;
    std::map<long long, TraceHistogram> by_step;
    std::vector<std::string> sites;
    std::map<std::string, int> site_at;
    int line_no = 0;
    bool header = false;
    unsigned long long total = 0;  // every count of the file so far
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        if (!header) {
            if (line != "run,step,layer,tensor,bin_log2,count")
                bad(name, line_no, "not the recorder's histograms (header run,step,layer,tensor,bin_log2,count)");
            header = true;
            continue;
        }
        const auto f = fields(line);
        if (f.size() != 6) bad(name, line_no, std::to_string(f.size()) + " fields where the header has 6");
        const auto step = number(f[1]);
        if (!step || *step != std::floor(*step) || std::fabs(*step) > 9e15 || !step_at.count(static_cast<long long>(*step)))
            bad(name, line_no, "step " + quoted_text(f[1]) + " is not a step of " + plain_or_quoted(trace.name));
        const auto count = number(f[5]);
        if (!count || !(*count >= 0.0) || *count != std::floor(*count) || *count > 1e18)
            bad(name, line_no, "count " + quoted_text(f[5]) + " is not a whole number >= 0");
        if (f[3] != "grad_output") continue;
        const long long s = static_cast<long long>(*step);
        TraceHistogram& h = by_step[s];
        h.step = s;
        h.scale = trace.steps[step_at[s]].scale;
        const std::string site(f[2]);
        const auto [at, fresh] = site_at.try_emplace(site, static_cast<int>(sites.size()));
        if (fresh) sites.push_back(site);
        const int index = at->second;  // a name, not the binding: clang does not capture bindings
        core::Bins* per = nullptr;  // this module's, where it is one of the first k_trace_max_sites
        if (index < k_trace_max_sites) {
            auto it = std::find_if(h.sites.begin(), h.sites.end(), [index](const auto& p) { return p.first == index; });
            if (it == h.sites.end()) it = h.sites.insert(h.sites.end(), {index, core::Bins{}});
            per = &it->second;
        }
        int slot = 0;
        if (f[4] == "zero") slot = core::k_slot_zero;
        else if (f[4] == "inf") slot = core::k_slot_inf;
        else if (f[4] == "nan") slot = core::k_slot_nan;
        else {
            const auto b = number(f[4]);
            if (!b || *b != std::floor(*b) || *b < core::k_bin_min || *b > core::k_bin_max)
                bad(name, line_no, "bin_log2 " + quoted_text(f[4]) + " is not a whole number from -64 to 63, zero, inf or nan");
            slot = static_cast<int>(*b) - core::k_bin_min;
        }
        const auto c = static_cast<unsigned long long>(*count);
        // Every sum of the file's counts (a step's, a module's, all steps') fits in 64 bits when
        // their total does: checked once here, so no reader's sum can wrap into a share above 1.
        if (__builtin_add_overflow(total, c, &total))
            bad(name, line_no, "the counts add up past 2^64 - 1 (18446744073709551615) with count " + quoted_text(f[5]) +
                                   "; a count is the number of one module's gradient values in a bin");
        if (slot == core::k_slot_zero) h.zeros += c;
        else if (slot == core::k_slot_inf || slot == core::k_slot_nan) h.nonfinite += c;
        else h.bins[slot] += c;
        if (per) per->n[slot] += c;
    }
    if (!header) bad(name, 1, "empty: no header row");
    trace.histograms.clear();
    for (auto& [s, h] : by_step) trace.histograms.push_back(h);
    trace.sites = std::move(sites);
}

std::filesystem::path trace_histograms_path(const std::filesystem::path& trace) {
    if (trace.empty()) return {};
    std::filesystem::path hist = trace;
    hist.replace_extension();
    return hist += ".histograms.csv";
}

Trace read_trace(const std::filesystem::path& path) {
    Trace t = parse_trace(read_input_file(path, "the trace", std::size_t{1} << 30), path.string());
    const std::filesystem::path hist = trace_histograms_path(path);
    std::error_code ec;
    if (std::filesystem::exists(hist, ec))
        parse_trace_histograms(t, read_input_file(hist, "the trace's histograms", std::size_t{1} << 30), hist.string());
    return t;
}

ReplayResult replay_trace(const Trace& trace, const ScalerConfig& scaler, double max_finite) {
    ReplayResult r;
    LossScaler ls(scaler);
    std::vector<double> headrooms, underflows;
    std::size_t next_hist = 0;
    for (const TraceStep& rec : trace.steps) {
        ReplayStep s;
        s.step = rec.step;
        s.scale = ls.scale();
        s.forward_overflow = forward_overflow_poisoned(rec);
        // A censored step overflowed at the recorded scale, so at any scale at least as large; below
        // it, only its lower bound is known.
        const bool over_recorded = rec.censored && s.scale >= rec.scale;
        s.uncertain = (rec.censored && !over_recorded) || (!trace.amax_known && !rec.censored && s.scale > rec.scale);
        s.found_inf = s.forward_overflow || over_recorded || (trace.amax_known && rec.amax * s.scale > max_finite);
        if (trace.amax_known && rec.amax > 0.0) {
            s.headroom_log2 = std::log2(max_finite / (rec.amax * s.scale));
            if (!rec.censored) headrooms.push_back(*s.headroom_log2);
        }
        while (next_hist < trace.histograms.size() && trace.histograms[next_hist].step < rec.step) ++next_hist;
        if (next_hist < trace.histograms.size() && trace.histograms[next_hist].step == rec.step) {
            s.underflow_share = trace.histograms[next_hist].flushed_share(s.scale);
            if (s.underflow_share) underflows.push_back(*s.underflow_share);
        }
        s.skipped = s.found_inf && ls.skips_on_inf();
        try {
            s.event = ls.update(s.found_inf).event;
        } catch (const ScalerAtMinimumError&) {
            r.stopped_at = rec.step;
            r.steps.push_back(s);
            break;
        }
        r.skipped += s.skipped;
        r.recorded_skipped += rec.skipped;
        r.identical += s.found_inf == rec.found_inf;
        r.steps.push_back(s);
    }
    r.final_scale = ls.scale();
    // The verdict: a forward overflow that reached the loss or gradients first (no scale helps),
    // then a rule that stopped, then the counts; forward inf/NaN that stopped short is said after them.
    const long long n = static_cast<long long>(r.steps.size());
    std::vector<long long> poisoned, undecided, harmless;  // undecided: among poisoned, a finite loss
    const TraceStep* first_poisoned = nullptr;
    const TraceStep* first_harmless = nullptr;
    for (const TraceStep& s : trace.steps) {
        if (s.forward_nonfinite == 0) continue;
        const bool p = forward_overflow_poisoned(s);
        (p ? poisoned : harmless).push_back(s.step);
        if (p && std::isfinite(s.loss)) undecided.push_back(s.step);
        const TraceStep*& first = p ? first_poisoned : first_harmless;
        if (!first) first = &s;
    }
    std::string harmless_note;
    if (first_harmless)
        harmless_note = "; inf/NaN in the forward pass at `" + first_harmless->forward_site + "` on " +
                        std::to_string(harmless.size()) + " step(s) (" + step_ranges(harmless) +
                        ") never reached the loss or gradients (finite there): those steps are replayed by their amax";
    if (first_poisoned) {
        std::string detail;
        if (!undecided.empty())
            detail = "; of them " + std::to_string(undecided.size()) + " with a finite loss (" + step_ranges(undecided) +
                     ") may have overflowed by the scale instead: record with reprobe= to tell";
        r.verdict = forward_overflow_verdict("`" + first_poisoned->forward_site + "`", poisoned,
                                             static_cast<long long>(trace.steps.size()), detail,
                                             "run this layer in FP32 or train in BF16");
        if (r.stopped_at) r.verdict += "; the rule stops training at step " + std::to_string(*r.stopped_at) +
                                       " (an overflow with the scale at its minimum)";
        else if (!r.steps.empty())
            r.verdict += "; the scale falls to " + format_number(r.steps.back().scale) + " by the last step";
        r.verdict += harmless_note;
        return r;
    }
    if (r.stopped_at) {
        r.verdict = "the scale reached its minimum and an overflow at step " + std::to_string(*r.stopped_at) +
                    " stops training (the rule raises there)" + harmless_note;
        return r;
    }
    std::string v = std::to_string(r.skipped) + " of " + std::to_string(n) + " steps skipped (recorded: " +
                    std::to_string(r.recorded_skipped) + ")";
    if (!r.steps.empty())
        v += "; the scale goes from " + format_number(r.steps.front().scale) + " to " + format_number(r.steps.back().scale);
    if (!headrooms.empty()) {
        std::nth_element(headrooms.begin(), headrooms.begin() + static_cast<std::ptrdiff_t>(headrooms.size() / 2), headrooms.end());
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", headrooms[headrooms.size() / 2]);
        v += std::string("; median headroom ") + buf + " bits below FP16's largest value";
    }
    if (!underflows.empty()) {
        double sum = 0.0;
        for (double u : underflows) sum += u;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2g", 100.0 * sum / static_cast<double>(underflows.size()));
        v += std::string("; about ") + buf + " % of the output gradients flush to zero (mean over the " +
             std::to_string(underflows.size()) + " steps with histograms)";
    }
    r.verdict = v + harmless_note;
    return r;
}

std::string trace_csv(const Trace& trace) {
    std::string out = std::string("# mpx-trace 1; ") + (trace.amax_known ? "written by mpx" : "amax unknown") + "\n";
    out += "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n";
    for (const TraceStep& s : trace.steps)
        out += std::to_string(s.step) + "," + format_number(s.scale) + "," + (s.found_inf ? "1" : "0") + "," +
               (s.skipped ? "1" : "0") + "," + format_number(s.loss) + "," + (trace.amax_known ? format_number(s.amax) : "") +
               "," + s.amax_site + "," + (s.censored ? "1" : "0") + "," + std::to_string(s.forward_nonfinite) + "," +
               s.forward_site + "," + (s.grad_norm ? format_number(*s.grad_norm) : "") + "," +
               (s.lr ? format_number(*s.lr) : "") + "\n";
    return out;
}

std::string replay_csv(const Trace& trace, const ReplayResult& result) {
    std::map<long long, const TraceStep*> recorded;
    for (const TraceStep& s : trace.steps) recorded[s.step] = &s;
    std::string out = "step,scale,found_inf,skipped,scale_event,headroom_log2,forward_overflow,uncertain,recorded_scale,"
                      "recorded_found_inf,underflow_share\n";
    for (const ReplayStep& s : result.steps) {
        const TraceStep& rec = *recorded.at(s.step);
        out += std::to_string(s.step) + "," + format_number(s.scale) + "," + (s.found_inf ? "1" : "0") + "," +
               (s.skipped ? "1" : "0") + "," + std::string(to_string(s.event)) + "," +
               (s.headroom_log2 ? format_number(*s.headroom_log2) : "") + "," + (s.forward_overflow ? "1" : "0") + "," +
               (s.uncertain ? "1" : "0") + "," + format_number(rec.scale) + "," + (rec.found_inf ? "1" : "0") + "," +
               (s.underflow_share ? format_number(*s.underflow_share) : "") + "\n";
    }
    return out;
}

}  // namespace mpx
