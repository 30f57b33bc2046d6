// The classroom view: the toggle hides the settings and the rest of the chosen controls and enlarges
// the window, Run/Step/Reset and the lesson stay; its state saves into the configuration file and
// that file, loaded again (mpx --config lesson.json), reproduces the same demo.
#include <QDockWidget>
#include <QMenuBar>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/command_line.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/panels/classroom.hpp"
#include "ui/panels/event_log_panel.hpp"
#include "ui/session/config_bridge.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx::ui;

class TestClassroom : public QObject {
    Q_OBJECT
    QTemporaryDir dir;

    static QDockWidget* settingsDock(MainWindow& w) { return w.findChild<QDockWidget*>(QStringLiteral("settingsDock")); }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(dir.isValid());
    }

    void toggle_hides_settings_and_keeps_the_chosen_controls() {
        MainWindow w;
        w.show();
        w.loadConfigFile(QStringLiteral("underflow"));
        const qreal normal = w.font().pointSizeF();
        QVERIFY(settingsDock(w)->isVisible());
        w.setClassroom(true);
        QVERIFY(!settingsDock(w)->isVisible());
        QVERIFY(!w.eventLog()->isVisible());
        QVERIFY(!w.menuBar()->isVisible());
        QVERIFY(w.lessonDock()->isVisible());
        QVERIFY(w.font().pointSizeF() > 1.3 * normal);
        QCOMPARE(w.charts()->presentationScale(), Classroom::k_chartScale);
        QCOMPARE(w.classroom()->setKept({QStringLiteral("event-log")}), QStringList{});
        QVERIFY(w.eventLog()->isVisible());
        QVERIFY(!settingsDock(w)->isVisible());
        w.setClassroom(false);
        QVERIFY(settingsDock(w)->isVisible());
        QVERIFY(w.menuBar()->isVisible());
        QCOMPARE(w.font().pointSizeF(), normal);
        QCOMPARE(w.charts()->presentationScale(), 1.0);
        w.engine()->pause();
    }

    void classroom_file_round_trips() {
        const QString path = dir.filePath(QStringLiteral("lesson.json"));
        QString saved;
        {
            MainWindow w;
            w.show();
            w.loadConfigFile(QStringLiteral("underflow"));
            w.classroom()->setKept({QStringLiteral("presets"), QStringLiteral("event-log")});
            w.setClassroom(true);
            const mpx::SessionConfig c = w.currentConfig();
            QVERIFY(c.classroom);
            QCOMPARE(*c.classroom, (std::vector<std::string>{"presets", "event-log"}));
            QCOMPARE(mpx::gui::saveConfig(c, path), QString());
            saved = mpx::gui::configToJson(c);
            w.engine()->pause();
        }
        const mpx::gui::ConfigResult r = mpx::gui::loadConfig(path);
        QVERIFY2(r.config, qPrintable(r.error));
        QCOMPARE(mpx::gui::configToJson(*r.config), saved);  // configuration, seed, lesson, controls
        QCOMPARE(r.config->seed, mpx::load_config("underflow").seed);
        QCOMPARE(r.config->lesson, mpx::load_config("underflow").lesson);

        // What `mpx --config lesson.json` does: the window opens in the same classroom view.
        const auto cl = mpx::gui::parseCommandLine({"mpx", "--config", path});
        QVERIFY(cl.options);
        const mpx::gui::ResolvedConfig resolved = mpx::gui::resolveConfig(*cl.options, std::nullopt);
        QVERIFY2(resolved.config, qPrintable(resolved.error));
        MainWindow w;
        w.show();
        w.applyConfig(*resolved.config, path);
        QVERIFY(w.classroom()->isOn());
        QCOMPARE(w.classroom()->kept(), (QStringList{QStringLiteral("presets"), QStringLiteral("event-log")}));
        QVERIFY(!settingsDock(w)->isVisible());
        QVERIFY(w.eventLog()->isVisible());
        QCOMPARE(mpx::gui::configToJson(w.currentConfig()), saved);
        w.engine()->pause();
    }

    void without_classroom_the_file_has_no_classroom_key() {
        const mpx::SessionConfig c = mpx::load_config("underflow");
        QVERIFY(!c.classroom);
        QVERIFY(!mpx::to_json(c).contains("classroom"));
    }

    void unknown_control_is_reported() {
        mpx::SessionConfig c = mpx::load_config("underflow");
        c.classroom = std::vector<std::string>{"settings", "laser-pointer"};
        MainWindow w;
        w.show();
        w.applyConfig(c, QStringLiteral("test"));
        QVERIFY(w.classroom()->isOn());
        QCOMPARE(w.classroom()->kept(), QStringList{QStringLiteral("settings")});
        QVERIFY(w.messages()->isVisible());
        w.engine()->pause();
    }

    void command_line_flag() {
        const auto r = mpx::gui::parseCommandLine({"mpx", "--config", "underflow", "--classroom"});
        QVERIFY(r.options);
        QVERIFY(r.options->classroom);
        QVERIFY(!mpx::gui::parseCommandLine({"mpx"}).options->classroom);
    }
};

QTEST_MAIN(TestClassroom)
#include "test_classroom.moc"
