// The exported train.py as a module a PyTorch engineer lifts into their own code: another script
// imports it, builds a run's model (an nn.Module of nn.Linear layers), torch.optim optimizer,
// lr_scheduler and GradScaler from the export through the module's public functions, trains with
// its own loop, and gets the script's own losses, scale and learning rate bit for bit. And the
// script as run: its CSV is written row by row, so a run killed mid-way leaves a valid CSV whose
// rows are the first rows of a whole run. Rule: the values compared are the ones the script wrote
// (repr of the same doubles), and each comparison has a control that differs.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "torch_test_support.hpp"

namespace {

using namespace mpx_torch_test;

// Written into the test's folder, not the export's: it imports the export's train.py as a user's
// script would. argv: the export's folder, where to write its findings (JSON), the runs, steps.
// Each run's loop is the one a PyTorch user writes (zero_grad, autocast, scale, backward, unscale_,
// step, update, scheduler.step), on the objects build_run made from the export.
const char* k_lift_script = R"(
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import torch
import train  # the exported script, as a module
torch.set_num_threads(1)
session = train.load_session()
data = train.load_data(session)
found = {}
for label in sys.argv[3].split(","):
    run = train.build_run(session, data, label)
    model, optimizer, scheduler, scaler = run.model, run.optimizer, run.scheduler, run.scaler
    losses = []
    for step in range(int(sys.argv[4])):
        (x, target, keep), = data.micro_batches(step)
        optimizer.zero_grad(set_to_none=True)
        with run.autocast():
            logits = model(x, run.formats, keep)
        loss = run.loss(logits, target, session["loss"])
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        losses.append(repr(loss.item()))
    found[label] = dict(
        losses=losses, scale=repr(float(scaler.state_dict()["scale"])), lr=repr(optimizer.param_groups[0]["lr"]),
        kinds=[isinstance(model, torch.nn.Module), isinstance(optimizer, torch.optim.Optimizer),
               isinstance(scheduler, torch.optim.lr_scheduler._LRScheduler),
               isinstance(scaler, train.GRAD_SCALER)],
        linears=sum(isinstance(m, torch.nn.Linear) for m in model.modules()),
        keys=list(model.state_dict()), scaler=type(scaler).__name__, optimizer=type(optimizer).__name__,
        dtypes=[str(p.dtype) for p in model.parameters()])
json.dump(found, open(sys.argv[2], "w"))
)";

// The CSV's rows (no # lines, no header), each split into its cells.
QList<QStringList> rows_of(const QString& path) {
    QFile f(path);
    QList<QStringList> rows;
    if (!f.open(QIODevice::ReadOnly)) return rows;
    const QList<QByteArray> lines = f.readAll().split('\n');
    for (qsizetype i = 0; i < lines.size(); ++i)
        if (!lines[i].isEmpty() && !lines[i].startsWith('#') && !lines[i].startsWith("run,"))
            rows.push_back(QString::fromUtf8(lines[i]).split(QLatin1Char(',')));
    return rows;
}

// The cell of `column` (mpx's CSV columns: 4 loss, 5 loss_scale, 10 lr) of run `label` at `step`.
QString cell(const QList<QStringList>& rows, const QString& label, int step, int column) {
    for (const QStringList& r : rows)
        if (r.size() > column && r[0] == label && r[3] == QString::number(step)) return r[column];
    return {};
}

}  // namespace

class TestTorchLift : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        MPX_REQUIRE_PYTORCH_OR_SKIP();
    }

    // The default preset's MLP with a warm-up and cosine schedule (the learning rate moves every
    // step) in FP32, AMP-BF16 (native CPU autocast) and scaling-only under DeepSpeed's rule (a
    // MirrorGradScaler from 2^16): the lifted loop's losses at steps 0 and 1, its scale and learning
    // rate after two steps, equal the script's CSV to the last digit. The control: the runs' own
    // step-0 losses differ (BF16 from FP32), so equal cells are not equal by accident.
    void lifted_module_trains_as_the_script() {
        const QString dir = path(QStringLiteral("lift"));
        const Proc e = cli({"export-torch", "--config", "default", "--steps", "3", "--precision", "fp32,amp-bf16,scaling-only",
                            "--scaler", "deepspeed", "--set", "train.schedule=warmup-cosine", "--set", "train.warmup_steps=3",
                            "--out", dir});
        QVERIFY2(e.exit_code == 0, qPrintable(said(e)));
        const Proc t = run(k_python, {dir + QStringLiteral("/train.py"), QStringLiteral("--csv"), path(QStringLiteral("lift.csv"))});
        QVERIFY2(t.exit_code == 0, qPrintable(said(t)));
        QVERIFY2(t.out.contains(QStringLiteral("step 1/3  loss: fp32 ")) && t.out.contains(QStringLiteral("step 3/3  loss: ")),
                 qPrintable(said(t)));  // progress, a line a step at 3 steps
        const QList<QStringList> rows = rows_of(path(QStringLiteral("lift.csv")));
        QCOMPARE(rows.size(), 9);
        QStringList labels;
        for (const QStringList& r : rows)
            if (!labels.contains(r[0])) labels.push_back(r[0]);
        QCOMPARE(labels, (QStringList{"fp32", "amp-bf16", "scaling-only+deepspeed"}));

        QFile script(path(QStringLiteral("lift.py")));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(k_lift_script);
        script.close();
        const Proc l = run(k_python, {script.fileName(), dir, path(QStringLiteral("lift.json")), labels.join(QLatin1Char(',')),
                                      QStringLiteral("2")});
        QVERIFY2(l.exit_code == 0, qPrintable(said(l)));
        QFile out(path(QStringLiteral("lift.json")));
        QVERIFY(out.open(QIODevice::ReadOnly));
        const QJsonObject found = QJsonDocument::fromJson(out.readAll()).object();
        for (const QString& label : labels) {
            const QJsonObject r = found[label].toObject();
            const QJsonArray losses = r[QStringLiteral("losses")].toArray();
            QCOMPARE(losses.size(), 2);
            for (int step = 0; step < 2; ++step)
                QVERIFY2(losses[step].toString() == cell(rows, label, step, 4),
                         qPrintable(label + QStringLiteral(" step %1: lifted %2, script %3")
                                                .arg(step).arg(losses[step].toString(), cell(rows, label, step, 4))));
            QVERIFY2(cell(rows, label, 0, 4) != cell(rows, label, 1, 4), qPrintable(label));  // it trained
            QCOMPARE(r[QStringLiteral("scale")].toString(), cell(rows, label, 2, 5));
            QCOMPARE(r[QStringLiteral("lr")].toString(), cell(rows, label, 2, 10));
            QCOMPARE(r[QStringLiteral("kinds")].toArray(), (QJsonArray{true, true, true, true}));
            QCOMPARE(r[QStringLiteral("linears")].toInt(), 3);
            QCOMPARE(r[QStringLiteral("keys")].toArray().first().toString(), QStringLiteral("fc1.weight"));
            QCOMPARE(r[QStringLiteral("optimizer")].toString(), QStringLiteral("Adam"));
        }
        QVERIFY(cell(rows, "fp32", 1, 10) != cell(rows, "fp32", 2, 10));  // the learning rate moved: 1/3, 2/3, 3/3 of it
        QCOMPARE(found["scaling-only+deepspeed"].toObject()["scaler"].toString(), QStringLiteral("MirrorGradScaler"));
        QCOMPARE(cell(rows, "scaling-only+deepspeed", 0, 5), QStringLiteral("65536.0"));
        QVERIFY(cell(rows, "fp32", 0, 4) != cell(rows, "amp-bf16", 0, 4));  // the control
    }

    // Half-BF16 as per-layer dtypes: every nn.Linear's weight and bias in BF16 in the model the
    // module builds, the FP32 master copies with the optimizer.
    void per_layer_dtypes() {
        const QString dir = path(QStringLiteral("half"));
        const Proc e = cli({"export-torch", "--config", "default", "--steps", "2", "--precision", "half-bf16,selective-bf16",
                            "--set", "selective_layers=fc2", "--out", dir});
        QVERIFY2(e.exit_code == 0, qPrintable(said(e)));
        const Proc l = run(k_python, {QStringLiteral("-c"),
                                      QStringLiteral("import sys; sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[1]); "
                                                     "import train; s = train.load_session(); d = train.load_data(s); "
                                                     "print(';'.join(','.join(str(p.dtype)[6:] for p in "
                                                     "train.build_run(s, d, r).model.parameters()) for r in ('half-bf16', 'selective-bf16')))"),
                                      dir});
        QVERIFY2(l.exit_code == 0, qPrintable(said(l)));
        QCOMPARE(l.out.trimmed(), QStringLiteral("bfloat16,bfloat16,bfloat16,bfloat16,bfloat16,bfloat16;"
                                                 "float32,float32,bfloat16,bfloat16,float32,float32"));
    }

    // train.py killed (SIGKILL) mid-run leaves a CSV of whole rows, the first rows of the same run
    // trained to that step.
    void killed_run_leaves_a_valid_csv() {
        const QString dir = path(QStringLiteral("long"));
        const Proc e = cli({"export-torch", "--config", "default", "--steps", "5000", "--precision", "fp32,amp-bf16", "--out", dir});
        QVERIFY2(e.exit_code == 0, qPrintable(said(e)));
        const QString csv = path(QStringLiteral("killed.csv"));
        QProcess p;
        p.start(k_python, {dir + QStringLiteral("/train.py"), QStringLiteral("--csv"), csv});
        QVERIFY(p.waitForStarted(20000));
        QTRY_VERIFY_WITH_TIMEOUT(rows_of(csv).size() >= 7, 120000);
        p.kill();
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitStatus(), QProcess::CrashExit);
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.endsWith('\n'));
        const QList<QStringList> rows = rows_of(csv);
        QVERIFY2(rows.size() < 10000, "the run was killed before its end");
        for (const QStringList& r : rows) QCOMPARE(r.size(), 13);
        const int steps = static_cast<int>((rows.size() + 1) / 2);
        const Proc whole = run(k_python, {dir + QStringLiteral("/train.py"), QStringLiteral("--csv"), path(QStringLiteral("whole.csv")),
                                          QStringLiteral("--steps"), QString::number(steps)});
        QVERIFY2(whole.exit_code == 0, qPrintable(said(whole)));
        const QList<QStringList> full = rows_of(path(QStringLiteral("whole.csv")));
        QCOMPARE(full.size(), 2 * steps);
        QCOMPARE(full.mid(0, rows.size()), rows);
        QVERIFY(text.startsWith("# train.py from mpx export-torch"));
        QVERIFY(text.contains("\nrun,precision,mode,step,loss,loss_scale,found_inf,skipped,scale_event,grad_norm,lr,eval_loss,eval_accuracy\n"));
    }
};

QTEST_GUILESS_MAIN(TestTorchLift)
#include "test_torch_lift.moc"
