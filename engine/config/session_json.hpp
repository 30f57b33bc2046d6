// The sections' JSON that session_json.cpp writes and apply_overrides (session_config.cpp) reads
// back for a section to_json leaves out.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/config/session_config.hpp"

namespace mpx::session_json {

nlohmann::json fp8_to_json(const Fp8Config& f);
nlohmann::json fp4_to_json(const Fp4Config& f);

}  // namespace mpx::session_json
