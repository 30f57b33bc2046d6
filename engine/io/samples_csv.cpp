// samples.csv: the GPT's text samples, one quoted cell each.
#include "engine/io/samples_csv.hpp"

#include "engine/base/text.hpp"
#include "engine/io/export.hpp"

namespace mpx {

const char* const k_sample_columns[5] = {"run", "step", "eval_loss", "nonfinite", "text"};

std::string samples_csv(const std::vector<TextSample>& samples, const std::vector<RunInfo>& runs) {
    std::string text;
    for (std::size_t i = 0; i < std::size(k_sample_columns); ++i) text += (i ? "," : "") + std::string(k_sample_columns[i]);
    text += "\r\n";
    for (const TextSample& s : samples) {
        const std::string run = s.run >= 0 && static_cast<std::size_t>(s.run) < runs.size() ? runs[static_cast<std::size_t>(s.run)].label
                                                                                              : std::to_string(s.run);
        text += csv_field(run) + "," + std::to_string(s.step) + "," + (s.eval_loss ? format_number(*s.eval_loss) : "") + "," +
                (s.nonfinite ? "1" : "0") + "," + csv_field(s.text) + "\r\n";
    }
    return text;
}

std::filesystem::path samples_path(const std::filesystem::path& csv) {
    std::filesystem::path p = csv;
    p.replace_extension(".samples.csv");
    return p;
}

void write_samples_csv(const std::filesystem::path& path, const std::vector<TextSample>& samples,
                       const std::vector<RunInfo>& runs, nlohmann::json& sidecar) {
    write_file_atomic(path, samples_csv(samples, runs));
    sidecar["samples"] = path.filename().string();
}

}  // namespace mpx
