// What the `mpx-cli compare` tests share (test_compare.cpp: the library and the command;
// test_compare_expect.cpp: --expect): running mpx-cli and reading what it wrote.
// Rule: mpx-cli runs as cli_test_support.hpp runs it.
#pragma once

#include <QFile>
#include <QTemporaryDir>

#include "cli_test_support.hpp"

namespace {

using mpx::test::CliRun;
using mpx::test::cli;
using mpx::test::describe;

CliRun compare(const QStringList& args) { return cli(QStringList{"compare"} + args); }

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
