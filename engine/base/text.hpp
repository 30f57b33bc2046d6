// Text helpers shared by every writer (CSV, CLI, sidecars): C-locale, round-trip number printing and
// RFC 4180 quoting. Rule: non-finite values print as nan, inf, -inf.
#pragma once

#include <string>
#include <string_view>

namespace mpx {

std::string format_number(double v);  // shortest text that reads back to the same double
std::string format_number(float v);   // shortest text that reads back to the same float
std::string csv_field(std::string_view s);
// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF): what JSON and
// the CSV can carry.
bool valid_utf8(std::string_view s);

}  // namespace mpx
