#!/usr/bin/env bash
# Runs CMD... with LOFT_TEST_DATABASE_URL naming a database on a throw-away PostgreSQL
# cluster, then stops that cluster (by its postmaster pid) and removes it.
#
#   scripts/with-postgres.sh cargo test -j 1 --workspace
#
# Installs Debian's `postgresql` package when no server binaries are found (needs root).
# The cluster lives in a temporary directory, listens on 127.0.0.1 on a free port, trusts
# local connections, and runs without fsync (it is thrown away).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return 0
  fi
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

if ! BIN=$(find_bindir); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "with-postgres: no PostgreSQL server found; install the postgresql package" >&2
    exit 1
  fi
  echo "with-postgres: installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  BIN=$(find_bindir)
fi

# As root, the server runs as the `postgres` user (initdb refuses root).
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return 0
  local p
  for p in $(seq 54320 54420); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

TMP=$(mktemp -d -t loft-pg.XXXXXX)
chmod 755 "$TMP"
[ "$(id -u)" -eq 0 ] && chown postgres "$TMP"
PORT=$(free_port)
PID=""

cleanup() {
  local status=$?
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    # SIGINT: PostgreSQL's fast shutdown.
    kill -INT "$PID" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# TLS: a throw-away CA and a server certificate for 127.0.0.1, when openssl is there, so
# the TLS modes (sslmode=require|verify-ca|verify-full) are tested; plain TCP still works.
SSL_OPTS=""
TLS_STATE=off
if command -v openssl >/dev/null 2>&1; then
  (
    cd "$TMP"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=loft-test-ca" -keyout ca.key -out ca.crt
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "/CN=127.0.0.1" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt
    chmod 600 server.key
    [ "$(id -u)" -eq 0 ] && chown postgres server.key server.crt
    true
  ) >"$TMP/openssl.log" 2>&1 || { cat "$TMP/openssl.log" >&2; exit 1; }
  SSL_OPTS="-c ssl=on -c ssl_cert_file=$TMP/server.crt -c ssl_key_file=$TMP/server.key"
  TLS_STATE=on
  export LOFT_TEST_DATABASE_ROOTCERT="$TMP/ca.crt"
fi

# PG_DURABLE=1 keeps PostgreSQL's own durability defaults (for benchmarks); otherwise the
# throw-away cluster skips fsync.
DURABILITY_OPTS="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${PG_DURABLE:-}" = 1 ] && DURABILITY_OPTS=""
# PG_OPTS adds server options, e.g. "-c shared_preload_libraries=pg_stat_statements"
# (bench/postgres-cpu counts statements per request with it).
EXTRA_OPTS=${PG_OPTS:-}

as_pg "$BIN/initdb" -D "$TMP/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$TMP/initdb.log" 2>&1 \
  || { cat "$TMP/initdb.log" >&2; exit 1; }
as_pg "$BIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -t 60 \
  -o "-p $PORT -k $TMP -c listen_addresses=127.0.0.1 -c max_connections=300 $DURABILITY_OPTS -c shared_buffers=128MB $SSL_OPTS $EXTRA_OPTS" \
  start >/dev/null || { cat "$TMP/server.log" >&2; exit 1; }
PID=$(head -n 1 "$TMP/data/postmaster.pid")
as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres loft_test

export LOFT_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/loft_test"
# The postmaster, for benchmarks that sum the CPU of the cluster's processes.
export LOFT_TEST_POSTMASTER_PID="$PID"
echo "with-postgres: PostgreSQL $("$BIN/postgres" --version | awk "{print \$3}") on 127.0.0.1:$PORT (pid $PID, TLS $TLS_STATE), LOFT_TEST_DATABASE_URL=$LOFT_TEST_DATABASE_URL" >&2
"$@"
