// A sweep: one ordinary Session per grid point, points spread over worker threads, outcomes per run
// as one long CSV (one row per point and run) beside a JSON sidecar with the base configuration and
// the grid. Rule: a point trains exactly as `mpx-cli run` trains its configuration (same seed, data
// and initial weights), so every outcome except the step time is bit-identical to a run alone.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/run/session.hpp"
#include "engine/sweep/sweep_grid.hpp"
#include "engine/sweep/sweep_outcome.hpp"

namespace mpx {

// Folds one run's records into its outcome.
class OutcomeTally {
public:
    OutcomeTally(const RunInfo& run, long long steps);
    void add(const StepRecord& r);
    SweepOutcome finish(bool run_failed) const;

private:
    SweepOutcome m_out;
    double m_min_scale = 0.0;
    long long m_tail_from = 0, m_tail_n = 0, m_n = 0;
    double m_tail_sum = 0.0, m_time_sum = 0.0;
};

// Trains cfg to the end and returns its outcomes; nullopt when `stop` was raised first.
std::optional<SweepPoint> run_sweep_point(const SessionConfig& cfg, std::size_t index,
                                          const std::atomic<bool>* stop = nullptr,
                                          const BackendFactory& factory = {});

// The points of shard `index` of `count`: every count-th point from index.
std::vector<std::size_t> shard_points(std::size_t grid_size, std::size_t index, std::size_t count);

struct SweepOptions {
    unsigned threads = 0;                     // 0: one per core
    std::size_t shard_index = 0, shard_count = 1;
    const std::atomic<bool>* stop = nullptr;  // raised: workers finish nothing more, the sweep returns
    BackendFactory factory;
    // Called from a worker thread, one call at a time, after each finished point.
    std::function<void(const SweepPoint&, std::size_t done, std::size_t planned)> on_point;
    // Called first on every thread that trains points (the calling thread included): the app lowers
    // their priority so that its own training and window come first.
    std::function<void()> on_worker_start;
};

struct SweepResult {
    std::vector<SweepPoint> points;   // finished points, by index
    std::size_t planned = 0;          // the points of this shard
    bool cancelled = false;
    double wall_s = 0.0;
    unsigned threads = 1;
};

// Builds and validates every point's configuration first (a bad point fails before any trains),
// then trains them on worker threads, one Session each.
SweepResult run_sweep(const SweepGrid& grid, const SessionConfig& base, const SweepOptions& options);

std::string sweep_csv_header(const SweepGrid& grid);
std::string sweep_csv(const SweepGrid& grid, const SweepResult& result);

// The sidecar: base configuration, where it came from (preset name or file, for --explain), the
// grid, the columns and the shard. Points done is written by write_sweep.
nlohmann::json sweep_sidecar(const SweepGrid& grid, const SessionConfig& base, const std::string& config_source,
                             std::size_t shard_index, std::size_t shard_count);
// The CSV and its sidecar all or nothing (engine/io/export.hpp's write_files_together).
void write_sweep(const std::filesystem::path& csv, const SweepGrid& grid, const SweepResult& result,
                 nlohmann::json sidecar);
// Reads a sweep sidecar back: its grid and base configuration.
struct SweepSpec {
    nlohmann::json sidecar;
    SessionConfig base;
    SweepGrid grid;
};
SweepSpec read_sweep_sidecar(const std::filesystem::path& csv);

// The `mpx-cli run` arguments that reproduce point `point` of a sweep, as one shell line.
std::string explain_point(const SweepSpec& spec, std::size_t point);

// Merges shard CSVs: they must share one sidecar (shard and points done aside) and one header, and
// no point may come twice. Returns the number of points merged; `missing` gets the number of grid
// points no part had.
std::size_t merge_sweeps(const std::filesystem::path& out, const std::vector<std::filesystem::path>& parts,
                         std::size_t& missing);

}  // namespace mpx
