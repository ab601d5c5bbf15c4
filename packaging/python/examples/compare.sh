#!/usr/bin/env bash
# Times the plugin's example boto3 suite (20 tests, a reset before each) on Loft and on
# moto's ThreadedMotoServer, in one run, RUNS times each (default 5), alternating; prints
# the medians and their ratio. Needs the loft-server wheel, boto3, pytest and moto[server]
# installed in $PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")"
exec "${PYTHON:-python3}" - "${RUNS:-5}" <<'PY'
import statistics, subprocess, sys, time

runs = int(sys.argv[1])
times = {"loft": [], "moto": []}
for i in range(runs):
    for backend in (("loft", "moto") if i % 2 == 0 else ("moto", "loft")):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--backend", backend, "test_sqs.py", "test_sns.py"],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        times[backend].append(time.perf_counter() - t0)
loft, moto = statistics.median(times["loft"]), statistics.median(times["moto"])
print(f"examples (20 tests, a reset each): loft median {loft:.2f} s, moto median {moto:.2f} s, "
      f"moto/loft {moto / loft:.2f}x ({runs} runs each, whole pytest processes)")
PY
