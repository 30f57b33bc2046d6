// Issue 27 item 5: a run's colour says its precision, whatever the lesson. The same precision is
// drawn alike in every preset, runs of one precision that differ in a '+' suffix differ in shade and
// dash, and no two runs of one session are drawn identically; the window's legend reads the styles.
// Issue 47 item 10: on a projector every two runs of a preset stay apart in colour (CIEDE2000,
// checked against Sharma, Wu and Dalal's published pairs).
#include <QCheckBox>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <array>
#include <cmath>
#include <map>

#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/session/run_colours.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::RunStyle;

namespace {

// Each run of a shipped preset with its style, as the worker describes the session.
std::map<std::string, RunStyle> stylesOf(const std::string& preset) {
    const mpx::SessionConfig c = mpx::load_config(preset);
    std::vector<mpx::RunSpec> specs;
    for (const std::string& label : c.runs) specs.push_back(mpx::resolve_run(label, c).spec);
    const std::vector<RunStyle> styles = mpx::gui::runStyles(specs);
    std::map<std::string, RunStyle> out;
    for (std::size_t i = 0; i < c.runs.size(); ++i) out[c.runs[i]] = styles[i];
    return out;
}

QColor colourOf(std::string_view label) { return mpx::gui::precisionColour(mpx::parse_run_spec(label)); }

using mpx::gui::deltaE2000;
using mpx::gui::Lab;

}  // namespace

class TestRunColours : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);  // the window's settings stay out of the user's
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
    }
    void same_precision_same_colour_in_every_preset_data() {
        QTest::addColumn<QString>("presetA");
        QTest::addColumn<QString>("presetB");
        QTest::addColumn<QString>("run");
        QTest::newRow("fp32: underflow, lost-updates") << "underflow" << "lost-updates" << "fp32";
        QTest::newRow("amp-fp16: lost-updates, default") << "lost-updates" << "default" << "amp-fp16";
        QTest::newRow("amp-fp16: overflow-storm, formats") << "overflow-storm" << "formats" << "amp-fp16";
        QTest::newRow("amp-bf16: default, fp8") << "default" << "fp8" << "amp-bf16";
        QTest::newRow("amp-bf16: bf16-no-scaler, default") << "bf16-no-scaler" << "default" << "amp-bf16";
        QTest::newRow("fp32: fp8, accumulation") << "fp8" << "accumulation" << "fp32";
    }
    void same_precision_same_colour_in_every_preset() {
        QFETCH(QString, presetA);
        QFETCH(QString, presetB);
        QFETCH(QString, run);
        const RunStyle a = stylesOf(presetA.toStdString()).at(run.toStdString());
        const RunStyle b = stylesOf(presetB.toStdString()).at(run.toStdString());
        QCOMPARE(a.colour, b.colour);
        QCOMPARE(a.pen, b.pen);
        QCOMPARE(a.colour, colourOf(run.toStdString()));  // a plain label: its precision's own colour
        QCOMPARE(a.pen, Qt::SolidLine);
    }

    // underflow's amp-fp16+none and +pytorch are amp-fp16's family (its hue), not another precision's.
    void a_variant_is_a_shade_of_its_precision() {
        const auto underflow = stylesOf("underflow");
        const QColor amp = colourOf("amp-fp16");
        for (const char* label : {"amp-fp16+none", "amp-fp16+pytorch"}) {
            const QColor c = underflow.at(label).colour;
            QVERIFY2(std::abs(c.hslHue() - amp.hslHue()) <= 6, label);
        }
        QVERIFY(underflow.at("amp-fp16+none").colour != underflow.at("amp-fp16+pytorch").colour ||
                underflow.at("amp-fp16+none").pen != underflow.at("amp-fp16+pytorch").pen);
        // The families: FP16 warm, BF16 blue, FP8 green, FP32 neutral.
        QVERIFY(colourOf("amp-fp16").hslHue() < 45);
        QVERIFY(colourOf("amp-bf16").hslHue() > 180 && colourOf("amp-bf16").hslHue() < 240);
        QVERIFY(colourOf("fp8-hybrid").hslHue() > 120 && colourOf("fp8-hybrid").hslHue() < 180);
        QCOMPARE(colourOf("fp32").hslSaturation(), 0);
    }

    void no_two_runs_of_a_preset_are_drawn_alike_data() {
        QTest::addColumn<QString>("preset");
        for (const std::string& name : mpx::preset_names()) QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    void no_two_runs_of_a_preset_are_drawn_alike() {
        QFETCH(QString, preset);
        const auto styles = stylesOf(preset.toStdString());
        QVERIFY(styles.size() >= 2);
        for (auto a = styles.begin(); a != styles.end(); ++a)
            for (auto b = std::next(a); b != styles.end(); ++b)
                QVERIFY2(a->second.colour != b->second.colour || a->second.pen != b->second.pen,
                         qPrintable(QStringLiteral("%1 and %2").arg(QString::fromStdString(a->first), QString::fromStdString(b->first))));
    }

    // The formula against Sharma, Wu and Dalal's test pairs (their table 1: pairs 1, 7, 17, 25).
    void delta_e_2000_matches_the_published_pairs() {
        QVERIFY(std::abs(deltaE2000(Lab{50.0, 2.6772, -79.7751}, Lab{50.0, 0.0, -82.7485}) - 2.0425) < 1e-4);
        QVERIFY(std::abs(deltaE2000(Lab{50.0, 0.0, 0.0}, Lab{50.0, -1.0, 2.0}) - 2.3669) < 1e-4);
        QVERIFY(std::abs(deltaE2000(Lab{50.0, 2.5, 0.0}, Lab{73.0, 25.0, -18.0}) - 27.1492) < 1e-4);
        QVERIFY(std::abs(deltaE2000(Lab{60.2574, -34.0099, 36.2677}, Lab{60.4626, -34.1751, 39.4387}) - 1.2644) < 1e-4);
    }

    // On a projector, washed out by the room's light (a fifth of white added: dark shades close up):
    // every two runs of a shipped preset differ by at least 10 in CIEDE2000 — lines told apart at a
    // glance, whatever their dashes. Before this, lost-updates' pure-fp16 and +sr were 7.6 apart and
    // attention-overflow's +attn-before and +qk-norm one colour.
    void runs_of_a_preset_stay_apart_on_a_projector_data() { no_two_runs_of_a_preset_are_drawn_alike_data(); }
    void runs_of_a_preset_stay_apart_on_a_projector() {
        QFETCH(QString, preset);
        constexpr double k_projector = 10.0, k_family = 8.0;
        const auto styles = stylesOf(preset.toStdString());
        QStringList close;
        for (auto a = styles.begin(); a != styles.end(); ++a)
            for (auto b = std::next(a); b != styles.end(); ++b) {
                const double d = mpx::gui::projectedDifference(a->second.colour, b->second.colour);
                const bool family = mpx::gui::precisionColour(mpx::parse_run_spec(a->first)) ==
                                    mpx::gui::precisionColour(mpx::parse_run_spec(b->first));
                if (d < (family ? k_family : k_projector))
                    close << QStringLiteral("%1 (%2) and %3 (%4): ΔE2000 %5")
                                 .arg(QString::fromStdString(a->first), a->second.colour.name(),
                                      QString::fromStdString(b->first), b->second.colour.name())
                                 .arg(d, 0, 'f', 1);
            }
        QVERIFY2(close.isEmpty(), qPrintable(close.join(QStringLiteral("; "))));
    }

    // Runs no preset ships together, one precision many times: still all different.
    void a_crowded_session_still_draws_every_run_apart() {
        std::vector<mpx::RunSpec> specs;
        for (const char* l : {"amp-fp16", "amp-fp16+pytorch", "amp-fp16+apex", "amp-fp16+keras", "amp-fp16+tf-keras-legacy",
                              "amp-fp16+deepspeed", "amp-fp16+deepspeed-legacy", "amp-fp16+megatron", "amp-fp16+nemo",
                              "amp-fp16+static", "amp-fp16+none"})
            specs.push_back(mpx::parse_run_spec(l));
        const std::vector<RunStyle> s = mpx::gui::runStyles(specs);
        QCOMPARE(s.size(), specs.size());
        for (std::size_t i = 0; i < s.size(); ++i)
            for (std::size_t j = i + 1; j < s.size(); ++j)
                QVERIFY(s[i].colour != s[j].colour || s[i].pen != s[j].pen);
    }

    // FP4 (issue 30): nvfp4 and mxfp4 have colours of their own, in a wine/purple family no other
    // precision uses, apart in lightness; a switch ("nvfp4+1d") is a shade and dash of its
    // precision, the same whatever the session's order.
    void fp4_runs_have_their_own_stable_colours() {
        const QColor nv = colourOf("nvfp4"), mx = colourOf("mxfp4");
        QVERIFY(nv != mx);
        QVERIFY(std::abs(nv.lightness() - mx.lightness()) >= 30);
        for (const QColor& c : {nv, mx}) QVERIFY2(c.hslHue() >= 290 && c.hslHue() <= 340, qPrintable(c.name()));
        for (const char* other : {"fp32", "tf32", "scaling-only", "amp-fp16", "amp-bf16", "pure-fp16", "pure-bf16",
                                  "half-fp16", "half-bf16", "selective-fp16", "selective-bf16", "adaptive-fp16",
                                  "adaptive-bf16", "fp8-hybrid", "fp8-e4m3", "mxfp8"}) {
            QVERIFY2(colourOf(other) != nv && colourOf(other) != mx, other);
        }
        std::vector<mpx::RunSpec> a, b;
        for (const char* l : {"amp-bf16", "nvfp4", "nvfp4+1d", "mxfp4", "nvfp4+no-sr", "mxfp4+floor"})
            a.push_back(mpx::parse_run_spec(l));
        for (const char* l : {"mxfp4+floor", "nvfp4+no-sr", "nvfp4+1d", "mxfp4", "amp-bf16", "nvfp4"})
            b.push_back(mpx::parse_run_spec(l));
        const std::vector<RunStyle> sa = mpx::gui::runStyles(a), sb = mpx::gui::runStyles(b);
        QCOMPARE(sa[1].colour, nv);
        QCOMPARE(sa[1].pen, Qt::SolidLine);
        QVERIFY(sa[2].pen != Qt::SolidLine);
        QVERIFY(std::abs(sa[2].colour.hslHue() - nv.hslHue()) <= 6);
        QVERIFY(std::abs(sa[5].colour.hslHue() - mx.hslHue()) <= 6);
        // The same label, the same style, in either order.
        QCOMPARE(sa[2].colour, sb[2].colour);
        QCOMPARE(sa[2].pen, sb[2].pen);
        QCOMPARE(sa[4].colour, sb[1].colour);
        QCOMPARE(sa[5].colour, sb[0].colour);
        for (std::size_t i = 0; i < sa.size(); ++i)
            for (std::size_t j = i + 1; j < sa.size(); ++j)
                QVERIFY(sa[i].colour != sa[j].colour || sa[i].pen != sa[j].pen);
    }

    // The window's session description carries the styles: amp-bf16 is the same in two lessons.
    void the_window_describes_each_run_with_its_style() {
        mpx::ui::MainWindow w;
        QColor bf16[2];
        int k = 0;
        for (const char* preset : {"default", "fp8"}) {
            mpx::SessionConfig c = mpx::load_config(preset);
            c.steps = 5;
            QSignalSpy started(w.store(), &mpx::gui::RecordStore::sessionStarted);
            w.applyConfig(c, QStringLiteral("test"));
            QVERIFY(started.wait(10'000));
            const auto session = w.store()->session();
            QVERIFY(session);
            for (const auto& d : session->runs) {
                QVERIFY(d.style.colour.isValid());
                if (d.label == QLatin1String("amp-bf16")) bf16[k] = d.style.colour;
            }
            ++k;
        }
        QVERIFY(bf16[0].isValid());
        QCOMPARE(bf16[0], bf16[1]);
        QCOMPARE(bf16[0], colourOf("amp-bf16"));
    }
};

QTEST_MAIN(TestRunColours)
#include "test_run_colours.moc"
