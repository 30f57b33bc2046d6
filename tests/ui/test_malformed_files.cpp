// The app's file readers under random malformed input: File ▸ Open trace… (a trace and the
// histograms beside it), Open configuration… and Reproduce from export… are each handed mutations
// of a good file (cut short, bytes flipped, junk inserted, lines dropped, doubled or swapped, an
// empty or binary file). Each opens, or shows its error in the message bar naming the file; the app
// never crashes and keeps working (a good file still opens after the bad ones). Seeded
// (MPX_MALFORMED_SEED; else from the clock), the seed printed; every file lives in a temporary
// folder, and no file dialog is opened.
#include <QApplication>
#include <QDateTime>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include "engine/config/run_plan.hpp"
#include "engine/config/session_config.hpp"
#include "engine/io/export.hpp"
#include "ui/kit/message_bar.hpp"
#include "ui/window/main_window.hpp"

namespace {

const QByteArray k_trace = "# mpx-trace 1; torch test; every 2\n"
                           "step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,forward_site,grad_norm,lr\n"
                           "0,65536.0,1,1,nan,0.9,fc2,1,0,,,0.01\n"
                           "1,32768.0,0,0,0.69,0.5,fc2,0,0,,0.3,0.01\n"
                           "2,32768.0,0,0,0.61,0.25,fc1,0,0,,0.2,0.01\n"
                           "3,32768.0,1,1,inf,0.25,fc1,1,4,fc1,,0.01\n";
const QByteArray k_histograms = "run,step,layer,tensor,bin_log2,count\n"
                                "trace,0,fc1,grad_output,-14,10\ntrace,0,fc2,grad_output,0,90\n"
                                "trace,2,fc2,grad_output,zero,5\ntrace,2,fc1,grad_output,-20,7\n";

QByteArray mutate(QByteArray text, QRandomGenerator& rng) {
    const auto pick = [&](int n) { return static_cast<int>(rng.bounded(static_cast<quint32>(n))); };
    switch (pick(8)) {
        case 0: return text.left(pick(int(text.size()) + 1));  // cut short
        case 1: {                                               // bytes flipped
            for (int i = 0, n = 1 + pick(4); i < n && !text.isEmpty(); ++i) text[pick(int(text.size()))] = char(pick(256));
            return text;
        }
        case 2: {  // junk inserted
            QByteArray junk;
            for (int i = 0, n = 1 + pick(12); i < n; ++i) junk += "\0\xff,\n\"{}[]-9e999nan"[pick(18)];
            return text.insert(pick(int(text.size()) + 1), junk);
        }
        case 3:
        case 4:
        case 5: {  // a line dropped, doubled or two swapped
            QList<QByteArray> lines = text.split('\n');
            const int i = pick(int(lines.size())), j = pick(int(lines.size()));
            if (pick(3) == 0) lines.removeAt(i);
            else if (pick(2) == 0) lines.insert(i, lines[j]);
            else lines.swapItemsAt(i, j);
            return lines.join('\n');
        }
        case 6: return {};  // empty
        default: {          // binary
            QByteArray b;
            for (int i = 0, n = pick(200); i < n; ++i) b += char(pick(256));
            return b;
        }
    }
}

bool write(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    return f.write(bytes) == bytes.size();
}

}  // namespace

class TestMalformedFiles : public QObject {
    Q_OBJECT
private slots:
    void randomMalformedFilesShowAMessage() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const quint32 seed = qEnvironmentVariableIsSet("MPX_MALFORMED_SEED")
                                 ? quint32(qEnvironmentVariableIntValue("MPX_MALFORMED_SEED"))
                                 : quint32(QDateTime::currentMSecsSinceEpoch());
        qInfo("seed %u (MPX_MALFORMED_SEED=%u repeats this run)", seed, seed);
        QRandomGenerator rng(seed);

        mpx::SessionConfig cfg = mpx::load_config("default");
        const QByteArray config = QByteArray::fromStdString(mpx::to_json(cfg).dump(2));
        std::vector<mpx::RunInfo> runs;
        for (const auto& label : cfg.runs) runs.push_back(mpx::resolve_run(label, cfg));
        const QByteArray sidecar = QByteArray::fromStdString(mpx::sidecar_json(cfg, runs, "cpu", 10).dump(2));

        mpx::ui::MainWindow w;
        auto* bar = w.findChild<mpx::ui::MessageBar*>();
        QVERIFY(bar);
        int opened = 0, refused = 0;
        const int rounds = 240;
        for (int i = 0; i < rounds; ++i) {
            const int kind = int(rng.bounded(4u));
            const QString base = dir.filePath(QStringLiteral("f%1").arg(i));
            bar->hide();
            if (kind <= 1) {  // a trace; with kind 1 its histograms beside it are the malformed ones
                const QString path = base + QStringLiteral(".csv");
                QVERIFY(write(path, kind == 0 ? mutate(k_trace, rng) : k_trace));
                if (kind == 1) QVERIFY(write(base + QStringLiteral(".histograms.csv"), mutate(k_histograms, rng)));
                if (w.openTrace(path)) {
                    ++opened;
                } else {
                    ++refused;
                    QVERIFY2(!bar->isHidden() && bar->kind() == mpx::ui::MessageBar::Kind::error &&
                                 bar->text().contains(QStringLiteral("Cannot open the trace")) &&
                                 bar->text().contains(kind == 0 ? path : base + QStringLiteral(".histograms.csv")),
                             qPrintable(bar->text()));
                }
            } else {
                const QString path = base + QStringLiteral(".json");
                QVERIFY(write(path, mutate(kind == 2 ? config : sidecar, rng)));
                if (kind == 2) w.loadConfigFile(path);
                else w.reproduceFrom(path);
                const bool error = !bar->isHidden() && bar->kind() == mpx::ui::MessageBar::Kind::error;
                if (error) {
                    ++refused;
                    QVERIFY2(bar->text().contains(kind == 2 ? QStringLiteral("Could not load") : QStringLiteral("Could not reproduce")) &&
                                 bar->text().contains(path),
                             qPrintable(bar->text()));
                } else {
                    ++opened;
                }
            }
            QApplication::processEvents();
        }
        qInfo("%d of %d malformed files refused with a message, %d still readable", refused, rounds, opened);
        QVERIFY(refused > rounds / 2);
        // Still working: a good trace and a good configuration open.
        QVERIFY(write(dir.filePath(QStringLiteral("good.csv")), k_trace));
        QVERIFY(w.openTrace(dir.filePath(QStringLiteral("good.csv"))));
        QVERIFY(w.traceSession());
        QCOMPARE(w.traceSession()->replay.steps.size(), std::size_t{4});
        QVERIFY(w.store()->showsOutsideSession());
        QVERIFY(write(dir.filePath(QStringLiteral("good.json")), config));
        w.loadConfigFile(dir.filePath(QStringLiteral("good.json")));
        QVERIFY(!(!bar->isHidden() && bar->kind() == mpx::ui::MessageBar::Kind::error));
    }
};

int main(int argc, char** argv) {
    QTemporaryDir home;
    qputenv("HOME", home.path().toUtf8());
    qputenv("XDG_CONFIG_HOME", (home.path() + "/.config").toUtf8());
    qputenv("XDG_DATA_HOME", (home.path() + "/.local").toUtf8());
    qputenv("XDG_CACHE_HOME", (home.path() + "/.cache").toUtf8());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
    TestMalformedFiles t;
    return QTest::qExec(&t, argc, argv);
}
#include "test_malformed_files.moc"
