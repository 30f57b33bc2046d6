// PNG files written all or nothing: the picture goes to a temporary file beside the target, which
// replaces the target only once it is complete. Rule: a failed export (no folder, no permission, a
// full disk) leaves no half file and the old file, if any, untouched.
#pragma once

#include <QPixmap>
#include <QString>

namespace mpx::ui {

// false when the file could not be written whole; the target is then as it was.
bool savePng(const QPixmap& picture, const QString& path);

}  // namespace mpx::ui
