// Reading text into a character corpus: bytes are checked once (binary, UTF-8), decoded twice (first
// to find the vocabulary, then to write ids) so no code-point copy of a large file is held.
#include "engine/model/text_corpus.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unistd.h>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/text.hpp"

namespace mpx {
namespace {

constexpr const char* k_field = "data.text_file";
constexpr const char* k_give = "; give a UTF-8 text file";
constexpr const char* k_fortunes_files[] = {"literature", "wisdom", "songs-poems", "people", "science"};
constexpr const char* k_fortunes_source = "fortunes (literature, wisdom, songs-poems, people, science)";
constexpr const char* k_fortunes_dir = "/usr/share/games/fortunes";

[[noreturn]] void refuse(const std::string& message) { throw ConfigError(k_field, message); }

// One code point at bytes[i], or why the bytes there are not UTF-8 (Unicode 15, table 3-7).
struct Decoded {
    char32_t cp = 0;
    std::size_t length = 0;
    const char* error = nullptr;
};

Decoded decode_at(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return {c, 1, nullptr};
    std::size_t n = 0;
    char32_t cp = 0;
    if ((c & 0xC0) == 0x80) return {0, 0, "a continuation byte with no lead byte"};
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
    else return {0, 0, "a byte that never occurs in UTF-8"};
    for (std::size_t k = 1; k < n; ++k) {
        if (i + k >= s.size()) return {0, 0, "a sequence cut short by the end of the text"};
        const auto d = static_cast<unsigned char>(s[i + k]);
        if ((d & 0xC0) != 0x80) return {0, 0, "a sequence cut short"};
        cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n]) return {0, 0, "an overlong encoding"};
    if (cp >= 0xD800 && cp <= 0xDFFF) return {0, 0, "a surrogate (U+D800 to U+DFFF)"};
    if (cp > 0x10FFFF) return {0, 0, "a code point above U+10FFFF"};
    return {cp, n, nullptr};
}

std::string encode(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

bool is_binary_control(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F; }

// `missing` follows "'path' does not exist": what to do about it.
std::string read_text_bytes(const std::string& path, const std::string& missing) {
    namespace fs = std::filesystem;
    if (path.empty()) refuse("no file name was given" + std::string(k_give));
    const std::string named = quoted_text(path);
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) refuse(named + " does not exist" + missing);
    if (ec) refuse(named + " cannot be read: " + ec.message());
    if (fs::is_directory(st)) refuse(named + " is a directory" + k_give);
    if (!fs::is_regular_file(st)) refuse(named + " is not a regular file (a pipe, socket or device)" + k_give);
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) refuse(named + " cannot be read: " + ec.message());
    if (size > k_max_text_bytes)
        refuse(named + " is " + std::to_string(size) + " bytes; text files larger than 256 MiB are not read");
    if (::access(path.c_str(), R_OK) != 0) refuse(named + " cannot be read: " + std::strerror(errno));
    try {
        return read_input_file(path, "the text file", k_max_text_bytes);
    } catch (const IoError& e) {  // it changed between the checks above and the read
        refuse(e.what());
    }
}

}  // namespace

TextCorpus parse_text(std::string_view bytes, const std::string& source, std::size_t min_characters) {
    const std::string named = quoted_text(source);
    const std::size_t begin = bytes.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    if (bytes.size() == begin) refuse(named + " is empty" + k_give);

    // Binary before UTF-8: most binary files hold a NUL early, and "binary" is the better reason.
    if (const void* nul = std::memchr(bytes.data(), 0, bytes.size()))
        refuse(named + " is binary, not text: a NUL byte at byte offset " +
               std::to_string(static_cast<const char*>(nul) - bytes.data()) + k_give);
    std::size_t controls = 0;
    for (const char ch : bytes) controls += is_binary_control(static_cast<unsigned char>(ch));
    if (controls * 100 > bytes.size())  // fortunes has 87 backspaces in 633,056 bytes
        refuse(named + " is binary, not text: " + std::to_string(controls) + " of its " +
               std::to_string(bytes.size()) +
               " bytes are control characters (at most 1 % may be, besides tab, newline and carriage return)" +
               k_give);

    // Pass 1: validate, count characters, mark the code points present. (max code point + 1)
    std::vector<std::uint32_t> id_of;
    std::size_t n = 0;
    for (std::size_t i = begin; i < bytes.size(); ++n) {
        const Decoded d = decode_at(bytes, i);
        if (d.error)
            refuse(named + " is not UTF-8: " + d.error + " at byte offset " + std::to_string(i) +
                   "; save the text as UTF-8");
        if (d.cp >= id_of.size()) id_of.resize(std::size_t{d.cp} + 1, 0);
        id_of[d.cp] = 1;
        i += d.length;
    }

    TextCorpus c;
    c.source = source;
    for (std::size_t cp = 0; cp < id_of.size(); ++cp) {
        if (!id_of[cp]) continue;
        id_of[cp] = static_cast<std::uint32_t>(c.vocab.size());
        c.vocab.push_back(encode(static_cast<char32_t>(cp)));
    }
    if (c.vocab.size() > k_max_symbols)
        refuse(named + " has " + std::to_string(c.vocab.size()) +
               " distinct symbols; a character-level model takes at most 65535");
    if (n < min_characters)
        refuse(named + " has " + std::to_string(n) + " characters; at least " + std::to_string(min_characters) +
               " are needed");

    // Pass 2: the ids, over bytes now known to be valid.
    c.ids.resize(n);
    std::size_t k = 0;
    for (std::size_t i = begin; i < bytes.size(); ++k) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (b < 0x80) {  // the common case, without the decoder
            c.ids[k] = static_cast<std::uint16_t>(id_of[b]);
            ++i;
            continue;
        }
        const Decoded d = decode_at(bytes, i);
        c.ids[k] = static_cast<std::uint16_t>(id_of[d.cp]);
        i += d.length;
    }
    c.train_size = n * 9 / 10;
    return c;
}

TextCorpus load_text_file(const std::string& path, std::size_t min_characters) {
    return parse_text(read_text_bytes(path, k_give), path, min_characters);
}

TextCorpus load_fortunes() {
    const char* env = std::getenv("MPX_FORTUNES_DIR");
    const std::string dir = env && *env ? env : k_fortunes_dir;
    const std::string missing = std::string("; the fortunes text needs the Debian package fortunes: apt-get install fortunes") +
                                (env && *env ? " (or unset MPX_FORTUNES_DIR)" : "");
    std::string text;
    for (const char* name : k_fortunes_files) text += read_text_bytes(dir + "/" + name, missing);
    return parse_text(text, k_fortunes_source);
}

double unigram_entropy(const TextCorpus& c) {
    const std::size_t n = c.ids.size();
    if (n == 0) return 0.0;
    std::vector<std::size_t> count(c.vocab.size(), 0);
    for (const std::uint16_t id : c.ids) ++count[id];
    double h = 0.0;
    for (const std::size_t k : count)
        if (k) h -= static_cast<double>(k) / static_cast<double>(n) * std::log(static_cast<double>(k) / static_cast<double>(n));
    return h;
}

double bigram_entropy(const TextCorpus& c) {
    const std::size_t n = c.ids.size();
    if (n < 2) return 0.0;
    const std::size_t pairs = n - 1, v = c.vocab.size();
    // Counting sort of each pair's successor by its predecessor, then one tally per predecessor:
    // O(n + V) where a V × V table could be 2^32 counts. start: (V + 1), next: (pairs)
    std::vector<std::size_t> start(v + 1, 0);
    for (std::size_t i = 0; i < pairs; ++i) ++start[c.ids[i] + 1u];
    for (std::size_t a = 0; a < v; ++a) start[a + 1] += start[a];
    std::vector<std::uint16_t> next(pairs);
    std::vector<std::size_t> cursor(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < pairs; ++i) next[cursor[c.ids[i]]++] = c.ids[i + 1];
    std::vector<std::size_t> tally(v, 0);
    double h = 0.0;
    for (std::size_t a = 0; a < v; ++a) {
        const double followed = static_cast<double>(start[a + 1] - start[a]);
        for (std::size_t i = start[a]; i < start[a + 1]; ++i) ++tally[next[i]];
        for (std::size_t i = start[a]; i < start[a + 1]; ++i) {
            const std::size_t k = tally[next[i]];
            if (!k) continue;  // counted already
            h -= static_cast<double>(k) / static_cast<double>(pairs) * std::log(static_cast<double>(k) / followed);
            tally[next[i]] = 0;
        }
    }
    return h;
}

}  // namespace mpx
