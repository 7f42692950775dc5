#!/usr/bin/env python3
"""Lists the functions of the workspace over 100 lines that carry no justification.

Issue 23 asks that every function over 100 lines be split at its natural joints or say in a
comment why it is one piece. A justification is a comment saying "Over 100 lines ..." within
the 12 lines above the `fn`. Test modules and integration tests count too: a table test says
it is a table.

Usage: scripts/long-functions.py [--all] [ROOT]
  --all   list the justified ones too (marked "justified")
Exits 1 when an unjustified function over 100 lines is found, so CI can hold the line.
"""
import os
import re
import sys

LIMIT = 100
FN = re.compile(r'\s*(pub(\([a-z]+\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')


def strip(line):
    line = re.sub(r'//.*', '', line)
    line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
    return re.sub(r"'(\\.|[^\\'])'", "''", line)


def functions(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            s = strip(lines[j])
            if not started and s.rstrip().endswith(';'):
                break
            for ch in s:
                if ch == '{':
                    depth += 1
                    started = True
                elif ch == '}':
                    depth -= 1
            if started and depth <= 0:
                break
            j += 1
        if not started:
            i += 1
            continue
        above = lines[max(0, i - 12):i]
        justified = any("over 100 lines" in l.lower() or ("long (about" in l.lower() and "on purpose" in l.lower()) for l in above)
        yield j - i + 1, i + 1, m.group(6), justified
        # Nested functions are measured inside their parent only.
        i = j + 1


def main():
    args = [a for a in sys.argv[1:] if a != '--all']
    show_all = '--all' in sys.argv[1:]
    root = args[0] if args else 'crates'
    found = []
    for dirpath, _, files in os.walk(root):
        if '/target' in dirpath:
            continue
        for f in files:
            if f.endswith('.rs'):
                p = os.path.join(dirpath, f)
                for n, line, name, just in functions(p):
                    if n > LIMIT:
                        found.append((n, p, line, name, just))
    bad = 0
    for n, p, line, name, just in sorted(found, reverse=True):
        if just and not show_all:
            continue
        bad += not just
        print(f"{n:5} {p}:{line} {name}{'  justified' if just else ''}")
    print(f"{bad} function(s) over {LIMIT} lines without a justification "
          f"({len(found) - bad} justified)")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
