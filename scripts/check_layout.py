#!/usr/bin/env python3
"""Checks Shelfmark's folder layout: one folder = one role = one library.

    scripts/check_layout.py [ROOT]     # exit 0: clean; 1: violations (one line each)
    scripts/check_layout.py --table    # print the edge table (Markdown)

LAYOUT below is the one authority on which folder may depend on which;
docs/architecture.md reproduces it. The checker reads, under ROOT:

  - every #include "Y/..." (or <Y/...>) in the C/C++ files of each folder X of
    the table, where Y is a folder of the table;
  - every shelfmark::<lib> (and shelfmark_<lib> target) in the CMakeLists.txt
    and *.cmake files of X, in shelfmark_library / shelfmark_binary /
    shelfmark_test / target_link_libraries / add_executable calls;
    shelfmark_link_rdma(target) counts as a dependency on transport_verbs.
    Libraries map to the folder whose CMake files define them
    (shelfmark_library(NAME ...) or add_library(shelfmark::NAME ALIAS ...)).

Every dependency of X on another folder Y must be an edge of the table for the
kind of code it comes from:

  library  code of X's library (and its headers): the "library" edges;
  main     sources of a program of X (shelfmark_binary, add_executable) and
           their own headers (x.h beside x.cc): library + "main" edges;
  test     *_test.cc, *_test.h, *test_util*, *_fuzz.cc files, tests built by
           shelfmark_test, and every file of a test-only folder (tests/):
           library + main + testing/ + the folder's "test" edges.

Production code (library and main) never depends on testing/, tests/ or perf/
and never includes another folder's test helpers (*test_util*). The table's
library edges, and library + main edges, must be acyclic: the checker asserts
it before looking at any file.
"""

import os
import re
import sys
from collections import namedtuple

Row = namedtuple("Row", "folder library main test")

# The edge table: folder, what its library code may use, what its programs'
# mains may use in addition, what its tests may use in addition (besides
# testing/, which every test may use). Layered bottom-up.
LAYOUT = [
    Row("common", "", "", ""),
    Row("schemas", "", "", ""),
    Row("directory", "common", "", ""),
    Row("snapshot", "directory common", "", ""),
    Row("auth", "common", "", ""),
    Row("transport", "auth common", "", ""),
    Row("ssdstore", "common", "", ""),
    Row("service", "common", "", ""),
    Row("ha", "common", "", ""),
    Row("rpc", "auth schemas ha common", "", ""),
    Row("replication", "snapshot directory auth common", "", ""),
    Row("master", "ha replication rpc auth service snapshot directory schemas common", "", ""),
    Row("node", "rpc transport ssdstore ha common", "service auth",
        "master client directory"),
    Row("client", "rpc transport ha common", "",
        "node master directory ssdstore"),
    Row("embedded", "client node ssdstore service transport common", "", "master directory rpc"),
    Row("storeservice", "embedded client rpc transport auth common", "service",
        "master directory"),
    Row("tools", "", "client rpc transport ha auth common", ""),
    Row("python", "storeservice embedded client node rpc transport service common", "", ""),
    Row("testing", "service common", "", ""),
    Row("perf", "auth ha common",
        "embedded client node master rpc service ssdstore transport snapshot directory schemas", ""),
    Row("tests", "", "",
        "tools perf embedded client node master replication rpc ha service ssdstore "
        "transport snapshot directory schemas auth common"),
]

# Folders whose every file is test code.
TEST_ONLY_FOLDERS = {"tests"}
# What production code (library and main) of another folder never uses.
NEVER_IN_PRODUCTION = {"testing", "tests", "perf"}

SOURCE_EXTENSIONS = (".h", ".hh", ".hpp", ".hxx", ".inc", ".ipp",
                     ".c", ".cc", ".cpp", ".cxx")
TEST_FILE = re.compile(r"(_test\.(cc|cpp|h|hh)$|test_util|_fuzz\.(cc|cpp)$)")
TEST_TARGET = re.compile(r"(_test$|_test_|fuzz)")
INCLUDE = re.compile(r'^\s*#\s*include\s*(["<])([^">]+)[">]')


class TableError(Exception):
    pass


def edges(kind):
    """{folder: set of folders} for kind 'library', 'main' (library + main)
    or 'test' (library + main + testing + test)."""
    out = {}
    for row in LAYOUT:
        s = set(row.library.split())
        if kind in ("main", "test"):
            s |= set(row.main.split())
        if kind == "test":
            s |= set(row.test.split()) | {"testing"}
        s.discard(row.folder)
        out[row.folder] = s
    return out


def find_cycle(graph):
    """A list of folders forming a cycle of graph ({node: set}), or None."""
    state = {}  # 1: on the stack, 2: done

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def check_table(layout=None):
    """Raises TableError when the table is inconsistent or cyclic."""
    layout = LAYOUT if layout is None else layout
    folders = [r.folder for r in layout]
    if len(set(folders)) != len(folders):
        raise TableError("layout table: a folder is listed twice")
    known = set(folders)
    graphs = {"library": {}, "main": {}}
    for r in layout:
        for kind, text in (("library", r.library), ("main", r.main), ("test", r.test)):
            for dep in text.split():
                if dep not in known:
                    raise TableError("layout table: %s %s edge to unknown folder %s"
                                     % (r.folder, kind, dep))
                if dep == r.folder:
                    raise TableError("layout table: %s lists itself" % r.folder)
                if kind != "test" and dep in NEVER_IN_PRODUCTION:
                    raise TableError("layout table: production code of %s may not use %s/"
                                     % (r.folder, dep))
        lib = set(r.library.split())
        graphs["library"][r.folder] = lib
        graphs["main"][r.folder] = lib | set(r.main.split())
    for kind, graph in graphs.items():
        cycle = find_cycle(graph)
        if cycle:
            raise TableError("layout table: %s edges form a cycle: %s"
                             % (kind, " -> ".join(cycle)))


# ---- CMake -----------------------------------------------------------------

def cmake_commands(text):
    """Yields (command name, [(argument, line)]) of a CMake file (comments and
    quoting handled well enough for our files; bracket comments are not)."""
    tokens = []  # (token, line); '(' and ')' as their own tokens
    line = 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "()":
            tokens.append((c, line))
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                j += 1
            tokens.append((text[i + 1:j], line))
            line += text.count("\n", i, j)
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '()#"':
                j += 1
            tokens.append((text[i:j], line))
            i = j
    k = 0
    while k < len(tokens):
        name, _ = tokens[k]
        if k + 1 < len(tokens) and tokens[k + 1][0] == "(" and name not in "()":
            depth, args, k = 1, [], k + 2
            while k < len(tokens) and depth:
                tok = tokens[k]
                if tok[0] == "(":
                    depth += 1
                elif tok[0] == ")":
                    depth -= 1
                if depth and tok[0] not in "()":
                    args.append(tok)
                k += 1
            yield name.lower(), args
        else:
            k += 1


def section(args, keyword, keywords):
    """Arguments after keyword up to the next of keywords."""
    out, inside = [], False
    for tok in args:
        if tok[0] in keywords:
            inside = tok[0] == keyword
        elif inside:
            out.append(tok)
    return out


KEYWORDS = {"SOURCES", "DEPS", "LABELS", "TIMEOUT"}


class Folder:
    def __init__(self, name, root):
        self.name = name
        self.path = os.path.join(root, name)
        self.sources = []      # relative paths of C/C++ files
        self.cmake_files = []  # relative paths
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = sorted(d for d in dirnames
                                 if not d.startswith(".") and
                                 not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt")))
            for f in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if f.endswith(SOURCE_EXTENSIONS):
                    self.sources.append(rel)
                elif f == "CMakeLists.txt" or f.endswith(".cmake"):
                    self.cmake_files.append(rel)
        self.commands = []     # (file, name, args)
        for rel in self.cmake_files:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                for name, args in cmake_commands(fh.read()):
                    self.commands.append((rel, name, args))
        self.libraries = set()     # shelfmark::<lib> names defined here
        self.target_kind = {}      # target -> library / main / test
        self.main_sources = set()  # relative paths
        library_sources = set()
        for rel, name, args in self.commands:
            if not args:
                continue
            target = args[0][0]
            here = os.path.dirname(rel)
            if name == "shelfmark_library":
                self.libraries.add(target)
                self.target_kind["shelfmark_" + target] = "library"
                library_sources |= {os.path.normpath(os.path.join(here, s))
                                    for s, _ in section(args, "SOURCES", KEYWORDS)}
            elif name == "add_library":
                m = re.match(r"shelfmark::(\w+)$", target)
                if m and len(args) > 1 and args[1][0] == "ALIAS":
                    self.libraries.add(m.group(1))
                else:
                    self.target_kind[target] = "library"
                    library_sources |= {os.path.normpath(os.path.join(here, s))
                                        for s, _ in args[1:]}
            elif name == "shelfmark_test":
                self.target_kind[target] = "test"
            elif name in ("shelfmark_binary", "add_executable"):
                kind = ("test" if name == "add_executable" and TEST_TARGET.search(target)
                        else "main")
                self.target_kind[target] = kind
                if kind == "main":
                    srcs = (section(args, "SOURCES", KEYWORDS)
                            if name == "shelfmark_binary" else args[1:])
                    self.main_sources |= {os.path.normpath(os.path.join(here, s))
                                          for s, _ in srcs}
        self.main_sources -= library_sources
        # A program's own header (x.h beside its source x.cc) is program code too.
        stems = {os.path.splitext(s)[0] for s in self.main_sources}
        self.main_sources |= {s for s in self.sources
                              if s.endswith((".h", ".hh", ".hpp", ".hxx"))
                              and os.path.splitext(s)[0] in stems
                              and os.path.splitext(s)[0] + ".cc" not in library_sources}

    def file_kind(self, rel):
        if self.name in TEST_ONLY_FOLDERS or TEST_FILE.search(os.path.basename(rel)):
            return "test"
        if rel in self.main_sources:
            return "main"
        return "library"


BUILD_COMMANDS = {"shelfmark_library", "shelfmark_binary", "shelfmark_test", "add_library",
                  "add_executable"}


def is_code_folder(folder):
    """True when the folder holds C/C++ sources or its CMake files build a target."""
    return bool(folder.sources) or any(name in BUILD_COMMANDS
                                       for _, name, _ in folder.commands)


def violation(rel, line, what, src, dst, kind):
    if kind == "library":
        return "%s:%d: %s: folder %s may not depend on folder %s" % (rel, line, what, src, dst)
    return "%s:%d: %s: folder %s may not depend on folder %s (in %s code)" % (
        rel, line, what, src, dst, kind)


def check(root):
    """List of violation lines for the tree at root (empty: clean)."""
    check_table()
    allowed = {kind: edges(kind) for kind in ("library", "main", "test")}
    table_folders = [r.folder for r in LAYOUT]
    out = []

    # Top-level code folders (a CMakeLists.txt, and C/C++ sources or a built
    # target) must be in the table; a folder of configuration and its checks
    # (deploy/: add_test calls only) is not code.
    for entry in sorted(os.listdir(root)):
        p = os.path.join(root, entry)
        if (os.path.isdir(p) and not entry.startswith(".") and entry not in table_folders
                and os.path.isfile(os.path.join(p, "CMakeLists.txt"))
                and not os.path.exists(os.path.join(p, "CMakeCache.txt"))
                and is_code_folder(Folder(entry, root))):
            out.append("%s/CMakeLists.txt:1: folder %s is not in the layout table "
                       "(scripts/check_layout.py LAYOUT)" % (entry, entry))

    folders = {name: Folder(name, root) for name in table_folders
               if os.path.isdir(os.path.join(root, name))}
    lib_folder = {}
    for f in folders.values():
        for lib in f.libraries:
            lib_folder[lib] = f.name

    def allowed_dep(src, dst, kind):
        if dst == src:
            return True
        if kind != "test" and dst in NEVER_IN_PRODUCTION:
            return False
        return dst in allowed[kind][src]

    for f in folders.values():
        # Includes.
        for rel in f.sources:
            kind = f.file_kind(rel)
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                for lineno, text in enumerate(fh, 1):
                    m = INCLUDE.match(text)
                    if not m:
                        continue
                    path = m.group(2)
                    dst = path.split("/", 1)[0]
                    if "/" not in path or dst not in folders:
                        continue
                    what = "#include %s%s%s" % (m.group(1), path, '"' if m.group(1) == '"' else ">")
                    if not allowed_dep(f.name, dst, kind):
                        out.append(violation(rel, lineno, what, f.name, dst, kind))
                    elif (kind != "test" and TEST_FILE.search(os.path.basename(path))):
                        out.append("%s:%d: %s: production code may not include test helpers"
                                   % (rel, lineno, what))
        # CMake dependencies.
        for rel, name, args in f.commands:
            if not args:
                continue
            target = args[0][0]
            if name == "shelfmark_library":
                kind, deps = "library", args[1:]
            elif name in ("shelfmark_binary", "shelfmark_test"):
                kind, deps = f.target_kind.get(target, "main"), args[1:]
            elif name == "add_executable":
                kind, deps = f.target_kind.get(target, "main"), args[1:]
            elif name in ("target_link_libraries", "shelfmark_link_rdma"):
                kind = f.target_kind.get(target, "library")
                deps = args[1:] if name == "target_link_libraries" else \
                    [("shelfmark::transport_verbs", args[0][1])]
            elif name == "add_library":
                continue  # a definition (ALIAS) or sources
            else:
                kind, deps = "library", args
            for tok, line in deps:
                m = re.match(r"shelfmark::(\w+)$", tok)
                if not m and name == "target_link_libraries":
                    m = re.match(r"shelfmark_(\w+)$", tok)
                    if m and m.group(1) not in lib_folder:
                        m = None
                if not m:
                    continue
                lib = m.group(1)
                dst = lib_folder.get(lib)
                what = "%s(%s ... %s)" % (name, target, tok)
                if dst is None:
                    out.append("%s:%d: %s: no folder defines library shelfmark::%s"
                               % (rel, line, what, lib))
                elif not allowed_dep(f.name, dst, kind):
                    out.append(violation(rel, line, what, f.name, dst, kind))
    return out


def print_table():
    print("| folder | library code may use | programs (main) also | tests also (besides testing/) |")
    print("|---|---|---|---|")
    for r in LAYOUT:
        cells = [", ".join(x.split()) or "-" for x in (r.library, r.main, r.test)]
        if r.folder in TEST_ONLY_FOLDERS:
            cells[0] = "(test-only folder)"
        print("| `%s/` | %s |" % (r.folder, " | ".join(cells)))


def main(argv):
    if len(argv) == 2 and argv[1] == "--table":
        check_table()
        print_table()
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: %s [ROOT] | --table" % argv[0], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    if not os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        print("check_layout: %s has no CMakeLists.txt" % root, file=sys.stderr)
        return 2
    try:
        problems = check(root)
    except TableError as e:
        print(e)
        return 1
    for p in problems:
        print(p)
    if problems:
        print("check_layout: %d violation(s); the allowed edges are LAYOUT in "
              "scripts/check_layout.py (docs/architecture.md)" % len(problems))
        return 1
    print("check_layout: OK (%d folders)" % len(LAYOUT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
