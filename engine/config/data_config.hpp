// A data set's settings as plain data: which toy set, its size, noise and scales, and the shape it
// will have (features, outputs, loss), known without generating it. Rule: no Eigen here; the
// generators live in engine/model/dataset.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/base/enum_names.hpp"

namespace mpx {

enum class DatasetKind : std::uint8_t { spirals, moons, circles, xor_, blobs, sine, digits, text };

constexpr EnumName<DatasetKind> dataset_kind_names[] = {
    {DatasetKind::spirals, "spirals"}, {DatasetKind::moons, "moons"}, {DatasetKind::circles, "circles"},
    {DatasetKind::xor_, "xor"},         {DatasetKind::blobs, "blobs"}, {DatasetKind::sine, "sine"},
    {DatasetKind::digits, "digits"}, {DatasetKind::text, "text"}};
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
//   text     characters for the GPT (model.kind = gpt): Debian's fortunes, or text_file; n_test is
//            the number of held-out windows each evaluation reads (spread evenly over the held-out
//            10 %); n_train, classes, noise and the scales do not apply
struct DatasetConfig {
    DatasetKind kind = DatasetKind::spirals;
    int n_train = 2048;
    int n_test = 512;
    int classes = 2;  // spirals arms / blobs centres; fixed elsewhere (moons, circles, xor 2; digits 10)
    double noise = 0.1;
    double input_scale = 1.0;   // multiplies inputs (in float): pushes values toward a format's limits
    double target_scale = 1.0;  // multiplies regression targets (sine)
    std::uint64_t seed = 1;
    std::string text_file;  // text: a UTF-8 file to train on; empty = Debian's fortunes

    bool operator==(const DatasetConfig&) const = default;
};

// Throws ConfigError naming "data.<field>".
void validate(const DatasetConfig& c);
void to_json(nlohmann::json& j, const DatasetConfig& c);
// Overrides the keys `j` gives on top of `base`, then validates the result. Unknown key →
// ConfigError("data.<key>", "unknown setting; known: ..."); wrong type → ConfigError naming the field.
DatasetConfig dataset_config_from_json(const nlohmann::json& j, DatasetConfig base = {});

// The loss a data set is trained and evaluated with: softmax cross-entropy on class labels, or mean
// squared error on regression targets (sine).
enum class LossKind : std::uint8_t { cross_entropy, mse };

// Inputs and outputs of a data set, known without generating it.
struct DatasetShape {
    int features = 0;
    int outputs = 0;
    LossKind loss = LossKind::cross_entropy;
};
DatasetShape dataset_shape(const DatasetConfig& c);

// Classes of a classification set (0 for regression): spirals' arms, blobs' centres, 10 digits, 2 else.
int class_count(const DatasetConfig& c);
// Digits are (k_digit_side × k_digit_side) images, row-major.
inline constexpr int k_digit_side = 28;

}  // namespace mpx
