// The CSV export of DESIGN.md (tidy, RFC 4180, C locale, round-trip floats) and its JSON sidecar.
// Rule: writes are atomic — rows go to a temporary file beside the target, renamed over it only on
// commit(); a failed or abandoned export leaves no half file and never touches an existing one.
#pragma once

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/run/record.hpp"
#include "engine/run/run.hpp"

namespace mpx {

extern const char* const k_csv_columns[34];
std::string csv_header();
std::string csv_row(const StepRecord& r, const RunInfo& run);

// Checks, before any work is done, that `path` can receive a file: it is not a directory or other
// non-regular file, and its directory exists. `what` names it in the message ("--csv"). IoError.
void check_output_path(const std::filesystem::path& path, const std::string& what);

// True when `a` and `b` name one file: the same device and inode where both exist (through hard
// links, symbolic links and ./ spellings), else the same canonical folder and name (an output not
// written yet). A symbolic link to an input counts as the input: writing over the link's name is
// never what was meant.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// A file a command names: the words that name it in a message ("--out", "the state given to
// --resume") and its path. `may_be_replaced_by` names the one output allowed to be this input (a
// checkpoint saved over the state it resumed: read whole first, replaced atomically last).
struct NamedPath {
    NamedPath(std::string what_, std::filesystem::path path_, std::string may_be_replaced_by_ = {})
        : what(std::move(what_)), path(std::move(path_)), may_be_replaced_by(std::move(may_be_replaced_by_)) {}
    std::string what;
    std::filesystem::path path;
    std::string may_be_replaced_by;
};

// Every reader-writer command's check before any work (one rule for all of them): each output can
// receive a file (check_output_path, IoError), no two outputs are one file, and no output is an
// input (ConfigError naming the output: "--out: 'a.csv' is --in; write to another file").
// An empty output path is refused as IoError (pass an optional output only when it is asked for);
// an empty input path matches nothing.
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

// Writes `text` to `path` atomically (temporary file + rename). Throws IoError with the reason.
void write_file_atomic(const std::filesystem::path& path, const std::string& text);

// A temporary file beside its target, renamed over it by publish(). Rule: the temporary never
// outlives the object or the process: the destructor removes it, and so does a SIGINT, SIGTERM or
// SIGHUP once install_temporary_cleanup() has run.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path path);  // opens the temporary; IoError on failure
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    void write(std::string_view text);  // a failure is kept and reported by finish()
    void finish();                      // flush, fsync, close; IoError on failure (temporary removed)
    void publish();                     // rename over the target; IoError on failure (temporary removed)
    const std::filesystem::path& path() const { return m_path; }

private:
    void discard() noexcept;
    std::filesystem::path m_path, m_tmp;
    std::FILE* m_file = nullptr;
    bool m_failed = false, m_finished = false, m_published = false, m_gone = false;
    int m_errno = 0;
    int m_slot = -1;
};

// Two files that belong together (a CSV and its sidecar, quantize's values and scales), all or
// nothing: both temporaries are finished and both targets checked before either is touched;
// `first` lands with its old version kept (a hard link) until `second` lands too, and is put back
// if `second` cannot. IoError on failure, with neither target changed.
void publish_together(AtomicFile& first, AtomicFile& second);
// The same from two texts: each target checked (check_output_path), written, published together.
void write_files_together(const std::filesystem::path& first, const std::string& first_text,
                          const std::filesystem::path& second, const std::string& second_text);

// A folder written whole beside its target (export-torch's OUT.tmp-<pid>/): while the guard lives,
// SIGINT, SIGTERM and SIGHUP remove it with everything in it. Removing it on an ordinary exit path
// (an error, a finished export) stays its owner's job.
class TemporaryFolderGuard {
public:
    explicit TemporaryFolderGuard(const std::filesystem::path& folder);
    ~TemporaryFolderGuard();
    TemporaryFolderGuard(const TemporaryFolderGuard&) = delete;
    TemporaryFolderGuard& operator=(const TemporaryFolderGuard&) = delete;

private:
    int m_slot = -1;
};

// SIGINT, SIGTERM and SIGHUP remove every temporary in flight, then end the process by the same
// signal; SIGXFSZ is ignored, so a file-size limit becomes a write error the writer reports.
void install_temporary_cleanup();

class CsvWriter {
public:
    explicit CsvWriter(std::filesystem::path path);  // opens the temporary file; IoError on failure
    ~CsvWriter() = default;                          // abandons (removes the temporary) if not committed
    CsvWriter(const CsvWriter&) = delete;
    CsvWriter& operator=(const CsvWriter&) = delete;
    void write(const StepRecord& r, const RunInfo& run);
    void commit();                                   // flush, close, rename; IoError on failure
    // The CSV and its sidecar, all or nothing (publish_together, the CSV first): a new sidecar
    // never describes an old CSV.
    void commit(const std::filesystem::path& sidecar, const std::string& sidecar_text);
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
    std::unique_ptr<AtomicFile> m_file;
};

// The exponent histograms of `mpx-cli run --histograms` (DESIGN.md's long form): one row per
// non-empty bin, `run, step, layer, tensor, bin_log2, count`, where bin_log2 is the bin's integer
// log2 (the edge bins −64 and 63 also hold everything beyond them) or `zero`, `inf`, `nan`.
// Written atomically; runs[i]'s snapshots come from logs[i].
extern const char* const k_histogram_columns[6];
void write_histograms_csv(const std::filesystem::path& path, const std::vector<RunInfo>& runs,
                          const std::vector<const HistogramLog*>& logs);

// The FP8 scales of `mpx-cli run --fp8-scales` (long form): one row per step per FP8 tensor,
// `run, step, layer, tensor, format, amax, scale`: amax measured on that step, scale the one used
// on that step (empty for mxfp8, whose scales are per block of 32; its format is `mxfp8`).
// Written atomically; runs[i]'s rows come from rows[i] (nullptr or empty: not an FP8 run).
extern const char* const k_fp8_scale_columns[7];
void write_fp8_scales_csv(const std::filesystem::path& path, const std::vector<RunInfo>& runs,
                          const std::vector<const std::vector<Fp8ScaleRow>*>& rows);

// The sidecar: full configuration, seed, device, program version, runs, columns.
nlohmann::json sidecar_json(const SessionConfig& cfg, const std::vector<RunInfo>& runs,
                            const std::string& device, long long steps_recorded);
std::filesystem::path sidecar_path(const std::filesystem::path& csv);
// Reads a sidecar back into the configuration that reproduces its runs.
SessionConfig config_from_sidecar(const std::filesystem::path& path);

}  // namespace mpx
