#!/usr/bin/env bash
# The Python package's proof: builds the loft-server wheel (scripts/wheel.sh; `--no-build`
# takes the newest wheel in target/wheels/), installs it into a fresh virtualenv with boto3,
# Celery (kombu's SQS transport), Powertools for AWS Lambda, moto and pytest, runs the
# plugin's example suite (packaging/python/examples), then times its 20 boto3 tests on Loft
# and on moto's ThreadedMotoServer (compare.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-build" ]; then
  scripts/wheel.sh >/dev/null
fi
wheel=$(ls -t target/wheels/loft_server-*.whl | head -1)
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "$wheel" boto3 "celery[sqs]" aws-lambda-powertools \
  "moto[server]" pytest
cd packaging/python/examples
# The binary the wheel installed, not one on PATH.
test -x "$venv/bin/loft"
timeout 600 "$venv/bin/python" -m pytest -q -p no:cacheprovider .
PYTHON="$venv/bin/python" RUNS="${RUNS:-3}" timeout 900 ./compare.sh
