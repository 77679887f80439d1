#!/usr/bin/env bash
# Runs rdmabench on two nodes (all policies side by side in one run) over
# RoCEv2 between the nodes' network namespaces, with what that link gives by
# itself measured first in the same run (--link-bench: raw UDP throughput
# with RoCE-sized datagrams, UDP round trip), and the RDMA engine's
# self-benchmark (engine WRITE against raw UDP and memcpy on loopback).
# Keeps the log, extracts the CSV, draws a plot and prints the ratios
# against the link.
#
#   bench/rdmabench.sh           # 4 KiB .. 16 MiB
#   bench/rdmabench.sh quick     # 4 KiB .. 4 MiB
#   bench/rdmabench.sh full      # 4 KiB .. 64 MiB
#
# Output: target/bench/rdmabench.{log,csv,svg}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What run-qemu.sh needs, and python3 for the summary: installed when missing.
. bench/lib.sh
bench_setup cc:gcc+libc6-dev python3:python3
cargo build -q --release -p faultline-rdma-engine
echo "== engine WRITE vs raw UDP vs memcpy on loopback (faultline-rdma-engine --self-bench)" | tee "$out/rdmabench.log"
target/release/faultline-rdma-engine --self-bench 2>&1 | tee -a "$out/rdmabench.log"
status=0
./run-qemu.sh rdmabench --nodes 2 --link-bench --smp 2 --timeout 3000 -- "$@" | tee -a "$out/rdmabench.log" || status=$?
csv_and_plot "$out/rdmabench.log" "$out/rdmabench.csv" "$out/rdmabench.svg" rdmabench
# The wire targets: the engine against what the link gave in the same run.
python3 - "$out/rdmabench.log" <<'PY' | tee -a "$out/rdmabench.log"
import re, sys
log = open(sys.argv[1]).read()
def num(pattern):
    m = re.search(pattern, log)
    return float(m.group(1)) if m else None
udp = num(r"\[link\] raw UDP one way, \d+-byte datagrams: ([\d.]+) MB/s")
rtt = num(r"\[link\] UDP round trip, \d+-byte datagrams: median ([\d.]+) us")
bw = num(r"warm 4 MiB WRITE, fault-aware: ([\d.]+) MB/s")
lat = num(r"warm 64 B WRITE, fault-aware: ([\d.]+) us")
print("== against the link, same run")
if None in (udp, rtt, bw, lat):
    print("missing figures: link", udp, rtt, "engine", bw, lat)
    sys.exit(1)
r = bw / udp
print(f"  warm 4 MiB WRITE {bw:.1f} MB/s vs raw UDP {udp:.1f} MB/s: {r:.2f}x (target >= 0.70) {'met' if r >= 0.70 else 'NOT met'}")
r = lat / rtt
print(f"  64 B WRITE {lat:.1f} us vs UDP round trip {rtt:.1f} us: {r:.2f}x (target <= 1.5) {'met' if r <= 1.5 else 'NOT met'}")
PY
echo "rdmabench: $out/rdmabench.log, $out/rdmabench.csv, $out/rdmabench.svg"
exit "$status"
