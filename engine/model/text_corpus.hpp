// The text a character-level GPT trains on: Debian's fortunes or the user's own UTF-8 file, as ids
// into a vocabulary fixed over the whole text. Rule: one reader, parse_text, turns bytes into a
// corpus or refuses them with one line (field data.text_file) naming the text and the reason; the
// file functions only fetch bytes, and nothing is normalised (\r\n stays two symbols) except a
// leading UTF-8 byte-order mark, which is skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpx {

struct TextCorpus {
    // What was read, for messages and the CSV sidecar: "fortunes (literature, wisdom, songs-poems,
    // people, science)" or the file's path.
    std::string source;
    std::vector<std::string> vocab;  // (symbols) each one UTF-8 encoded code point, sorted by code point; id = index
    std::vector<std::uint16_t> ids;  // (characters) the whole text as ids
    // ids[0, train_size) is the training split, the rest held out: train_size = floor(0.9 · n),
    // computed exactly as n · 9 / 10 in integers (nanoGPT's int(n * 0.9): tiny Shakespeare 1,003,854).
    std::size_t train_size = 0;
    std::size_t characters() const { return ids.size(); }
};

inline constexpr std::size_t k_default_min_characters = 1000;
inline constexpr std::size_t k_max_text_bytes = std::size_t{256} << 20;  // refused before reading
inline constexpr std::size_t k_max_symbols = 65535;                     // ids are 16 bits

// The fortunes text: the files literature, wisdom, songs-poems, people and science (in that order)
// of Debian's `fortunes` package, from /usr/share/games/fortunes/ or the directory the environment
// variable MPX_FORTUNES_DIR names (for tests), concatenated byte for byte.
//
// The `%` separator lines are kept as they are. The issue's figures (REFERENCE.md "tiny
// Shakespeare": 633,055 characters, 99 symbols, unigram entropy 3.26 nats a character, bigram 2.52)
// are those of the files as they stand, and only that reading gives all four (measured with
// fortunes 1:1.99.1-7.3: 633,055, 99, 3.2581, 2.5184). Reading each line "%" as an empty line
// gives 629,774 characters, 99 symbols, 3.2425 and 2.5293; replacing each "%" by a newline gives
// 633,055 and 99 but 3.2438 and 2.5229. The separators still read as paragraph breaks to the
// model: "\n%\n" is a symbol it learns like any other.
//
// A missing file says to install the package: apt-get install fortunes.
TextCorpus load_fortunes();

// A user's UTF-8 text file (data.text_file). Refused with one line when it is missing, not a regular
// file, unreadable, larger than 256 MiB (before it is read), or when parse_text refuses its bytes.
// `min_characters` is the caller's: its block_size decides what is enough.
TextCorpus load_text_file(const std::string& path, std::size_t min_characters = k_default_min_characters);

// The reader itself. Refuses (ConfigError, field "data.text_file", `source` quoted in the message):
// empty text; binary text (a NUL byte, or more than 1 % of the bytes control characters other than
// \t \n \r); text that is not UTF-8 (the byte offset of the first bad sequence; overlong forms,
// surrogates and code points above U+10FFFF are bad); more than 65,535 distinct symbols; fewer than
// `min_characters` characters. Byte offsets count from the start of `bytes`, a skipped BOM included.
TextCorpus parse_text(std::string_view bytes, const std::string& source,
                      std::size_t min_characters = k_default_min_characters);

// In nats a character over the whole text: the unigram entropy -Σ p(a) ln p(a), and the bigram
// conditional entropy H(next | prev) = -Σ p(a, b) ln p(b | a) over the n - 1 adjacent pairs, where
// p(b | a) divides by how often a is followed by anything. 0 for a text too short to have them.
double unigram_entropy(const TextCorpus& c);
double bigram_entropy(const TextCorpus& c);

}  // namespace mpx
