#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages a task needs.  As root it names the missing
# ones, then every package the install adds (apt-get's simulation: their
# dependencies too), then runs apt-get; as anyone else it prints the exact
# command and fails.
#   scripts/deps.sh test    build + unit tests (cmocka, pkg-config, the libraries of
#                           the adapter tests: cJSON, Lua 5.4, zlib, expat, protobuf-c)
#   scripts/deps.sh ci      everything .ci/run uses
#   scripts/deps.sh bench   the benchmark suite and its peers
#   scripts/deps.sh debian  scripts/ci-debian.sh: the Debian package's build
#                           dependencies, debhelper, dpkg-dev and lintian
#   scripts/deps.sh cross   scripts/ci-cross.sh: qemu-user, musl, mingw-w64, wine, and
#                           the parts of the cross compilers that do not conflict with
#                           gcc-multilib (ci-cross.sh fetches the rest itself)
set -eu

pkgs_test="cmake make gcc g++ pkg-config libcmocka-dev \
libcjson-dev liblua5.4-dev zlib1g-dev libexpat1-dev libprotobuf-c-dev protobuf-c-compiler"
pkgs_ci="$pkgs_test clang libclang-rt-14-dev valgrind cppcheck clang-tidy gcc-multilib g++-multilib qemu-user \
libcmocka-dev:i386 doxygen python3 abigail-tools meson ninja-build"
pkgs_debian="build-essential debhelper dpkg-dev fakeroot lintian cmake pkg-config libcmocka-dev \
valgrind g++"
pkgs_ci="$pkgs_ci $pkgs_debian"
pkgs_cross="cmake make pkg-config clang dpkg-dev valgrind protobuf-c-compiler qemu-user musl-tools \
gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix wine64"
for a in aarch64-linux-gnu:arm64 s390x-linux-gnu:s390x arm-linux-gnueabihf:armhf; do
    pkgs_cross="$pkgs_cross binutils-${a%:*} cpp-12-${a%:*} libgcc-12-dev-${a#*:}-cross \
libstdc++-12-dev-${a#*:}-cross libc6-dev-${a#*:}-cross"
done
pkgs_bench="$pkgs_test python3 libbenchmark-dev libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev \
libtalloc-dev libapr1-dev libglib2.0-dev libboost-dev gnuplot-nox \
libcjson-dev liblua5.4-dev libprotobuf-c-dev protobuf-c-compiler libexpat1-dev"

want=""
for profile in "${@:-test}"; do
    case "$profile" in
        test) want="$want $pkgs_test" ;;
        ci) want="$want $pkgs_ci" ;;
        bench) want="$want $pkgs_bench" ;;
        cross) want="$want $pkgs_cross" ;;
        debian) want="$want $pkgs_debian" ;;
        *)
            echo "deps.sh: unknown profile '$profile' (test, ci, bench, cross, debian)" >&2
            exit 2
            ;;
    esac
done

missing=""
for p in $want; do
    case " $missing " in *" $p "*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps.sh: missing packages:$missing (no apt-get here: install them by hand)" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing packages. Run:" >&2
    case "$missing" in *:i386*) echo "    sudo dpkg --add-architecture i386" >&2 ;; esac
    echo "    sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "deps.sh: missing, to install:$missing"
export DEBIAN_FRONTEND=noninteractive
case "$missing" in *:i386*) dpkg --add-architecture i386 ;; esac
# A mirror in mid-sync fails one architecture's index now and then: go on
# with the lists that did arrive, and let the install say what is missing.
apt-get update -qq || apt-get update -qq ||
    echo "deps.sh: apt-get update had errors; installing from the lists at hand" >&2
# Everything the install will add, the packages these need included, from
# apt-get's simulation of it (where that fails, the install says why).
# shellcheck disable=SC2086
plan=$(apt-get install -s -qq --no-install-recommends $missing 2>/dev/null |
    sed -n 's/^Inst \([^ ]*\) .*/\1/p' | sort) || true
if [ -n "$plan" ]; then
    echo "deps.sh: apt-get installs $(echo "$plan" | wc -l) packages:"
    # shellcheck disable=SC2086
    echo $plan | fold -s -w 92 | sed 's/^/    /; s/ *$//'
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
