#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make dist`: the release artefacts of the commit checked out, in build-dist/
# (never committed):
#   libarena-X.Y.Z.tar.gz          the source (git archive of HEAD), with a
#                                  REVISION file naming the commit; it builds
#                                  without git (the version lives in
#                                  CMakeLists.txt's project(VERSION), which
#                                  meson.build checks against its own)
#   libarena-X.Y.Z-onefile.tar.gz  the amalgamation: arena.c and the headers
#                                  under arena/, so that <arena/arena.h>,
#                                  <arena/thread.h>, ... and <arena/arena.hpp>
#                                  work unchanged with -I on the directory
#   arena.wrap                     a Meson [wrap-file] over the source
#                                  tarball: dependency('arena') in a project
#                                  with it in subprojects/
# each tarball with a .sha256 file that `sha256sum -c` reads.
# The tarballs are made from HEAD, not from the working tree, so a tree with
# changes that are not committed is refused: the artefacts would not be what
# it builds.  Both are reproducible: the same commit gives the same bytes.
#   scripts/dist.sh [OUT_DIR]        (default: build-dist)
# scripts/dist-check.sh builds consumers from them (`make distcheck`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-build-dist}

if [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$root" ]; then
    echo "dist: $root is not a git checkout: the tarballs are made from its HEAD commit" >&2
    exit 1
fi
dirty=$(git status --porcelain --untracked-files=normal)
if [ -n "$dirty" ]; then
    echo "dist: the tree has changes that are not committed; the tarballs are made from" \
        "HEAD, so they would not hold them. Commit or stash them first:" >&2
    printf '%s\n' "$dirty" | sed 's/^/    /' >&2
    exit 1
fi

version=$(sed -n '/^project(arena/,/)/s/^ *VERSION \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' CMakeLists.txt)
if [ -z "$version" ]; then
    echo "dist: no project(arena VERSION X.Y.Z) in CMakeLists.txt" >&2
    exit 1
fi
if ! grep -q "^  version: '$version',\$" meson.build; then
    echo "dist: meson.build's version is not $version (CMakeLists.txt's)" >&2
    exit 1
fi
name=libarena-$version
revision=$(git describe --always --tags)
# Every file in the tarballs carries the commit's time, so that the same
# commit always gives the same bytes.
mtime=@$(git log -1 --format=%ct)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pack DIR NAME: a reproducible NAME.tar.gz of $tmp/DIR in $out.
pack() {
    tar -C "$tmp" --sort=name --mtime="$mtime" --owner=0 --group=0 --numeric-owner \
        --format=gnu -cf - "$1" | gzip -9n >"$out/$2.tar.gz"
    (cd "$out" && sha256sum "$2.tar.gz" >"$2.tar.gz.sha256")
}
mkdir -p "$out"
rm -f "$out/$name.tar.gz"* "$out/$name-onefile.tar.gz"* "$out/arena.wrap"

# The source.
git archive --format=tar --prefix="$name/" HEAD | tar -x -C "$tmp"
printf '%s\n' "$revision" >"$tmp/$name/REVISION"
pack "$name" "$name"

# The one-file build, from the source just packed.
python3 "$tmp/$name/scripts/amalgamate.py" "$tmp/amalgamation" >/dev/null
one=$tmp/$name-onefile
mkdir -p "$one/arena"
cp "$tmp/amalgamation/arena.h" "$tmp/$name/include/arena/arena.hpp" "$one/arena/"
if [ "$(grep -c '^#include "arena.h"$' "$tmp/amalgamation/arena.c")" != 1 ]; then
    echo "dist: the amalgamation's arena.c no longer includes \"arena.h\" once" >&2
    exit 1
fi
sed 's|^#include "arena.h"$|#include "arena/arena.h"|' "$tmp/amalgamation/arena.c" >"$one/arena.c"
# arena/arena.h holds every public header; each of the others names it.
for h in "$tmp/$name"/include/arena/*.h version.h; do
    h=$(basename "$h")
    [ "$h" = arena.h ] && continue
    printf '%s\n' "/* SPDX-License-Identifier: MIT */" \
        "/* libarena $version, one-file build: arena/arena.h holds every public header. */" \
        '#include "arena.h"' >"$one/arena/$h"
done
cp "$tmp/$name/LICENSE" "$one/"
cat >"$one/README" <<EOF
libarena $version ($revision), one-file build: the whole library as one
source, arena.c, and its public headers under arena/ (arena/arena.h holds them
all; the others name it, so that code written against an installed libarena
compiles unchanged).  Compile arena.c once as C11 and put this directory on
the include path:

    cc -std=c11 -O2 -pthread -I$name-onefile -c $name-onefile/arena.c
    cc -std=c11 -O2 -pthread -I$name-onefile app.c arena.o
    c++ -std=c++17 -O2 -pthread -I$name-onefile app.cpp arena.o   # <arena/arena.hpp>

-DARENA_CHECKED=1 on every one of those lines is the checked build (the
program and arena.c must agree).  MIT licence: LICENSE.
EOF
pack "$name-onefile" "$name-onefile"

# The Meson wrap, at the address the release is published under
# (docs/releasing.md): the root meson.build provides arena_dep
# (meson.override_dependency), so dependency('arena') finds it.
url=$(sed -n 's|^  HOMEPAGE_URL "\(.*\)"$|\1|p' CMakeLists.txt)
cat >"$out/arena.wrap" <<EOF
[wrap-file]
directory = $name
source_url = $url/releases/download/v$version/$name.tar.gz
source_filename = $name.tar.gz
source_hash = $(cut -d' ' -f1 "$out/$name.tar.gz.sha256")

[provide]
arena = arena_dep
EOF

echo "dist: libarena $version ($revision) in $out/:"
(cd "$out" && ls -l "$name.tar.gz" "$name-onefile.tar.gz" arena.wrap |
    awk '{ print "    " $5 "\t" $9 }')
