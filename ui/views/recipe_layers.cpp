#include "ui/views/recipe_layers.hpp"

#include "engine/compute/site_names.hpp"

namespace mpx::gui {

std::vector<int> recipeLayers(const mpx::ModelConfig& m) {
    std::vector<int> out;
    for (int l = 0; l < m.layers(); ++l)
        if (mpx::is_linear_layer(m, l)) out.push_back(l);
    return out;
}

QString recipeLayerText(const mpx::ModelConfig& m, int layer) {
    const QString label = QString::fromStdString(mpx::layer_label(m, layer));
    if (m.kind != mpx::ModelKind::gpt) return label;
    return label + QStringLiteral(" (") + QString::fromStdString(mpx::layer_name(m, layer)) + QLatin1Char(')');
}

}  // namespace mpx::gui
