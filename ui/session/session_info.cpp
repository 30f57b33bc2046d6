// The session's layer names, and the layers its optimizer updates.
#include "ui/session/session_info.hpp"

#include "engine/compute/site_names.hpp"
#include "engine/model/model.hpp"

namespace mpx::gui {

int layerCount(const SessionInfo& s) {
    return s.layerNames.isEmpty() ? s.config.model.layers() : static_cast<int>(s.layerNames.size());
}

QString layerName(const SessionInfo& s, int layer) {
    if (layer >= 0 && layer < s.layerNames.size()) return s.layerNames[layer];
    return QString::fromStdString(mpx::layer_label(s.config.model, layer));
}

std::vector<int> updatedLayers(const SessionInfo& s) { return mpx::updated_layers(s.config.model); }

}  // namespace mpx::gui
