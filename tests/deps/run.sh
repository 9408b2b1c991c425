#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/deps.sh, run as root against stand-ins for id, dpkg-query and
# apt-get, with nothing installed: before it installs, it must print what it
# is about to install, the packages asked for and those apt-get adds to them
# (which the stand-in's simulation names), and then install exactly the
# packages asked for.
#   tests/deps/run.sh SOURCE_DIR
set -eu
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
cat >"$tmp/bin/id" <<'STUB'
#!/bin/sh
echo 0
STUB
cat >"$tmp/bin/dpkg-query" <<'STUB'
#!/bin/sh
exit 1
STUB
cat >"$tmp/bin/apt-get" <<'STUB'
#!/bin/sh
echo "apt-get $*" >>"$DEPS_TEST_LOG"
case " $* " in
    *" update "*) ;;
    *" -s "*)
        for p in "$@"; do
            case "$p" in -*|install) ;; *) echo "Inst $p (1.0 Debian:12/stable [amd64])" ;; esac
        done
        echo "Inst libstand-in-dependency1 (2.0 Debian:12/stable [amd64])"
        echo "Conf libstand-in-dependency1 (2.0 Debian:12/stable [amd64])" ;;
    *" install "*) echo "STAND-IN INSTALLING" ;;
esac
STUB
chmod +x "$tmp/bin"/*
export DEPS_TEST_LOG="$tmp/apt.log"
PATH="$tmp/bin:$PATH" sh "$src/scripts/deps.sh" test >"$tmp/out" 2>&1 || {
    cat "$tmp/out"
    echo "deps test: scripts/deps.sh failed" >&2
    exit 1
}
cat "$tmp/out"
fail() { echo "deps test: $*" >&2; exit 1; }
before=$(sed '/STAND-IN INSTALLING/,$d' "$tmp/out")
[ "$before" != "$(cat "$tmp/out")" ] || fail "it did not install"
for p in libcmocka-dev libstand-in-dependency1; do
    printf '%s\n' "$before" | grep -qw -- "$p" || fail "it did not name $p before installing"
done
install=$(grep -v -- ' -s \| update' "$tmp/apt.log" | grep ' install ') || fail "no apt-get install"
case "$install" in
    *libstand-in-dependency1*) fail "it asked apt-get for the dependency itself: $install" ;;
    *libcmocka-dev*) ;;
    *) fail "apt-get install did not get the packages asked for: $install" ;;
esac
echo "deps test: the packages (and apt-get's additions) were named before the install"
