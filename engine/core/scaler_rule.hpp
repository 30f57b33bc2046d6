// The loss scaler's one update rule on plain data, compiled for the CPU and the GPU alike
// (REFERENCE.md, "Loss-scaler rules"): LossScaler (engine/scaler/scaler.hpp) runs it on the host, and both
// backends run it as their scaler_update op on the state they hold, so a run's scale never has to
// come back to the host between ops. Rule: this is the only copy of the rule. A framework
// difference is a field of ScalerRule, never a branch on a preset's name; nothing here throws or
// allocates (an overflow that must back off a scale already at its minimum under at_min = error
// is reported, with the state left untouched, and the host throws).
#pragma once

#include <cstdint>

#include "engine/core/host_device.hpp"

namespace mpx {

enum class ScalerKind { none, fixed, dynamic };  // text: "none", "static", "dynamic"
// When a spent hysteresis counter is refilled: on every clean step (NeMo, DeepSpeed with
// consecutive_hysteresis) or only when the scale grows (DeepSpeed default, Megatron).
enum class HysteresisReset { on_clean_step, on_growth };
// How clean steps are counted towards growth. consecutive: a tracker reset by every overflow and
// growth (PyTorch, Megatron, ...). since_last_overflow: DeepSpeed <= 0.17.0's
// (iteration - last_overflow_iteration) % interval == 0, the same scale as consecutive (it differs in
// what is stored, and so in what a restored or reconfigured run does). stable_interval: DeepSpeed
// >= 0.17.1's stable = iteration - last_overflow_iteration - 1, growth when stable > 0 and
// stable % interval == 0: after an overflow, and from the first step, the first growth waits
// interval + 1 clean steps; later ones come every interval steps.
enum class GrowthCount { consecutive, since_last_overflow, stable_interval };
enum class AtMin { clamp, error };  // backing off at min_scale: stay there, or throw (DeepSpeed)
// Whether the scale is a float32 tensor (PyTorch, Megatron, Keras, NeMo: every result is rounded to
// FP32) or a Python float (Apex, DeepSpeed: double).
enum class ScaleStorage { fp32, fp64 };
// A growth whose result is not finite: applied (Keras 3, Megatron grow to inf) or refused, with the
// tracker still reset (PyTorch's kernel, NeMo, legacy tf.keras).
enum class NonFiniteGrowth { apply, refuse };
// How an overflow spends the hysteresis counter H. stop_at_one (DeepSpeed): back off when H == 1,
// otherwise H -= 1, so H never drops below 1. always (Megatron, NeMo): H -= 1, back off when H <= 0,
// so H keeps falling on repeated overflows until it is refilled. The scale is the same either way.
enum class HysteresisDecrement { stop_at_one, always };
enum class ScaleEvent { none, grow, backoff, hysteresis };

// The settings the rule reads, with the defaults of a dynamic scaler as PyTorch's GradScaler sets
// them. Rule: the one list of the scaler's settings: ScalerConfig (engine/scaler/scaler.hpp) is this
// plus the name of the preset it started from, so a backend runs the configuration itself, never a
// copy of it. validate() has checked the values. A backend that was given none runs no_scaler().
struct ScalerRule {
    ScalerKind kind = ScalerKind::dynamic;
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int growth_interval = 2000;
    double min_scale = 0.0;                    // 0 = none
    double max_scale = __builtin_huge_val();   // +inf = none (a builtin: g++ and nvcc, host and device)
    int hysteresis = 1;                        // >= 1; 1 = none
    HysteresisReset hysteresis_reset = HysteresisReset::on_growth;
    GrowthCount growth_count = GrowthCount::consecutive;
    AtMin at_min = AtMin::clamp;
    ScaleStorage scale_storage = ScaleStorage::fp32;
    NonFiniteGrowth non_finite_growth = NonFiniteGrowth::refuse;
    HysteresisDecrement hysteresis_decrement = HysteresisDecrement::stop_at_one;

    bool operator==(const ScalerRule&) const = default;
};

struct ScalerState {
    double scale = 1.0;
    int growth_tracker = 0;               // clean steps counted towards the next growth
    int hysteresis_left = 1;              // H; may be <= 0 with HysteresisDecrement::always
    long long iteration = 0;              // updates so far
    long long last_overflow_iteration = -1;  // DeepSpeed's last_overflow_iter (dynamic kind); -1: none

    bool operator==(const ScalerState&) const = default;
};

// What one update did. at_minimum: at_min is error and an overflow had to back off a scale already
// at min_scale; the state is untouched (DeepSpeed raises before updating) and event is none.
struct ScalerOutcome {
    ScaleEvent event = ScaleEvent::none;
    bool at_minimum = false;
};

namespace core {

// What a backend runs before its run sets a scaler: kind none, scale 1 (ScalerState's default).
MPX_HOST_DEVICE inline ScalerRule no_scaler() {
    ScalerRule r;
    r.kind = ScalerKind::none;
    r.init_scale = 1.0;
    return r;
}


// Rounds a double to float32 the way a float tensor stores it (nearest, ties to even), without the
// undefined behaviour of casting an out-of-range double: at or beyond FLT_MAX + half an ulp the
// tie goes to infinity (FLT_MAX's mantissa is odd).
MPX_HOST_DEVICE inline double round_fp32(double x) {
    constexpr double to_inf = 0x1.ffffffp127;
    constexpr double flt_max = 0x1.fffffep127;
    if (x != x) return x;
    const bool neg = x < 0.0;
    const double a = neg ? -x : x;
    if (a >= to_inf) return neg ? -__builtin_huge_val() : __builtin_huge_val();
    if (a > flt_max) return neg ? -flt_max : flt_max;
    return static_cast<double>(static_cast<float>(x));
}

// A scale as the rule stores it: rounded to FP32 for fp32 storage, else the double itself.
MPX_HOST_DEVICE inline double stored_scale(ScaleStorage storage, double x) {
    return storage == ScaleStorage::fp32 ? round_fp32(x) : x;
}
MPX_HOST_DEVICE inline double stored_scale(const ScalerRule& r, double x) { return stored_scale(r.scale_storage, x); }

MPX_HOST_DEVICE inline bool finite_scale(double x) { return x - x == 0.0; }

// One step of the rule, after the step's gradients were checked. Events: "backoff" whenever the
// backoff rule runs, also when min_scale holds the scale where it was; "hysteresis" when an
// overflow only spent H; "grow" only when the scale really rose (a growth refused as non-finite or
// held at max_scale reports "none"); kind none and static always report "none".
MPX_HOST_DEVICE inline ScalerOutcome update_scaler(const ScalerRule& c, ScalerState& state, bool found_inf) {
    ScalerState s = state;  // committed at the end, so a refusal leaves the state untouched
    ScalerOutcome out;
    const double old_scale = s.scale;

    if (c.kind == ScalerKind::dynamic && found_inf) {
        bool back_off = false;
        if (c.hysteresis_decrement == HysteresisDecrement::always) {
            // Megatron / NeMo: spend H first, back off once it is used up.
            s.hysteresis_left -= 1;
            back_off = s.hysteresis_left <= 0;
        } else {
            // DeepSpeed: `if delayed_shift == 1 or cur_hysteresis == 1` backs off, H stays at 1.
            back_off = c.hysteresis == 1 || s.hysteresis_left <= 1;
            if (!back_off) s.hysteresis_left -= 1;
        }
        if (back_off) {
            const double min = stored_scale(c, c.min_scale);
            if (c.at_min == AtMin::error && s.scale == min) {
                out.at_minimum = true;
                return out;
            }
            const double backed = stored_scale(c, s.scale * c.backoff_factor);
            s.scale = backed < min ? min : backed;  // std::max(backed, min): min_scale is never NaN
            out.event = ScaleEvent::backoff;
        } else {
            out.event = ScaleEvent::hysteresis;
        }
        s.growth_tracker = 0;
        s.last_overflow_iteration = s.iteration;
    } else if (c.kind == ScalerKind::dynamic) {
        if (c.hysteresis_reset == HysteresisReset::on_clean_step) s.hysteresis_left = c.hysteresis;
        bool grow = false;
        if (c.growth_count == GrowthCount::since_last_overflow) {
            // DeepSpeed <= 0.17.0: `(cur_iter - last_overflow_iter) % scale_window == 0`, before
            // cur_iter += 1.
            const long long since = s.iteration - s.last_overflow_iteration;
            grow = since % c.growth_interval == 0;
            s.growth_tracker = static_cast<int>(since % c.growth_interval);
        } else if (c.growth_count == GrowthCount::stable_interval) {
            // DeepSpeed >= 0.17.1: `stable_interval = (cur_iter - last_overflow_iter) - 1` and
            // `stable_interval > 0 and stable_interval % scale_window == 0`, before cur_iter += 1.
            // stable >= 0 here: a clean step comes after the last overflow.
            const long long stable = s.iteration - s.last_overflow_iteration - 1;
            grow = stable > 0 && stable % c.growth_interval == 0;
            s.growth_tracker = static_cast<int>(stable % c.growth_interval);
        } else {
            s.growth_tracker += 1;
            grow = s.growth_tracker == c.growth_interval;
            if (grow) s.growth_tracker = 0;
        }
        if (grow) {
            if (c.hysteresis_reset == HysteresisReset::on_growth) s.hysteresis_left = c.hysteresis;
            const double up = stored_scale(c, s.scale * c.growth_factor);
            const double max = stored_scale(c, c.max_scale);
            const double grown = max < up ? max : up;  // std::min(up, max), as the host rule had it
            if (finite_scale(grown) || c.non_finite_growth == NonFiniteGrowth::apply) s.scale = grown;
            if (s.scale > old_scale) out.event = ScaleEvent::grow;
        }
    }
    s.iteration += 1;
    state = s;
    return out;
}

// The factor a loss op's gradient carries: scale × loss weight / micro-batches, a double product
// rounded once to FP32 (as PyTorch multiplies a float loss by a float scale).
MPX_HOST_DEVICE inline float loss_factor(double scale, double weight, int parts) {
    return static_cast<float>(scale * weight / parts);
}
// unscale_'s multiplier: the reciprocal in double, rounded to FP32 (PyTorch's unscale_).
MPX_HOST_DEVICE inline float inverse_scale(double scale) { return static_cast<float>(1.0 / scale); }

}  // namespace core

// What an op multiplies by: a value the host gives, or one of the two factors derived from the
// scale the backend's loss scaler holds (Backend::set_scaler), resolved where the op runs (on the
// GPU, on the device: the host never reads the scale). A float converts implicitly.
struct ScaleBy {
    enum class From : std::uint8_t { value, loss_factor, inverse_scale };
    From from = From::value;
    float value = 1.0f;   // From::value
    double weight = 1.0;  // From::loss_factor: the loss weight...
    int parts = 1;        // ...and the micro-batches the step's loss is averaged over

    MPX_HOST_DEVICE ScaleBy(float v = 1.0f) : value(v) {}  // NOLINT(google-explicit-constructor)
    static ScaleBy loss(double weight, int parts) {
        ScaleBy b;
        b.from = From::loss_factor;
        b.weight = weight;
        b.parts = parts;
        return b;
    }
    static ScaleBy unscale() {
        ScaleBy b;
        b.from = From::inverse_scale;
        return b;
    }
    MPX_HOST_DEVICE bool uses_scaler() const { return from != From::value; }
    // The factor, given the scaler's current scale.
    MPX_HOST_DEVICE float resolve(double scale) const {
        if (from == From::loss_factor) return core::loss_factor(scale, weight, parts);
        if (from == From::inverse_scale) return core::inverse_scale(scale);
        return value;
    }
    // The same, reading the state (device memory on the GPU) only when the factor needs it.
    MPX_HOST_DEVICE float resolve(const ScalerState* scaler) const { return uses_scaler() ? resolve(scaler->scale) : value; }
};

}  // namespace mpx
