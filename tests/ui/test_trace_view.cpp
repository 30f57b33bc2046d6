// The trace window shows what the replay computes: its counts and verdict are replay_trace's for the
// rule its controls hold, a change of a control replays at once, the frontier is drawn where the
// amax is known, and File ▸ Open trace refuses a bad file with the reader's message, leaving the
// app as it was. MPX_TRACE_PNG=path saves the window there (for looking at it, not for the test).
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "engine/io/trace.hpp"
#include "ui/kit/plot_widget.hpp"
#include "ui/views/trace_view.hpp"
#include "ui/window/main_window.hpp"

using namespace mpx;
using mpx::ui::TraceView;

namespace {

// Six steps recorded at 1024 without an overflow: amax 8, 16, 32, 60, 0.5, 0.5 (at 1024 the largest,
// 61440, fits). At a static 2^12 the products are 32768, 65536 (> 65504: overflow), 131072, 245760
// (overflows), 2048, 2048: three overflows; at 2^10 none.
const char* k_trace = "# mpx-trace 1; test\n"
                      "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                      "0,1024.0,0,0,1.0,8.0,fc2,0,0,,1,0.01\n"
                      "1,1024.0,0,0,1.0,16.0,fc2,0,0,,1,0.01\n"
                      "2,1024.0,0,0,1.0,32.0,fc2,0,0,,1,0.01\n"
                      "3,1024.0,0,0,1.0,60.0,fc2,0,0,,1,0.01\n"
                      "4,1024.0,0,0,1.0,0.5,fc1,0,0,,1,0.01\n"
                      "5,1024.0,0,0,1.0,0.5,fc1,0,0,,1,0.01\n";

}  // namespace

class TestTraceView : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void replaysWhatTheControlsSay() {
        TraceView v;
        v.setTrace(parse_trace(k_trace, "t.csv"));
        auto* preset = v.findChild<QComboBox*>();
        QVERIFY(preset);
        preset->setCurrentText(QStringLiteral("static"));
        auto boxes = v.findChildren<QSpinBox*>();
        QSpinBox* init = nullptr;
        for (QSpinBox* b : boxes)
            if (b->prefix() == QStringLiteral("2^")) init = b;
        QVERIFY(init);
        init->setValue(12);  // the replay runs on the change
        QCOMPARE(v.scaler().init_scale, 4096.0);
        QCOMPARE(v.result().skipped, 3LL);
        ScalerConfig want = scaler_preset("static");
        want.init_scale = 4096;
        const ReplayResult direct = replay_trace(parse_trace(k_trace, "t.csv"), want);
        QCOMPARE(v.result().skipped, direct.skipped);
        QCOMPARE(v.result().identical, 3LL);  // recorded at 1024 nothing overflowed
        QVERIFY2(v.verdictText().contains(QStringLiteral("3 of 6 steps skipped (recorded: 0)")), qPrintable(v.verdictText()));
        init->setValue(10);
        QCOMPARE(v.result().skipped, 0LL);
        // The frontier: 65504 / amax at every step.
        auto* plot = v.findChild<mpx::ui::PlotWidget*>();
        QVERIFY(plot);
        const QList<QPointF> frontier = plot->points(0);
        QCOMPARE(frontier.size(), 6);
        QCOMPARE(frontier[1].y(), 65504.0 / 16.0);
        if (const QByteArray png = qgetenv("MPX_TRACE_PNG"); !png.isEmpty()) {
            v.resize(1000, 640);
            v.show();
            QTest::qWait(200);
            (void)v.grab().save(QString::fromLocal8Bit(png));
        }
    }

    void openTraceFromTheMenu() {
        QVERIFY(m_dir.isValid());
        mpx::ui::MainWindow w;
        const QString good = m_dir.filePath(QStringLiteral("good.csv")), bad = m_dir.filePath(QStringLiteral("bad.csv"));
        QFile g(good);
        QVERIFY(g.open(QIODevice::WriteOnly));
        g.write(k_trace);
        g.close();
        QFile b(bad);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write("step,loss\n0,1\n");
        b.close();
        TraceView* v = w.openTrace(good);
        QVERIFY(v);
        QVERIFY(v->isWindow());
        QCOMPARE(v->result().steps.size(), std::size_t{6});
        v->close();
        QVERIFY(!w.openTrace(bad));
        QVERIFY(!w.openTrace(m_dir.filePath(QStringLiteral("missing.csv"))));
        bool said = false;
        for (QLabel* l : w.findChildren<QLabel*>())
            said = said || l->text().contains(QStringLiteral("Cannot open the trace"));
        QVERIFY(said);
    }
};

int main(int argc, char** argv) {
    QTemporaryDir home;
    qputenv("HOME", home.path().toUtf8());
    qputenv("XDG_CONFIG_HOME", (home.path() + "/.config").toUtf8());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestTraceView t;
    return QTest::qExec(&t, argc, argv);
}
#include "test_trace_view.moc"
