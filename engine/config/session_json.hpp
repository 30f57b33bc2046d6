// The sections' JSON that session_json.cpp writes and apply_overrides (session_config.cpp) reads
// back for a section to_json leaves out.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/config/session_config.hpp"

namespace mpx::session_json {

nlohmann::json fp8_to_json(const Fp8Config& f);
nlohmann::json fp4_to_json(const Fp4Config& f);
// "pace": a plain rate as its number (5), else its text ("fast,events", "20,events"); either form reads.
nlohmann::json pace_to_json(const Pace& p);
Pace pace_from_json(const nlohmann::json& v);

}  // namespace mpx::session_json
