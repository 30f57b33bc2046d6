// Configuration flags → SessionConfig, and device choice.
#include "cli_common.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "cuda/backend_choice.hpp"
#include "engine/base/error.hpp"
#include "engine/base/quote.hpp"

namespace mpx::cli {

SessionConfig build_config(const ConfigFlags& f) {
    SessionConfig c = load_config(f.config);
    std::vector<std::string> sets;
    // Text values go in as JSON strings, so quotes or digits in them reach the setting as typed.
    const auto text = [&](const std::optional<std::string>& value, const char* flag, const char* key,
                          const char* example) {
        if (!value) return;
        if (value->find_first_not_of(" ,") == std::string::npos)
            throw ConfigError(flag, std::string("must not be empty, e.g. ") + flag + " " + example);
        sets.push_back(std::string(key) + "=" + nlohmann::json(*value).dump());
    };
    text(f.precision, "--precision", "runs", "fp32,amp-fp16");
    text(f.scaler, "--scaler", "scaler.preset", "pytorch");
    text(f.model, "--model", "model.sizes", "2-64-64-2");
    text(f.dataset, "--dataset", "data.kind", "spirals");
    if (f.steps != ConfigFlags::steps_not_given) {
        if (f.steps < 1 || f.steps > k_max_steps)
            throw ConfigError("--steps", "must be between 1 and " + std::to_string(k_max_steps) + " (got " +
                                             std::to_string(f.steps) + ")");
        sets.push_back("steps=" + std::to_string(f.steps));
    }
    if (f.seed) {
        const std::uint64_t seed = parse_seed(*f.seed, "--seed");
        sets.push_back("seed=" + std::to_string(seed));
        sets.push_back("data.seed=" + std::to_string(seed));
    }
    text(f.device, "--device", "device", "cpu");
    sets.insert(sets.end(), f.sets.begin(), f.sets.end());
    apply_overrides(c, sets);
    return c;
}

NamedPath config_input(const ConfigFlags& f) {
    // load_config's own test of a name against a path: a name is a preset, shipped, not the user's.
    const bool is_file = f.config.find('/') != std::string::npos || std::filesystem::path(f.config).extension() == ".json";
    return {"the --config file", is_file ? std::filesystem::path(f.config) : std::filesystem::path()};
}

std::uint64_t parse_seed(const std::string& text, const char* flag) {
    std::uint64_t v = 0;
    bool ok = !text.empty();
    for (const char ch : text) {
        ok = ok && ch >= '0' && ch <= '9' && !__builtin_mul_overflow(v, 10u, &v) &&
             !__builtin_add_overflow(v, static_cast<unsigned>(ch - '0'), &v);
        if (!ok) break;
    }
    if (!ok)
        throw ConfigError(flag, quoted_text(text) + " is not a whole number from 0 to 18446744073709551615 (2^64 - 1)");
    return v;
}

void refuse_unused(const CLI::App& cmd, std::initializer_list<std::string_view> used, const std::string& mode) {
    for (const CLI::Option* opt : cmd.get_options()) {
        const std::string name = opt->get_name();
        if (opt->count() == 0 || name == "--help" || std::find(used.begin(), used.end(), name) != used.end()) continue;
        throw ConfigError(name, "does nothing " + mode + "; drop it");
    }
}

BackendFactory backend_for(const std::string& device, std::string& device_name, std::string& note) {
    BackendChoice c = choose_backend(device, "--device");
    device_name = c.device.name;
    note = c.device.fallback;  // a GPU left unused on "cpu" is the user's choice: not worth a line here
    return std::move(c.factory);
}

}  // namespace mpx::cli
