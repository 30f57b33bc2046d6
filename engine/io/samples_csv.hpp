// The GPT's samples beside a run's CSV (`mpx-cli run --csv A.csv` writes A.samples.csv; so does the
// app's export): one row per run per sample, `run, step, eval_loss, nonfinite, text`, RFC 4180
// (the text quoted, its line breaks kept inside the quotes), C locale, round-trip numbers.
// Rule: written atomically (temporary file, then rename) like every export, and named in the
// CSV's sidecar ("samples"), so the three files are found together.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/run_plan.hpp"
#include "engine/run/text_sample.hpp"

namespace mpx {

extern const char* const k_sample_columns[5];
// The whole file's text: the header, then the samples in the order given.
std::string samples_csv(const std::vector<TextSample>& samples, const std::vector<RunInfo>& runs);
// A.csv → A.samples.csv, beside it.
std::filesystem::path samples_path(const std::filesystem::path& csv);
// Written atomically (IoError with the reason); the sidecar gets "samples": the file's name.
void write_samples_csv(const std::filesystem::path& path, const std::vector<TextSample>& samples,
                       const std::vector<RunInfo>& runs, nlohmann::json& sidecar);

}  // namespace mpx
