// quoted_text (engine/base/quote.hpp).
#include "engine/base/quote.hpp"

#include "engine/base/text.hpp"

namespace mpx {

std::string quoted_text(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    const bool utf8 = valid_utf8(text);
    std::string out = "'";
    const auto escape = [&](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xF];
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        switch (c) {
            case '\n': out += "\\n"; continue;
            case '\t': out += "\\t"; continue;
            case '\r': out += "\\r"; continue;
            case '\'': out += "\\'"; continue;
            case '\\': out += "\\\\"; continue;
            default: break;
        }
        // U+0080 to U+009F (C2 80 to C2 9F): C1 controls; U+009B is CSI on terminals that take it.
        const bool c1 = utf8 && c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
        if (c1) {
            escape(c);
            escape(static_cast<unsigned char>(text[++i]));
        } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8)) {
            escape(c);
        } else {
            out += text[i];
        }
    }
    return out + "'";
}

std::string plain_or_quoted(std::string_view text) {
    std::string q = quoted_text(text);
    return q.size() == text.size() + 2 ? std::string(text) : q;
}

}  // namespace mpx
