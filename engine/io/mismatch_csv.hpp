// The log-probability mismatch beside a run's CSV (`mpx-cli run --csv A.csv` writes A.mismatch.csv):
// tidy rows, one per policy per step per non-empty bin of |Δ log p|: `step, policy, reference,
// weights, tokens, mean_abs, max_abs, mean, bin, count` (bin: floor(log2|Δ|) as an integer, or
// `zero`, `inf`, `nan`); RFC 4180, C locale, round-trip numbers.
// Rule: written atomically (temporary file, then rename) like every export, and named in the CSV's
// sidecar ("mismatch"), so the files are found together.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/run/mismatch_result.hpp"

namespace mpx {

extern const char* const k_mismatch_columns[10];
// The whole file's text: the header, then the results in the order given.
std::string mismatch_csv(const std::vector<MismatchResult>& results);
// A.csv → A.mismatch.csv, beside it.
std::filesystem::path mismatch_path(const std::filesystem::path& csv);
// Written atomically (IoError with the reason); the sidecar gets "mismatch": the file's name.
void write_mismatch_csv(const std::filesystem::path& path, const std::vector<MismatchResult>& results,
                        nlohmann::json& sidecar);
// The bin cell of slot s (core::bin_slot): "-7", "zero", "inf", "nan".
std::string mismatch_bin_name(int slot);

}  // namespace mpx
