// RecordSpool: StepRecords written raw to a tmpfile(), read back in blocks for the export.
#include "ui/session/record_spool.hpp"

#include <type_traits>

#include "engine/base/error.hpp"
#include "engine/io/export.hpp"

namespace mpx::gui {

static_assert(std::is_trivially_copyable_v<mpx::StepRecord>,
              "the spool writes StepRecords as raw bytes");

RecordSpool::RecordSpool() : m_file(std::tmpfile()) {}

RecordSpool::~RecordSpool() {
    if (m_file) std::fclose(m_file);
}

void RecordSpool::clear() {
    if (m_file) std::fclose(m_file);
    m_file = std::tmpfile();
    m_count = 0;
    m_failed = false;
}

void RecordSpool::append(const std::vector<mpx::StepRecord>& records) {
    if (records.empty()) return;
    if (!m_file || std::fwrite(records.data(), sizeof(mpx::StepRecord), records.size(), m_file) !=
                       records.size())
        m_failed = true;
    m_count += static_cast<long long>(records.size());
}

void RecordSpool::exportCsv(const std::filesystem::path& csv, const nlohmann::json& sidecar,
                            const std::vector<mpx::RunInfo>& runs) {
    if (!m_file || m_failed)
        throw mpx::IoError("the records of this session could not be kept on disk (temporary "
                           "directory full or not writable); free space and reset to export");
    mpx::check_output_path(mpx::sidecar_path(csv), "the sidecar");
    mpx::CsvWriter writer(csv);
    if (std::fflush(m_file) != 0 || std::fseek(m_file, 0, SEEK_SET) != 0)
        throw mpx::IoError("cannot read back the session's records for the export");
    std::vector<mpx::StepRecord> block(4096);
    long long left = m_count;
    while (left > 0) {
        const std::size_t want = static_cast<std::size_t>(std::min<long long>(left, 4096));
        const std::size_t got = std::fread(block.data(), sizeof(mpx::StepRecord), want, m_file);
        if (got != want) {
            std::fseek(m_file, 0, SEEK_END);
            throw mpx::IoError("cannot read back the session's records for the export");
        }
        for (std::size_t i = 0; i < got; ++i) {
            const auto run = static_cast<std::size_t>(block[i].run);
            if (run < runs.size()) writer.write(block[i], runs[run]);
        }
        left -= static_cast<long long>(got);
    }
    std::fseek(m_file, 0, SEEK_END);  // appends continue after the last record
    // Sidecar first: a CSV never appears without the configuration that reproduces it.
    writer.commit(mpx::sidecar_path(csv), sidecar.dump(2) + "\n");
}

}  // namespace mpx::gui
