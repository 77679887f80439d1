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
. bench/lib.sh
bench_setup cc:gcc+libc6-dev
icount_runs rdmacost -A4 'small WRITE latency' -- rdmabench --nodes 2 --smp 1 --timeout 3000 -- targets
