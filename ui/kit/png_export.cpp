// savePng: QSaveFile (a temporary beside the target, renamed on commit), never a direct write.
#include "ui/kit/png_export.hpp"

#include <QSaveFile>

namespace mpx::ui {

bool savePng(const QPixmap& picture, const QString& path) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return false;
    if (!picture.save(&file, "PNG")) {
        file.cancelWriting();
        return false;
    }
    return file.commit();
}

}  // namespace mpx::ui
