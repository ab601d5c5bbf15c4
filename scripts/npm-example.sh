#!/usr/bin/env bash
# The npm package's proof: packs loft-server (scripts/npm.sh), installs the tarball with
# vitest, the AWS SDK v3 SQS/SNS clients, sqs-producer and sqs-consumer into a temporary
# copy of packaging/npm/example, and runs its vitest suite. `--no-build` packs the existing
# target/release/loft.
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=$(scripts/npm.sh "$@" | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r packaging/npm/example/. "$work/"
cd "$work"
npm install --silent --no-audit --no-fund "$OLDPWD/$tarball" vitest@3 @aws-sdk/client-sqs@3 \
  @aws-sdk/client-sns@3 sqs-producer sqs-consumer >/dev/null
timeout 300 npx vitest run
