// A trace from a DeepSpeed or Megatron training log (engine/io/trace.hpp): the lines those tools
// really write, read into the trace's steps; the scaler rule of the run is the user's.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "engine/base/error.hpp"
#include "engine/base/memory_budget.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/io/trace.hpp"
#include "engine/io/trace_text.hpp"

namespace mpx {

using trace_detail::bad;
using trace_detail::number;
using trace_detail::StepBudget;

Trace trace_from_deepspeed_log(std::string_view text, const std::string& name, const ScalerConfig& scaler) {
    Trace t;
    t.name = name;
    t.amax_known = false;
    struct Overflow {
        int line = 0;
        double attempted = 0.0;
        bool truncated = false;  // logged as int(scale) (DynamicLossScaler): 0 for a scale below 1
    };
    std::vector<Overflow> overflows;             // since the last progress line
    std::vector<Overflow> step_overflow;         // per trace step (line 0: none)
    long long last_skipped = -1, last_step = -1;  // DeepSpeed's count: step=N after N steps
    int line_no = 0, startup_line = 0;
    const StepBudget budget;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        // The overflow lines, one per overflow, before the step's progress line: ZeRO's
        // DynamicLossScaler.update_scale ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss
        // scale: 65536, reducing to 32768" or "..., but hysteresis is 2. Reducing hysteresis to 1";
        // int(scale)), and the FP16 optimizers without ZeRO ("[deepspeed] fp16 dynamic loss scale
        // overflow! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0"; "Overflow
        // detected. Skipping step. Attempted loss scale: ..."), deepspeed/runtime/fp16/.
        const bool overflow_line = line.find("Skipping step") != std::string_view::npos &&
                                   (line.find("OVERFLOW!") != std::string_view::npos ||
                                    line.find("overflow! Skipping step") != std::string_view::npos ||
                                    line.find("Overflow detected. Skipping step") != std::string_view::npos);
        if (overflow_line) {
            const std::string_view key = "Attempted loss scale: ";
            const auto at = line.find(key);
            if (at == std::string_view::npos)
                bad(name, line_no, "an OVERFLOW line without 'Attempted loss scale: S' (a BF16 run logs no scale: it has none)");
            std::string_view rest = line.substr(at + key.size());
            rest = rest.substr(0, rest.find_first_of(", \r"));
            const auto v = number(rest);
            const bool truncated = rest.find_first_not_of("0123456789") == std::string_view::npos;
            if (!v || !std::isfinite(*v) || !(*v > 0.0 || (truncated && *v == 0.0)))
                bad(name, line_no, "the attempted loss scale " + quoted_text(rest) + " is not a number > 0");
            overflows.push_back({line_no, *v, truncated});
            continue;
        }
        // The engine's progress line, "[Rank 0] step=N, skipped=K, lr=[...], mom=[...]"
        // (DeepSpeedEngine._report_progress, at info level): "step=" as a word, so the throughput
        // line's "global_step=" is not one.
        std::size_t sp = line.find("step=");
        while (sp != std::string_view::npos && sp > 0 && (std::isalnum(static_cast<unsigned char>(line[sp - 1])) || line[sp - 1] == '_'))
            sp = line.find("step=", sp + 1);
        const auto sk = sp == std::string_view::npos ? sp : line.find("skipped=", sp);
        if (sp == std::string_view::npos || sk == std::string_view::npos) continue;
        const auto whole = [&](std::size_t at, std::string_view what) {
            std::string_view digits = line.substr(at);
            digits = digits.substr(0, digits.find_first_not_of("0123456789"));
            const auto v = number(digits);
            if (digits.empty() || !v) bad(name, line_no, std::string(what) + " is not a whole number");
            if (*v > 9e15) bad(name, line_no, std::string(what) + " " + std::string(digits) + " is too large for a step count");
            return static_cast<long long>(*v);
        };
        const long long step = whole(sp + 5, "step="), skipped = whole(sk + 8, "skipped=");
        // The engine reports progress once when it is built (_report_progress(0) after configuring the
        // optimizer, since DeepSpeed 0.3.0): "step=0, skipped=0" is the start, not a training step.
        if (step == 0) {
            if (last_step >= 0 || startup_line)
                bad(name, line_no, (startup_line ? "a second start-up line step=0 (the first is line " + std::to_string(startup_line) + ")"
                                                 : "a start-up line step=0 after step=" + std::to_string(last_step)) +
                                       ": the log holds more than one run (a restart?); give the log of one run");
            if (skipped != 0 || !overflows.empty())
                bad(name, line_no, "the start-up line step=0 with skipped=" + std::to_string(skipped) + " after " +
                                       std::to_string(overflows.size()) + " OVERFLOW line(s): DeepSpeed starts at skipped=0");
            startup_line = line_no;
            continue;
        }
        if (last_step < 0 && step != 1)
            bad(name, line_no, "the log's first step is step=" + std::to_string(step) +
                                   ": a trace is rebuilt from a run's first step (step=1); a resumed run's scaler "
                                   "state is in its checkpoint, not in the log");
        if (last_step >= 0 && step != last_step + 1)
            bad(name, line_no, "step " + std::to_string(step) + " follows step " + std::to_string(last_step) +
                                   ": a trace needs every step's progress line (DeepSpeed's steps_per_print = 1)");
        const long long rose = last_skipped < 0 ? skipped : skipped - last_skipped;
        if (rose < 0 || rose > 1 || static_cast<long long>(overflows.size()) != rose)
            bad(name, line_no, "skipped=" + std::to_string(skipped) + " after " + std::to_string(std::max(0LL, last_skipped)) +
                                   " with " + std::to_string(overflows.size()) +
                                   " OVERFLOW line(s) before it: each step skips at most once, after one OVERFLOW line");
        budget.check(t.steps.size() + 1, name, line_no);
        TraceStep s;
        s.step = step - 1;  // 0-based, as mpx counts steps: DeepSpeed's step=N is the N-th
        s.found_inf = s.skipped = s.censored = rose == 1;
        s.loss = std::nan("");
        t.steps.push_back(s);
        step_overflow.push_back(rose == 1 ? overflows.front() : Overflow{});
        overflows.clear();
        last_step = step;
        last_skipped = skipped;
    }
    if (t.steps.empty())
        bad(name, line_no, "no progress lines ('step=N, skipped=K, ...'): set steps_per_print to 1 in the DeepSpeed config, "
                           "and \"log_level\": \"info\" from DeepSpeed 0.17.6 (its logger shows only warnings by default)");
    // The clean steps' scales, from the run's rule; each logged attempted scale must agree.
    LossScaler ls(scaler);
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        TraceStep& s = t.steps[i];
        const Overflow& o = step_overflow[i];
        const double logged_as = o.truncated ? std::trunc(ls.scale()) : ls.scale();
        if (s.found_inf && logged_as != o.attempted)
            bad(name, o.line, "the log attempted loss scale " + format_number(o.attempted) + " at step=" +
                                  std::to_string(s.step + 1) + " where the " + scaler.preset + " rule with these settings has " +
                                  format_number(ls.scale()) +
                                  ": give the run's own settings (--set scaler.init_scale=..., "
                                  "scaler.hysteresis=..., scaler.growth_interval=...)");
        s.scale = ls.scale();
        try {
            (void)ls.update(s.found_inf);
        } catch (const ScalerAtMinimumError&) {
            if (i + 1 != t.steps.size())
                bad(name, o.line, "the rule stops training at step=" + std::to_string(s.step + 1) +
                                      " (scale at its minimum), yet the log goes on");
        }
    }
    return t;
}

Trace trace_from_megatron_log(std::string_view text, const std::string& name, const ScalerConfig& scaler) {
    Trace t;
    t.name = name;
    t.amax_known = false;
    struct Logged {
        int line;
        long long last;  // the line's last iteration (1-based, as Megatron counts)
        double scale;    // after it
    };
    std::vector<Logged> logged;
    long long last_iteration = 0;
    int line_no = 0;
    const StepBudget budget;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        const auto it = line.find(" iteration ");
        const auto sk = line.find("number of skipped iterations:");
        if (it == std::string_view::npos || sk == std::string_view::npos) continue;
        const auto whole = [&](std::string_view from, std::string_view what) {
            const auto first = from.find_first_not_of(' ');
            std::string_view digits = first == std::string_view::npos ? std::string_view{} : from.substr(first);
            digits = digits.substr(0, digits.find_first_not_of("0123456789"));
            const auto v = number(digits);
            if (digits.empty() || !v) bad(name, line_no, std::string(what) + " is not a whole number");
            if (*v > 9e15) bad(name, line_no, std::string(what) + " " + std::string(digits) + " is too large for a step count");
            return static_cast<long long>(*v);
        };
        const long long iteration = whole(line.substr(it + 11), "the iteration");
        const long long skipped = whole(line.substr(sk + 29), "the number of skipped iterations");
        const auto ls = line.find("loss scale:");
        if (ls == std::string_view::npos)
            bad(name, line_no, "an iteration line without 'loss scale: S' (a BF16 run logs none: it has no loss scale)");
        std::string_view rest = line.substr(ls + 11);
        rest = rest.substr(rest.find_first_not_of(' ') == std::string_view::npos ? rest.size() : rest.find_first_not_of(' '));
        rest = rest.substr(0, rest.find_first_of(" |\r"));
        const auto scale = number(rest);
        if (!scale || !(*scale > 0.0) || !std::isfinite(*scale))
            bad(name, line_no, "the loss scale " + quoted_text(rest) + " is not a number > 0");
        if (iteration <= last_iteration)
            bad(name, line_no, "iteration " + std::to_string(iteration) + " follows iteration " +
                                   std::to_string(last_iteration) + ": a trace needs the lines in training order");
        const long long span = iteration - last_iteration;  // the iterations this line covers
        if (skipped < 0 || skipped > span)
            bad(name, line_no, std::to_string(skipped) + " skipped iterations in a line that covers " + std::to_string(span));
        if (skipped != 0 && skipped != span)
            bad(name, line_no, std::to_string(skipped) + " of the " + std::to_string(span) +
                                   " iterations since the last line were skipped, and the log does not say which: "
                                   "train with --log-interval 1 for a trace");
        budget.check(t.steps.size() + static_cast<std::uint64_t>(span), name, line_no);  // a line may claim millions
        for (long long k = last_iteration; k < iteration; ++k) {
            TraceStep s;
            s.step = k;  // 0-based, as mpx counts steps
            s.found_inf = s.skipped = s.censored = skipped != 0;
            s.loss = std::nan("");
            t.steps.push_back(s);
        }
        logged.push_back({line_no, iteration, *scale});
        last_iteration = iteration;
    }
    if (t.steps.empty())
        bad(name, line_no, "no iteration lines ('iteration N/M | ... | loss scale: S | ... | number of skipped "
                           "iterations: K |'): is this a Megatron-LM training log?");
    LossScaler ls(scaler);
    std::size_t next = 0;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
        TraceStep& s = t.steps[i];
        s.scale = ls.scale();
        try {
            (void)ls.update(s.found_inf);
        } catch (const ScalerAtMinimumError&) {
            if (i + 1 != t.steps.size())
                bad(name, logged[next].line, "the rule stops training at iteration " + std::to_string(s.step + 1) +
                                                 " (scale at its minimum), yet the log goes on");
        }
        if (next < logged.size() && s.step + 1 == logged[next].last) {
            if (ls.scale() != logged[next].scale)
                bad(name, logged[next].line, "the log has loss scale " + format_number(logged[next].scale) +
                                                 " after iteration " + std::to_string(logged[next].last) + " where the " +
                                                 scaler.preset + " rule with these settings has " + format_number(ls.scale()) +
                                                 ": give the run's own settings (--set scaler.init_scale=..., "
                                                 "scaler.hysteresis=..., scaler.growth_interval=...)");
            ++next;
        }
    }
    return t;
}

}  // namespace mpx
