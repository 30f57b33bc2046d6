// Reading a named input file: regular files only, bounded size, the name in every message.
#include "engine/base/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"

namespace mpx {

std::string read_input_file(const std::filesystem::path& path, const std::string& what, std::size_t max_bytes) {
    const std::string named = what + " " + quoted_text(path.string());
    if (path.empty()) throw IoError(what + ": no file name was given");
    // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. It is cleared
    // before reading, and only regular files get that far.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw IoError("cannot read " + named + ": " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw IoError("cannot read " + named + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw IoError(named + " is a directory; give a file");
    if (!S_ISREG(st.st_mode))
        throw IoError(named + " is not a regular file (a pipe, socket or device); give a file");
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        throw IoError(named + " is " + std::to_string(st.st_size) + " bytes; at most " +
                      std::to_string(max_bytes) + " are read");
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string text;
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    for (;;) {  // the file may grow or shrink while it is read: stop at its end or at the limit
        if (got == text.size()) {
            if (got > max_bytes) throw IoError(named + " grew beyond " + std::to_string(max_bytes) + " bytes while it was read");
            text.resize(std::min(max_bytes + 1, got + 65536));
        }
        const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw IoError("cannot read " + named + ": " + std::strerror(errno));
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    return text;
}

}  // namespace mpx
