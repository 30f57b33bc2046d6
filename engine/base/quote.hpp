// An input echoed in a message (a file name, a CSV cell, a flag's value) as quoted, escaped text.
// Rule: no byte of an echoed input reaches the terminal or a JSON string raw; every message that
// shows what the user gave shows it through quoted_text.
#pragma once

#include <string>
#include <string_view>

namespace mpx {

// 'text' in single quotes: \n \t \r \' \\ as such, other control characters (C0, DEL, and C1
// written in UTF-8, which some terminals obey as ESC) as \xNN per byte, and where the text is not
// UTF-8 (a Latin-1 file name) every byte of 0x80 or above as \xNN too, so the result is always
// printable UTF-8. "caf\xE9" → 'caf\xe9'; "\x1B[2K\r" → '\x1b[2K\r'.
std::string quoted_text(std::string_view text);

// Text a message shows bare (a file name leading "t.csv:3: ...", a cell in a report): as it is
// where quoted_text would change nothing inside the quotes, else quoted_text's form ('t\xe9.csv':3:).
std::string plain_or_quoted(std::string_view text);

}  // namespace mpx
