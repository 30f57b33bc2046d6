// Command line of `mpx`, with QCommandLineParser.
#include "app/gui/command_line.hpp"

#include <QCommandLineParser>

#include "engine/io/export.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/window/view_names.hpp"

namespace mpx::gui {

const QStringList k_views = mpx::ui::centralViewNames();

CommandLineResult parseCommandLine(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("mpx — Mixed-Precision Explorer"));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Preset name or path to a JSON configuration."),
                                    QStringLiteral("NAME|FILE"));
    const QCommandLineOption set(QStringLiteral("set"), QStringLiteral("Override any field, e.g. scaler.growth_interval=50 (repeatable)."),
                                 QStringLiteral("key=value"));
    const QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start training at once (at the pace)."));
    const QCommandLineOption pace(QStringLiteral("pace"),
                                  QStringLiteral("How fast Run steps: fast (as fast as the engine goes), N steps per "
                                                 "second (e.g. 5 or 0.5), and either with ,events to slow to %1 steps/s "
                                                 "for %2 steps around a skipped step, a scale change or an overflow "
                                                 "(e.g. 20,events). Overrides the configuration's \"pace\"; Step "
                                                 "and --after-steps are never paced.")
                                      .arg(mpx::k_event_steps_per_second)
                                      .arg(mpx::k_event_steps),
                                  QStringLiteral("fast|N[,events]"));
    const QCommandLineOption after(QStringLiteral("after-steps"), QStringLiteral("With --screenshot: train N steps first."),
                                   QStringLiteral("N"));
    const QCommandLineOption shot(QStringLiteral("screenshot"), QStringLiteral("Save a PNG of the window and quit."),
                                  QStringLiteral("FILE.png"));
    const QCommandLineOption explorer(QStringLiteral("explorer"),
                                      QStringLiteral("Open the format explorer showing VALUE (e.g. 65520 or 0x1p-24)."),
                                      QStringLiteral("VALUE"));
    const QCommandLineOption classroom(QStringLiteral("classroom"),
                                       QStringLiteral("Open in the classroom view (large, settings hidden; F11 toggles)."));
    const QCommandLineOption view(QStringLiteral("view"),
                                  QStringLiteral("The central view: training charts, decision boundaries (2-D data sets), "
                                                 "range (where one layer's values sit against the format), where "
                                                 "(underflow/overflow per layer and step), updates (update size "
                                                 "against the weights' spacing), fp8 (FP8 runs' scales, amax "
                                                 "history, saturated and flushed shares) or fp4 (FP4 runs: where "
                                                 "values land on E2M1's eight sizes, block tops, clamped and flushed)."),
                                  QStringLiteral("charts|boundaries|range|where|updates|fp8|fp4|samples|attention|mismatch"));
    const QCommandLineOption trace(QStringLiteral("trace"),
                                   QStringLiteral("Open a recorded trace (mpx-cli trace) and replay a scaler rule over it."),
                                   QStringLiteral("FILE"));
    p.addOptions({help, config, set, start, pace, after, shot, explorer, classroom, view, trace});
    CommandLineResult r;
    // Parsed before QApplication exists, Qt names the program "<executable_name>": it is mpx.
    r.help = p.helpText().replace(QStringLiteral("<executable_name>"), QStringLiteral("mpx"));
    if (!p.parse(arguments)) {
        r.error = p.errorText();
        return r;
    }
    CommandLine cl;
    cl.showHelp = p.isSet(help);
    cl.config = p.value(config);
    cl.sets = p.values(set);
    cl.start = p.isSet(start);
    if (p.isSet(pace)) {
        try {
            cl.pace = mpx::parse_pace(p.value(pace).toStdString(), "--pace");
        } catch (const std::exception& e) {
            r.error = QString::fromStdString(e.what());
            return r;
        }
    }
    cl.screenshot = p.value(shot);
    cl.explorer = p.value(explorer);
    cl.trace = p.value(trace);
    cl.classroom = p.isSet(classroom);
    cl.view = p.value(view);
    if (p.isSet(view) && !k_views.contains(cl.view)) {
        r.error = QStringLiteral("--view takes %1, got '%2'").arg(k_views.join(QStringLiteral(", ")), cl.view);
        return r;
    }
    if (p.isSet(after)) {
        bool ok = false;
        cl.afterSteps = p.value(after).toLongLong(&ok);
        if (!ok || cl.afterSteps < 0) {
            r.error = QStringLiteral("--after-steps needs a step count (0 or more), got '%1'").arg(p.value(after));
            return r;
        }
        if (cl.screenshot.isEmpty()) {
            r.error = QStringLiteral("--after-steps goes with --screenshot FILE.png");
            return r;
        }
    }
    if (p.isSet(shot)) {  // checked now, not after the steps it waits for
        try {
            mpx::check_output_path(cl.screenshot.toStdString(), "--screenshot");
        } catch (const std::exception& e) {
            r.error = QString::fromStdString(e.what());
            return r;
        }
    }
    if (!p.positionalArguments().isEmpty()) {
        r.error = QStringLiteral("unexpected argument '%1' (use --config NAME|FILE)").arg(p.positionalArguments().front());
        return r;
    }
    r.options = cl;
    return r;
}

QStringList argumentsWithoutQtOptions(int argc, char** argv) {
    static const QStringList withValue = {"-platform", "-platformpluginpath", "-platformtheme", "-plugin",
                                          "-qwindowgeometry", "-qwindowicon", "-qwindowtitle", "-session",
                                          "-style", "-stylesheet", "-display", "-geometry", "-name", "-title",
                                          "-visual", "-ncols", "-cmap"};
    static const QStringList flags = {"-reverse", "-widgetcount", "-nograb", "-dograb", "-sync"};
    QStringList out;
    for (int i = 0; i < argc; ++i) {
        const QString a = QString::fromLocal8Bit(argv[i]);
        QString bare = a;
        if (bare.startsWith(QLatin1String("--"))) bare.remove(0, 1);  // Qt accepts -style and --style
        if (i > 0 && withValue.contains(bare.section(QLatin1Char('='), 0, 0))) {
            if (!bare.contains(QLatin1Char('='))) ++i;
            continue;
        }
        if (i > 0 && flags.contains(bare)) continue;
        out << a;
    }
    return out;
}

ResolvedConfig resolveConfig(const CommandLine& cl, const std::optional<mpx::SessionConfig>& fallback) {
    ResolvedConfig out;
    ConfigResult base;
    if (!cl.config.isEmpty()) {
        base = loadConfig(cl.config);
        out.origin = cl.config;
    } else if (fallback) {
        base.config = fallback;
        out.origin = QStringLiteral("the last session");
    } else {
        base = loadConfig(QStringLiteral("default"));
        out.origin = QStringLiteral("default");
    }
    if (!base.config) {
        out.error = base.error;
        return out;
    }
    ConfigResult withSets = applyOverrides(*base.config, cl.sets);
    if (!withSets.config) {
        out.error = withSets.error;
        return out;
    }
    if (cl.pace) withSets.config->pace = *cl.pace;
    if (const QString problem = checkConfig(*withSets.config); !problem.isEmpty()) {
        out.error = problem;
        return out;
    }
    out.config = withSets.config;
    if (!cl.sets.isEmpty()) out.origin += QStringLiteral(" with %1 --set override(s)").arg(cl.sets.size());
    return out;
}

}  // namespace mpx::gui
