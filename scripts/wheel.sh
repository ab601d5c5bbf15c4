#!/usr/bin/env bash
# Builds the `loft-server` Python wheel (the `loft` binary plus the pytest plugin in
# packaging/python) into target/wheels/, with maturin (installed from PyPI when missing).
#   scripts/wheel.sh            # release build
# Install it with: pip install target/wheels/loft_server-*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v maturin >/dev/null; then
  python3 -m pip install --quiet 'maturin>=1.5,<2.0'
fi
# The wheel's platform tag is the machine's (`linux_x86_64`): --compatibility linux keeps
# maturin from checking manylinux symbol versions, which a build on a newer glibc would fail.
(cd packaging/python && maturin build --release --compatibility linux --out ../../target/wheels "$@")
ls -1 target/wheels/loft_server-*.whl
