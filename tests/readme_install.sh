#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's way from a checkout to a running program, as written: in a
# copy of the source tree, with HOME a scratch directory, runs every ```sh
# block that the line `<!-- run by tests/readme_install.sh ... -->` comes
# before, in order, in one shell (so the install's `export` reaches the quick
# start), but for the lines that start with `sudo` (the install into
# /usr/local and its ldconfig, whose stand-ins for a prefix of one's own, the
# install with --prefix "$HOME/.local" and LD_LIBRARY_PATH, the README gives
# next and this runs).  The README's example is quickstart.c.  Then:
# ./quickstart printed exactly the README's ```text block after its run
# (where `long` has 64 bits, as the README says), and it loaded
# libarena.so.2 from $HOME/.local/lib, not from anywhere else.
#   tests/readme_install.sh SOURCE_DIR
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "readme_install: $*" >&2; exit 1; }

# The tree, without build directories (a checkout's, or a package build's).
mkdir "$tmp/src" "$tmp/home"
if git -C "$src" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$src"; then
    (cd "$src" && git ls-files --cached --others --exclude-standard |
        while IFS= read -r f; do if [ -e "$f" ]; then echo "$f"; fi; done |
        tar -T - -cf -) | tar -x -C "$tmp/src"
else
    tar -C "$src" --exclude='./build*' --exclude='./obj-*' --exclude='./debian/tmp' \
        --exclude='./debian/.debhelper' -cf - . | tar -x -C "$tmp/src"
fi

readme=$tmp/src/README.md
awk '!done && /^```c$/ { on = 1; next } on && /^```$/ { on = 0; done = 1 } on' "$readme" \
    >"$tmp/src/quickstart.c"
awk 'mark && /^```sh$/ { on = 1; mark = 0; next } on && /^```$/ { on = 0 } on { print }
     /^<!-- run by tests\/readme_install\.sh/ { mark = 1 }' "$readme" >"$tmp/all.sh"
grep -v '^sudo ' "$tmp/all.sh" >"$tmp/run.sh" || true
echo "readme_install: the README's commands, run as written:"
sed 's/^/    /' "$tmp/run.sh"
echo "readme_install: left out (they need root and /usr/local):"
grep '^sudo ' "$tmp/all.sh" | sed 's/^/    /'
grep -q 'cmake --install' "$tmp/run.sh" && grep -q '^\./quickstart$' "$tmp/run.sh" ||
    fail "the README's marked blocks no longer install and run the quick start"

(cd "$tmp/src" && HOME=$tmp/home sh -ex "$tmp/run.sh") >"$tmp/out" 2>"$tmp/log" || {
    cat "$tmp/log" "$tmp/out"
    fail "the README's commands failed"
}
got=$(grep '^batch ' "$tmp/out") || true
echo "readme_install: ./quickstart printed:"
printf '%s\n' "$got" | sed 's/^/    /'
want=$(awk '/^<!-- the output of the quick start/ { mark = 1; next }
            mark && /^```text$/ { on = 1; next } on && /^```$/ { exit } on' "$readme")
[ -n "$want" ] || fail "no \`\`\`text block of the quick start's output in the README"
if [ "$(getconf LONG_BIT)" = 64 ]; then
    [ "$got" = "$want" ] || fail "it printed other than the README shows:
$want"
else
    [ "$(printf '%s\n' "$got" | wc -l)" = 3 ] || fail "not three batches"
fi
(cd "$tmp/src" && LD_LIBRARY_PATH=$tmp/home/.local/lib ldd ./quickstart) |
    grep -qF "libarena.so.2 => $tmp/home/.local/lib/libarena.so.2" ||
    fail "./quickstart did not load \$HOME/.local/lib/libarena.so.2"
echo "readme_install: the README's install and quick start work as written"
