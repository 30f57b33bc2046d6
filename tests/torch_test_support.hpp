// What the suites against Debian's PyTorch share (test_torch_export, test_torch_adam,
// test_torch_lift): running a program to its end and keeping its exit code and output, and the
// start that skips without PyTorch. Rule: a suite skips only where PyTorch is missing and
// scripts/test.sh (MPX_REQUIRE_TORCH=1) did not promise it; there a missing PyTorch fails.
#pragma once

#include <QtTest>

#include <QProcess>
#include <QString>
#include <QStringList>

namespace mpx_torch_test {

inline const QString k_python = QStringLiteral("/usr/bin/python3");

struct Proc {
    int exit_code = -1;  // -1: it did not start, crashed or timed out (err says which)
    QString out, err;
};

// Runs `program` with `args` (in `dir` where given) to its end, at most 15 minutes.
inline Proc run(const QString& program, const QStringList& args, const QString& dir = {}) {
    QProcess p;
    if (!dir.isEmpty()) p.setWorkingDirectory(dir);
    p.start(program, args);
    Proc r;
    if (!p.waitForStarted(20000)) {
        r.err = QStringLiteral("could not start ") + program;
        return r;
    }
    if (!p.waitForFinished(900000)) {
        p.kill();
        p.waitForFinished(5000);
        r.err = QStringLiteral("timed out");
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

inline Proc cli(const QStringList& args, const QString& dir = {}) { return run(QStringLiteral(MPX_CLI_PATH), args, dir); }

inline QString said(const Proc& p) {
    return QStringLiteral("exit %1\nstdout:\n%2\nstderr:\n%3").arg(p.exit_code).arg(p.out, p.err);
}

}  // namespace mpx_torch_test

// initTestCase's opening: skips the suite without PyTorch for /usr/bin/python3 (fails instead under
// scripts/test.sh, which installs it), and says which PyTorch it tests against.
#define MPX_REQUIRE_PYTORCH_OR_SKIP()                                                                                    \
    do {                                                                                                                 \
        const mpx_torch_test::Proc probe_ = mpx_torch_test::run(                                                         \
            mpx_torch_test::k_python, {QStringLiteral("-c"), QStringLiteral("import torch; print(torch.__version__)")}); \
        if (probe_.exit_code != 0) {                                                                                     \
            if (qEnvironmentVariableIsSet("MPX_REQUIRE_TORCH"))                                                          \
                QFAIL("PyTorch is missing from /usr/bin/python3 though scripts/test.sh installs python3-torch");         \
            QSKIP("PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch; scripts/test.sh does)"); \
        }                                                                                                                \
        qInfo().noquote() << "PyTorch" << probe_.out.trimmed();                                                          \
    } while (false)
