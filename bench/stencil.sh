#!/usr/bin/env bash
# Stencil scaling, reported against the host cores QEMU really had: QEMU
# runs each vCPU on a host thread, so on a machine with H cores no more than
# H vCPUs can run at once; efficiency = speedup / min(vCPUs, H).
#
#   1. strong scaling on one node: 1..S cores on one grid (S = min(4, H) by default)
#   2. weak scaling across nodes, 3 rounds: 1 node x 1 vCPU on NX x NY, 2 nodes
#      x 1 vCPU on NX x 2NY (each node keeps the same slab), and the host's
#      ceiling: two independent 1-node runs at once
#   3. fault-aware vs pinned ghost rows on 2 nodes (halo-bench, 2 x ITERS):
#      first iteration with setup from cold runs, steady state from one run
#      alternating the two kinds of ghost rows iteration by iteration
#
#   bench/stencil.sh [NX NY ITERS]     default 1024 1024 40 (2 x 8 MiB grids: larger than the caches)
#
# Output: target/bench/stencil.log and a summary with the targets. Run it on
# an otherwise idle machine: two vCPUs need both host cores of a 2-core host
# (with a compiler running beside it, 2-vCPU efficiency fell to 41%).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What run-qemu.sh needs, and python3 for the summary: installed when missing.
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm cc:gcc+libc6-dev python3:python3
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
# Weak scaling in rounds of: 1 node alone, 2 nodes on twice the grid, and
# two independent 1-node runs at the same time (the host's ceiling: what
# two busy vCPUs get from this host, halos or not). -snapshot lets the two
# share the disk image beside the kernel.
: > "$out/stencil.weak1.txt"; : > "$out/stencil.weak2.txt"; : > "$out/stencil.pair.txt"
for round in 1 2 3; do
    run stencil --smp 1 --timeout 1800 -- "$nx" "$ny" "$iters" >> "$out/stencil.weak1.txt"
    run stencil --nodes 2 --smp 1 --timeout 1800 -- "$nx" $((2 * ny)) "$iters" >> "$out/stencil.weak2.txt"
    run stencil --smp 1 --timeout 1800 --qemu-arg -snapshot -- "$nx" "$ny" "$iters" >> "$out/stencil.pair.txt" &
    sleep 1
    run stencil --smp 1 --timeout 1800 --qemu-arg -snapshot -- "$nx" "$ny" "$iters" >> "$out/stencil.pair.txt"
    wait
done
run stencil --nodes 2 --smp 1 --timeout 1800 -- "$nx" "$ny" $((2 * iters)) halo-bench > "$out/stencil.halo.txt"

python3 - "$out" "$host" "$smp" <<'PY'
import re, sys
out, host, smp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def text(name): return open(f"{out}/stencil.{name}.txt").read()
def mean(xs): return sum(xs) / len(xs) if xs else float("nan")
print(f"\nstencil scaling on a {host}-core host (steady-state iterations: the median after the first)")
strong = text("strong")
effs = {}
for c, s in re.findall(r"scaling: (\d+) cores: speedup ([\d.]+)x", strong):
    c, s = int(c), float(s)
    effs[c] = s / min(c, host)
    print(f"  one node, {c} vCPUs: speedup {s:.2f}x over 1 vCPU (median of rounds), efficiency {effs[c] * 100:.0f}% of min(vCPUs, host cores) = {min(c, host)}")
def median(xs): return sorted(xs)[len(xs) // 2] if xs else float("nan")
one = [float(x) for x in re.findall(r"cores 1: .*steady state ([\d.]+) ms/iteration", text("weak1"))]
pair = [float(x) for x in re.findall(r"cores 1: .*steady state ([\d.]+) ms/iteration", text("pair"))]
runs = re.split(r"stencil: .*node 0 of 2", text("weak2"))[1:]
two = [max(float(x) for x in re.findall(r"FaultAware: .*steady-state ([\d.]+) ms/iteration", r)) for r in runs]
if one and two:
    e = median([a / b for a, b in zip(one, two)])
    print(f"  weak scaling, 2 nodes x 1 vCPU on twice the grid: efficiency {e * 100:.0f}% (median of rounds; 1 node {one} ms/iteration, 2 nodes {two})")
if one and pair:
    pairs = [max(pair[2 * i], pair[2 * i + 1]) for i in range(len(pair) // 2)]
    c = median([a / b for a, b in zip(one, pairs)])
    print(f"  host ceiling, two independent 1-vCPU guests at once: each at {c * 100:.0f}% of one alone (rounds {pairs} ms/iteration)")
    if two:
        print(f"  weak scaling against that ceiling: {median([p / t for p, t in zip(pairs, two)]) * 100:.0f}%")
if effs:
    top = max(effs)
    print(f"  target: >= 90% efficiency on all cores of a node: {effs[top] * 100:.0f}% {'met' if effs[top] >= 0.9 else 'NOT met'}")
if one and two:
    print(f"  target: >= 90% weak-scaling efficiency across nodes: {e * 100:.0f}% {'met' if e >= 0.9 else 'NOT met'}")
for line in text("halo").splitlines():
    if "halo-bench" in line:
        print("  " + line)
PY
