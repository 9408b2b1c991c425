#!/bin/sh
# SPDX-License-Identifier: MIT
# Every tracked file the project wrote carries `SPDX-License-Identifier: MIT`
# in its first three lines (run by scripts/lint.sh).  Left out: data that has
# no comment syntax or is not the project's prose of code (fuzz corpora, the
# ABI baseline, JSON, images), the Markdown documents, which LICENSE covers,
# and the two Debian files whose formats have no comments (debian/changelog,
# debian/source/format: debian/copyright states the licence for debian/).
set -eu
cd "$(dirname "$0")/.."
missing=$(git ls-files |
    grep -Ev '^fuzz/corpus/|\.(md|png|json|abi)$|^LICENSE$|^debian/(changelog|source/format)$' |
    while IFS= read -r f; do
        head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT' || echo "$f"
    done)
if [ -n "$missing" ]; then
    echo "check-spdx: no 'SPDX-License-Identifier: MIT' in the first three lines of:" >&2
    echo "$missing" | sed 's/^/    /' >&2
    exit 1
fi
