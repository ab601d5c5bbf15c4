#!/usr/bin/env bash
# Packs the `loft-server` npm package (packaging/npm) with the release `loft` binary into
# target/npm/loft-server-VERSION.tgz. Builds the binary when it is missing or older than
# the sources; `--no-build` takes target/release/loft as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-build" ]; then
  cargo build --release -p loft
fi
test -x target/release/loft || { echo "no target/release/loft" >&2; exit 1; }
cp target/release/loft packaging/npm/bin/loft
chmod 755 packaging/npm/bin/loft
mkdir -p target/npm
(cd packaging/npm && npm pack --silent --pack-destination ../../target/npm)
rm -f packaging/npm/bin/loft
ls -1 target/npm/loft-server-*.tgz
