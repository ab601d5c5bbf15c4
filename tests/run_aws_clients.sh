#!/usr/bin/env bash
# Builds Loft, starts `target/debug/loft serve` on a free port with a throw-away database,
# runs tests/fifo_boto3.py, tests/sns_boto3.py and tests/aws_clients.py (boto3, the AWS CLI v1, raw Query) and
# tests/receipt_forgery.py (10,000 forged receipt handles) against it, then
# tests/signed_clients.py against a second server that requires SigV4, then
# tests/iam_matrix.py against one with two accounts' keys and policies (SQLite, and
# PostgreSQL when LOFT_TEST_DATABASE_URL is set), then
# tests/tls_clients.py against a third serving HTTPS with a self-signed certificate made by
# openssl, and stops each server by its PID. Exits with the script's status; its last line
# is "N passed, N failed".
#
# Needs python3 with boto3, the `aws` CLI (v1) on PATH, and openssl (without it the HTTPS
# checks are skipped with a note). Extra arguments go to tests/aws_clients.py (e.g. -k cli).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

cargo build -j 1 -p loft --bin loft

work="$(mktemp -d)"
server_pid=""
stop_loft() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
cleanup() {
    stop_loft
    rm -rf "$work"
}
trap cleanup EXIT

# Starts `loft serve` on a free port with database $1 and any further arguments (extra
# environment before the call); sets server_pid and endpoint.
start_loft() {
    local db="$1"
    shift
    LOFT_LOG="${LOFT_LOG:-warn}" target/debug/loft serve --listen 127.0.0.1:0 --db "$db" "$@" \
        >"$work/stdout" 2>"$work/stderr" &
    server_pid=$!
    endpoint=""
    for _ in $(seq 1 300); do
        line="$(grep -m1 '^loft listening on ' "$work/stdout" 2>/dev/null || true)"
        if [[ -n "$line" ]]; then
            endpoint="${line#loft listening on }"
            break
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    if [[ -z "$endpoint" ]]; then
        echo "loft did not start; its stderr:" >&2
        cat "$work/stderr" >&2
        exit 1
    fi
}

start_loft "$work/loft.db"
echo "loft (pid $server_pid) at $endpoint"

export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-x}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-x}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

status=0
python3 tests/fifo_boto3.py --endpoint "$endpoint" || status=$?
python3 tests/sns_boto3.py --endpoint "$endpoint" || status=$?
python3 tests/aws_clients.py --endpoint "$endpoint" "$@" || status=$?
# 10,000 forged and mutated receipt handles: none accepted, none answered apart.
python3 tests/receipt_forgery.py --endpoint "$endpoint" --attempts 10000 --seconds 120 || status=$?

# The same clients against a Loft that requires SigV4.
stop_loft
key="AKIDSIGNED"
secret="signed/Secret+$RANDOM"
LOFT_CREDENTIALS="$key:$secret" start_loft "$work/signed.db"
echo "loft with credentials (pid $server_pid) at $endpoint"
python3 tests/signed_clients.py --endpoint "$endpoint" --key "$key" --secret "$secret" || status=$?

# Accounts and permissions: the allow/deny matrix over two accounts, on SQLite and (when
# LOFT_TEST_DATABASE_URL names a database) on PostgreSQL.
stop_loft
python3 tests/iam_matrix.py --write-config "$work/iam.toml"
start_loft "$work/iam.db" --config "$work/iam.toml"
echo "loft with accounts and policies on SQLite (pid $server_pid) at $endpoint"
python3 tests/iam_matrix.py --endpoint "$endpoint" || status=$?
python3 tests/tenancy_matrix.py --endpoint "$endpoint" || status=$?
if [[ -n "${LOFT_TEST_DATABASE_URL:-}" ]]; then
    stop_loft
    start_loft "$work/unused.db" --config "$work/iam.toml" --database-url "$LOFT_TEST_DATABASE_URL"
    echo "loft with accounts and policies on PostgreSQL (pid $server_pid) at $endpoint"
    python3 tests/iam_matrix.py --endpoint "$endpoint" || status=$?
    python3 tests/tenancy_matrix.py --endpoint "$endpoint" || status=$?
elif [[ "${LOFT_TEST_REQUIRE_POSTGRES:-}" == 1 ]]; then
    # CI (.ci/run) runs everything or fails: no skip for a missing database.
    echo "FAIL the matrix on PostgreSQL: LOFT_TEST_DATABASE_URL is not set (LOFT_TEST_REQUIRE_POSTGRES=1)" >&2
    status=1
else
    echo "LOFT_TEST_DATABASE_URL is not set: the matrix on PostgreSQL is skipped" >&2
fi

# The clients over HTTPS, trusting a certificate made here.
stop_loft
if command -v openssl >/dev/null; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$work/tls-key.pem" -out "$work/tls-cert.pem" 2>/dev/null
    start_loft "$work/tls.db" --tls-cert "$work/tls-cert.pem" --tls-key "$work/tls-key.pem"
    echo "loft over HTTPS (pid $server_pid) at $endpoint"
    python3 tests/tls_clients.py --endpoint "$endpoint" --ca "$work/tls-cert.pem" || status=$?
else
    echo "openssl is not installed: the HTTPS checks (tests/tls_clients.py) are skipped" >&2
fi
exit "$status"
