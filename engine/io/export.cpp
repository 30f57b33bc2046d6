// CSV rows, atomic files and sidecars.
#include "engine/io/export.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/fs.h>
#include <sys/ioctl.h>
#endif

#include "engine/base/error.hpp"
#include "engine/base/input_file.hpp"
#include "engine/base/quote.hpp"
#include "engine/base/text.hpp"
#include "engine/compute/site_names.hpp"

namespace mpx {

const char* const k_csv_columns[34] = {
    "run", "precision", "mode", "step", "loss", "loss_scale", "found_inf", "skipped",
    "scale_event", "grad_norm", "underflow_frac", "overflow_count", "lost_update_frac", "lr",
    "mem_weights", "mem_master", "mem_grads", "mem_optimizer", "mem_activations",
    "mem_workspace", "mem_total", "step_time_us", "wall_time_s", "eval_loss", "eval_accuracy", "first_nonfinite",
    "fp8_saturated_frac", "fp8_underflow_frac", "small_update_frac", "small_kept_frac", "compensation_max",
    "mem_compensation", "headroom_log2", "penalty"};

const char* const k_histogram_columns[6] = {"run", "step", "layer", "tensor", "bin_log2", "count"};

void write_histograms_csv(const std::filesystem::path& path, const std::vector<RunInfo>& runs,
                          const std::vector<const HistogramLog*>& logs) {
    AtomicFile out(path);
    std::string text;
    for (std::size_t i = 0; i < std::size(k_histogram_columns); ++i)
        text += (i ? "," : "") + std::string(k_histogram_columns[i]);
    text += "\r\n";
    for (std::size_t r = 0; r < runs.size() && r < logs.size(); ++r) {
        const std::string run = csv_field(runs[r].label);
        for (const HistogramSnapshot& snap : logs[r]->snapshots()) {
            for (const Histogram& h : snap.tensors) {
                const std::string head = run + "," + std::to_string(snap.step) + ",fc" +
                                         std::to_string(h.layer + 1) + "," +
                                         std::string(to_string(h.tensor)) + ",";
                for (std::uint32_t k = 0; k < h.len; ++k)
                    if (const auto c = snap.counts[h.offset + k])
                        text += head + std::to_string(h.lo + static_cast<int>(k)) + "," + std::to_string(c) + "\r\n";
                const std::pair<const char*, unsigned long long> special[] = {
                    {"zero", h.zero}, {"inf", h.inf}, {"nan", h.nan}};
                for (const auto& [name, c] : special)
                    if (c) text += head + name + "," + std::to_string(c) + "\r\n";
            }
            if (text.size() > (1u << 20)) {
                out.write(text);
                text.clear();
            }
        }
    }
    out.write(text);
    out.finish();
    out.publish();
}

const char* const k_fp8_scale_columns[7] = {"run", "step", "layer", "tensor", "format", "amax", "scale"};

void write_fp8_scales_csv(const std::filesystem::path& path, const std::vector<RunInfo>& runs,
                          const std::vector<const std::vector<Fp8ScaleRow>*>& rows) {
    AtomicFile out(path);
    std::string text;
    for (std::size_t i = 0; i < std::size(k_fp8_scale_columns); ++i)
        text += (i ? "," : "") + std::string(k_fp8_scale_columns[i]);
    text += "\r\n";
    for (std::size_t r = 0; r < runs.size() && r < rows.size(); ++r) {
        if (!rows[r]) continue;
        const std::string run = csv_field(runs[r].label);
        // Block formats by the run's name (mxfp8, nvfp4, mxfp4); NVFP4's scale is its global encode
        // scale S_enc (its block scales are per 16), MX's none.
        const std::string block_name = runs[r].spec.precision();
        for (const Fp8ScaleRow& row : *rows[r]) {
            const bool global = row.block && row.format == Format::e2m1 && row.scale != 0.0f;
            // The layer as the run's model names it: fc1..fcN, or the GPT's block0.attn.qkv ... lm_head.
            text += run + "," + std::to_string(row.step) + "," + csv_field(layer_name(runs[r].model, row.layer)) + "," +
                    std::string(enum_name(row.tensor)) + "," +
                    (row.block ? block_name : std::string(to_string(row.format))) + "," +
                    format_number(static_cast<double>(row.amax)) + "," +
                    (row.block && !global ? std::string() : format_number(static_cast<double>(row.scale))) + "\r\n";
            if (text.size() > (1u << 20)) {
                out.write(text);
                text.clear();
            }
        }
    }
    out.write(text);
    out.finish();
    out.publish();
}

std::string csv_header() {
    std::string s;
    for (std::size_t i = 0; i < std::size(k_csv_columns); ++i) s += (i ? "," : "") + std::string(k_csv_columns[i]);
    return s + "\r\n";
}

std::string csv_row(const StepRecord& r, const RunInfo& run) {
    std::string s;
    s.reserve(256);
    auto add = [&s](const std::string& v) {
        if (!s.empty()) s += ',';
        s += v;
    };
    add(csv_field(run.label));
    add(csv_field(run.spec.precision()));
    add(csv_field(std::string(to_string(run.spec.mode))));
    add(std::to_string(r.step));
    add(format_number(r.loss));
    add(format_number(r.loss_scale));
    add(r.found_inf ? "1" : "0");
    add(r.skipped ? "1" : "0");
    add(std::string(to_string(static_cast<ScaleEvent>(r.scale_event))));
    add(format_number(r.grad_norm));
    add(format_number(r.underflow_frac));
    add(std::to_string(r.overflow_count));
    add(format_number(r.lost_update_frac));
    add(format_number(r.lr));
    // The six categories with their own columns here; compensation came later and is the last column.
    for (int c = 0; c <= static_cast<int>(MemCategory::workspace); ++c)
        add(std::to_string(r.mem.bytes[static_cast<std::size_t>(c)]));
    add(std::to_string(r.mem.total()));
    add(format_number(r.step_time_us));
    add(format_number(r.wall_time_s));
    add(r.eval_loss ? format_number(*r.eval_loss) : "");  // a cell without a value is empty
    add(r.eval_accuracy ? format_number(*r.eval_accuracy) : "");
    add(r.first_nonfinite < 0 ? std::string() : site_name(r.first_nonfinite, run.model));
    add(r.fp8_saturated_frac ? format_number(*r.fp8_saturated_frac) : "");  // empty: not an FP8 run
    add(r.fp8_underflow_frac ? format_number(*r.fp8_underflow_frac) : "");
    add(format_number(r.small_update_frac));
    add(format_number(r.small_kept_frac));
    add(r.compensation_max ? format_number(*r.compensation_max) : "");  // empty: not a Kahan run
    add(std::to_string(r.mem[MemCategory::compensation]));
    add(r.headroom_log2 ? format_number(*r.headroom_log2) : "");  // empty: a forward overflow, or nothing stored
    add(r.penalty ? format_number(*r.penalty) : "");  // empty: no gradient penalty
    return s + "\r\n";
}

namespace {
std::filesystem::path temp_beside(const std::filesystem::path& path) {
    std::filesystem::path tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid());
    return tmp;
}

// Temporaries in flight, for the signal handler: fixed slots and plain char arrays, because a
// handler may only call async-signal-safe functions (unlink, open, unlinkat, the getdents64 system
// call). 0 free, 1 a file, 3 a folder, 2 being filled.
constexpr int k_slots = 32;
constexpr int k_file = 1, k_filling = 2, k_folder = 3;
struct Slot {
    std::atomic<int> state{0};
    char path[4096]{};
};
Slot g_slots[k_slots];

int register_slot(const std::filesystem::path& p, int kind) {
    const std::string& s = p.native();
    if (s.size() >= sizeof(Slot::path)) return -1;
    for (int i = 0; i < k_slots; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, k_filling)) {
            std::memcpy(g_slots[i].path, s.c_str(), s.size() + 1);
            g_slots[i].state.store(kind);
            return i;
        }
    }
    return -1;  // more than k_slots at once: still removed on every ordinary exit path
}

int register_temporary(const std::filesystem::path& p) { return register_slot(p, k_file); }

void unregister_temporary(int slot) {
    if (slot >= 0) g_slots[slot].state.store(0);
}

// Everything inside the open folder `dir`, then the folder itself from `parent`: system calls
// only, the names read into a buffer on the stack. `depth` bounds the recursion (an export's
// folder is two deep).
void remove_tree_in_handler(int parent, const char* name, int depth) {
    const int dir = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[4096];
    // Twice: entries removed while the folder is read may hide others from the first reading.
    for (int pass = 0; pass < 2; ++pass, ::lseek(dir, 0, SEEK_SET)) for (;;) {
        const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
            // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name
            unsigned short reclen = 0;
            std::memcpy(&reclen, buf + at + 16, sizeof reclen);
            const unsigned char type = static_cast<unsigned char>(buf[at + 18]);
            const char* entry = buf + at + 19;
            at += reclen;
            if (entry[0] == '.' && (entry[1] == '\0' || (entry[1] == '.' && entry[2] == '\0'))) continue;
            if (type == DT_DIR) {
                if (depth > 0) remove_tree_in_handler(dir, entry, depth - 1);
            } else {
                ::unlinkat(dir, entry, 0);
            }
        }
    }
    ::close(dir);
    ::unlinkat(parent, name, AT_REMOVEDIR);
}

extern "C" void remove_temporaries_and_die(int sig) {
    for (auto& slot : g_slots) {
        const int state = slot.state.load();
        if (state == k_file) ::unlink(slot.path);
        else if (state == k_folder) remove_tree_in_handler(AT_FDCWD, slot.path, 8);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

std::string reason(int err) { return err ? std::strerror(err) : "unknown error"; }
}  // namespace

TemporaryFolderGuard::TemporaryFolderGuard(const std::filesystem::path& folder)
    : m_slot(register_slot(folder, k_folder)) {}
TemporaryFolderGuard::~TemporaryFolderGuard() { unregister_temporary(m_slot); }

void install_temporary_cleanup() {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup keeps its meaning
        struct sigaction sa {};
        sa.sa_handler = remove_temporaries_and_die;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
    ::signal(SIGXFSZ, SIG_IGN);
}

void check_output_path(const std::filesystem::path& path, const std::string& what) {
    if (path.empty()) throw IoError(what + ": no file name was given");
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(st))
        throw IoError(what + ": " + quoted_text(path.string()) + " is a directory; give a file name");
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
        throw IoError(what + ": " + quoted_text(path.string()) + " is not a regular file and cannot be replaced");
#ifdef __linux__
    if (std::filesystem::exists(st)) {  // an immutable or append-only file cannot be renamed over
        const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        int flags = 0;
        const bool read = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;  // not every file system keeps flags
        if (fd >= 0) ::close(fd);
        if (read && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)))
            throw IoError(what + ": " + quoted_text(path.string()) + " is " +
                          ((flags & FS_IMMUTABLE_FL) ? "immutable (chattr +i)" : "append-only (chattr +a)") +
                          " and cannot be replaced");
    }
#endif
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(dir, ec))
        throw IoError(what + ": the directory of " + quoted_text(path.string()) + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw IoError(what + ": cannot write into the directory of " + quoted_text(path.string()) + ": " + reason(errno));
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
    if (a.empty() || b.empty()) return false;
    struct stat sa {}, sb {};
    const bool a_exists = ::stat(a.c_str(), &sa) == 0, b_exists = ::stat(b.c_str(), &sb) == 0;
    if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (a_exists != b_exists) return false;  // one file exists, the other does not: not one file
    // Absolute first: weakly_canonical leaves a relative path with no existing part ("y.csv") relative.
    std::error_code e1, e2, e3, e4;
    const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a, e1), e2);
    const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b, e3), e4);
    return !e1 && !e2 && !e3 && !e4 && ca == cb;
}

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
    for (const NamedPath& o : outputs) check_output_path(o.path, o.what);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const NamedPath& o = outputs[i];
        for (std::size_t k = 0; k < i; ++k)
            if (same_file(outputs[k].path, o.path))
                throw ConfigError(o.what, quoted_text(o.path.string()) + " is also " + outputs[k].what +
                                              "; give each output its own file");
        for (const NamedPath& in : inputs)
            if (in.may_be_replaced_by != o.what && same_file(in.path, o.path))
                throw ConfigError(o.what, quoted_text(o.path.string()) + " is " + in.what + "; write to another file");
    }
}

AtomicFile::AtomicFile(std::filesystem::path path) : m_path(std::move(path)), m_tmp(temp_beside(m_path)) {
    m_slot = register_temporary(m_tmp);
    m_file = std::fopen(m_tmp.c_str(), "wb");
    if (!m_file) {
        const int err = errno;
        unregister_temporary(m_slot);
        throw IoError("cannot write " + quoted_text(m_path.string()) + ": " + reason(err));
    }
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() noexcept {
    if (m_file) std::fclose(m_file);
    m_file = nullptr;
    if (!m_published) {
        std::error_code ec;
        std::filesystem::remove(m_tmp, ec);
    }
    unregister_temporary(m_slot);
    m_slot = -1;
}

void AtomicFile::write(std::string_view text) {
    if (!m_file || m_failed) return;
    if (std::fwrite(text.data(), 1, text.size(), m_file) != text.size()) {
        m_failed = true;
        m_errno = errno;
    }
}

void AtomicFile::finish() {
    if (m_finished) return;
    if (!m_file) throw IoError("export of " + quoted_text(m_path.string()) + " was already finished");
    bool ok = !m_failed;
    int err = m_errno;
    if (ok && (std::fflush(m_file) != 0 || ::fsync(::fileno(m_file)) != 0)) ok = false, err = errno;
    if (std::fclose(m_file) != 0 && ok) ok = false, err = errno;
    m_file = nullptr;
    if (!ok) {
        discard();  // the error code is kept above: a cleanup call must not overwrite it
        m_gone = true;
        throw IoError("cannot write " + quoted_text(m_path.string()) + ": " + reason(err));
    }
    m_finished = true;
}

void AtomicFile::publish() {
    if (m_published || m_gone) throw IoError("export of " + quoted_text(m_path.string()) + " was already finished");
    finish();
    std::error_code ec;
    std::filesystem::rename(m_tmp, m_path, ec);
    if (ec) {
        const std::string why = ec.message();  // before the cleanup, which has its own error code
        discard();
        m_gone = true;
        throw IoError("cannot replace " + quoted_text(m_path.string()) + ": " + why);
    }
    m_published = true;
    unregister_temporary(m_slot);
    m_slot = -1;
}

void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
    check_output_path(path, "cannot write");
    AtomicFile f(path);
    f.write(text);
    f.publish();
}

CsvWriter::CsvWriter(std::filesystem::path path) : m_path(std::move(path)) {
    check_output_path(m_path, "cannot write");
    m_file = std::make_unique<AtomicFile>(m_path);
    m_file->write(csv_header());
}

void CsvWriter::write(const StepRecord& r, const RunInfo& run) {
    if (m_file) m_file->write(csv_row(r, run));
}

void CsvWriter::commit() {
    if (!m_file) throw IoError("export of " + quoted_text(m_path.string()) + " was already finished");
    const auto file = std::move(m_file);
    file->publish();
}

void CsvWriter::commit(const std::filesystem::path& sidecar, const std::string& sidecar_text) {
    if (!m_file) throw IoError("export of " + quoted_text(m_path.string()) + " was already finished");
    const auto file = std::move(m_file);
    if (same_file(sidecar, m_path))
        throw IoError("the sidecar " + quoted_text(sidecar.string()) + " would replace the CSV itself; give the CSV another name");
    AtomicFile side(sidecar);
    side.write(sidecar_text);
    publish_together(*file, side);
}

void publish_together(AtomicFile& first, AtomicFile& second) {
    second.finish();
    first.finish();
    // Both targets are checked again just before the renames: either may have changed meanwhile.
    check_output_path(second.path(), "cannot write");
    check_output_path(first.path(), "cannot write");
    // All or nothing: the first lands first, its old version kept under a temporary name (a hard
    // link) until the second has landed too. If the second cannot land, the old first is put back
    // (or the new one removed): a new sidecar never describes an old CSV, and a CSV never stays
    // without the sidecar that reproduces it. A first that cannot be replaced (an immutable file)
    // fails before anything is touched.
    const std::filesystem::path& target = first.path();
    std::error_code ec;
    std::filesystem::path kept;
    int kept_slot = -1;
    if (std::filesystem::exists(std::filesystem::symlink_status(target, ec))) {
        kept = target;
        kept += ".tmp-" + std::to_string(::getpid()) + "-old";
        std::filesystem::remove(kept, ec);
        std::filesystem::create_hard_link(target, kept, ec);
        if (ec && ec != std::errc::operation_not_permitted && ec != std::errc::permission_denied) {
            ec.clear();  // a file system without hard links: a copy keeps the old file instead
            std::filesystem::copy_file(target, kept, ec);
        }
        if (ec) throw IoError("cannot replace " + quoted_text(target.string()) + ": " + ec.message());
        kept_slot = register_temporary(kept);
    }
    const auto drop_kept = [&] {
        if (kept.empty()) return;
        std::error_code ignored;
        std::filesystem::remove(kept, ignored);
        unregister_temporary(kept_slot);
    };
    try {
        first.publish();
    } catch (...) {
        drop_kept();
        throw;
    }
    try {
        second.publish();
    } catch (...) {
        std::error_code ignored;
        if (kept.empty()) {
            std::filesystem::remove(target, ignored);
        } else {
            std::filesystem::rename(kept, target, ignored);
            unregister_temporary(kept_slot);
        }
        throw;
    }
    drop_kept();
}

void write_files_together(const std::filesystem::path& first, const std::string& first_text,
                          const std::filesystem::path& second, const std::string& second_text) {
    check_output_path(first, "cannot write");
    check_output_path(second, "cannot write");
    AtomicFile a(first), b(second);
    a.write(first_text);
    b.write(second_text);
    publish_together(a, b);
}

nlohmann::json sidecar_json(const SessionConfig& cfg, const std::vector<RunInfo>& runs,
                            const std::string& device, long long steps_recorded) {
    nlohmann::json j;
    j["format"] = "mpx-export";
    j["program"] = "mpx";
    j["version"] = MPX_VERSION;
    j["device"] = device;
    j["seed"] = cfg.seed;
    j["steps_recorded"] = steps_recorded;
    j["columns"] = std::vector<std::string>(std::begin(k_csv_columns), std::end(k_csv_columns));
    nlohmann::json rl = nlohmann::json::array();
    for (const auto& r : runs) rl.push_back({{"label", r.label}, {"precision", r.spec.precision()}, {"mode", std::string(to_string(r.spec.mode))}});
    j["runs"] = rl;
    j["config"] = to_json(cfg);
    return j;
}

std::filesystem::path sidecar_path(const std::filesystem::path& csv) {
    std::filesystem::path p = csv;
    p.replace_extension(".json");
    if (p == csv) p += ".json";
    return p;
}

SessionConfig config_from_sidecar(const std::filesystem::path& path) {
    const std::string text = read_input_file(path, "the sidecar");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw ConfigError("", path.filename().string() + " is not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("config")) throw ConfigError("", path.filename().string() + " is not an mpx export sidecar");
    return session_config_from_json(j.at("config"));
}

}  // namespace mpx
