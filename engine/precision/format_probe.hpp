// One value seen through one number format: what the format explorer (ui/views/format_explorer.*) shows
// per row, from the same encoder `mpx-cli format` uses. Rule: nothing here restates a format fact;
// it calls engine/precision/format.hpp, and errors are measured against the typed decimal (as a double), not
// against its FP32 rounding.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/precision/format.hpp"

namespace mpx {

// A typed value: decimal or hex-float (0x1p-24), nan, inf, with an optional sign.
struct TypedValue {
    float as_float;  // what the engine stores it as first (correctly rounded, no double rounding)
    double exact;    // the text as a double: the reference errors are measured against
    bool finite;     // the text names a finite number (1e39 does, though it is inf as FP32)
};
std::optional<TypedValue> parse_typed_value(std::string_view text);
TypedValue typed_value(float x);  // an exact float (a clicked bit pattern, a dragged point)

struct FormatProbe {
    Format format;
    std::uint32_t bits;     // stored bits, as encode() gives them (TF32: its 32-bit container)
    std::uint32_t code;     // the format's own 1+e+m bit pattern (TF32: 19 bits)
    float value;            // the stored value
    double abs_error;       // |value - exact|; 0 when both are the same inf or both NaN
    double rel_error;       // abs_error / |exact| (abs_error itself when exact is 0 or not finite)
    FpClass cls;
    float ulp;              // spacing of the format's values at the stored value
    float next_up, next_down;
    bool overflow;          // rounding made it ±inf / NaN or saturated (or it was past FP32 already)
    bool underflow;         // a non-zero value became zero
};
FormatProbe probe(Format f, const TypedValue& v, Overflow mode);
inline FormatProbe probe(Format f, const TypedValue& v) { return probe(f, v, info(f).default_overflow); }

// The stored bits with bit `code_bit` of the format's code flipped (0 = last mantissa bit,
// code bits - 1 = sign).
std::uint32_t flip_code_bit(Format f, std::uint32_t bits, int code_bit);
inline int code_bit_count(Format f) { return core::code_bits(info(f)); }

}  // namespace mpx
