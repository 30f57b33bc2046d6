// mismatch.csv: the log-probability mismatch's histograms and numbers, one row per non-empty bin.
#include "engine/io/mismatch_csv.hpp"

#include "engine/base/text.hpp"
#include "engine/io/export.hpp"

namespace mpx {

const char* const k_mismatch_columns[10] = {"step",    "policy",  "reference", "weights", "tokens",
                                            "mean_abs", "max_abs", "mean",      "bin",     "count"};

std::string mismatch_bin_name(int slot) {
    if (slot == core::k_slot_zero) return "zero";
    if (slot == core::k_slot_inf) return "inf";
    if (slot == core::k_slot_nan) return "nan";
    return std::to_string(slot + core::k_bin_min);
}

std::string mismatch_csv(const std::vector<MismatchResult>& results) {
    std::string text;
    for (std::size_t i = 0; i < std::size(k_mismatch_columns); ++i) text += (i ? "," : "") + std::string(k_mismatch_columns[i]);
    text += "\r\n";
    for (const MismatchResult& r : results) {
        const std::string head = std::to_string(r.step) + "," + csv_field(r.policy) + "," + csv_field(r.reference) + "," +
                                 csv_field(r.weights) + "," + std::to_string(r.tokens) + "," + format_number(r.mean_abs) +
                                 "," + format_number(r.max_abs) + "," + format_number(r.mean) + ",";
        for (int s = 0; s < core::k_slots; ++s)
            if (r.bins.n[s]) text += head + mismatch_bin_name(s) + "," + std::to_string(r.bins.n[s]) + "\r\n";
    }
    return text;
}

std::filesystem::path mismatch_path(const std::filesystem::path& csv) {
    std::filesystem::path p = csv;
    p.replace_extension(".mismatch.csv");
    return p;
}

void write_mismatch_csv(const std::filesystem::path& path, const std::vector<MismatchResult>& results,
                        nlohmann::json& sidecar) {
    write_file_atomic(path, mismatch_csv(results));
    sidecar["mismatch"] = path.filename().string();
}

}  // namespace mpx
