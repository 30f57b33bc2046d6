// Shares and format names in the views' one spelling.
#include "ui/kit/number_text.hpp"

namespace mpx::ui {

QString percentText(double share) {
    if (share == 0) return QStringLiteral("0 %");
    return QStringLiteral("%1 %").arg(100.0 * share, 0, 'g', share < 0.001 ? 2 : 3);
}

QString formatName(mpx::Format f) { return QString::fromLatin1(format_info(f).name).toUpper(); }

}  // namespace mpx::ui
