#!/usr/bin/env bash
# Loft's OCI image (docs/container.md), with podman.
#
#   scripts/image.sh build   builds `loft:latest` FROM scratch: the release binary, the
#                            shared libraries `ldd` lists and the dynamic loader, the CA
#                            bundle, a passwd/group naming the non-root user `loft`
#                            (10001), an empty /data of that user (the SQLite volume)
#                            and /tmp.
#   scripts/image.sh test    runs the proof (tests/image/run.sh): size, start to a boto3
#                            round trip, a message surviving `podman restart`, SIGTERM to
#                            exit, the health check, non-root, and the LocalStack drop-in
#                            (testcontainers-python's LocalStackContainer, awslocal).
#
# Installs Debian's `podman` and `runc` when missing. Podman runs with the settings named
# by CONTAINERS_CONF; when that is unset, this script writes target/image/containers.conf
# (runc, cgroupfs, and explicit nofile/nproc limits: crun and podman's default nproc limit
# failed with EPERM on these machines) and uses it.
#
# Environment:
#   LOFT_IMAGE           image tag to build/test (default loft:latest)
#   LOFT_IMAGE_BINARY    a release `loft` binary to put in the image instead of building
#                        one with `cargo build --release -p loft`
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
IMAGE=${LOFT_IMAGE:-loft:latest}
WORK=$ROOT/target/image
# The image's user: a fixed uid/gid, so a host directory mounted at /data can be given
# to it (`chown 10001:10001 DIR`).
LOFT_UID=10001

usage() {
  echo "usage: scripts/image.sh build|test" >&2
  exit 2
}

ensure_podman() {
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    echo "image.sh: installing podman and runc (Debian packages)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
  fi
  if [ -z "${CONTAINERS_CONF:-}" ]; then
    mkdir -p "$WORK"
    cat >"$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
    export CONTAINERS_CONF=$WORK/containers.conf
  fi
}

build() {
  ensure_podman
  local bin=${LOFT_IMAGE_BINARY:-}
  if [ -z "$bin" ]; then
    cargo build --release -p loft
    bin=$ROOT/target/release/loft
  fi
  [ -x "$bin" ] || { echo "image.sh: no executable at $bin" >&2; exit 1; }
  local ctx=$WORK/context
  rm -rf "$ctx"
  mkdir -p "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/tmp" "$ctx/data"
  chmod 1777 "$ctx/rootfs/tmp"
  # The release binary as cargo built it (its symbols stay, so backtraces name functions).
  cp -L "$bin" "$ctx/rootfs/loft"
  # Every library the dynamic loader resolves (`name => /path (addr)`) and the loader
  # itself (`/lib64/ld-linux-x86-64.so.2 (addr)`), at the paths the binary names them by.
  local libs
  libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
  for lib in $libs; do
    mkdir -p "$ctx/rootfs$(dirname "$lib")"
    cp -L "$lib" "$ctx/rootfs$lib"
  done
  cp -L /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
  printf 'root:x:0:0:root:/:/sbin/nologin\nloft:x:%s:%s:loft:/data:/sbin/nologin\n' \
    "$LOFT_UID" "$LOFT_UID" >"$ctx/rootfs/etc/passwd"
  printf 'root:x:0:\nloft:x:%s:\n' "$LOFT_UID" >"$ctx/rootfs/etc/group"
  cp "$ROOT/tests/image/Containerfile" "$ctx/Containerfile"
  local previous
  previous=$(podman image inspect "$IMAGE" --format '{{.Id}}' 2>/dev/null || true)
  # docker format: OCI image configs have no HEALTHCHECK.
  podman build --format docker --no-cache -t "$IMAGE" -f "$ctx/Containerfile" "$ctx"
  # The image this tag named before, now untagged (kept while a container uses it).
  if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect "$IMAGE" --format '{{.Id}}')" ]; then
    podman rmi "$previous" >/dev/null 2>&1 || true
  fi
  local size
  size=$(podman image inspect "$IMAGE" --format '{{.Size}}')
  echo "image.sh: built $IMAGE, $size bytes ($((size / 1024 / 1024)) MiB)"
}

case "${1:-}" in
  build) build ;;
  test)
    ensure_podman
    LOFT_IMAGE=$IMAGE exec bash "$ROOT/tests/image/run.sh"
    ;;
  *) usage ;;
esac
