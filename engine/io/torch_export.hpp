// A session as a folder PyTorch trains (`mpx-cli export-torch`, the app's File → Export as PyTorch
// script…): train.py (resources/torch/train.py, built into the program) beside the facts it trains
// from, all written by the engine's own code: the data sets, the initial weights, every step's batch
// indices and dropout masks as .npy files, and session.json with every run's per-layer formats, its
// resolved scaler and the learning rate of every schedule step. The script repeats no rule of mpx's:
// it reads them (docs/pytorch.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/session_config.hpp"

namespace mpx {

// The most an export writes of per-step data (batches, dropout masks): a check of mpx against
// PyTorch needs minutes of training, not a folder the size of a disk.
inline constexpr std::uint64_t k_max_torch_export_bytes = std::uint64_t{2} << 30;

// train.py, as shipped.
std::string_view torch_train_script();

// Why a run cannot be exported, or "" when it can: FP8 runs, stochastic or Kahan write-back, an
// accumulation model (the script has no such arithmetic to offer).
std::string torch_export_refusal(const SessionConfig& cfg, const std::string& label);

// Writes the folder `out` (which must not exist, or be an empty folder) all at once: everything goes
// to a temporary folder beside it, renamed into place only when complete, so an error leaves nothing
// behind. Throws ConfigError naming the run ("runs") for one that cannot be exported, naming
// "--out" for a folder in the way, "steps" for an export over k_max_torch_export_bytes or half
// the memory, "train.gradient_penalty" for a GPT with a penalty (mpx trains none), IoError for a failed write. Returns the files written, relative
// to `out`.
std::vector<std::string> export_torch(const SessionConfig& cfg, const std::filesystem::path& out);

}  // namespace mpx
