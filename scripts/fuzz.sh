#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ (or the ones named) for SECONDS each and fails if
# any of them finds a crash, a timeout or a leak.
#
#   scripts/fuzz.sh SECONDS [TARGET...]
#
# Uses the nightly toolchain when rustup has one; otherwise stable with RUSTC_BOOTSTRAP=1
# (cargo-fuzz needs -Z flags). Installs cargo-fuzz when missing. Each target starts from
# its seed corpus in fuzz/corpus/TARGET (read only); what it learns goes to
# fuzz/target/corpus/TARGET, and a crashing input to fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]" >&2
  exit 2
fi
seconds=$1
shift

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  echo "fuzz: no nightly toolchain; using stable with RUSTC_BOOTSTRAP=1"
  export RUSTC_BOOTSTRAP=1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

failed=()
for target in "${targets[@]}"; do
  work="fuzz/target/corpus/$target"
  mkdir -p "$work"
  log="fuzz/target/$target.log"
  echo "fuzz: $target for ${seconds}s (building first)"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: the default 2 GiB.
  if cargo "${toolchain[@]}" fuzz run "$target" "$work" "fuzz/corpus/$target" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
    echo "fuzz: $target ok: ${runs:-see $log}"
  else
    echo "fuzz: $target FAILED; the end of $log:"
    tail -n 40 "$log"
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
