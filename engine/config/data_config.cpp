// A data set's settings: validation, JSON, and the shape a configuration gives.
#include "engine/config/data_config.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "engine/base/error.hpp"

namespace mpx {

namespace {

constexpr int digit_pixels = k_digit_side * k_digit_side;

constexpr std::string_view known_keys =
    "kind, n_train, n_test, classes, noise, input_scale, target_scale, seed, text_file";

std::string known_kinds() {
    std::string s;
    for (const auto& e : dataset_kind_names) {
        if (!s.empty()) s += ", ";
        s += e.name;
    }
    return s;
}

// ---- JSON helpers ----

[[noreturn]] void wrong_type(const std::string& field, std::string_view expected,
                             const nlohmann::json& v) {
    throw ConfigError(field, "expected " + std::string(expected) + ", got " + v.dump());
}

int json_int(const nlohmann::json& v, const std::string& field) {
    if (!v.is_number_integer()) wrong_type(field, "an integer", v);
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
            throw ConfigError(field, "value " + v.dump() + " is too large");
        return static_cast<int>(u);
    }
    const auto s = v.get<std::int64_t>();
    if (s < std::numeric_limits<int>::min() || s > std::numeric_limits<int>::max())
        throw ConfigError(field, "value " + v.dump() + " is out of range");
    return static_cast<int>(s);
}

double json_double(const nlohmann::json& v, const std::string& field) {
    if (!v.is_number()) wrong_type(field, "a number", v);
    return v.get<double>();
}

}  // namespace

void validate(const DatasetConfig& c) {
    if (enum_name(c.kind) == "?")
        throw ConfigError("data.kind", "unknown data set; known: " + known_kinds());
    if (c.n_train < 1 || c.n_train > k_max_samples)
        throw ConfigError("data.n_train", "must be between 1 and " + std::to_string(k_max_samples) + ", got " + std::to_string(c.n_train));
    if (c.n_test < 0 || c.n_test > k_max_samples)
        throw ConfigError("data.n_test", "must be between 0 and " + std::to_string(k_max_samples) + ", got " + std::to_string(c.n_test));
    if (uses_classes(c.kind) && (c.classes < 2 || c.classes > k_max_classes))
        throw ConfigError("data.classes", "must be between 2 and " + std::to_string(k_max_classes) + " for " + std::string(to_string(c.kind)) +
                                              ", got " + std::to_string(c.classes));
    if (!std::isfinite(c.noise) || c.noise < 0.0)
        throw ConfigError("data.noise", "must be a finite number >= 0");
    // The scales are applied in float: they must stay finite and non-zero there too.
    auto check_scale = [](double s, const char* field) {
        const float f = static_cast<float>(s);
        if (!std::isfinite(s) || !(s > 0.0) || !std::isfinite(f) || !(f > 0.0f))
            throw ConfigError(field, "must be a positive number within float range (1e-38 to 3e38)");
    };
    check_scale(c.input_scale, "data.input_scale");
    check_scale(c.target_scale, "data.target_scale");
    if (!c.text_file.empty() && c.kind != DatasetKind::text)
        throw ConfigError("data.text_file", "is a text to train a GPT on; set data.kind = text (and model.kind = gpt)");
}

void to_json(nlohmann::json& j, const DatasetConfig& c) {
    j = nlohmann::json{{"kind", std::string(to_string(c.kind))},
                       {"n_train", c.n_train},
                       {"n_test", c.n_test},
                       {"classes", c.classes},
                       {"noise", c.noise},
                       {"input_scale", c.input_scale},
                       {"target_scale", c.target_scale},
                       {"seed", c.seed}};
    if (c.kind == DatasetKind::text) j["text_file"] = c.text_file;
}

DatasetConfig dataset_config_from_json(const nlohmann::json& j, DatasetConfig c) {
    if (!j.is_object()) wrong_type("data", "an object of settings", j);
    for (const auto& [key, v] : j.items()) {
        const std::string field = "data." + key;
        if (key == "kind") {
            if (!v.is_string()) wrong_type(field, "a string", v);
            const auto k = parse_dataset_kind(v.get<std::string>());
            if (!k) throw ConfigError(field, "unknown data set " + v.dump() + "; known: " + known_kinds());
            c.kind = *k;
        } else if (key == "n_train") {
            c.n_train = json_int(v, field);
        } else if (key == "n_test") {
            c.n_test = json_int(v, field);
        } else if (key == "classes") {
            c.classes = json_int(v, field);
        } else if (key == "noise") {
            c.noise = json_double(v, field);
        } else if (key == "input_scale") {
            c.input_scale = json_double(v, field);
        } else if (key == "target_scale") {
            c.target_scale = json_double(v, field);
        } else if (key == "seed") {
            // Built in C++ a small seed is a signed JSON integer; parsed text gives unsigned.
            if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0))
                wrong_type(field, "a non-negative integer", v);
            c.seed = v.get<std::uint64_t>();
        } else if (key == "text_file") {
            if (!v.is_string()) wrong_type(field, "a file path (a string; empty for Debian's fortunes)", v);
            c.text_file = v.get<std::string>();
        } else {
            throw ConfigError(field, "unknown setting; known: " + std::string(known_keys));
        }
    }
    validate(c);
    return c;
}

DatasetShape dataset_shape(const DatasetConfig& c) {
    DatasetShape s;
    if (c.kind == DatasetKind::text) return s;  // the text's symbols decide the outputs (the session reads it)
    s.loss = c.kind == DatasetKind::sine ? LossKind::mse : LossKind::cross_entropy;
    s.features = c.kind == DatasetKind::digits ? digit_pixels : c.kind == DatasetKind::sine ? 1 : 2;
    s.outputs = s.loss == LossKind::cross_entropy ? class_count(c) : 1;
    return s;
}

int class_count(const DatasetConfig& c) {
    switch (c.kind) {
    case DatasetKind::spirals:
    case DatasetKind::blobs: return c.classes;
    case DatasetKind::digits: return 10;
    case DatasetKind::sine:
    case DatasetKind::text: return 0;
    default: return 2;
    }
}

}  // namespace mpx
