#!/usr/bin/env bash
# perftest's bandwidth (ib_write_bw, 64 KiB messages) and latency
# (ib_write_lat, 2 B) side by side in one run, on one link, between:
#
#   Linux -> Linux          two Debian guests with soft-RoCE (rdma_rxe), perftest on both
#   Linux -> Faultline      perftest's client on Linux, rdmapeer's server on Faultline node 0
#   Faultline -> Faultline  rdmapeer's client on node 0, its server on node 1
#   Faultline -> Linux      rdmapeer's client on node 0, perftest's server on Linux
#
# One after the other (each pair alone on the CPUs while it runs), then the
# ratios against Linux -> Linux. Target (issue 31): Linux <-> Faultline
# (both ways) at least as fast as Linux -> Linux in bandwidth and latency,
# 0 errors.
#
#   bench/roce-interop.sh             # 2000 WRITEs of 64 KiB, 1000 latency rounds
#   bench/roce-interop.sh 500 300     # fewer
#
# Output: target/bench/roce-interop.log
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm python3:python3
bw_iters=${1:-2000}
lat_iters=${2:-1000}
out=target/bench
mkdir -p "$out"
log=$out/roce-interop.log
b="-n $bw_iters"
l="-n $lat_iters"
# linux0 serves linux1, then is the client of node 0; node 0 then is the
# client of node 1.
linux0="ib_write_bw -d rxe0 -x \$GID $b; echo \"ll bw server exit \$?\"
ib_write_lat -d rxe0 -x \$GID $l; echo \"ll lat server exit \$?\"
connect_retry ib_write_bw -d rxe0 -x \$GID $b \$NODE0; echo \"lf bw exit \$?\"
connect_retry ib_write_lat -d rxe0 -x \$GID $l \$NODE0; echo \"lf lat exit \$?\"
ib_write_bw -d rxe0 -x \$GID $b; echo \"fl bw server exit \$?\"
ib_write_lat -d rxe0 -x \$GID $l; echo \"fl lat server exit \$?\""
linux1="connect_retry ib_write_bw -d rxe0 -x \$GID $b \$LINUX0; echo \"ll bw exit \$?\"
connect_retry ib_write_lat -d rxe0 -x \$GID $l \$LINUX0; echo \"ll lat exit \$?\""
status=0
./run-qemu.sh rdmapeer --nodes 2 --smp 2 --timeout 3000 \
    --linux-peer "$linux0" --linux-peer "$linux1" -- \
    on 0 perftest-server write $b , on 0 perftest-server lat $l , \
    on 1 perftest-server write $b , on 1 perftest-server lat $l , \
    on 0 perftest-client 10.47.0.2 write $b , on 0 perftest-client 10.47.0.2 lat $l , \
    on 0 perftest-client 10.47.0.100 write $b , on 0 perftest-client 10.47.0.100 lat $l \
    2>&1 | tr -d '\r' | tee "$log" || status=$?
python3 - "$log" <<'PY' | tee -a "$log"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
def table(prefix, size):
    """perftest's result rows printed by one guest (bandwidth or latency)."""
    rows = []
    for l in lines:
        if not l.startswith(prefix):
            continue
        f = l[len(prefix):].split()
        if len(f) >= 5 and f[0] == str(size) and f[1].isdigit():
            rows.append([float(x) for x in f[2:]])
    return rows
def ours(kind, peer):
    """rdmapeer's own figure as the client of `peer`."""
    for l in lines:
        m = re.match(r"\[n0\] ok perftest-client %s: .* with %s, measured ([\d.]+) "
                     % (kind, re.escape(peer)), l)
        if m:
            return float(m.group(1))
ll_bw = table("[linux1] ", 65536)
lf_bw = table("[linux0] ", 65536)
ll_lat = table("[linux1] ", 2)
lf_lat = table("[linux0] ", 2)
errors = sum(1 for l in lines if re.search(r"exit [1-9]|^\[n\d\] FAIL", l))
# The client's own row: linux1's only; linux0's second (it printed the
# first as the server of linux1, the third as Faultline's server).
fig = {
    "bw": {"Linux -> Linux": ll_bw[-1][1] if ll_bw else None,
           "Linux -> Faultline": lf_bw[1][1] if len(lf_bw) > 1 else None,
           "Faultline -> Linux": ours("write", "10.47.0.100"),
           "Faultline -> Faultline": ours("write", "10.47.0.2")},
    # t_typical: perftest's median one-way latency.
    "lat": {"Linux -> Linux": ll_lat[-1][2] if ll_lat else None,
            "Linux -> Faultline": lf_lat[1][2] if len(lf_lat) > 1 else None,
            "Faultline -> Linux": ours("lat", "10.47.0.100"),
            "Faultline -> Faultline": ours("lat", "10.47.0.2")},
}
print("== perftest over RoCEv2, one link, one run (TCG guests: compare ratios, not absolutes)")
print(f"  {'pair':24} {'ib_write_bw MiB/s':>18} {'vs Linux':>9} {'ib_write_lat us':>16} {'vs Linux':>9}")
base_bw, base_lat = fig["bw"]["Linux -> Linux"], fig["lat"]["Linux -> Linux"]
for pair in fig["bw"]:
    bw, lat = fig["bw"][pair], fig["lat"][pair]
    rb = f"{bw / base_bw:.2f}x" if bw and base_bw else "-"
    rl = f"{lat / base_lat:.2f}x" if lat and base_lat else "-"
    print(f"  {pair:24} {bw if bw is not None else float('nan'):18.2f} {rb:>9} "
          f"{lat if lat is not None else float('nan'):16.1f} {rl:>9}")
print(f"  errors: {errors}")
if None in list(fig["bw"].values()) + list(fig["lat"].values()):
    print("missing figures")
    sys.exit(1)
for pair in ("Linux -> Faultline", "Faultline -> Linux"):
    ok_bw = fig["bw"][pair] >= base_bw
    ok_lat = fig["lat"][pair] <= base_lat
    print(f"  target {pair} bandwidth >= Linux -> Linux: {'met' if ok_bw else 'NOT met'}")
    print(f"  target {pair} latency <= Linux -> Linux: {'met' if ok_lat else 'NOT met'}")
print(f"  target 0 errors: {'met' if errors == 0 else 'NOT met'}")
PY
exit "$status"
