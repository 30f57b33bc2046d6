#!/usr/bin/env python3
"""The layer check: every include of the repo's own headers points down the rooms of
docs/architecture.md, never up. Run from CTest (quick tier) as `layer_check.py ROOT`;
`layer_check.py --self-test ROOT` plants one violation of each rule in a copy of the include graph
and fails unless every planted one is reported.

Rules (each message names the rule, the file and the include):
  room order   engine/: core < base < precision < scaler < config < compute < model < run < io <
               sweep; ui/: session < kit < views < panels < window; a file includes only its own
               room and rooms below it
  engine root  no source file directly in engine/
  no Qt        nothing in engine/ or cuda/ includes Qt
  no cuda      nothing in engine/ includes cuda/
  core         engine/core/ includes only engine/core/ and uses no std::string, throw, new or
               malloc: g++ and nvcc compile it, host and device
  config       engine/config/ reaches neither Eigen nor the backend, directly or through what it
               includes
  ui engine    ui/ outside ui/session/ reaches no run, session, model, backend or tensor header,
               directly or through what it includes (records, histograms and format facts are
               value types and stay allowed)
  app          app/cli/ includes nothing of ui/; of app/, only the GUI's main and command line do
"""
import os
import re
import sys

ENGINE_ROOMS = ["core", "base", "precision", "scaler", "config", "compute", "model", "run", "io", "sweep"]
UI_ROOMS = ["session", "kit", "views", "panels", "window"]
FORBIDDEN_FOR_UI = re.compile(
    r"^engine/(run/(run|session|boundary)\.hpp|model/|compute/(backend|tensor|row_matrix)\.hpp|sweep/sweep\.hpp)")
SOURCE_EXT = (".hpp", ".cpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
CORE_BANNED = [(re.compile(r"\bstd::string\b"), "std::string"), (re.compile(r"\bthrow\b"), "throw"),
               (re.compile(r"(?<![\w.])new\s+[\w:]"), "new"), (re.compile(r"\bmalloc\s*\("), "malloc"),
               (re.compile(r"#\s*include\s*<(string|vector|map|memory|stdexcept)>"), "an allocating header")]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def read_tree(root):
    files = {}
    for top in ("engine", "cuda", "ui", "app"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(SOURCE_EXT):
                    path = os.path.join(dirpath, n)
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    with open(path, encoding="utf-8") as f:
                        files[rel] = f.read()
    return files


def includes(rel, text):
    """(kind, target) per include; a quoted include of a bare name is taken relative to the file."""
    out = []
    for kind, target in INCLUDE.findall(strip_comments(text)):
        if kind == '"' and "/" not in target:
            target = os.path.dirname(rel) + "/" + target
        out.append((kind, target))
    return out


def room_of(rel):
    parts = rel.split("/")
    if parts[0] == "engine" and len(parts) > 2 and parts[1] in ENGINE_ROOMS:
        return ("engine", ENGINE_ROOMS.index(parts[1]))
    if parts[0] == "ui" and len(parts) > 2 and parts[1] in UI_ROOMS:
        return ("ui", UI_ROOMS.index(parts[1]))
    return None


def check(files):
    errors = []
    graph = {rel: includes(rel, text) for rel, text in files.items()}

    def reach(rel, seen=None):
        """Every repo file rel includes, directly or not, with the first include that leads there."""
        seen = {} if seen is None else seen
        stack = [(rel, None)]
        while stack:
            f, via = stack.pop()
            for kind, t in graph.get(f, []):
                if kind == '"' and t in files and t not in seen:
                    seen[t] = via or t
                    stack.append((t, via or t))
        return seen

    for rel, incs in sorted(graph.items()):
        top = rel.split("/")[0]
        mine = room_of(rel)
        if top == "engine" and rel.count("/") == 1:
            errors.append(f"engine root: {rel} sits directly in engine/; put it in its room")
        if top == "engine" and mine is None and rel.count("/") > 1:
            errors.append(f"room order: {rel} is in no known room of engine/")
        for kind, t in incs:
            if top in ("engine", "cuda") and re.match(r"Q[A-Z]|Qt", t):
                errors.append(f"no Qt: {rel} includes <{t}>")
            if top == "engine" and t.startswith("cuda/"):
                errors.append(f"no cuda: {rel} includes {t}")
            theirs = room_of(t)
            if mine and theirs and mine[0] == theirs[0] and theirs[1] > mine[1]:
                rooms = ENGINE_ROOMS if mine[0] == "engine" else UI_ROOMS
                errors.append(f"room order: {rel} ({rooms[mine[1]]}) includes {t} ({rooms[theirs[1]]}, above it)")
            if top == "engine" and t.startswith("ui/"):
                errors.append(f"room order: {rel} includes {t} (ui/ is above the engine)")
            if rel.startswith("engine/core/") and kind == '"' and not t.startswith("engine/core/"):
                errors.append(f"core: {rel} includes {t}; core includes only core")
            if rel.startswith("app/cli/") and t.startswith("ui/"):
                errors.append(f"app: {rel} includes {t}; mpx-cli builds without Qt")
            if rel.startswith("app/") and t.startswith("ui/") and not rel.startswith("app/gui/"):
                errors.append(f"app: {rel} includes {t}; only the GUI's main reaches ui/")
        if rel.startswith("engine/core/"):
            body = strip_comments(files[rel])
            for pat, what in CORE_BANNED:
                if pat.search(body):
                    errors.append(f"core: {rel} uses {what}; core is compiled for the device too")
        if rel.startswith("engine/config/"):
            for kind, t in incs:
                if t.startswith("Eigen") or t.startswith("unsupported/Eigen"):
                    errors.append(f"config: {rel} includes <{t}>")
            for t, via in reach(rel).items():
                if t == "engine/compute/backend.hpp" or any(
                        k == "<" and u.startswith("Eigen") for k, u in graph.get(t, [])):
                    errors.append(f"config: {rel} reaches {t} (through {via}); settings are plain data")
        if top == "ui" and not rel.startswith("ui/session/"):
            for t, via in reach(rel).items():
                if FORBIDDEN_FOR_UI.match(t):
                    errors.append(f"ui engine: {rel} reaches {t} (through {via}); go through ui/session/")
    return sorted(set(errors))


def self_test(root):
    base = read_tree(root)
    if check(base):
        print("layer check: the tree itself fails; fix that first")
        return 1
    plants = {
        "room order": ("engine/precision/format.hpp", '#include "engine/run/session.hpp"\n'),
        "engine root": ("engine/stray.hpp", "#pragma once\n"),
        "no Qt": ("engine/base/text.hpp", "#include <QString>\n"),
        "no cuda": ("engine/compute/backend.hpp", '#include "cuda/cuda_backend.hpp"\n'),
        "core": ("engine/core/rng.hpp", "inline void f() { throw 1; }\n"),
        "config": ("engine/config/model_config.hpp", '#include "engine/compute/tensor.hpp"\n'),
        "ui engine": ("ui/session/session_info.hpp", '#include "engine/run/session.hpp"\n'),
        "app": ("app/cli/cmd_run.cpp", '#include "ui/kit/plot_widget.hpp"\n'),
    }
    failed = 0
    for rule, (rel, line) in plants.items():
        files = dict(base)
        files[rel] = line + files.get(rel, "")
        found = [e for e in check(files) if e.startswith(rule + ":")]
        print(f"planted '{line.strip()}' in {rel}: {'reported' if found else 'NOT reported'}")
        for e in found[:2]:
            print("   ", e)
        failed += not found
    return 1 if failed else 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return self_test(args[1] if len(args) > 1 else ".")
    root = args[0] if args else "."
    errors = check(read_tree(root))
    for e in errors:
        print(e)
    print(f"layer check: {len(errors)} violation(s)" if errors else "layer check: every include points down")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
