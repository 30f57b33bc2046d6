// The desktop app's command line: mpx [--config NAME|FILE] [--set key=value]... [--start]
// [--pace fast|N[,events]] [--classroom] [--explorer VALUE] [--view charts|boundaries|range|where|updates|fp8] [--after-steps N --screenshot FILE.png]. Rule: a bad configuration is reported here, before any
// window opens, so scripts get a message and a non-zero exit code.
#pragma once

#include <QStringList>
#include <optional>

#include "engine/config/session_config.hpp"

namespace mpx::gui {

struct CommandLine {
    QString config;      // empty: the last session's configuration, else "default"
    QStringList sets;
    std::optional<mpx::Pace> pace;  // --pace: over the configuration's (engine/config/pace.hpp)
    bool start = false;
    qint64 afterSteps = -1;  // -1: not given
    QString screenshot;     // with --explorer: a picture of the explorer window
    QString explorer;       // --explorer VALUE: open the format explorer showing VALUE
    QString trace;          // --trace FILE: open a recorded trace as the window's session
    bool classroom = false; // --classroom: open in the classroom view
    QString view;           // --view: one of k_views (the central tab); empty: as last time
    bool showHelp = false;
};

struct CommandLineResult {
    std::optional<CommandLine> options;
    QString error;  // for stderr; exit code 2
    QString help;
};

// The names --view takes, in the order of the central tabs (MainWindow::View).
extern const QStringList k_views;

CommandLineResult parseCommandLine(const QStringList& arguments);
// argv without the options QApplication itself takes (-platform X, -style X, -reverse, ...), so the
// command line can be checked before QApplication exists (it aborts where there is no display).
QStringList argumentsWithoutQtOptions(int argc, char** argv);

// The configuration the options ask for: --config (or `fallback` when none is given, or
// "default"), then every --set in order, then the checks a session makes.
struct ResolvedConfig {
    std::optional<mpx::SessionConfig> config;
    QString origin;
    QString error;
};
ResolvedConfig resolveConfig(const CommandLine& cl, const std::optional<mpx::SessionConfig>& fallback);

}  // namespace mpx::gui
