#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two layout rules that clang-format does not enforce (scripts/lint.sh runs this).

- No line is longer than 100 columns in include/, src/, tests/, bench/,
  examples/ and fuzz/ (the fuzz corpora aside: they are data).  clang-format
  never reflows comments (.clang-format: ReflowComments false), so a comment
  can grow past its column limit unseen.
- A block comment that trails code on its first line and goes on to more
  lines keeps those lines at the column of its text.  When a longer name
  realigns a struct's trailing comments, clang-format moves each comment's
  first line and leaves the others where they were.

Prints each offending line as FILE:LINE: what, and exits 1 if there is one.
"""
import re
import subprocess
import sys
from pathlib import Path

LIMIT = 100
DIRS = ["include", "src", "tests", "bench", "examples", "fuzz"]
C_FILE = re.compile(r"\.(c|h|cc|cpp|hpp)$")
# The opening of a trailing comment, up to its text: "/* ", "/** ", "/**< ".
OPENING = re.compile(r"/\*\*?<?\s*")


def tracked(root):
    out = subprocess.run(["git", "ls-files", "-z", *DIRS], cwd=root, check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and not f.startswith("fuzz/corpus/")]


def long_lines(name, lines):
    for n, line in enumerate(lines, 1):
        if len(line) > LIMIT:
            yield "%s:%d: %d columns (at most %d)" % (name, n, len(line), LIMIT)


def trailing_comments(name, lines):
    n = 0
    while n < len(lines):
        line = lines[n]
        at = line.find("/*")
        code = line[:at].strip() if at > 0 else ""
        n += 1
        if not code or code.startswith("*") or "//" in code or "*/" in line[at:]:
            continue
        text = at + len(OPENING.match(line, at).group(0))
        while n < len(lines):
            more = lines[n]
            n += 1
            if more.strip() == "*/":
                break
            indent = len(more) - len(more.lstrip(" "))
            if indent != text:
                yield ("%s:%d: a trailing comment's line starts at column %d, its text at %d"
                       % (name, n, indent + 1, text + 1))
            if "*/" in more:
                break


def main():
    root = Path(__file__).resolve().parent.parent
    found = []
    for name in tracked(root):
        try:
            lines = (root / name).read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError:
            continue
        found.extend(long_lines(name, lines))
        if C_FILE.search(name):
            found.extend(trailing_comments(name, lines))
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
