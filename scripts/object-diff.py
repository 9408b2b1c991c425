#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compares the machine code of library sources, function by function,
between a git revision and the working tree: a change meant to move code
(a source carved into parts it includes, a function moved, a private name
changed) must leave every function's instructions as they were.

    scripts/object-diff.py [--rev REV] [--cc CC ...] [--rename OLD=NEW ...] [SOURCE ...]
        (default: HEAD, gcc and clang, src/arena.c)

A SOURCE written OLD=NEW+NEW... compares the functions of OLD in the
revision with those of the NEW sources of the tree together: functions moved
from one source to others.  A static function that two of them define alike
(from a header they share) counts once, each copy compared.

Each source is compiled twice on each side, as the library is in a release
build (-O2 -DNDEBUG, the bench preset's) and in the checked build
(-DARENA_CHECKED=1).  A function is its disassembly (objdump -d -r) with the
addresses taken out: a jump within it keeps its offset, a call names its
target, and a relocation names what it points at (a string's text, a
constant's bytes, an object by name), so that the order in which the
compiler laid out functions, strings and objects does not count.  Functions
are matched by name; a static function renamed on purpose is matched with
--rename OLD=NEW.  Prints each function that differs or is on one side
only, then a count; exits 1 when any differs.  Needs a configured
build-default (for arena/version.h).

Python 3 standard library only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = ["-DARENA_BUILDING", "-DARENA_HAVE_VALGRIND=1", "-O2", "-DNDEBUG", "-fPIC",
         "-fvisibility=hidden", "-std=c11"]
BUILDS = {"release": [], "checked": ["-DARENA_CHECKED=1"]}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def symbols(obj):
    """Section -> [(value, size, name)], and name -> (section, value)."""
    by_section, by_name = {}, {}
    for line in run(["objdump", "-t", obj]).splitlines():
        m = re.match(r"^([0-9a-f]+) (.{7}) (\S+)\t([0-9a-f]+) (\S+)$", line)
        if not m:
            continue
        value, size, section, name = int(m.group(1), 16), int(m.group(4), 16), m.group(3), \
            m.group(5)
        by_section.setdefault(section, []).append((value, size, name))
        by_name[name] = (section, value)
    return by_section, by_name


def section_bytes(obj, section):
    out = bytearray()
    for line in run(["objdump", "-s", "-j", section, obj]).splitlines():
        m = re.match(r"^ ([0-9a-f]{4,}) ((?:[0-9a-f]{2,8} ){1,4})", line)
        if m:
            out += bytes.fromhex(m.group(2).replace(" ", ""))
    return bytes(out)


class Resolver:
    """Names what a relocation points at, whatever its place in the object."""

    def __init__(self, obj):
        self.obj = obj
        self.by_section, self.by_name = symbols(obj)
        self.data = {}

    def bytes_of(self, section):
        if section not in self.data:
            self.data[section] = section_bytes(self.obj, section)
        return self.data[section]

    def at(self, section, off):
        """What lies at `off` of `section`: a string's text, an object's
        name, a constant's bytes."""
        data = self.bytes_of(section) if not section.startswith(".bss") else b""
        if section.startswith(".rodata.str"):
            start = data.rfind(b"\0", 0, off) + 1
            end = data.find(b"\0", off)
            return "%r+%d" % (data[start:end].decode("utf-8", "replace"), off - start)
        for value, size, name in self.by_section.get(section, []):
            if size and value <= off < value + size and not name.startswith("."):
                return "%s+%d" % (name, off - value)
        if section.startswith(".rodata.cst"):
            width = int(re.sub(r"\D", "", section) or 8)
            return "const:" + data[off:off + width].hex()
        return "%s+%d" % (section, off)

    def target(self, kind, expr):
        m = re.match(r"^(.+?)(?:([-+])0x([0-9a-f]+))?$", expr)
        sym, sign, off = m.group(1), m.group(2), int(m.group(3) or "0", 16)
        off = -off if sign == "-" else off
        if sym.startswith(".L") and sym in self.by_name:
            section, value = self.by_name[sym]
            # A pc-relative reference is to its label, less the bytes
            # after the field: name the label, keep the addend.
            return "%s %s%+d" % (kind, self.at(section, value), off)
        if sym in self.by_section or sym.startswith("."):
            skew = 4 if kind.endswith(("PC32", "PLT32", "GOTPCREL")) else 0
            return "%s %s%+d" % (kind, self.at(sym, off + skew), -skew)
        return "%s %s%+d" % (kind, sym, off)


NOP = re.compile(r"^(nop|xchg %ax,%ax$|data16|cs nop)")


def functions(obj):
    """Function name -> its normalised lines: padding dropped, a jump within
    the function naming the instruction it lands on by its index, a call or
    jump through a relocation naming the relocation's target only."""
    res = Resolver(obj)
    raw, name = {}, None
    for line in run(["objdump", "-d", "-r", "--no-show-raw-insn", obj]).splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            name = m.group(2)
            raw[name] = (int(m.group(1), 16), [])
            continue
        if name is None or not line.strip():
            continue
        m = re.match(r"^\s+[0-9a-f]+: (R_\S+)\s+(\S+)$", line)
        if m and raw[name][1]:
            raw[name][1][-1][2].append("    reloc " + res.target(m.group(1), m.group(2)))
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            insn = re.sub(r"\s+", " ", re.sub(r"\s*#.*$", "", m.group(2))).strip()
            raw[name][1].append([int(m.group(1), 16), insn, []])
    funcs = {}
    for name, (start, insns) in raw.items():
        insns = [i for i in insns if not NOP.match(i[1])]
        index = {addr: k for k, (addr, _, _) in enumerate(insns)}
        body = []
        for addr, insn, relocs in insns:
            if relocs:
                insn = re.sub(r"\b[0-9a-f]+ <[^>]+>", "<reloc>", insn)
            else:
                def target(m):
                    label = m.group(2)
                    here = re.match(r"^(.+)\+0x([0-9a-f]+)$", label)
                    if here and here.group(1) == name:
                        at = int(m.group(1), 16)
                        k = next((index[x] for x in sorted(index) if x >= at), len(insns))
                        return "<.%d>" % k
                    return "<%s>" % label
                insn = re.sub(r"\b([0-9a-f]+) <([^>]+)>", target, insn)
            body.append(insn)
            body.extend(relocs)
        funcs[name] = body
    return funcs


def renamed(line, renames):
    """`line` with the functions renamed on purpose under their new names."""
    for was, now in renames.items():
        w = re.escape(was)
        line = re.sub(r"(?<=<)%s(?=[>+])" % w, now, line)
        line = re.sub(r"^(    reloc \S+ )%s(?=[+-]\d+$)" % w, r"\g<1>" + now, line)
    return line


def compile_side(cc, tree, sources, extra, tmp):
    """The functions of `sources` compiled together: name -> [bodies]."""
    funcs = {}
    for k, source in enumerate(sources):
        out = os.path.join(tmp, "%d.o" % k)
        run([cc] + FLAGS + extra + ["-I" + os.path.join(tree, "include"),
                                    "-I" + os.path.join(ROOT, "build-default", "include"),
                                    "-I" + os.path.join(tree, "src"), "-c",
                                    os.path.join(tree, source), "-o", out])
        for name, body in functions(out).items():
            funcs.setdefault(name, []).append(body)
    return funcs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--cc", action="append")
    ap.add_argument("--rename", action="append", default=[],
                    help="OLD=NEW: a static function renamed on purpose")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the differences")
    ap.add_argument("sources", nargs="*", default=["src/arena.c"])
    args = ap.parse_args()
    renames = dict(r.split("=", 1) for r in args.rename)
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old")
        os.makedirs(old)
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.rev, "src", "include"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        for cc in args.cc or ["gcc", "clang"]:
            for build, extra in BUILDS.items():
                for source in args.sources:
                    was, _, now = source.partition("=")
                    before = compile_side(cc, old, [was], extra, tmp)
                    after = compile_side(cc, ROOT, (now or was).split("+"), extra, tmp)
                    before = {renames.get(k, k): [renamed(line, renames) for line in v[0]]
                              for k, v in before.items()}
                    same = 0
                    for f in sorted(set(before) | set(after)):
                        if f in after and f in before and all(b == before[f] for b in after[f]):
                            after[f] = after[f][0]
                        elif f in after:
                            after[f] = next((b for b in after[f] if b != before.get(f)),
                                            after[f][0])
                        if f not in after:
                            print("%s %s %s: %s only in %s" % (cc, build, source, f, args.rev))
                        elif f not in before:
                            print("%s %s %s: %s only in the working tree" % (cc, build, source,
                                                                              f))
                        elif before[f] != after[f]:
                            print("%s %s %s: %s differs (%d instructions, %d in %s)" % (
                                cc, build, source, f, len(after[f]), len(before[f]), args.rev))
                            if args.verbose:
                                import difflib
                                sys.stdout.writelines(
                                    "    " + d + "\n" for d in difflib.unified_diff(
                                        before[f], after[f], lineterm="", n=2))
                        else:
                            same += 1
                            continue
                        status = 1
                    print("%s %s %s: %d of %d functions identical to %s" % (
                        cc, build, source, same, len(set(before) | set(after)), args.rev))
    return status


if __name__ == "__main__":
    sys.exit(main())
