// mpx, the desktop app: reads the command line, builds the main window and, for --screenshot, trains
// the requested steps, saves the window as PNG and quits.
#include <QApplication>
#include <QTextStream>
#include <QTimer>
#include <cstdio>

#include "app/gui/command_line.hpp"
#include "engine/base/text.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/views/boundary_view.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/window/main_window.hpp"
#include "ui/kit/png_export.hpp"

namespace {

void say(const QString& text) {
    QTextStream(stderr) << text << Qt::endl;
}

// Saves the window once `steps` are recorded (or the run ended before) and, with the decision
// boundaries shown, their grids show that step; then quits.
void screenshotWhenReady(mpx::ui::MainWindow& w, qint64 steps, const QString& path) {
    auto* store = w.store();
    auto* engine = w.engine();
    auto done = std::make_shared<bool>(false);
    auto take = [&w, path, done] {
        if (*done) return;
        *done = true;
        // One more drain and redraw, then let the layout settle before grabbing.
        QTimer::singleShot(150, &w, [&w, path] {
            w.store()->drainNow();
            w.charts()->refresh();
            QTimer::singleShot(100, &w, [&w, path] {
                const bool ok = w.saveScreenshot(path);
                if (!ok) say(QStringLiteral("mpx: cannot write %1").arg(path));
                QApplication::exit(ok ? 0 : 1);
            });
        });
    };
    auto check = [&w, store, engine, steps, take] {
        const bool ended = engine->state() == mpx::gui::EngineState::finished ||
                           (engine->state() == mpx::gui::EngineState::paused && store->steps() > 0);
        if (!store->session() || !(store->steps() >= steps || ended)) return;
        if (w.view() == mpx::ui::MainWindow::View::boundaries && !w.boundaryView()->showsStep(store->steps())) return;
        take();
    };
    QObject::connect(store, &mpx::gui::RecordStore::stepsRecorded, &w, check);
    QObject::connect(store, &mpx::gui::RecordStore::sessionStarted, &w, check);
    QObject::connect(store, &mpx::gui::RecordStore::boundariesUpdated, &w, check);
    QObject::connect(engine, &mpx::gui::EngineController::stateChanged, &w, check);
    QObject::connect(engine, &mpx::gui::EngineController::runFailed, &w, [](const QString& m) {
        say(QStringLiteral("mpx: %1").arg(m));
        QApplication::exit(1);
    });
}

}  // namespace

int main(int argc, char** argv) {
    QApplication::setOrganizationName(QStringLiteral("mpx"));
    QApplication::setApplicationName(QStringLiteral("mpx"));
    // The command line and the configuration are checked before QApplication exists, so a bad
    // configuration gets its message and exit code 2 even where no display can be opened.
    // Qt would turn bytes that are not UTF-8 into U+FFFD and go on with a name nobody typed.
    for (int i = 1; i < argc; ++i)
        if (!mpx::valid_utf8(argv[i])) {
            say(QStringLiteral("mpx: argument %1 is not valid UTF-8 text; use UTF-8 characters only (mpx --help)").arg(i));
            return 2;
        }
    const mpx::gui::CommandLineResult parsed =
        mpx::gui::parseCommandLine(mpx::gui::argumentsWithoutQtOptions(argc, argv));
    if (!parsed.options) {
        say(QStringLiteral("mpx: %1 (mpx --help)").arg(parsed.error));  // one line: scripts read it
        return 2;
    }
    const mpx::gui::CommandLine& cl = *parsed.options;
    if (cl.showHelp) {
        QTextStream(stdout) << parsed.help;
        return 0;
    }
    // The last session's configuration is a convenience: if it no longer loads, start from default.
    const auto last = cl.config.isEmpty() ? mpx::ui::MainWindow::lastConfig() : std::nullopt;
    mpx::gui::ResolvedConfig resolved = mpx::gui::resolveConfig(cl, last);
    if (!resolved.config && cl.config.isEmpty() && last) resolved = mpx::gui::resolveConfig(cl, std::nullopt);
    if (!resolved.config) {
        say(QStringLiteral("mpx: %1").arg(resolved.error));
        return 2;
    }

    QApplication app(argc, argv);
    QApplication::setApplicationDisplayName(QStringLiteral("mpx — Mixed-Precision Explorer"));
    QApplication::setDesktopFileName(QStringLiteral("mpx"));

    mpx::ui::MainWindow w;
    w.applyConfig(*resolved.config, resolved.origin);
    if (cl.classroom) w.setClassroom(true);
    if (!cl.trace.isEmpty() && !w.openTrace(cl.trace) && !cl.screenshot.isEmpty()) {
        say(QStringLiteral("mpx: %1").arg(w.messages()->text()));
        return 1;
    }
    if (!cl.view.isEmpty()) w.setView(static_cast<mpx::ui::MainWindow::View>(mpx::gui::k_views.indexOf(cl.view)));
    w.show();
    if (!cl.explorer.isEmpty()) {
        mpx::ui::FormatExplorer* ex = w.showFormatExplorer(cl.explorer);
        if (!cl.screenshot.isEmpty()) {  // a picture of the explorer alone
            QTimer::singleShot(300, ex, [ex, path = cl.screenshot] {
                const bool ok = mpx::ui::savePng(ex->grab(), path);
                if (!ok) say(QStringLiteral("mpx: cannot write %1").arg(path));
                QApplication::exit(ok ? 0 : 1);
            });
            return QApplication::exec();
        }
    }
    if (!cl.screenshot.isEmpty()) {
        const qint64 steps = std::max<qint64>(cl.afterSteps, 0);
        screenshotWhenReady(w, steps, cl.screenshot);
        if (steps > 0) w.run(steps);  // stops at exactly `steps` so the picture is reproducible
    } else if (cl.start) {
        w.run(-1, mpx::Timing::paced);  // at the configuration's pace (--pace)
    }
    return QApplication::exec();
}
