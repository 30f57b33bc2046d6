// A loss-scaling trace recorded from a user's own PyTorch training (resources/torch/mpx_trace.py),
// and any scaler rule replayed over it (`mpx-cli replay`). Why a replay is valid, and its limits
// (docs/trace.md): for a power-of-two scale, multiplying by 2^k commutes with FP16 rounding in the
// normal range, so a step's stored gradients at scale S are exactly S/S0 times those recorded at S0,
// and "the step overflows at S iff amax · S > max finite" holds exactly for the recorded weights; a
// skipped step changes later weights, so a replay is exact per step and approximate over a run. A
// forward overflow happens at every scale. A step that overflowed while recording hides its amax
// (censored): only a lower bound is known. A forward overflow overflows every scale only where it
// reached the loss or the gradients (forward_overflow_poisoned); one that a later op removed (a ReLU
// turns -inf to 0) leaves the step to its amax like any other.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/format_core.hpp"
#include "engine/scaler/scaler.hpp"

namespace mpx {

// The recorder, resources/torch/mpx_trace.py as shipped (`mpx-cli trace --script`).
std::string_view trace_recorder_script();

struct TraceStep {
    long long step = 0;
    double scale = 1.0;            // the scale the recorded step's loss was multiplied by
    bool found_inf = false, skipped = false;
    double loss = 0.0;
    double amax = 0.0;             // largest |gradient| unscaled (a lower bound where censored)
    std::string amax_site;
    bool censored = false;         // the step overflowed while recording
    long long forward_nonfinite = 0;
    std::string forward_site;      // the first module whose output held inf/NaN
    std::optional<double> grad_norm, lr;
};

// Whether a step's forward inf/NaN reached its loss or gradients, so that it overflows at every scale:
// the loss is not finite, or the gradients were not and the step is censored (the recorder's reprobe
// found no lower scale that clears them, or none was tried: the trace cannot tell a scale's overflow
// from the forward's, and takes the forward's). With a finite loss and finite gradients at the
// recorded scale (found_inf 0), or gradients a lower scale cleared (censored 0), the inf stopped short.
bool forward_overflow_poisoned(const TraceStep& s);

// The module output gradients of one recorded step, all sites together, as log2 histograms of the
// values stored at the recorded scale (bin b: 2^b <= |x| < 2^(b+1), b from -64 to 63).
// The modules a trace keeps histograms of one by one (1 KiB a module and histogram step; the
// app's views hold a layer index in a byte).
inline constexpr int k_trace_max_sites = 255;

struct TraceHistogram {
    long long step = 0;
    double scale = 1.0;  // the recorded step's
    unsigned long long bins[128] = {};
    unsigned long long zeros = 0, nonfinite = 0;
    // The same values site by site (Trace::sites[i] for the pair (i, bins)), in core::Bins' slots
    // (log2 bins from k_bin_min, then zero, inf, NaN): what the app's Range and Where views read.
    // The first k_trace_max_sites modules only (the totals above count every one).
    std::vector<std::pair<int, core::Bins>> sites;
    unsigned long long nonzero() const;
    // The share of the non-zero values that a step at `scale` would flush to zero in FP16: whole bins
    // at or below 2^-25 after the shift by log2(scale / this->scale); none without non-zero values.
    std::optional<double> flushed_share(double scale) const;
};

// The most steps a trace holds: eight times a long Megatron run's iterations. A step takes about
// k_trace_step_bytes while a trace is read, rebuilt or replayed; fewer steps are allowed where half
// the memory this process may use holds fewer (engine/base/memory_budget.hpp). Every reader and
// rebuilder refuses more before building them, naming the file and line.
inline constexpr std::uint64_t k_max_trace_steps = std::uint64_t{1} << 22;
inline constexpr std::uint64_t k_trace_step_bytes = 384;

struct Trace {
    std::string name;  // the file, as messages call it
    std::vector<TraceStep> steps;
    std::vector<TraceHistogram> histograms;  // by step; from <trace>.histograms.csv where it exists
    std::vector<std::string> sites;          // the histograms' modules, in the order they first appear
    // False for a trace rebuilt from a framework's log (trace_from_deepspeed_log): only the
    // overflow decisions at the recorded scales are known, no amax (its first line says
    // "amax unknown"; the amax cells are empty). A replay then knows a step overflows at or above
    // its recorded scale if it overflowed there, and is clean at or below it if it was clean; other
    // predictions are marked uncertain (and assumed clean).
    bool amax_known = true;
};

// The trace's text (its first line "# mpx-trace 1; ..."): ConfigError naming name:line for a foreign
// or truncated file, a missing column, a row of the wrong width, a non-number, a step out of order,
// a non-finite or negative amax or scale, a step without an amax.
Trace parse_trace(std::string_view text, const std::string& name);
// Also reads <stem>.histograms.csv beside it, where there is one (read_trace_histograms).
Trace read_trace(const std::filesystem::path& path);
// That file: <stem>.histograms.csv beside the trace (an input too, which no output may replace).
std::filesystem::path trace_histograms_path(const std::filesystem::path& trace);
// The recorder's histograms (run, step, layer, tensor, bin_log2, count; tensor grad_output) into
// trace.histograms. ConfigError naming name:line for a malformed row, a step the trace does not hold,
// a bin outside -64..63 (or zero, inf, nan), a count that is not a whole number, or counts that add up
// past 2^64 - 1 (so no sum of them wraps; a share is always in [0, 1]).
void parse_trace_histograms(Trace& trace, std::string_view text, const std::string& name);
// A trace as text, in the recorder's format (a log-derived trace says "amax unknown").
std::string trace_csv(const Trace& trace);

// A DeepSpeed training log (steps_per_print = 1; "log_level": "info" from DeepSpeed 0.17.6) as a
// trace: each step's progress line ("step=N, skipped=K, ...") says whether it was skipped, and every
// overflow, whether it backed off or only spent hysteresis, has its own "... OVERFLOW! ... Attempted
// loss scale: S" line before it (or the FP16 optimizer's "... overflow! Skipping step. Attempted loss
// scale: S" without ZeRO). The engine's start-up report, "step=0, skipped=0" when it is built, is not
// a step; DeepSpeed's step=N is the trace's step N - 1. Every FP16 overflow skips its step in
// DeepSpeed, so found_inf is exact. The scale of clean steps is not logged: it is rebuilt by running
// `scaler` (the run's own settings: the deepspeed preset with its init_scale, hysteresis, window) over
// those decisions, and every logged attempted scale must equal the rebuilt one as DeepSpeed prints it
// (ZeRO's int(scale), 0 below 1; else ConfigError naming the line and both values: the settings are
// not the run's). ConfigError naming name:line for a log that cannot be read so: a second start-up
// line, a first step other than step=1 (a resumed run), a step missing.
Trace trace_from_deepspeed_log(std::string_view text, const std::string& name, const ScalerConfig& scaler);

// A Megatron-LM training log as a trace: each "iteration N/M | ... | loss scale: S | ... | number of
// skipped iterations: K |" line covers the iterations since the previous one (log_interval). Every
// FP16 overflow skips its iteration in Megatron, so where K is 0 or the whole interval, found_inf is
// exact for each of them; an interval with some but not all skipped does not say which, and is
// refused (ConfigError naming the line: set --log-interval 1). The logged scale is the scale after
// the line's last iteration (optimizer.get_loss_scale() after train_step); the scales are rebuilt by
// running `scaler` (the megatron preset with the run's settings: --initial-loss-scale,
// --hysteresis, --loss-scale-window, --min-loss-scale) over the decisions, and every logged scale
// must equal the rebuilt one (else ConfigError naming the line and both values). A log without
// "loss scale:" (a BF16 run) or without iteration lines is refused, naming the file.
Trace trace_from_megatron_log(std::string_view text, const std::string& name, const ScalerConfig& scaler);

struct ReplayStep {
    long long step = 0;
    double scale = 1.0;
    bool found_inf = false, skipped = false;
    ScaleEvent event = ScaleEvent::none;
    std::optional<double> headroom_log2;  // log2(max finite / (amax · scale)); none for a zero amax
    bool forward_overflow = false;        // forward inf/NaN that reached the loss or gradients: at every scale
    // Censored and replayed below the recorded scale: the prediction used the amax's lower bound.
    bool uncertain = false;
    // On steps with histograms: the share of the recorded non-zero output gradients that this scale
    // would flush to zero in FP16 (whole bins at or below 2^-25 after the shift by log2(scale /
    // recorded scale)). A first-order estimate: each layer's recorded values are shifted alone, while
    // in a real pass what is computed from a flushed or subnormal gradient changes too (measured
    // within 1 point, docs/trace.md); values recorded as zero are not counted.
    std::optional<double> underflow_share;
};

struct ReplayResult {
    std::vector<ReplayStep> steps;
    long long skipped = 0, recorded_skipped = 0, identical = 0;  // identical: found_inf as recorded
    std::optional<long long> stopped_at;  // at_min = error refused an overflow at the minimum here
    double final_scale = 1.0;             // the scale after the last step's update
    std::string verdict;                  // one line for a person (replay_verdict)
};

// The rule of `scaler` over every step of the trace, FP16's largest finite value (65504) the limit
// unless `max_finite` says otherwise.
ReplayResult replay_trace(const Trace& trace, const ScalerConfig& scaler, double max_finite = 65504.0);

// The replay as CSV: step, scale, found_inf, skipped, scale_event, headroom_log2, forward_overflow,
// uncertain, recorded_scale, recorded_found_inf, underflow_share.
std::string replay_csv(const Trace& trace, const ReplayResult& result);

}  // namespace mpx
