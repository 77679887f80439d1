#!/usr/bin/env bash
# What one small RDMA WRITE costs the initiator's kernel, in guest
# instructions: rdmabench's `targets` mode under QEMU's -icount shift=0,
# where the PMU counts retired instructions exactly. Three runs; "post" (the
# verb until the engine has the request) repeats within a fraction of a
# percent, "post to completion" also counts the wait's wake-ups and moves
# with timing.
#
#   bench/rdmacost.sh
#
# Output: the three runs' small-WRITE lines, and target/bench/rdmacost.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm cc:gcc+libc6-dev
out=target/bench
mkdir -p "$out"
: > "$out/rdmacost.log"
for run in 1 2 3; do
    echo "== run $run" | tee -a "$out/rdmacost.log"
    ./run-qemu.sh rdmabench --nodes 2 --smp 1 --timeout 3000 \
        --qemu-arg -icount --qemu-arg shift=0 -- targets 2>&1 |
        tr -d '\r' | tee -a "$out/rdmacost.log" | grep -A4 'small WRITE latency'
done
