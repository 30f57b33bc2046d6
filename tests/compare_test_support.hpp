// What the `mpx-cli compare` tests share (test_compare.cpp: the library and the command;
// test_compare_expect.cpp: --expect): running mpx-cli and reading what it wrote.
// Rule: mpx-cli runs as a separate process with a timeout; a test reads its exit status and its
// two streams, never its insides.
#pragma once

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

namespace {

struct CliRun {
    int code = -1;
    QString out, err;
};

CliRun cli(const QStringList& args, int timeout_ms = 60000) {
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

CliRun compare(const QStringList& args) { return cli(QStringList{"compare"} + args); }

QString describe(const CliRun& r) {
    return QStringLiteral("exit %1\nstdout: %2\nstderr: %3").arg(r.code).arg(r.out.left(3000), r.err.left(2000));
}

QString write(const QTemporaryDir& dir, const QString& name, const QString& text) {
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
    f.write(text.toUtf8());
    return path;
}

QString read(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

QString last_line(const QString& out) { return out.trimmed().split(QLatin1Char('\n')).last(); }

}  // namespace
