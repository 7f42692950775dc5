#!/usr/bin/env python3
"""Import cycles between the files of one Rust crate.

Usage: scripts/module-cycles.py CRATE_SRC [SUBDIR] [--no-tests] [--edges]

Reads every `.rs` file under CRATE_SRC (the directory holding `lib.rs` or `main.rs`), finds
the paths each file names (`use crate::a::b`, `use super::x`, `super::super::y::f()`, a
child module's `x::f()`, and `use` trees with braces), resolves each to the file of the
deepest module it reaches, and prints every strongly connected component of more than one
file: an import cycle. A parent's `mod x;` is a declaration, not an edge; a `pub use x::Y`
re-export is an edge. With SUBDIR only cycles touching files under it are printed (edges are
still read crate-wide; it may be given inside CRATE_SRC, and one holding no file is an error,
exit status 2). `--no-tests` leaves out `#[cfg(test)]` modules; `--edges` prints the
file graph too. Exit status 1 when a cycle is found, 0 otherwise.

Comments and string literals are blanked before reading, so a path in a doc comment
(`[`super::ledger`]`) is not an edge.
"""

import os
import re
import sys


def strip(text):
    """Blanks comments, string and char literals (keeps newlines and braces of code)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 12])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'\n])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def file_module(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main") and len(rel) == 1:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def use_leaves(tree):
    """The paths of a use tree: `a::{b, c::{d, self}}` -> [a::b, a::c::d, a::c]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    out = []

    def walk(prefix, t):
        parts, depth, cur = [], 0, ""
        for ch in t:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            if "{" in p:
                head, rest = p.split("{", 1)
                walk(prefix + [s for s in head.split("::") if s], rest[:-1])
            else:
                segs = [s for s in p.split("::") if s]
                if segs == ["self"]:
                    out.append(prefix)
                elif segs != ["*"]:
                    out.append(prefix + [s for s in segs if s != "*"])
                else:
                    out.append(prefix)

    walk([], tree)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    no_tests = "--no-tests" in sys.argv
    show_edges = "--edges" in sys.argv
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    src = os.path.normpath(args[0])
    sub = os.path.normpath(args[1]) if len(args) > 1 else None
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                p = os.path.join(root, name)
                files[file_module(src, p)] = os.path.relpath(p)
    edges = {}

    def resolve(base, segs):
        full = list(base)
        rest = list(segs)
        if rest and rest[0] == "crate":
            full, rest = [], rest[1:]
        elif rest and rest[0] in ("super", "self"):
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    full = full[:-1]
                rest = rest[1:]
        else:
            # A relative path: only a child module of the current module counts.
            if not rest or tuple(base + [rest[0]]) not in files:
                return None
        full = full + rest
        for k in range(len(full), -1, -1):
            if tuple(full[:k]) in files:
                return tuple(full[:k])
        return None

    for mod, path in files.items():
        text = strip(open(path, encoding="utf-8").read())
        # Inline modules: (depth at which it opened, name, is test).
        stack = []
        depth = 0
        pending_test = False
        # `pub(in crate::x)` names a module for visibility, not an import.
        text = re.sub(r"\(\s*in\s+[\w:]+\s*\)", "()", text)
        tokens = re.finditer(
            r"#\[cfg\(test\)\]|\bmod\s+(\w+)\s*\{|\buse\s+([^;]+);|\{|\}|"
            r"\b((?:crate|super|self)(?:::(?:super|self|\w+))+|\w+(?:::\w+)+)",
            text,
        )
        for t in tokens:
            s = t.group(0)
            if s == "#[cfg(test)]":
                pending_test = True
                continue
            if t.group(1):
                in_test = pending_test or any(x[2] for x in stack)
                depth += 1
                stack.append((depth, t.group(1), in_test))
                pending_test = False
                continue
            if s == "{":
                depth += 1
                continue
            if s == "}":
                if stack and stack[-1][0] == depth:
                    stack.pop()
                depth -= 1
                continue
            in_test = any(x[2] for x in stack)
            if no_tests and (in_test or pending_test):
                if t.group(2) is None:
                    pending_test = False
                continue
            base = list(mod) + [x[1] for x in stack]
            if t.group(2):
                paths = use_leaves(t.group(2))
                pending_test = False
            else:
                paths = [t.group(3).split("::")]
            for segs in paths:
                target = resolve(base, segs)
                if target is not None and target != mod:
                    edges.setdefault(mod, {}).setdefault(target, set()).add(
                        "::".join(segs) + (" (test)" if in_test else "")
                    )

    # Tarjan's strongly connected components.
    index, low, on, st, sccs = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        st.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = st.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    for v in sorted(files):
        if v not in index:
            visit(v)

    def under(m, d):
        return os.path.normpath(files[m]).startswith(d)

    # SUBDIR may be given from the working directory or inside CRATE_SRC; one that holds no
    # file of the crate is a mistake, not a directory without cycles.
    if sub is not None and not any(under(m, sub) for m in files):
        inside = os.path.relpath(os.path.join(src, sub))
        if not any(under(m, inside) for m in files):
            print(f"module-cycles: SUBDIR {args[1]!r}: no .rs file of {src} under it "
                  f"(expected a directory such as {os.path.join(src, 'calibrate')})",
                  file=sys.stderr)
            return 2
        sub = inside

    def shown(m):
        return sub is None or under(m, sub)

    if show_edges:
        for a in sorted(edges):
            if not shown(a):
                continue
            for b in sorted(edges[a]):
                print(f"{files[a]} -> {files[b]}: {', '.join(sorted(edges[a][b]))}")
    cycles = [sorted(c) for c in sccs if len(c) > 1 and any(shown(m) for m in c)]
    where = sub or src
    if not cycles:
        print(f"{where}: no import cycle between files")
        return 0
    for c in sorted(cycles):
        print(f"cycle of {len(c)} files: {' '.join(files[m] for m in c)}")
        for a in c:
            for b in sorted(edges.get(a, {})):
                if b in c:
                    why = ", ".join(sorted(edges[a][b]))
                    print(f"  {files[a]} -> {files[b]}: {why}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
