// The checkpoint format (--save-state, --resume; the app's state files): a session's configuration,
// step, batch order and every run's parameters, optimizer and scaler state and FP8 amax histories,
// as JSON. Rule: everything needed to resume bit-identically, and a reader as strict as the
// configuration's: every key known, every value in the range training can reach, every count
// consistent with the others, and each refusal naming its key (fp8_amax[2][0], compensation_max).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "engine/compute/backend_factory.hpp"

namespace mpx {

class Run;
class Session;

// A session's state; std::logic_error while a step is pending (Session::finish_pending first).
nlohmann::json save_state(const Session& session);
// One run's part of it (the tests compare runs by it).
nlohmann::json save_state(const Run& run);
// A new session from a saved state; ConfigError("--resume", ...) says what does not fit.
std::unique_ptr<Session> load_session_state(const nlohmann::json& j, BackendFactory factory = {});
// Restores a run's part into a run of the same label.
void load_run_state(Run& run, const nlohmann::json& j);

}  // namespace mpx
