// The GPT's two views end to end on the offscreen platform, in a temporary HOME and working folder:
// the Samples view shows each run's newest sample exactly as an independent Session writes it (step,
// held-out loss, text), "Write samples now" adds one per run, the export writes samples.csv beside
// the CSV and names it in the sidecar, and the picture exports; the Attention view's marked cells
// (scores stored as inf) add up, over every head and window, to the engine's own count of scores
// past FP16's largest value at that block on that step.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/base/text.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/io/samples_csv.hpp"
#include "engine/model/gpt.hpp"
#include "engine/run/session.hpp"
#include "ui/kit/png_export.hpp"
#include "ui/views/attention_view.hpp"
#include "ui/views/samples_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/window/main_window.hpp"

using mpx::gui::EngineState;
using mpx::gui::RecordStore;
using mpx::ui::AttentionView;
using mpx::ui::MainWindow;
using mpx::ui::SamplesView;

namespace {

mpx::SessionConfig classroom(long long steps) {
    mpx::SessionConfig c = mpx::load_config("gpt-classroom");
    c.steps = steps;
    c.sample.every = 2;
    c.sample.length = 30;
    return c;
}

std::string fileText(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class TestGptViews : public QObject {
    Q_OBJECT
    std::unique_ptr<MainWindow> w;
    QTemporaryDir dir;

    void applyAndWait(const mpx::SessionConfig& c) {
        QSignalSpy started(w->store(), &RecordStore::sessionStarted);
        w->applyConfig(c, QStringLiteral("test"));
        QVERIFY(started.wait(10'000));
    }
    void runTo(qint64 steps) {
        w->run(steps);
        QTRY_COMPARE_WITH_TIMEOUT(w->store()->steps(), steps, 60'000);
        QTRY_VERIFY_WITH_TIMEOUT(w->engine()->state() == EngineState::paused || w->engine()->state() == EngineState::finished, 10'000);
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test"));
        QVERIFY(dir.isValid());
    }
    void init() {
        w = std::make_unique<MainWindow>();
        w->resize(1280, 800);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    }
    void cleanup() { w.reset(); }

    void samples_view_shows_what_the_engine_wrote() {
        const mpx::SessionConfig c = classroom(4);
        w->setView(MainWindow::View::samples);
        applyAndWait(c);
        runTo(3);
        w->store()->drainNow();
        // The engine's own samples, from a session of the same configuration: steps 0 and 2.
        mpx::Session s(c);
        std::vector<mpx::TextSample> want;
        for (int k = 0; k < 3; ++k) {
            s.step();
            for (auto& t : s.take_samples()) want.push_back(t);
        }
        QCOMPARE(want.size(), std::size_t{6});
        QTRY_COMPARE(w->store()->samples().size(), std::size_t{6});
        SamplesView* v = w->samplesView();
        QCOMPARE(v->message(), QString());
        QCOMPARE(v->shownRuns(), (std::vector<int>{0, 1, 2}));
        for (int r = 0; r < 3; ++r) {
            const mpx::TextSample& engine = want[3 + static_cast<std::size_t>(r)];
            const mpx::TextSample* shown = w->store()->latestSample(r);
            QVERIFY(shown);
            QCOMPARE(shown->text, engine.text);
            QCOMPARE(shown->step, 2LL);
            QVERIFY(engine.eval_loss);
            QCOMPARE(v->sourceText(r), QStringLiteral("step 2 · held-out loss %1").arg(*engine.eval_loss, 0, 'f', 3));
            QVERIFY(!v->columnRect(r).isEmpty());
        }
        // Three columns side by side within the view at 1280×800.
        QVERIFY(v->columnRect(0).right() < v->columnRect(1).left());
        QVERIFY(v->columnRect(2).right() <= v->width());
        // Write samples now: one more per run, from the weights of step 2 (the last taken).
        QVERIFY(v->sampleButton()->isEnabled());
        QSignalSpy more(w->store(), &RecordStore::samplesUpdated);
        v->sampleButton()->click();
        QVERIFY(more.wait(10'000));
        QCOMPARE(w->store()->samples().size(), std::size_t{9});
        QCOMPARE(w->store()->latestSample(1)->text, want[4].text);  // same weights, same step's uniforms
        // The export: samples.csv beside the CSV, named by the sidecar.
        const QString csv = dir.filePath(QStringLiteral("gpt.csv"));
        QSignalSpy exported(w->engine(), &mpx::gui::EngineController::exported);
        w->engine()->exportCsv(csv);
        QVERIFY(exported.wait(10'000));
        const QString samples = dir.filePath(QStringLiteral("gpt.samples.csv"));
        QVERIFY(QFile::exists(samples));
        const std::string text = fileText(samples);
        QVERIFY(text.rfind("run,step,eval_loss,nonfinite,text\r\n", 0) == 0);
        for (std::size_t k = 0; k < want.size(); ++k)  // every scheduled sample, its text quoted as RFC 4180 has it
            QVERIFY(text.find("," + mpx::csv_field(want[k].text) + "\r\n") != std::string::npos);
        QVERIFY(fileText(dir.filePath(QStringLiteral("gpt.json"))).find("\"samples\": \"gpt.samples.csv\"") != std::string::npos);
        // A folder given as the CSV is refused, and nothing appears beside it (the samples' name is
        // derived from the CSV's: "sub" would have given "sub.samples.csv" next to the folder).
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("sub")));
        const QStringList before = QDir(dir.path()).entryList(QDir::Files);
        QSignalSpy failed(w->engine(), &mpx::gui::EngineController::exportFailed);
        w->engine()->exportCsv(dir.filePath(QStringLiteral("sub")));
        QVERIFY(failed.wait(10'000));
        QVERIFY2(failed.first().first().toString().contains(QStringLiteral("is a folder")),
                 qPrintable(failed.first().first().toString()));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), before);
        QVERIFY(QDir(dir.filePath(QStringLiteral("sub"))).entryList(QDir::Files).isEmpty());
        // The picture and the classroom view.
        QVERIFY(w->exportViewPng(dir.filePath(QStringLiteral("samples.png"))));
        QVERIFY(QFile(dir.filePath(QStringLiteral("samples.png"))).size() > 1000);
        w->setClassroom(true);
        QVERIFY(!v->columnRect(0).isEmpty());
        QVERIFY(v->columnRect(2).right() <= v->width());
        w->setClassroom(false);
    }

    // The Updates view lists the layers whose parameters the optimizer updates, by the names the
    // other views use, and each layer's curve is the engine's update_ulp histogram of that step:
    // one update per parameter of the layer (its weights, biases and the LayerNorm feeding it).
    void updates_lists_the_layers_the_optimizer_updates() {
        mpx::SessionConfig c = classroom(3);
        c.runs = {"fp32", "amp-bf16"};
        c.instruments.every = 1;
        w->setView(MainWindow::View::updates);
        applyAndWait(c);
        runTo(3);
        w->store()->drainNow();
        mpx::ui::UpdatesView* v = w->updatesView();
        const auto* choice = v->findChild<QComboBox*>();
        QVERIFY(choice);
        const std::vector<int> layers = mpx::updated_layers(c.model);
        QCOMPARE(choice->count(), static_cast<int>(layers.size()) + 1);
        mpx::Session s(c);
        for (int k = 0; k < 3; ++k) s.step();
        const std::vector<int> owner = mpx::gpt_param_layers(s.config().model.gpt);
        const mpx::InitialWeights init = mpx::init_weights(s.config().model, c.seed);  // the text's vocabulary read
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const int l = layers[i];
            QCOMPARE(choice->itemText(static_cast<int>(i) + 1), QString::fromStdString(mpx::layer_label(c.model, l)));
            QVERIFY(!choice->itemText(static_cast<int>(i) + 1).startsWith(QStringLiteral("fc")));
            unsigned long long params = 0;
            for (std::size_t p = 0; p < owner.size(); ++p)
                if (owner[p] == l) params += static_cast<unsigned long long>(init.tensors[p].size());
            v->setLayer(l);
            v->setStep(2);
            for (int r = 0; r < 2; ++r) {
                const mpx::ui::UpdatesView::Curve got = v->curve(r);
                QCOMPARE(got.step, 2LL);
                const mpx::HistogramSnapshot& snap = s.run(static_cast<std::size_t>(r)).histograms().snapshots().back();
                QCOMPARE(snap.step, 2LL);
                const mpx::Histogram* h = snap.find(l, mpx::HistTensor::update_ulp);
                QVERIFY(h);
                QCOMPARE(got.nonzero + got.zero, params);
                for (int b = mpx::core::k_bin_min; b <= mpx::core::k_bin_max; ++b)
                    QCOMPARE(got.n[static_cast<std::size_t>(b - mpx::core::k_bin_min)], snap.count(*h, b));
            }
        }
        // No attention layer without QK-norm: it holds no parameter.
        QCOMPARE(std::count(layers.begin(), layers.end(), mpx::gpt_layer(mpx::GptSite::attn, 0)), 0L);
    }

    void attention_marks_the_scores_the_engine_counted() {
        // Initial weights 600× nanoGPT's: under amp-fp16 with 1/√d after q·kᵀ, scores pass 65504.
        mpx::SessionConfig c = classroom(3);
        c.runs = {"amp-fp16", "amp-bf16"};
        c.model.gpt.init_scale = 600;
        w->setView(MainWindow::View::attention);
        applyAndWait(c);
        QSignalSpy kept(w->store(), &RecordStore::attentionUpdated);
        runTo(1);
        QTRY_VERIFY_WITH_TIMEOUT(!w->store()->attention().empty(), 10'000);
        AttentionView* v = w->attentionView();
        QCOMPARE(v->message(), QString());
        QCOMPARE(v->runA(), 0);
        QCOMPARE(v->runB(), 1);
        const mpx::AttentionMaps* fp16 = v->mapsOf(0);
        const mpx::AttentionMaps* bf16 = v->mapsOf(1);
        QVERIFY(fp16 && bf16);
        QCOMPARE(fp16->step, 0LL);
        // The engine's record of the same step, from a session of its own.
        mpx::Session s(c);
        const std::vector<mpx::StepRecord> rec = s.step();
        long long marked_all = 0;
        for (int b = 0; b < c.model.gpt.n_layer; ++b) {
            long long marked = 0, bf16_marked = 0;
            for (int win = 0; win < fp16->batch; ++win)
                for (int h = 0; h < fp16->heads; ++h) {
                    marked += AttentionView::markedCells(*fp16, b, win, h);
                    bf16_marked += AttentionView::markedCells(*bf16, b, win, h);
                }
            QCOMPARE(static_cast<unsigned long long>(marked), fp16->blocks[static_cast<std::size_t>(b)].overflow);
            QCOMPARE(bf16_marked, 0LL);
            marked_all += marked;
        }
        QVERIFY2(marked_all > 0, "no score passed 65504: the setting no longer shows the overflow");
        QVERIFY(rec[0].overflow_count >= marked_all);
        QCOMPARE(rec[0].first_nonfinite, static_cast<std::int16_t>(mpx::site_index(mpx::gpt_layer(mpx::GptSite::attn, 0), mpx::TensorKind::output)));
        // A marked cell on the map: its hover names the value and the overflow.
        int block = 0, win = 0, head = 0;
        for (; block < c.model.gpt.n_layer; ++block)
            for (win = 0; win < fp16->batch; ++win)
                for (head = 0; head < fp16->heads; ++head)
                    if (AttentionView::markedCells(*fp16, block, win, head) > 0) goto found;
    found:
        v->setBlock(block);
        v->setWindow(win);
        v->setHead(head);
        const QRect map = v->mapRect(0);
        QVERIFY(!map.isEmpty());
        QVERIFY(!v->mapRect(1).isEmpty() && v->mapRect(1).left() > map.right());
        const int T = fp16->T;
        const auto& blk = fp16->blocks[static_cast<std::size_t>(block)];
        for (int i = 0; i < T; ++i)
            for (int j = 0; j <= i; ++j)
                if (std::isinf(blk.scores[((static_cast<std::size_t>(win) * fp16->heads + head) * T + i) * T + j])) {
                    const QPoint at(map.left() + (2 * j + 1) * map.width() / (2 * T), map.top() + (2 * i + 1) * map.height() / (2 * T));
                    QCOMPARE(v->cellAt(0, at), QPoint(j, i));
                    const QString tip = v->tooltipAt(at);
                    QVERIFY2(tip.contains(QStringLiteral("query position %1 reads key position %2").arg(i).arg(j)) &&
                                 tip.contains(QStringLiteral("65504")) && tip.contains(QStringLiteral("infinity")),
                             qPrintable(tip));
                    i = T;
                    break;
                }
        QVERIFY(v->captionOf(0).contains(QStringLiteral("The engine counted %1").arg(blk.overflow)));
        QVERIFY(w->exportViewPng(dir.filePath(QStringLiteral("attention.png"))));
        // Hidden: steps keep no maps.
        w->setView(MainWindow::View::charts);
        const std::size_t before = w->store()->attention().size();
        runTo(3);
        w->store()->drainNow();
        QCOMPARE(w->store()->attention().size(), before);
    }
};

int main(int argc, char** argv) {
    // Nothing of the user's: a temporary HOME and working folder (settings, file dialogs, exports).
    QTemporaryDir home;
    qputenv("HOME", home.path().toUtf8());
    qputenv("XDG_CONFIG_HOME", (home.path() + "/.config").toUtf8());
    qputenv("XDG_DATA_HOME", (home.path() + "/.local").toUtf8());
    qputenv("XDG_CACHE_HOME", (home.path() + "/.cache").toUtf8());
    QDir::setCurrent(home.path());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
    TestGptViews t;
    return QTest::qExec(&t, argc, argv);
}
#include "test_gpt_views.moc"
