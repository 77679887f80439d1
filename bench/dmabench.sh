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
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm cc:gcc+libc6-dev python3:python3
out=target/bench
mkdir -p "$out"
status=0
./run-qemu.sh dmabench --timeout 3000 -- "$@" | tee "$out/dmabench.log" || status=$?
sed -n '/^---- csv ----/,/^---- end csv ----/p' "$out/dmabench.log" | sed '1d;$d' | tr -d '\r' > "$out/dmabench.csv"
python3 bench/plot.py "$out/dmabench.csv" "$out/dmabench.svg"
echo "dmabench: $out/dmabench.csv, $out/dmabench.svg"
exit "$status"
