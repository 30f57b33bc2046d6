// The bad-input catalogue's rows and fixtures (test_bad_input.cpp), kept apart from its checks:
// bad_input_rows.cpp (the command line, --config, --set, outputs, --resume, bench, format),
// bad_input_rows_41.cpp (issue 41's readers and writers, the app's command line) and
// bad_input_fixtures.cpp (the files the rows read), all compiled into test_bad_input.
// Rule: a row is one hostile command line, the exit code it must end with and words its one-line
// message must contain; "@F" in an argument or a needle stands for the fixture folder.
#pragma once

#include <QStringList>
#include <QTest>

#include <filesystem>
#include <fstream>
#include <string>

namespace bad_input {

// shell: args[0] is a /bin/sh script run with $CLI and $APP set, for bytes QProcess cannot pass
// (invalid UTF-8 in an argument).
enum class Tool { cli, app, shell };
// memory_256m: no room for 64 threads' stacks, so the system refuses a thread start.
enum class Limit { none, memory_2g, memory_256m };

// The rows of rejects_bad_input_and_leaves_no_file, in two parts (its _data adds the columns first).
void add_command_line_rows();
void add_reader_writer_rows();
// Writes every input the rows read into the fixture folder F.
void make_fixtures(const std::filesystem::path& F);

inline void write(const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// A row of each kind: cli, run, set, resume, bench and format of mpx-cli, app of the app, shell of
// a /bin/sh script.
namespace rows {

inline void cli(const char* name, QStringList args, int code, const char* needle,
                Limit limit = Limit::none) {
    QTest::newRow(name) << int(Tool::cli) << args << code << QString::fromUtf8(needle) << int(limit);
}
inline void run(const char* name, QStringList args, int code, const char* needle) {
    cli(name, QStringList{"run", "--quiet"} + args, code, needle);
}
inline void set(const char* name, const char* assignment, const char* needle) {
    run(name, {"--steps", "2", "--set", assignment}, 2, needle);
}
inline void resume(const char* name, QStringList args, int code, const char* needle) {
    run(name, QStringList{"--resume"} + args, code, needle);
}
inline void bench(const char* name, QStringList args, int code, const char* needle) {
    cli(name, QStringList{"bench", "--seconds", "0.01"} + args, code, needle);
}
inline void format(const char* name, QStringList args, int code, const char* needle) {
    cli(name, QStringList{"format"} + args, code, needle);
}
inline void app(const char* name, QStringList args, const char* needle) {
    QTest::newRow(name) << int(Tool::app) << args << 2 << QString::fromUtf8(needle) << int(Limit::none);
}
inline void shell(const char* name, const char* script, const char* needle) {
    QTest::newRow(name) << int(Tool::shell) << QStringList{script} << 2 << QString::fromUtf8(needle) << int(Limit::none);
}

}  // namespace rows
}  // namespace bad_input
