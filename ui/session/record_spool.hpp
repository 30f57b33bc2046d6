// Every recorded StepRecord of the current session, kept at full precision for the CSV export in an
// anonymous temporary file (memory stays flat for runs of millions of steps; the OS deletes the file
// when the program ends, however it ends). Rule: used by the engine worker's thread only.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/run/record.hpp"
#include "engine/run/run.hpp"
#include <nlohmann/json.hpp>

namespace mpx::gui {

class RecordSpool {
public:
    RecordSpool();
    ~RecordSpool();
    RecordSpool(const RecordSpool&) = delete;
    RecordSpool& operator=(const RecordSpool&) = delete;

    void clear();
    void append(const std::vector<mpx::StepRecord>& records);
    long long records() const { return m_count; }
    // CSV (every record, in the order recorded) and its JSON sidecar, both written atomically,
    // sidecar first. Throws IoError with the reason.
    void exportCsv(const std::filesystem::path& csv, const nlohmann::json& sidecar,
                   const std::vector<mpx::RunInfo>& runs);

private:
    std::FILE* m_file = nullptr;
    long long m_count = 0;
    bool m_failed = false;
};

}  // namespace mpx::gui
