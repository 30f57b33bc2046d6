// The `mpx` command line: options parse, --set overrides apply in order, and a bad configuration is
// an error message (for stderr and exit code 2) before any window opens.
#include <QTest>
#include <vector>

#include "app/gui/command_line.hpp"

using mpx::gui::parseCommandLine;
using mpx::gui::resolveConfig;

class TestCommandLine : public QObject {
    Q_OBJECT
private slots:
    void parses_every_option() {
        const auto r = parseCommandLine({"mpx", "--config", "default", "--set", "steps=50", "--set",
                                         "scaler.growth_interval=20", "--start", "--after-steps", "30",
                                         "--screenshot", "/tmp/x.png"});
        QVERIFY2(r.options.has_value(), qPrintable(r.error));
        QCOMPARE(r.options->config, QStringLiteral("default"));
        QCOMPARE(r.options->sets.size(), 2);
        QVERIFY(r.options->start);
        QCOMPARE(r.options->afterSteps, 30);
        QCOMPARE(r.options->screenshot, QStringLiteral("/tmp/x.png"));
        const auto cfg = resolveConfig(*r.options, std::nullopt);
        QVERIFY2(cfg.config.has_value(), qPrintable(cfg.error));
        QCOMPARE(cfg.config->steps, 50);
        QCOMPARE(cfg.config->scaler.growth_interval, 20);
    }

    // --pace overrides the configuration's "pace"; the help names its forms.
    void pace_overrides_the_configurations() {
        const auto r = parseCommandLine({"mpx", "--config", "default", "--pace", "20,events"});
        QVERIFY2(r.options.has_value(), qPrintable(r.error));
        QVERIFY(r.options->pace.has_value());
        const auto cfg = resolveConfig(*r.options, std::nullopt);
        QVERIFY2(cfg.config.has_value(), qPrintable(cfg.error));
        QCOMPARE(cfg.config->pace, (mpx::Pace{20.0, true}));
        const auto plain = resolveConfig(*parseCommandLine({"mpx", "--pace", "5"}).options, std::nullopt);
        QCOMPARE(plain.config->pace, (mpx::Pace{5.0, false}));
        const auto none = resolveConfig(*parseCommandLine({"mpx"}).options, std::nullopt);
        QCOMPARE(none.config->pace, mpx::load_config("default").pace);  // the preset's own
        QVERIFY(r.help.contains(QStringLiteral("--pace <fast|N[,events]>")));
        QVERIFY(r.help.contains(QStringLiteral("20,events")));
        QVERIFY(!r.help.contains(QStringLiteral("<executable_name>")));
    }

    void view_names_the_central_tab() {
        for (const char* name : {"charts", "boundaries", "range", "where", "updates", "fp8", "fp4", "samples", "attention", "mismatch"}) {
            const QString v = QString::fromLatin1(name);
            const auto r = parseCommandLine({"mpx", "--view", v});
            QVERIFY2(r.options.has_value(), qPrintable(r.error));
            QCOMPARE(r.options->view, v);
        }
        QCOMPARE(parseCommandLine({"mpx"}).options->view, QString());
    }

    void qt_options_are_left_to_qapplication() {
        const char* raw[] = {"mpx", "-platform", "offscreen", "--config", "default", "-style=fusion", "-reverse", "--start"};
        std::vector<char*> argv;
        for (const char* a : raw) argv.push_back(const_cast<char*>(a));
        const QStringList args = mpx::gui::argumentsWithoutQtOptions(static_cast<int>(argv.size()), argv.data());
        QCOMPARE(args, (QStringList{"mpx", "--config", "default", "--start"}));
        QVERIFY(parseCommandLine(args).options.has_value());
    }

    void rejects_bad_input_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("needle");
        QTest::newRow("unknown option") << QStringList{"mpx", "--frobnicate"} << "frobnicate";
        QTest::newRow("after-steps not a number") << QStringList{"mpx", "--after-steps", "ten", "--screenshot", "a.png"} << "ten";
        QTest::newRow("after-steps without screenshot") << QStringList{"mpx", "--after-steps", "10"} << "--screenshot";
        QTest::newRow("pace zero") << QStringList{"mpx", "--pace", "0"} << "--pace: '0' steps per second would never step";
        QTest::newRow("pace word") << QStringList{"mpx", "--pace", "slow"} << "--pace: 'slow' is not a pace; write fast, a number";
        QTest::newRow("pace too fast") << QStringList{"mpx", "--pace", "2000"} << "outside 0.1 to 1000";
        QTest::newRow("stray argument") << QStringList{"mpx", "default"} << "default";
        QTest::newRow("unknown view") << QStringList{"mpx", "--view", "boundary"} << "--view takes charts, boundaries, range, where, updates, fp8, fp4, samples, attention, mismatch, got 'boundary'";
    }
    void rejects_bad_input() {
        QFETCH(QStringList, args);
        QFETCH(QString, needle);
        const auto r = parseCommandLine(args);
        QVERIFY(!r.options);
        QVERIFY2(r.error.contains(needle), qPrintable(r.error));
    }

    void bad_configurations_are_messages_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("needle");
        QTest::newRow("unknown preset") << QStringList{"mpx", "--config", "no-such-preset"} << "unknown preset";
        QTest::newRow("missing file") << QStringList{"mpx", "--config", "/nonexistent/x.json"} << "cannot read";
        QTest::newRow("unknown key") << QStringList{"mpx", "--set", "scaler.bogus=1"} << "scaler.bogus";
        QTest::newRow("impossible value") << QStringList{"mpx", "--set", "scaler.growth_factor=0.5"} << "growth_factor";
        QTest::newRow("model does not fit data") << QStringList{"mpx", "--set", "model.sizes=3-8-2"} << "model.sizes";
    }
    void bad_configurations_are_messages() {
        QFETCH(QStringList, args);
        QFETCH(QString, needle);
        const auto r = parseCommandLine(args);
        QVERIFY2(r.options.has_value(), qPrintable(r.error));
        const auto cfg = resolveConfig(*r.options, std::nullopt);
        QVERIFY(!cfg.config);
        QVERIFY2(cfg.error.contains(needle), qPrintable(cfg.error));
    }
};

QTEST_APPLESS_MAIN(TestCommandLine)
#include "test_command_line.moc"
