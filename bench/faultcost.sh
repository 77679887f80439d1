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
. bench/lib.sh
bench_setup cc:gcc+libc6-dev
icount_runs faultcost '^costs:' -- dmabench --smp 1 --timeout 600 -- costs
