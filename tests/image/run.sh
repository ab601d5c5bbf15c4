#!/usr/bin/env bash
# The image's proof, run by `scripts/image.sh test` (which sets CONTAINERS_CONF and checks
# podman is installed) against LOFT_IMAGE (default loft:latest):
#   1. targets.py: size, start to a boto3 round trip, restart, SIGTERM, health check, user.
#   2. test_localstack_drop_in.py under pytest: testcontainers-python's LocalStackContainer
#      starting the Loft image through podman's Docker-compatible API service, boto3 SQS and
#      SNS round trips, awslocal.
#   3. node/ (when npm is installed): @testcontainers/localstack and the AWS SDK for
#      JavaScript v3 the same way.
# The Python clients live in a virtualenv under target/image/venv (made when missing); the
# API service is started here and stopped by its pid; every wait is bounded. A step that
# cannot run (podman cannot start a container, a package cannot be installed) fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export LOFT_IMAGE=${LOFT_IMAGE:-loft:latest}
WORK=$ROOT/target/image
VENV=$WORK/venv
mkdir -p "$WORK"

if [ ! -x "$VENV/bin/python" ] ||
  ! "$VENV/bin/python" -c 'import testcontainers.community.localstack, boto3, pytest' 2>/dev/null ||
  [ ! -x "$VENV/bin/awslocal" ]; then
  # Debian's python3 makes a virtualenv only with python3-venv (ensurepip) installed.
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'testcontainers[localstack]' boto3 pytest awscli awscli-local
fi
export PATH=$VENV/bin:$PATH

podman image exists "$LOFT_IMAGE" || {
  echo "image: no image $LOFT_IMAGE; run scripts/image.sh build first" >&2
  exit 1
}

echo "== targets"
timeout 300 python tests/image/targets.py

echo "== LocalStack drop-in (testcontainers-python)"
SOCK=$WORK/podman.sock
rm -f "$SOCK"
podman system service --time=0 "unix://$SOCK" >"$WORK/podman-service.log" 2>&1 &
SERVICE=$!
# With Ryuk off nothing removes a container whose harness failed before it could: remove
# (with its anonymous /data volume) every testcontainers container this run made.
BEFORE=$(podman ps -aq --no-trunc --filter label=org.testcontainers=true | sort)
stop_service() {
  local made
  made=$(comm -13 <(echo "$BEFORE") <(podman ps -aq --no-trunc --filter label=org.testcontainers=true | sort))
  for c in $made; do podman rm -f -v -t 0 "$c" >/dev/null 2>&1 || true; done
  kill "$SERVICE" 2>/dev/null || true
  wait "$SERVICE" 2>/dev/null || true
}
trap stop_service EXIT
for _ in $(seq 100); do
  [ -S "$SOCK" ] && break
  sleep 0.1
done
[ -S "$SOCK" ] || {
  echo "image: podman's API service did not open $SOCK within 10 s:" >&2
  cat "$WORK/podman-service.log" >&2
  exit 1
}
export DOCKER_HOST=unix://$SOCK TESTCONTAINERS_RYUK_DISABLED=true
# Podman publishes the containers' ports on this machine itself. When this machine is a
# container too (a /.dockerenv), testcontainers-python would otherwise look for them at
# the default gateway (its Docker-in-Docker guess): say where they are.
export TESTCONTAINERS_CONNECTION_MODE=docker_host TC_HOST=127.0.0.1
timeout 300 python -m pytest -q -p no:cacheprovider tests/image/test_localstack_drop_in.py

if [ -d tests/image/node ]; then
  if command -v npm >/dev/null; then
    echo "== LocalStack drop-in (@testcontainers/localstack, AWS SDK v3)"
    (cd tests/image/node && timeout 300 npm ci --silent --no-audit --no-fund && timeout 300 npm test)
  else
    echo "image: npm is missing: the Node drop-in proof cannot run" >&2
    exit 1
  fi
fi
echo "image: all checks passed"
