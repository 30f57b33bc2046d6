// How a session gets one backend per run (the CPU's, or a GPU's), without the backend's interface:
// the app and the CLI pick a factory from a device setting, the session calls it.
#pragma once

#include <functional>
#include <memory>

namespace mpx {

class Backend;
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

}  // namespace mpx
