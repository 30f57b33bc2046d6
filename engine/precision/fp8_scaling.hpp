// FP8 recipe settings, and delayed scaling's amax history of one tensor on the host (the CPU
// backend keeps its histories in it; core::amax_history_push is the rule, shared with the GPU).
// Rule: the scale a tensor uses on step t comes from the amaxes of steps t−len … t−1 only (TE's
// DelayedScaling, common/recipe/delayed_scaling.cu); the arithmetic is core::delayed_scale.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/base/enum_names.hpp"
#include "engine/core/fp4.hpp"
#include "engine/core/fp8_math.hpp"
#include "engine/precision/fp4_recipe.hpp"
#include "engine/precision/policy.hpp"

namespace mpx {

constexpr EnumName<Fp8Recipe> fp8_recipe_names[] = {
    {Fp8Recipe::delayed, "delayed"}, {Fp8Recipe::current, "current"}, {Fp8Recipe::block, "block"}};
constexpr std::span<const EnumName<Fp8Recipe>> names_of(Fp8Recipe) { return fp8_recipe_names; }
constexpr EnumName<AmaxAlgo> amax_algo_names[] = {{AmaxAlgo::max, "max"},
                                                   {AmaxAlgo::most_recent, "most_recent"}};
constexpr std::span<const EnumName<AmaxAlgo>> names_of(AmaxAlgo) { return amax_algo_names; }
enum class E4m3Overflow : std::uint8_t { saturate, nan };
constexpr EnumName<E4m3Overflow> e4m3_overflow_names[] = {{E4m3Overflow::saturate, "saturate"},
                                                           {E4m3Overflow::nan, "nan"}};
constexpr std::span<const EnumName<E4m3Overflow>> names_of(E4m3Overflow) { return e4m3_overflow_names; }
constexpr EnumName<Fp8Tensor> fp8_tensor_names[] = {
    {Fp8Tensor::x, "x"}, {Fp8Tensor::w, "w"}, {Fp8Tensor::dy, "dy"}};
constexpr std::span<const EnumName<Fp8Tensor>> names_of(Fp8Tensor) { return fp8_tensor_names; }

// The session's `fp8` section. Defaults are Transformer Engine's DelayedScaling defaults
// (margin 0, amax_history_len 1024, amax_compute_algo "max"); TE casts E4M3 with saturation.
struct Fp8Config {
    Fp8Recipe recipe = Fp8Recipe::delayed;  // for FP8 runs whose label names none (block: mxfp8 only)
    int amax_history_len = 1024;
    AmaxAlgo amax_compute_algo = AmaxAlgo::max;
    int margin = 0;
    E4m3Overflow e4m3_overflow = E4m3Overflow::saturate;
};
// The Overflow an E4M3 cast uses under fp8.e4m3_overflow (E4M3 has no infinity: Overflow::infinity
// gives NaN). E5M2 casts saturate whatever the setting (Fp8Gemm::overflow).
constexpr Overflow e4m3_overflow_mode(E4m3Overflow o) {
    return o == E4m3Overflow::nan ? Overflow::infinity : Overflow::saturate;
}
inline constexpr int k_max_amax_history = 1 << 16;
// ConfigError naming "fp8.<field>" for a value out of range.
void validate(const Fp8Config& c);
// The recipe an FP8 run scales with: mxfp8 its blocks, else the one its label names ("+current"),
// else the session's fp8.recipe. The one place Run and the app's FP8 view read it from.
inline Fp8Recipe fp8_recipe_of(const RunSpec& spec, const Fp8Config& c) {
    return spec.mode == Mode::mxfp8 || is_fp4(spec.mode) ? Fp8Recipe::block : spec.fp8_recipe.value_or(c.recipe);
}

// One FP8 tensor's scaling on one step: amax measured on that step, the scale used on it (MXFP8:
// 0, its scales are per block of 32), in the format it was cast to.
struct Fp8ScaleRow {
    long long step = 0;
    int layer = 0;
    Fp8Tensor tensor = Fp8Tensor::x;
    Format format = Format::e4m3;
    bool block = false;
    float amax = 0.0f, scale = 0.0f;
    unsigned long long saturated = 0, underflow = 0, count = 0;  // what the cast did (core::Fp8Record)
    unsigned long long nonzero = 0;  // of `count`, the non-zero values: underflow's denominator
    core::Fp4Record fp4;             // FP4 runs (format e2m1): the E2M1 codes and blocks
};
// One tensor's delayed scaling state. TE starts every scale at 1 with a zero history.
class AmaxHistory {
public:
    AmaxHistory(int len, AmaxAlgo algo, int margin, float fp8_max) : m_hist(static_cast<std::size_t>(len), 0.0f) {
        m_state.len = len;
        m_state.algo = algo;
        m_state.scaled_max = core::delayed_scaled_max(fp8_max, margin);
    }
    AmaxHistory(const core::AmaxHistoryState& s, std::span<const float> hist) : m_state(s), m_hist(hist.begin(), hist.end()) {}
    float scale() const { return m_state.scale; }  // the scale the next step uses
    // Records the amax measured on the step that just ran and computes the next step's scale.
    void push(float amax) { core::amax_history_push(m_state, m_hist.data(), amax); }
    const std::vector<float>& history() const { return m_hist; }
    const core::AmaxHistoryState& state() const { return m_state; }
    core::AmaxHistoryState& state() { return m_state; }

private:
    core::AmaxHistoryState m_state;
    std::vector<float> m_hist;
};

// How the linear ops of one FP8 layer scale their operands on this step (Backend::set_fp8): x and
// w are cast to `fwd`, dy to `grad`. Per-tensor recipes multiply by a scale (delayed: the one the
// backend's amax history of that tensor holds, Backend::set_amax_histories, 1 where it holds none;
// current: from the tensor's own amax, core::current_scale) and
// descale the FP32 accumulator by 1/(scale_a · scale_b); block scales MXFP8 blocks of 32 along
// each GEMM's reduction dimension. Every cast of a counted site adds to StepStats::fp8.
struct Fp8Gemm {
    Fp8Recipe recipe = Fp8Recipe::delayed;
    Format fwd = Format::e4m3;
    Format grad = Format::e5m2;
    Overflow e4m3_overflow = Overflow::saturate;
    int layer = 0;  // whose amax histories (delayed) the casts read, counted or not
    // FP4 runs: the layer's NVFP4/MXFP4 casts (recipe block, no descaling), instead of FP8's.
    std::optional<Fp4Gemm> fp4;
    Format format(Fp8Tensor t) const { return t == Fp8Tensor::dy ? grad : fwd; }
    // E4M3 as configured; E5M2 saturates, as Transformer Engine's casts do (__nv_fp8_e5m2's
    // conversion uses __NV_SATFINITE), so an overflow is a saturated value, never an inf.
    Overflow overflow(Fp8Tensor t) const {
        return format(t) == Format::e4m3 ? e4m3_overflow : Overflow::saturate;
    }
};

}  // namespace mpx
