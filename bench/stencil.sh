#!/usr/bin/env bash
# Stencil scaling, reported against the host cores QEMU really had: QEMU
# runs each vCPU on a host thread, so on a machine with H cores no more than
# H vCPUs can run at once; efficiency = speedup / min(vCPUs, H).
#
#   1. strong scaling on one node: 1..S cores on one grid (S = min(4, H) by default)
#   2. weak scaling across nodes: 1 node x 1 vCPU on NX x NY, then N nodes x
#      1 vCPU on NX x (N*NY) (each node keeps the same slab), N = 2 by default
#   3. fault-aware vs pinned ghost rows on 2 nodes (halo-bench)
#
#   bench/stencil.sh [NX NY ITERS]     default 1024 1024 40 (2 x 8 MiB grids: larger than the caches)
#
# Output: target/bench/stencil.log and a summary with the targets.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
nx=${1:-1024}
ny=${2:-1024}
iters=${3:-40}
host=$(nproc)
smp=$(( host < 4 ? host : 4 ))
out=target/bench
mkdir -p "$out"
log="$out/stencil.log"
: > "$log"
run() { echo "== ./run-qemu.sh $*" | tee -a "$log"; ./run-qemu.sh "$@" 2>&1 | tr -d '\r' | tee -a "$log"; }

run stencil --smp "$smp" --timeout 1800 -- "$nx" "$ny" "$iters" scaling > "$out/stencil.strong.txt"
run stencil --smp 1 --timeout 1800 -- "$nx" "$ny" "$iters" > "$out/stencil.weak1.txt"
run stencil --nodes 2 --smp 1 --timeout 1800 -- "$nx" $((2 * ny)) "$iters" > "$out/stencil.weak2.txt"
run stencil --nodes 2 --smp 1 --timeout 1800 -- "$nx" "$ny" "$iters" halo-bench > "$out/stencil.halo.txt"

python3 - "$out" "$host" "$smp" <<'PY'
import re, sys
out, host, smp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def text(name): return open(f"{out}/stencil.{name}.txt").read()
print(f"\nstencil scaling on a {host}-core host")
strong = {int(c): float(t) for c, t in re.findall(r"cores (\d+): [\d.]+ ms, ([\d.]+) ms/iteration", text("strong"))}
base = strong.get(1)
for c, t in sorted(strong.items()):
    eff = base / t / min(c, host)
    print(f"  one node, {c} vCPU: {t:.3f} ms/iteration, speedup {base / t:.2f}x, efficiency {eff * 100:.0f}% of min(vCPUs, host cores) = {min(c, host)}")
one = re.search(r"cores 1: [\d.]+ ms, ([\d.]+) ms/iteration", text("weak1"))
two = [float(x) for x in re.findall(r"FaultAware: wall ([\d.]+) ms", text("weak2"))]
if one and two:
    t1 = float(one.group(1)) * int(re.search(r"(\d+) iterations", text("weak1")).group(1))
    t2 = max(two)
    print(f"  weak scaling, 2 nodes x 1 vCPU, twice the grid: {t2:.1f} ms vs {t1:.1f} ms on 1 node -> efficiency {t1 / t2 * 100:.0f}% (2 vCPUs on {host} host cores)")
best = max((base / t / min(c, host) for c, t in strong.items()), default=0)
top = strong.get(max(strong)) if strong else None
if top:
    e = base / top / min(max(strong), host)
    print(f"  target: >= 90% efficiency on all cores of a node: {e * 100:.0f}% {'met' if e >= 0.9 else 'NOT met'}")
for line in text("halo").splitlines():
    if "halo-bench" in line or "steady-state" in line:
        print("  " + line)
PY
