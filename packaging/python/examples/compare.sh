#!/usr/bin/env bash
# Times the plugin's example boto3 suite (20 tests, a reset before each) on Loft and on
# moto's ThreadedMotoServer, in one run, each 5 times alternating; prints the medians.
# Needs the loft-server wheel, boto3, pytest and moto[server] installed in the Python used.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
runs=${RUNS:-5}
declare -a loft moto
for i in $(seq "$runs"); do
  for backend in loft moto; do
    start=$(date +%s.%N)
    "$PY" -m pytest -q -p no:cacheprovider --backend "$backend" test_sqs.py test_sns.py >/dev/null
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc)
    if [ "$backend" = loft ]; then loft+=("$t"); else moto+=("$t"); fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ml=$(median "${loft[@]}"); mm=$(median "${moto[@]}")
echo "examples (20 tests, reset each): loft median ${ml}s, moto median ${mm}s, moto/loft $(echo "scale=2; $mm / $ml" | bc)x (runs: $runs)"
