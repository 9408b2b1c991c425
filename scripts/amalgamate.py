#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the amalgamation: the whole library as two files, arena.h and arena.c.

    scripts/amalgamate.py [OUT_DIR]        (default: build-amalgamation)

arena.h is every public C header the library installs (every
include/arena/*.h, arena.h first: pool.h, hooks.h, thread.h, report.h,
guard.h, ..., the version macros and the inline code of arena/internal/) in
the order the compiler would read them; arena.c is `#include "arena.h"` and every source of
src/, in the order of ARENA_SOURCES in CMakeLists.txt, with the private
headers inlined once.  Compile arena.c once as C11 with -pthread, include
arena.h anywhere: `cc -std=c11 -O2 -c arena.c`.  The version comes from
project(VERSION) in CMakeLists.txt, the one source of it; ARENA_CHECKED
defaults to 0 (compile with -DARENA_CHECKED=1 for the checked build).

The sources are written as separate translation units, so two of them may
each have a file-scope static of the same name, or a macro of the same name:
in the amalgamation each such static is renamed for its file with a
#define/#undef pair around the file, and every macro a source defines is
undefined after it.  Feature-test macros (_POSIX_C_SOURCE) move to the top,
before any system header, with the macros that make arena.c define the
exported copies of inline functions.  Nothing here is committed: OUT_DIR is a build
directory.

Python 3 standard library only.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Macros a source sets before its first include: the feature-test macros,
# and arena.c's ARENA__OUT_OF_LINE pair (the exported copies of the inline
# arena_rewind() and arena_scope_end(); see arena/internal/compiler.h).  They
# go to the top of arena.c, before arena.h, so every source sees the same
# declarations.
FEATURE = re.compile(r"^#\s*define\s+(_POSIX_C_SOURCE|_GNU_SOURCE|_DEFAULT_SOURCE|_XOPEN_SOURCE"
                     r"|ARENA__OUT_OF_LINE|ARENA__DEFINE_OUT_OF_LINE)\b"
                     r"[ \t]*([^\n]*)$", re.M)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[^\n]*$', re.M)
# A part of a source (src/*.inc.c): never compiled alone, it is the source's
# text where the source includes it.
PART = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"/]+\.inc\.c)"[^\n]*$', re.M)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def source_text(path):
    """A source with its parts in place: their file-scope names are the
    source's, and clash or not as its own do."""
    here = os.path.dirname(path)
    return PART.sub(lambda m: inl_banner(os.path.join(here, m.group(1)),
                                         source_text(os.path.join(here, m.group(1)))),
                    read(path))


def revision():
    """The commit the tree comes from: the REVISION file that scripts/dist.sh
    writes into a release tarball, else git's description of this checkout
    (not of a repository the tarball happens to be unpacked inside)."""
    path = os.path.join(ROOT, "REVISION")
    if os.path.exists(path):
        return read(path).strip()
    try:
        top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(ROOT):
            return "unknown"
        return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def public_headers():
    """Every public C header, arena.h first (the others include it): read
    from the directory, so that a header added there is never left out."""
    names = sorted(n for n in os.listdir(os.path.join(ROOT, "include", "arena")) if n.endswith(".h"))
    if "arena.h" not in names:
        sys.exit("amalgamate: no include/arena/arena.h")
    return ["arena/arena.h"] + ["arena/" + n for n in names if n != "arena.h"]


def version():
    m = re.search(r"project\(arena\s+VERSION\s+(\d+)\.(\d+)\.(\d+)", read(os.path.join(ROOT, "CMakeLists.txt")))
    if not m:
        sys.exit("amalgamate: no project(arena VERSION x.y.z) in CMakeLists.txt")
    return m.groups()


def version_h(major, minor, patch):
    text = read(os.path.join(ROOT, "include", "arena", "version.h.in"))
    for k, v in (("PROJECT_VERSION_MAJOR", major), ("PROJECT_VERSION_MINOR", minor),
                 ("PROJECT_VERSION_PATCH", patch),
                 ("PROJECT_VERSION", "%s.%s.%s" % (major, minor, patch)),
                 ("ARENA_CHECKED_VALUE", "0")):
        text = text.replace("@%s@" % k, v)
    if "@" in re.sub(r"/\*.*?\*/", "", text, flags=re.S):
        sys.exit("amalgamate: version.h.in has a variable this script does not know")
    return text


class Inliner:
    """Inlines the project's own headers ("..." includes), each once."""

    def __init__(self, version_text):
        self.seen = set()
        self.version_text = version_text

    def resolve(self, name, here):
        if name == "arena/version.h":
            return name
        for base in (os.path.join(ROOT, "include"), here, os.path.join(ROOT, "src")):
            p = os.path.normpath(os.path.join(base, name))
            if os.path.exists(p):
                return p
        sys.exit("amalgamate: cannot find \"%s\" (from %s)" % (name, here))

    def text(self, path):
        if path == "arena/version.h":
            return self.version_text
        return read(path)

    def inline(self, path):
        if path in self.seen:
            return ""
        self.seen.add(path)
        here = os.path.dirname(path) if path != "arena/version.h" else ROOT
        body = self.text(path)

        def sub(m):
            return self.inline(self.resolve(m.group(1), here))
        rel = path if path == "arena/version.h" else os.path.relpath(path, ROOT)
        return "/* ---- %s ---- */\n%s\n" % (rel, INCLUDE.sub(sub, body).rstrip("\n"))


def sources():
    cm = read(os.path.join(ROOT, "CMakeLists.txt"))
    m = re.search(r"set\(ARENA_SOURCES\s+(.*?)\)", cm, re.S)
    if not m:
        sys.exit("amalgamate: no set(ARENA_SOURCES ...) in CMakeLists.txt")
    return m.group(1).split()


# File-scope names a source defines for itself: static functions and
# variables, tags, and macros.
STATIC = re.compile(r"^static\b[^;{}=()]*?\b([A-Za-z_]\w*)\s*(?:\(|=|;|\[)", re.M)
STATIC_VAR = re.compile(r"^static\b[^;{}=()]*?\b([A-Za-z_]\w*)\s*(?:=|;|\[)", re.M)
TAG = re.compile(r"^(?:typedef\s+)?(?:struct|union|enum)\s+([A-Za-z_]\w*)\s*\{", re.M)
MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-amalgamation")
    os.makedirs(out, exist_ok=True)
    major, minor, patch = version()
    ver = "%s.%s.%s" % (major, minor, patch)
    rev = revision()
    banner = ("/* SPDX-License-Identifier: MIT */\n"
              "/*\n * libarena %s, amalgamated (%s) by scripts/amalgamate.py: %s.\n"
              " * Generated; edit the tree, not this file.  See docs/reference.md, \"The amalgamation\".\n"
              " */\n")

    inl = Inliner(version_h(major, minor, patch))
    header = [banner % (ver, rev, "every public header"),
              "#ifndef ARENA_AMALGAMATION_H\n#define ARENA_AMALGAMATION_H\n",
              "#define ARENA_AMALGAMATION 1\n"]
    for h in public_headers():
        header.append(inl.inline(os.path.join(ROOT, "include", h)))
    header.append("#endif /* ARENA_AMALGAMATION_H */\n")
    with open(os.path.join(out, "arena.h"), "w", encoding="utf-8") as f:
        f.write("\n".join(header))

    srcs = [os.path.join(ROOT, s) for s in sources()]
    texts = {s: source_text(s) for s in srcs}
    features = {}
    for s in srcs:
        for name, value in FEATURE.findall(texts[s]):
            value = re.sub(r"\s*/\*.*?\*/\s*$", "", value).strip()  # the comment says why
            if features.get(name, value) != value:
                sys.exit("amalgamate: %s is defined as %s and %s" % (name, features[name], value))
            features[name] = value
    names = {}
    for s in srcs:
        code = strip_comments(texts[s])
        names[s] = set(STATIC.findall(code)) | set(TAG.findall(code))
    # A file's static is renamed where another file defines the same name,
    # and a static variable where a later file names it too: a local of that
    # name there would shadow it (-Wshadow), unless the name is also a
    # member that the file itself reaches (s->name), which renaming would
    # break.
    words = {s: set(re.findall(r"\b[A-Za-z_]\w*\b", strip_comments(texts[s]))) for s in srcs}
    clash = {}
    for i, s in enumerate(srcs):
        code = strip_comments(texts[s])
        shadowed = {n for n in STATIC_VAR.findall(code)
                    if any(n in words[t] for t in srcs[i + 1:])
                    and not re.search(r"(?:\.|->)\s*%s\b" % n, code)}
        clash[s] = sorted(n for n in names[s]
                          if n in shadowed or any(n in names[t] for t in srcs if t != s))

    every = list(texts.values()) + [read(h) for h in all_headers()]
    body = [banner % (ver, rev, "the library's sources: compile this file once"),
            "".join(("#define %s %s" % kv).rstrip() + "\n" for kv in sorted(features.items())),
            '#define ARENA_BUILDING 1\n#include "arena.h"\n']
    # arena.h holds the public headers: the sources' includes of them
    # resolve to nothing (the inliner has seen them).
    for s in srcs:
        tag = os.path.splitext(os.path.basename(s))[0]
        text = FEATURE.sub("", texts[s])
        pre = "".join("#define %s %s\n" % (n, renamed(tag, n, every)) for n in clash[s])
        macros = sorted(set(MACRO.findall(strip_comments(text))) - set(features))
        post = "".join("#undef %s\n" % n for n in clash[s] + macros)
        here = os.path.dirname(s)
        text = INCLUDE.sub(lambda m: inl.inline(inl.resolve(m.group(1), here)), text)
        body.append("%s%s\n%s" % (pre, inl_banner(s, text), post))
    with open(os.path.join(out, "arena.c"), "w", encoding="utf-8") as f:
        f.write("\n".join(body))
    print("amalgamate: libarena %s in %s/arena.h and %s/arena.c (%d sources)" % (ver, out, out,
                                                                                len(srcs)))


def all_headers():
    found = []
    for d in ("include/arena", "include/arena/internal", "src"):
        found += [os.path.join(ROOT, d, n) for n in sorted(os.listdir(os.path.join(ROOT, d)))
                  if n.endswith(".h")]
    return found


def renamed(tag, name, texts):
    """The name a file's clashing static takes in the amalgamation: one that
    no source already uses (arena__reuse_live, reuse.c's `live`, is a
    function of its own)."""
    new = "arena__%s__%s" % (tag, name)
    if any(re.search(r"\b%s\b" % new, t) for t in texts):
        sys.exit("amalgamate: %s's static %s would become %s, which a source uses" % (tag, name, new))
    return new


def inl_banner(path, text):
    return "/* ---- %s ---- */\n%s" % (os.path.relpath(path, ROOT), text.rstrip("\n"))


if __name__ == "__main__":
    main()
