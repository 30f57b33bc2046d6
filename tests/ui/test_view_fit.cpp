// Issue 47 item 11 and its first "Done when": every central view, the format explorer and the
// accumulator lab, at 1280×800 and 1920×1080, normal and classroom, each on a lesson that exercises
// it, trained a few steps: no text is elided ("…", Qt Charts' "..."), cut at its widget's edge, or
// painted over another text. The texts are read as Qt painted them (ui/kit/painted_texts.hpp: each
// widget rendered alone into a recording device), so labels, Qt Charts' items and custom-painted
// views are read alike, and each view must have painted some: the test cannot pass on an empty view.
#include <QAbstractButton>
#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QScreen>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QScrollArea>
#include <QScrollBar>
#include <QTest>
#include <QTextDocument>
#include <QTextEdit>

#include "engine/config/session_config.hpp"
#include "ui/kit/painted_texts.hpp"
#include "ui/panels/charts_panel.hpp"
#include "ui/session/engine_controller.hpp"
#include "ui/views/accumulator_lab.hpp"
#include "ui/views/attention_view.hpp"
#include "ui/views/boundary_view.hpp"
#include "ui/views/format_explorer.hpp"
#include "ui/views/fp4_view.hpp"
#include "ui/views/fp8_view.hpp"
#include "ui/views/mismatch_view.hpp"
#include "ui/views/range_view.hpp"
#include "ui/views/samples_view.hpp"
#include "ui/views/updates_view.hpp"
#include "ui/views/where_view.hpp"
#include "ui/window/main_window.hpp"
#include "ui/window/view_names.hpp"

using mpx::gui::EngineState;
using mpx::ui::CentralView;
using mpx::ui::MainWindow;

namespace {

struct Seen {
    QString text;
    QRectF rect;   // in the view's pixels
    QWidget* by;   // the widget that painted it
};

QString plain(const QString& text) {
    if (!Qt::mightBeRichText(text)) return text;
    QTextDocument doc;
    doc.setHtml(text);
    return doc.toPlainText();
}

// A run of text shortened with an ellipsis. Buttons, labels and combo boxes say what they hold, so a
// run of theirs is elided where their text does not hold it; painted text is judged by its shape:
// Qt Charts' "...", or "…" closing a word ("amp-fp16…", not "a … b" nor a whole "Computing…").
bool elided(const QString& run, QWidget* by) {
    QString whole;
    if (auto* b = qobject_cast<QAbstractButton*>(by)) whole = b->text();
    else if (auto* l = qobject_cast<QLabel*>(by)) whole = plain(l->text());
    else if (auto* c = qobject_cast<QComboBox*>(by)) whole = c->currentText();
    if (!whole.isEmpty()) return !whole.simplified().contains(run.simplified());
    if (run.contains(QStringLiteral("..."))) return true;
    static const QStringList whole_ones = {QStringLiteral("Computing the first maps…")};
    const QString t = run.trimmed();
    return t.endsWith(QChar(0x2026)) && t.size() > 1 && !t[t.size() - 2].isSpace() && !whole_ones.contains(t);
}

// w's top left in root's pixels (mapTo walks parentWidget() and needs root on that path).
QPointF offset(const QWidget* w, const QWidget* root) { return QPointF(w->mapToGlobal(QPoint(0, 0)) - root->mapToGlobal(QPoint(0, 0))); }

// Where w is seen inside root: its rect less what its ancestors (a scroll area's viewport) hide.
QRectF seenRect(QWidget* w, QWidget* root) {
    QRectF r(offset(w, root), w->size());
    for (QWidget* a = w->parentWidget(); a && a != root; a = a->parentWidget())
        r = r.intersected(QRectF(offset(a, root), a->size()));
    return r.intersected(QRectF(QPointF(0, 0), root->size()));
}

// What is wrong with the texts `root` shows: elided, cut at their widget's edge, on another text.
// `count` gets how many texts it read.
QStringList findings(QWidget* root, int& count) {
    QStringList out;
    QList<Seen> seen;
    QList<QWidget*> widgets{root};
    widgets += root->findChildren<QWidget*>();
    for (QWidget* w : widgets) {
        // Shown, and root's own (not a popup window, nor a widget that only a QObject of root's holds).
        if (!w->isVisible() || (w != root && !root->isAncestorOf(w))) continue;
        // Text that scrolls inside its own box (an edit, a table) is not cut by its box.
        // A page wider than its scroll area hides its right side behind a sideways scroll (the
        // explorer's table at 1280×800 classroom ran past the window).
        if (auto* area = qobject_cast<QScrollArea*>(w); area && area->horizontalScrollBar()->isVisible() && area->horizontalScrollBar()->maximum() > 0)
            out << QStringLiteral("scrolls sideways: %1 px of a %2 (%3)").arg(area->horizontalScrollBar()->maximum())
                       .arg(QString::fromLatin1(area->widget() ? area->widget()->metaObject()->className() : "page"), QString::fromLatin1(root->metaObject()->className()));
        const bool scrolls = qobject_cast<QLineEdit*>(w) || qobject_cast<QTextEdit*>(w) || qobject_cast<QPlainTextEdit*>(w);
        const bool cell = qobject_cast<QAbstractItemView*>(w->parentWidget()) != nullptr;  // a view's viewport
        const QRectF box(offset(w, root), w->size());
        const QRectF visible = seenRect(w, root);
        for (const mpx::ui::PaintedText& t : mpx::ui::paintedTexts(w, false)) {
            const QRectF r = t.rect.translated(box.topLeft());
            if (!visible.intersects(r)) continue;  // scrolled away
            ++count;
            const QString what = QStringLiteral("\"%1\" (%2)").arg(t.text, QString::fromLatin1(w->metaObject()->className()));
            if (elided(t.text, w)) out << QStringLiteral("elided: ") + what;
            if (!scrolls && !cell && !box.adjusted(-1.5, -1.5, 1.5, 1.5).contains(r))
                out << QStringLiteral("cut by its widget's edge: %1 at %2,%3 %4×%5 in %6×%7")
                           .arg(what).arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()).arg(box.width()).arg(box.height())
                       + QStringLiteral(" at %1,%2").arg(box.x()).arg(box.y());
            if (visible.contains(r)) seen << Seen{t.text, r, w};
        }
    }
    for (int a = 0; a < seen.size(); ++a)
        for (int b = a + 1; b < seen.size(); ++b) {
            const QRectF x = seen[a].rect.adjusted(1, 1, -1, -1).intersected(seen[b].rect.adjusted(1, 1, -1, -1));
            // One text painted twice in one place (a progress bar's, over and beside its chunk) is one.
            const bool same = seen[a].by == seen[b].by && seen[a].text == seen[b].text && seen[a].rect == seen[b].rect;
            if (!same && x.width() > 1 && x.height() > 1)
                out << QStringLiteral("overlap: \"%1\" (%2) and \"%3\" (%4)")
                           .arg(seen[a].text, QString::fromLatin1(seen[a].by->metaObject()->className()), seen[b].text,
                                QString::fromLatin1(seen[b].by->metaObject()->className()));
        }
    out.removeDuplicates();
    return out;
}

bool sessionIs(const MainWindow& w, const mpx::SessionConfig& c) {
    const auto s = w.store()->session();
    return s && s->runs.size() == c.runs.size() && s->config.name == c.name;
}

constexpr QSize k_laptop(1280, 800), k_desktop(1920, 1080);

}  // namespace

class TestViewFit : public QObject {
    Q_OBJECT
    MainWindow* m_window = nullptr;
    QString m_trained;  // the lesson m_window has trained

    // The lesson trained `steps` steps (once: rows on the same lesson share it).
    void train(const QString& lesson, int steps) {
        if (m_trained == lesson) return;
        mpx::SessionConfig c = mpx::load_config(lesson.toStdString());
        c.steps = steps;
        QSignalSpy started(m_window->store(), &mpx::gui::RecordStore::sessionStarted);
        m_window->applyConfig(c, lesson);
        QVERIFY(started.wait(20'000));
        QTRY_VERIFY_WITH_TIMEOUT(sessionIs(*m_window, c), 20'000);
        m_window->run();
        QTRY_COMPARE_WITH_TIMEOUT(m_window->engine()->state(), EngineState::finished, 120'000);
        m_trained = lesson;
    }

    // The window at `size`, normal or classroom, showing `view` (the explorer and the lab: their own
    // windows, at the size the window gives them on that screen), laid out and painted.
    QWidget* show(const QString& view, QSize size, bool classroom) {
        m_window->setClassroom(classroom);
        m_window->resize(size);
        const QSize room = size - QSize(8, 32);  // a screen of that size, less a frame
        QWidget* root = nullptr;
        if (view == QStringLiteral("explorer")) {
            auto* e = m_window->showFormatExplorer(QStringLiteral("0.1"));
            e->resize(QSize(1450, 620).boundedTo(room));
            root = e;
        } else if (view == QStringLiteral("lab")) {
            auto* lab = m_window->showAccumulatorLab();
            lab->resize(QSize(1240, 760).boundedTo(room));
            root = lab;
        } else {
            m_window->setView(static_cast<CentralView>(mpx::ui::centralViewNames().indexOf(view)));
            m_window->charts()->refresh();
            root = view == QStringLiteral("charts") ? static_cast<QWidget*>(m_window->charts()) : nullptr;
            if (!root) {
                QWidget* page = nullptr;
                switch (m_window->view()) {
                case CentralView::boundaries: page = m_window->boundaryView(); break;
                case CentralView::range: page = m_window->rangeView(); break;
                case CentralView::where: page = m_window->whereView(); break;
                case CentralView::updates: page = m_window->updatesView(); break;
                case CentralView::fp8: page = m_window->fp8View(); break;
                case CentralView::fp4: page = m_window->fp4View(); break;
                case CentralView::samples: page = m_window->samplesView(); break;
                case CentralView::attention: page = m_window->attentionView(); break;
                case CentralView::mismatch: page = m_window->findChild<mpx::ui::MismatchView*>(); break;
                case CentralView::charts: break;
                }
                root = page;
            }
        }
        if (view == QStringLiteral("boundaries"))  // the maps are computed once the view is shown
            QTest::qWaitFor([this] { return m_window->boundaryView()->message().isEmpty(); }, 30'000);
        for (int i = 0; i < 3; ++i) {  // grids, histograms and fitted titles settle over a few events
            QTest::qWait(40);
            (root->isWindow() ? root : m_window)->grab();
        }
        return root;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("mpx-test-view-fit"));
        m_window = new MainWindow;
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window));
    }
    void cleanupTestCase() {
        if (m_window) m_window->engine()->pause();
        delete m_window;
    }

    void every_view_fits_data() {
        QTest::addColumn<QString>("view");
        QTest::addColumn<QString>("lesson");
        QTest::addColumn<int>("steps");
        // Findings holding one of these texts are an open item (of another file's owner, or this one's not
    // done yet): "text;text|the item". Each is named in the report of the commit that marked it.
    QTest::addColumn<QString>("expectedFail");
        // charts: a Memory chart of five runs cut its bar names to "..." where its tile was short of them.
        QTest::newRow("charts") << "charts" << "lost-updates" << 60 << QString();
        QTest::newRow("updates") << "updates" << "lost-updates" << 60 << QString();
        QTest::newRow("range") << "range" << "lost-updates" << 60 << QString();  // "0 %" sat on the first log₂ label
        QTest::newRow("where") << "where" << "lost-updates" << 60 << QString();
        QTest::newRow("boundaries") << "boundaries" << "default" << 60 << QString();
        QTest::newRow("explorer") << "explorer" << "default" << 60 << QString();  // bit strips were squeezed in classroom
        QTest::newRow("lab") << "lab" << "default" << 60 << QString();  // titles were elided in classroom
        QTest::newRow("fp8") << "fp8" << "fp8" << 30 << QString();
        QTest::newRow("fp4") << "fp4" << "fp4" << 30 << QString();
        QTest::newRow("attention") << "attention" << "attention-overflow" << 20 << QString();
        // samples: at 1280×800 classroom the second row of boxes was cut at the canvas foot; it scrolls now.
        QTest::newRow("samples") << "samples" << "attention-overflow" << 20 << QString();
        QTest::newRow("mismatch") << "mismatch" << "fp16-for-rl" << 20 << QString();
    }
    void every_view_fits() {
        QFETCH(QString, view);
        QFETCH(QString, lesson);
        QFETCH(int, steps);
        QFETCH(QString, expectedFail);
        train(lesson, steps);
        if (view == QStringLiteral("lab")) {  // its experiment at K = 64 … 1024: a second, not ten
            auto* lab = m_window->showAccumulatorLab();
            QSignalSpy done(lab, &mpx::ui::AccumulatorLab::runFinished);
            if (lab->isRunning()) QVERIFY(done.wait(60'000));
            lab->setKRange(64, 1024);
            QVERIFY(lab->run());
            QVERIFY(done.wait(60'000));
        }
        QStringList all;
        for (const QSize size : {k_laptop, k_desktop})
            for (const bool classroom : {false, true}) {
                const QString where = QStringLiteral("%1 %2×%3 %4").arg(view).arg(size.width()).arg(size.height())
                                          .arg(classroom ? QStringLiteral("classroom") : QStringLiteral("normal"));
                QWidget* root = show(view, size, classroom);
                QVERIFY2(root, qPrintable(where));
                int count = 0;
                const QStringList found = findings(root, count);
                qInfo().noquote() << where << ":" << count << "texts," << found.size() << "findings";
                // Not vacuous: the view painted its texts, and they were read.
                QVERIFY2(count > 5, qPrintable(where + QStringLiteral(": %1 texts read").arg(count)));
                for (const QString& f : found) all << where + QStringLiteral(": ") + f;
                if (root->isWindow()) {
                    // Its own window fits the screen it opened on.
                    QVERIFY2(root->width() <= size.width() && root->height() <= size.height(),
                             qPrintable(where + QStringLiteral(": window %1×%2").arg(root->width()).arg(root->height())));
                    root->close();
                }
            }
        m_window->setClassroom(false);
        for (const QString& f : all) qInfo().noquote() << f;
        // Findings that are another file's open item (named in the row) are expected to fail, apart
        // from the rest, which must be none; a run without them says so (the mark may go once that holds).
        QStringList known;
        if (!expectedFail.isEmpty())
            for (const QString& f : all)
                for (const QString& text : expectedFail.section(QLatin1Char('|'), 0, 0).split(QLatin1Char(';')))
                    if (f.contains(text) && !known.contains(f)) known << f;
        for (const QString& f : known) all.removeAll(f);
        QVERIFY2(all.isEmpty(), qPrintable(all.join(QLatin1Char('\n'))));
        if (!known.isEmpty()) {
            QEXPECT_FAIL("", qPrintable(expectedFail.section(QLatin1Char('|'), 1)), Continue);
            QVERIFY2(known.isEmpty(), qPrintable(known.join(QLatin1Char('\n'))));
        } else if (!expectedFail.isEmpty()) {  // not seen this time (one may depend on timing): say so
            qInfo().noquote() << "not seen this run, the mark may go once it stays so:" << expectedFail.section(QLatin1Char('|'), 1);
        }
    }
};

// A 1920×1080 screen for the offscreen platform (its "configfile" option): the window is sized to
// each screen size it is tried at.
int main(int argc, char** argv) {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("screen.json"));
    QFile f(file);
    if (f.open(QIODevice::WriteOnly))
        f.write(R"({"screens": [{"name": "desktop", "x": 0, "y": 0, "width": 1920, "height": 1080,
                   "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    f.close();
    qputenv("QT_QPA_PLATFORM", QByteArray("offscreen:configfile=") + file.toLocal8Bit());
    QApplication app(argc, argv);
    TestViewFit t;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&t, argc, argv);
}
#include "test_view_fit.moc"
