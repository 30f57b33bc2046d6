// The central views the window switches between, and their names (--view, the default file name of
// File ▸ Export the view as PNG). Rule: one table, in the enum's order.
#pragma once

#include <QString>
#include <QStringList>

#include <array>

namespace mpx::ui {

enum class CentralView { charts, boundaries, range, where, updates, fp8, fp4, samples, attention, mismatch };
inline constexpr std::array<const char*, 10> k_central_view_names = {"charts", "boundaries", "range",   "where",     "updates",
                                                                    "fp8",    "fp4",        "samples", "attention", "mismatch"};

inline QString centralViewName(CentralView v) {
    return QString::fromLatin1(k_central_view_names[static_cast<std::size_t>(v)]);
}
inline QStringList centralViewNames() {
    QStringList out;
    for (const char* n : k_central_view_names) out << QString::fromLatin1(n);
    return out;
}

}  // namespace mpx::ui
