#!/usr/bin/env bash
# Runs dmabench under QEMU (all policies side by side in one run), keeps its
# log, extracts the CSV and draws a plot of throughput ratios against pin.
#
#   bench/dmabench.sh            # 4 KiB .. 64 MiB
#   bench/dmabench.sh quick      # 4 KiB .. 1 MiB
#   bench/dmabench.sh 4 1024     # chosen sizes, in KiB
#
# Output: target/bench/dmabench.log, dmabench.csv, dmabench.svg
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What run-qemu.sh needs, and python3 for the summary: installed when missing.
. bench/lib.sh
bench_setup cc:gcc+libc6-dev python3:python3
status=0
./run-qemu.sh dmabench --timeout 3000 -- "$@" | tee "$out/dmabench.log" || status=$?
csv_and_plot "$out/dmabench.log" "$out/dmabench.csv" "$out/dmabench.svg"
echo "dmabench: $out/dmabench.csv, $out/dmabench.svg"
exit "$status"
