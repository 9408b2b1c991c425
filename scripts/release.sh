#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the release of the version in CMakeLists.txt's project(VERSION), on
# the commit checked out (docs/releasing.md says when and what comes before):
#   1. dates the CHANGELOG's "## [Unreleased]: X.Y.Z" heading,
#      "## [X.Y.Z] - DATE";
#      and dates debian/changelog's entry for X.Y.Z-N the same day;
#   2. checks the ABI against the committed baseline (scripts/abi-check.sh),
#      then writes the baseline from this tree, so that abi/ describes the
#      release that later changes are compared with;
#   3. commits both ("libarena X.Y.Z") and tags the commit vX.Y.Z (annotated);
#   4. makes and checks the tarballs (make distcheck) in build-dist/.
# It pushes and publishes nothing: it prints what to publish.
#   scripts/release.sh [--date YYYY-MM-DD]     (default: today, UTC)
set -euo pipefail
cd "$(dirname "$0")/.."

date=$(date -u +%F)
case "${1:-}" in
    --date) date=${2:?--date needs YYYY-MM-DD} ;;
    "") ;;
    *) echo "usage: scripts/release.sh [--date YYYY-MM-DD]" >&2; exit 2 ;;
esac
if ! [[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
    echo "release: the date must be YYYY-MM-DD, not '$date'" >&2
    exit 2
fi

if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then
    echo "release: the tree has changes that are not committed: the release is a commit" >&2
    exit 1
fi
version=$(sed -n '/^project(arena/,/)/s/^ *VERSION \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' CMakeLists.txt)
tag=v$version
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
    echo "release: the tag $tag exists already" >&2
    exit 1
fi
heading="## [Unreleased]: $version"
if [ "$(grep -cxF "$heading" CHANGELOG.md)" != 1 ]; then
    echo "release: CHANGELOG.md has no single '$heading' heading to date" >&2
    exit 1
fi

debversion=$(sed -n '1s/^libarena (\(.*\)) .*/\1/p' debian/changelog)
if [ "${debversion%-*}" != "$version" ]; then
    echo "release: debian/changelog's first entry is $debversion, not $version-N:" \
        "add one (dch -v $version-1)" >&2
    exit 1
fi

echo "release: libarena $version, dated $date"
sed -i "s/^## \[Unreleased\]: $version\$/## [$version] - $date/" CHANGELOG.md
# The first entry's trailer: " -- NAME <MAIL>  RFC 5322 date".
sed -i "0,/^ -- /s/^\( -- .*>  \).*/\1$(LC_ALL=C date -u -R -d "$date")/" debian/changelog
scripts/abi-check.sh
scripts/abi-check.sh --update
git add CHANGELOG.md debian/changelog abi/
git commit -q -m "libarena $version"
git tag -a "$tag" -m "libarena $version"
make distcheck

echo
echo "release: committed and tagged $tag ($(git rev-parse --short HEAD)); nothing is pushed."
echo "Publish:"
echo "    git push origin HEAD $tag"
echo "    build-dist/libarena-$version.tar.gz{,.sha256}"
echo "    build-dist/libarena-$version-onefile.tar.gz{,.sha256}"
echo "    build-dist/arena.wrap (its source_url is where the source tarball must be)"
