// mpx-cli run as a user runs it, for the tests that drive the command (test_cli_run, the compare
// tests): its exit status and its two streams, never its insides.
// Rule: a separate process with a timeout; a test that times out reads "timed out" and exit -1.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace mpx::test {

struct CliRun {
    int code = -1;
    QString out, err;
};

inline CliRun cli(const QStringList& args, int timeout_ms = 60000) {
    QProcess p;
    p.start(QStringLiteral(MPX_CLI_PATH), args);
    CliRun r;
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("timed out");
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

// What a failed check prints: the exit status and the streams' first few thousand characters.
inline QString describe(const CliRun& r) {
    return QStringLiteral("exit %1\nstdout: %2\nstderr: %3").arg(r.code).arg(r.out.left(3000), r.err.left(2000));
}

}  // namespace mpx::test
