#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Doxygen's input filter for the Markdown pages (docs/Doxyfile.in).

The pages are written for a reader of the repository, whose renderer gives
every heading an anchor made from its text (`## The pool` is `#the-pool`) and
follows links between files (`docs/guide.md#scratch-arenas`).  Doxygen 1.9
does neither by itself.  This filter, given one .md file, prints it with
  - each heading labelled `{#PAGE-SLUG}`, the slug made as the repository's
    renderer makes it (lower case; letters, digits, '-' and '_' kept, spaces
    to '-', a repeat numbered -1, -2, ...), PAGE the file's name in lower case
    without .md, so that labels of two pages never collide; a page's title
    (its first `# ` heading) is labelled PAGE itself, and the README's is left
    alone: it is the main page, `index`;
  - each link to a heading of this or another page, or to a page, turned into
    a link to that label; a link to a Markdown file that is not among the
    pages (the .md files of INPUT in docs/Doxyfile.in) turned into its path
    in code, since the reference has no copy of it to link to; other links
    left alone.
Code blocks are copied as they are.  Python 3 standard library only.
    md-filter.py FILE.md
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = re.compile(r"^(#{1,6}) +(.*?) *$")
# A link, [text](target); its text may have begun on an earlier line.
LINK = re.compile(r"(?:\[([^\]]*))?\]\(([^)\s]*)\)")


def page(path):
    name = os.path.splitext(os.path.basename(path))[0].lower()
    return "index" if name == "readme" else name


def slug(text):
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def link(text, target, here, where, pages):
    """The Markdown for the link [text](target) on page `here`, a file in the
    directory `where` of the checkout; text is None where it began on an
    earlier line."""
    start = "" if text is None else "[" + text
    whole = "%s](%s)" % (start, target)
    if re.match(r"^[a-z]+:", target):
        return whole
    path, _, anchor = target.partition("#")
    if path and not path.endswith(".md"):
        return whole
    name = page(path) if path else here
    if name not in pages and text is not None:
        shown = os.path.normpath(os.path.join(where, path))
        return "`%s`" % shown if text.strip("`") == path else "%s (`%s`)" % (text, shown)
    if name not in pages:
        return whole
    if not anchor:
        return "%s](#%s)" % (start, name)
    return "%s](#%s-%s)" % (start, "readme" if name == "index" else name, anchor)


def pages():
    """The pages: the .md files of INPUT in docs/Doxyfile.in."""
    with open(os.path.join(ROOT, "docs", "Doxyfile.in"), encoding="utf-8") as f:
        m = re.search(r"^INPUT\s*=((?:.*\\\n)*.*)$", f.read(), re.M)
    if not m:
        sys.exit("md-filter: no INPUT in docs/Doxyfile.in")
    return [page(w) for w in m.group(1).split() if w.endswith(".md")]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: md-filter.py FILE.md")
    path = sys.argv[1]
    here = page(path)
    where = os.path.relpath(os.path.dirname(os.path.abspath(path)), ROOT)
    known = pages()
    prefix = "readme" if here == "index" else here
    seen = {}
    fence = False
    titled = False
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("```"):
                fence = not fence
            elif not fence:
                m = HEADING.match(line)
                if m and m.group(1) == "#" and not titled:
                    titled = True
                    if here != "index":
                        line = "%s {#%s}" % (line, here)
                elif m:
                    s = slug(m.group(2))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    label = "%s-%s" % (prefix, s if n == 0 else "%s-%d" % (s, n))
                    line = "%s {#%s}" % (line, label)

                line = LINK.sub(lambda lm: link(lm.group(1), lm.group(2), here, where, known),
                                line)
            out.append(line)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
