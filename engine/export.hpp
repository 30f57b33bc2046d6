// The CSV export of DESIGN.md (tidy, RFC 4180, C locale, round-trip floats) and its JSON sidecar.
// Rule: writes are atomic — rows go to a temporary file beside the target, renamed over it only on
// commit(); a failed or abandoned export leaves no half file and never touches an existing one.
#pragma once

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/record.hpp"
#include "engine/run.hpp"

namespace mpx {

extern const char* const k_csv_columns[26];
std::string csv_header();
std::string csv_row(const StepRecord& r, const RunInfo& run);

// Writes `text` to `path` atomically (temporary file + rename). Throws IoError with the reason.
void write_file_atomic(const std::filesystem::path& path, const std::string& text);

class CsvWriter {
public:
    explicit CsvWriter(std::filesystem::path path);  // opens the temporary file; IoError on failure
    ~CsvWriter();                                    // abandons (removes the temporary) if not committed
    CsvWriter(const CsvWriter&) = delete;
    CsvWriter& operator=(const CsvWriter&) = delete;
    void write(const StepRecord& r, const RunInfo& run);
    void commit();                                   // flush, close, rename; IoError on failure
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path, m_tmp;
    std::FILE* m_file = nullptr;
    bool m_failed = false;
};

// The sidecar: full configuration, seed, device, program version, runs, columns.
nlohmann::json sidecar_json(const SessionConfig& cfg, const std::vector<RunInfo>& runs,
                            const std::string& device, long long steps_recorded);
std::filesystem::path sidecar_path(const std::filesystem::path& csv);
// Reads a sidecar back into the configuration that reproduces its runs.
SessionConfig config_from_sidecar(const std::filesystem::path& path);

}  // namespace mpx
