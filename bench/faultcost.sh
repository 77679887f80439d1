#!/usr/bin/env bash
# What one fault and one DMA submission cost the kernel, in guest
# instructions: dmabench's `costs` mode under QEMU's -icount shift=0, where
# guest time counts instructions (1 ns each) independently of host load.
# Three runs; the CPU figures repeat exactly, the device-side ones move with
# how many SMMU events QEMU logs per fault and when its NVMe completes.
#
#   bench/faultcost.sh
#
# Output: the three runs' `costs:` lines, and target/bench/faultcost.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm cc:gcc+libc6-dev
out=target/bench
mkdir -p "$out"
: > "$out/faultcost.log"
for run in 1 2 3; do
    echo "== run $run" | tee -a "$out/faultcost.log"
    ./run-qemu.sh dmabench --smp 1 --timeout 600 --qemu-arg -icount --qemu-arg shift=0 -- costs 2>&1 |
        tr -d '\r' | tee -a "$out/faultcost.log" | grep '^costs:'
done
