// Number formats mpx trains in (FP32, TF32, FP16, BF16, FP8 E4M3/E5M2, FP4 E2M1) and one table of
// their facts. Rule: every conversion from float rounds to nearest, ties to even, keeps subnormals
// and keeps NaN a NaN (E2M1 has none: NaN becomes +0, as Transformer Engine's cast); the generic
// encoder is the definition, the fast paths must equal it bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/core/format_core.hpp"

namespace mpx {

inline constexpr Format all_formats[] = {Format::fp32, Format::tf32, Format::fp16, Format::bf16,
                                         Format::e4m3, Format::e5m2, Format::e2m1};

enum class FpClass : std::uint8_t { zero, subnormal, normal, inf, nan };

const FormatInfo& info(Format f);
std::string_view to_string(Format f);
std::optional<Format> parse_format(std::string_view name);
std::string_view to_string(FpClass c);

// Stored bits: FP16/BF16 in the low 16 bits, FP8 in the low 8, E2M1 in the low 4 (one code a
// byte), FP32 and TF32 as the 32-bit container (TF32's low 13 mantissa bits are zero).
std::uint32_t encode(Format f, float x, Overflow mode);
inline std::uint32_t encode(Format f, float x) { return encode(f, x, info(f).default_overflow); }
float decode(Format f, std::uint32_t bits);
inline float round_to(Format f, float x) { return decode(f, encode(f, x)); }
inline float round_to(Format f, float x, Overflow mode) { return decode(f, encode(f, x, mode)); }

FpClass classify(Format f, std::uint32_t bits);
// Neighbouring representable values. Past the largest finite value: infinity where the format has
// one, otherwise NaN (E4M3); where it has neither (E2M1) the largest value stays (next_up(6) = 6,
// next_down(-6) = -6), as its saturating cast has it. NaN stays NaN; next_up(-0) is the smallest
// positive subnormal.
std::uint32_t next_up(Format f, std::uint32_t bits);
std::uint32_t next_down(Format f, std::uint32_t bits);
// Spacing of the format's values in the binade of |x| (subnormal spacing below min normal, the
// top binade's spacing above max finite). NaN for NaN and inf.
float ulp(Format f, float x);

// What rounding a buffer to a format did (core::Counts: overflow, underflow, subnormal, non-zero
// inputs; the optimizer's and the checks' fields stay zero here).
using RoundStats = core::Counts;

// Rounds every value to the format in place (values stay floats). Vectorised where the CPU allows;
// equal to the scalar path bit for bit.
RoundStats round_in_place(Format f, std::span<float> values, Overflow mode);
inline RoundStats round_in_place(Format f, std::span<float> values) {
    return round_in_place(f, values, info(f).default_overflow);
}
// Rounds src into dst (a buffer apart from src, or src itself), counted: round_in_place on a copy,
// in one pass.
RoundStats round_copy(Format f, std::span<const float> src, float* dst, Overflow mode);
inline RoundStats round_copy(Format f, std::span<const float> src, float* dst) {
    return round_copy(f, src, dst, info(f).default_overflow);
}
// The same values uncounted, into a dst apart from src (a cast whose rounding was counted before).
void round_copy_uncounted(Format f, std::span<const float> src, float* dst, Overflow mode);
inline void round_copy_uncounted(Format f, std::span<const float> src, float* dst) {
    round_copy_uncounted(f, src, dst, info(f).default_overflow);
}
// Packs floats into the format's real storage (dst holds values.size() * storage_bytes bytes).
RoundStats encode_buffer(Format f, std::span<const float> values, void* dst, Overflow mode);
inline RoundStats encode_buffer(Format f, std::span<const float> values, void* dst) {
    return encode_buffer(f, values, dst, info(f).default_overflow);
}
// Unpacks the format's storage into floats (exact: every value of every format is a float).
void decode_buffer(Format f, const void* src, std::span<float> out);

// Whether rounding x to the format overflows (becomes ±inf, NaN for E4M3, or saturates: E2M1 from
// |x| = 7 up) and whether a non-zero x becomes zero.
inline bool rounding_overflows(Format f, float x) { return core::rounding_overflows(f, x); }
bool rounding_underflows(Format f, float x, Overflow mode);

// The generic bit-level encoder, kept callable so tests can hold the fast paths against it.
std::uint32_t encode_reference(Format f, float x, Overflow mode);

// Whether the running CPU has the F16C instructions the FP16 fast path uses.
bool cpu_has_f16c();

}  // namespace mpx
