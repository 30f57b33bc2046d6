// Toy data sets generated from a seed (no download) and the deterministic batch order over them.
// Rule: every number comes from mpx::Rng streams derived from the seed, so one configuration gives
// bit-identical arrays on every machine; train and test come from separate streams of one generator,
// so changing n_train never changes the test set.
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/enum_names.hpp"

namespace mpx {

enum class DatasetKind : std::uint8_t { spirals, moons, circles, xor_, blobs, sine, digits };

constexpr EnumName<DatasetKind> dataset_kind_names[] = {
    {DatasetKind::spirals, "spirals"}, {DatasetKind::moons, "moons"}, {DatasetKind::circles, "circles"},
    {DatasetKind::xor_, "xor"},         {DatasetKind::blobs, "blobs"}, {DatasetKind::sine, "sine"},
    {DatasetKind::digits, "digits"}};
constexpr std::span<const EnumName<DatasetKind>> names_of(DatasetKind) { return dataset_kind_names; }
inline std::string_view to_string(DatasetKind k) { return enum_name(k); }
inline std::optional<DatasetKind> parse_dataset_kind(std::string_view name) { return enum_parse<DatasetKind>(name); }
// Whether `classes` is a setting of the kind (spirals' arms, blobs' centres); the others fix it.
inline bool uses_classes(DatasetKind k) { return k == DatasetKind::spirals || k == DatasetKind::blobs; }
inline constexpr int k_max_classes = 10;
inline constexpr int k_max_samples = 1'000'000;  // n_train and n_test each

// What `noise` means per kind (0 gives the exact shapes):
//   spirals  jitter as a fraction of the gap between neighbouring arms (radius and angle, Gaussian
//            sd); about 1 makes the arms touch. Clean arm k: angle 2π(k/K + 1.25 r), r in [0.1, 1]
//   moons, circles, blobs, xor   sd of Gaussian noise added to each coordinate. Clean shapes: moons
//            are sklearn's shifted by (-0.5, -0.25) (unit half circles centred at (∓0.5, ∓0.25));
//            circles have radius 1 (label 0) and 0.5 (label 1); blob k is centred at angle 2πk/K on
//            the unit circle; xor is uniform on [-1, 1]², label 1 where x·y < 0, taken from the clean
//            point, so noise moves points across the axes
//   sine     sd of Gaussian noise added to sin(x), before target_scale
//   digits   sd of Gaussian noise added to each pixel, before clamping to [0, 1]
struct DatasetConfig {
    DatasetKind kind = DatasetKind::spirals;
    int n_train = 2048;
    int n_test = 512;
    int classes = 2;  // spirals arms / blobs centres; fixed elsewhere (moons, circles, xor 2; digits 10)
    double noise = 0.1;
    double input_scale = 1.0;   // multiplies inputs (in float): pushes values toward a format's limits
    double target_scale = 1.0;  // multiplies regression targets (sine)
    std::uint64_t seed = 1;

    bool operator==(const DatasetConfig&) const = default;
};

// Throws ConfigError naming "data.<field>".
void validate(const DatasetConfig& c);
void to_json(nlohmann::json& j, const DatasetConfig& c);
// Overrides the keys `j` gives on top of `base`, then validates the result. Unknown key →
// ConfigError("data.<key>", "unknown setting; known: ..."); wrong type → ConfigError naming the field.
DatasetConfig dataset_config_from_json(const nlohmann::json& j, DatasetConfig base = {});

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The loss a data set is trained and evaluated with: softmax cross-entropy on class labels, or mean
// squared error on regression targets (sine).
enum class LossKind : std::uint8_t { cross_entropy, mse };

struct Dataset {
    DatasetConfig config;
    int features = 0;  // 2 for the 2-D sets, 1 for sine, 784 (28×28 row-major) for digits
    int outputs = 0;   // classes for classification, 1 for sine
    LossKind loss = LossKind::cross_entropy;
    RowMatrix x_train, x_test;         // (n, features)
    std::vector<int> y_train, y_test;  // (n) class labels in [0, outputs); empty for sine
    RowMatrix t_train, t_test;         // (n, outputs) regression targets (sine); empty otherwise
};

// Inputs and outputs of a data set, known without generating it.
struct DatasetShape {
    int features = 0;
    int outputs = 0;
    LossKind loss = LossKind::cross_entropy;
};
DatasetShape dataset_shape(const DatasetConfig& c);

// Validates, then generates. Classification labels cycle 0, 1, …, K-1 so every split is balanced
// (class counts differ by at most one).
Dataset make_dataset(const DatasetConfig& c);

// Batch order for training: each epoch is a fresh Fisher–Yates permutation of 0..n-1 that depends only
// on (seed, epoch), handed out as consecutive batches of `batch` indices. The last partial batch of an
// epoch is dropped so every batch has the same size. State is (epoch, position): restoring it
// re-derives the epoch's permutation and continues identically.
class BatchSampler {
public:
    // ConfigError("train.batch_size") if batch == 0 or batch > n.
    BatchSampler(std::size_t n, std::size_t batch, std::uint64_t seed);

    // Valid until the next call to next() or restore(). (batch)
    std::span<const int> next();

    struct State {
        std::uint64_t epoch = 0;
        std::size_t position = 0;  // index into the epoch's permutation of the next batch
        bool operator==(const State&) const = default;
    };
    State state() const { return {m_epoch, m_position}; }
    void restore(const State& s);

    std::size_t batches_per_epoch() const { return m_perm.size() / m_batch; }

private:
    void shuffle_epoch();

    std::size_t m_batch;
    std::uint64_t m_seed;
    std::uint64_t m_epoch = 0;
    std::size_t m_position = 0;
    std::vector<int> m_perm;  // (n) this epoch's order
};

// dst(i, :) = src(idx[i], :). Resizes dst only when its shape differs, so a reused buffer never
// allocates. Throws std::out_of_range for an index outside src. dst: (idx.size(), src.cols())
void gather_rows(const RowMatrix& src, std::span<const int> idx, RowMatrix& dst);
// dst[i] = src[idx[i]], same contract as gather_rows.
void gather_labels(std::span<const int> src, std::span<const int> idx, std::vector<int>& dst);

}  // namespace mpx
