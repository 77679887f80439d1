#!/usr/bin/env python3
"""Build the soft-RoCE Linux guest: DIR/Image and DIR/initramfs.gz.

  guest.py DIR     DIR/root holds the extracted arm64 .debs (image/linux-rxe/guest.sh)

The initramfs holds busybox, the kernel modules for virtio-net and rdma_rxe
(with their dependencies, in load order), the rdma tool from iproute2,
libibverbs with the rxe provider, ibverbs-utils, perftest, and every shared
library those need. Its /init brings eth0 up, loads rdma_rxe, adds rxe0 on
eth0, prints what it sees, then runs the task named on the kernel command
line (rxe.task=probe|shell; see INIT below) and powers off.

The ELF, cpio and module-order helpers are bench/kvbench.py's.
"""

import gzip
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import kvbench  # noqa: E402

# Loaded in this order (dependencies first, from each module's depends=).
# crc32_generic: rdma_rxe asks the crypto API for "crc32" (the ICRC); with
# insmod only, nothing would load it on demand.
MODULES = ["virtio_pci", "virtio_net", "crc32_generic", "udp_tunnel", "ip6_udp_tunnel",
           "ib_core", "ib_uverbs", "rdma_rxe", "rdma_ucm"]

BINARIES = ["usr/bin/rdma",
            "usr/bin/ibv_devices", "usr/bin/ibv_devinfo", "usr/bin/ibv_rc_pingpong",
            "usr/bin/ibv_uc_pingpong", "usr/bin/ibv_ud_pingpong", "usr/bin/ibv_srq_pingpong",
            "usr/bin/ibv_asyncwatch",
            "usr/bin/ib_write_bw", "usr/bin/ib_read_bw", "usr/bin/ib_send_bw", "usr/bin/ib_atomic_bw",
            "usr/bin/ib_write_lat", "usr/bin/ib_read_lat", "usr/bin/ib_send_lat", "usr/bin/ib_atomic_lat"]

# libibverbs finds its providers through /etc/libibverbs.d/*.driver.
PROVIDERS = ["rxe", "siw"]

APPLETS = ["sh", "mount", "insmod", "lsmod", "ip", "sleep", "cat", "mkdir", "echo", "ls", "grep", "sed",
           "head", "tail", "dmesg", "poweroff", "tr", "cut", "timeout", "sysctl", "ps", "kill", "uname",
           "date", "setsid", "cttyhack", "ping", "seq", "basename", "wc", "true", "false", "test", "[",
           "printf", "env", "find", "xargs", "hexdump", "nc", "arp", "ifconfig", "route", "vi", "less"]

INIT = r"""#!/bin/sh
export PATH=/bin:/usr/bin:/sbin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
arg() { sed -n "s/.*\<rxe\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
ADDR=$(arg addr); ADDR=${ADDR:-10.47.0.9}
PEER=$(arg peer); PEER=${PEER:-10.47.0.1}
TASK=$(arg task); TASK=${TASK:-probe}
for m in $(cat /etc/modules.order); do
    insmod /lib/modules/$m || echo "init: insmod $m failed"
done
ip link set lo up
ip link set eth0 up
ip addr add $ADDR/24 dev eth0
echo "rxe-guest: eth0 $(cat /sys/class/net/eth0/address) mtu $(cat /sys/class/net/eth0/mtu) addr $ADDR"
rdma link add rxe0 type rxe netdev eth0 || echo "rxe-guest: rdma link add failed"
n=0
while [ "$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)" != "4: ACTIVE" ] && [ $n -lt 100 ]; do
    sleep 0.1; n=$((n + 1))
done
if [ "$TASK" != script ]; then
    echo "=== rdma link"; rdma link
    echo "=== rdma dev"; rdma dev
    echo "=== ibv_devices"; ibv_devices
    echo "=== ibv_devinfo -v -d rxe0"; ibv_devinfo -v -d rxe0
    echo "=== GID table (index gid type ndev)"
fi
IDX=
for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
    i=${g##*/}
    gid=$(cat $g 2>/dev/null)
    [ "$gid" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && continue
    t=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)
    d=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/$i 2>/dev/null)
    [ "$TASK" != script ] && echo "gid $i $gid $t $d"
    case "$gid:$t" in
        0000:0000:0000:0000:0000:ffff:*"RoCE v2") IDX=${IDX:-$i} ;;
    esac
done
echo "rxe-guest: RoCEv2 IPv4 GID index ${IDX:-none}"
ping -c 1 -W 2 $PEER >/dev/null 2>&1 && echo "rxe-guest: $PEER answers ping" || echo "rxe-guest: no ping answer from $PEER"
# Nobody acknowledges, and rxe retransmits an RC message every ~67 ms
# (QP timeout 14) without giving up: each client is stopped after 5 s.
run() { echo "=== $*"; timeout 5 "$@"; echo "=== exit $?"; }
case "$TASK" in
    probe)
        # Each client talks to image/linux-rxe/peer.py: an exchange over TCP,
        # then RoCEv2 packets nobody acknowledges (retransmitted, then given up).
        run ibv_rc_pingpong -d rxe0 -g $IDX -n 1 $PEER
        sleep 1
        run ibv_rc_pingpong -d rxe0 -g $IDX -n 1 -m 4096 -s 10000 $PEER
        sleep 1
        run ibv_uc_pingpong -d rxe0 -g $IDX -n 1 -s 2048 $PEER
        sleep 1
        run ibv_ud_pingpong -d rxe0 -g $IDX -n 1 -s 1024 $PEER
        sleep 1
        ;;
    script)
        # The caller's /task.sh (an archive appended to the initramfs by
        # image/src/linux_peer.rs), with $PEER, $GID and connect_retry.
        export PEER GID=$IDX
        connect_retry() {
            tries=0
            while :; do
                "$@" >/tmp/out 2>&1
                rc=$?
                if [ $rc -ne 0 ] && [ $tries -lt 90 ] &&
                    grep -q -e "Couldn't connect" -e "Unable to init the socket connection" /tmp/out; then
                    tries=$((tries + 1))
                    sleep 1
                    continue
                fi
                cat /tmp/out
                return $rc
            done
        }
        ( . /task.sh )
        echo "rxe-guest: script exit $?"
        ;;
    shell)
        echo "rxe-guest: shell on the console; RoCEv2 GID index $IDX; poweroff -f to end"
        setsid cttyhack sh
        ;;
esac
echo "rxe-guest: done"
poweroff -f
"""


def closure(root, binaries):
    libs, todo = {}, list(binaries)
    while todo:
        for name in kvbench.elf_needed(todo.pop()):
            if name in libs:
                continue
            p = kvbench.find_lib(root, name)
            if p is None:
                raise SystemExit(f"linux-rxe guest: {name} is in no extracted package; "
                                 "add its package to PKGS in image/linux-rxe/guest.sh")
            libs[name] = p
            todo.append(p)
    return libs


def main(out):
    root = os.path.join(out, "root")
    kvers = [v for v in os.listdir(os.path.join(root, "lib/modules")) if kvbench.KVER_RE.match(v)]
    if len(kvers) != 1:
        raise SystemExit(f"linux-rxe guest: expected one kernel under {root}/lib/modules, found {kvers}")
    kver = kvers[0]
    moddir = os.path.join(root, "lib/modules", kver)
    kvbench.MODULES = MODULES
    mods = kvbench.module_order(moddir)

    bins = {b: os.path.realpath(os.path.join(root, b)) for b in BINARIES}
    # Our own verbs program, built by guest.sh.
    bins["usr/bin/verbs_probe"] = os.path.join(out, "verbs_probe")
    provs = {}
    for p in PROVIDERS:
        so = os.path.realpath(os.path.join(root, f"usr/lib/aarch64-linux-gnu/libibverbs/lib{p}-rdmav34.so"))
        provs[p] = so
    libs = closure(root, list(bins.values()) + list(provs.values()))

    a = kvbench.Cpio()
    for d in ("bin", "sbin", "dev", "proc", "sys", "etc", "etc/libibverbs.d", "tmp", "usr", "usr/bin",
              "usr/sbin", "lib", "lib/aarch64-linux-gnu", "lib/aarch64-linux-gnu/libibverbs", "lib/modules",
              "root"):
        a.dir(d)
    a.symlink("usr/lib", "../lib")
    a.file("bin/busybox", open(os.path.join(root, "bin/busybox"), "rb").read(), 0o755)
    for applet in APPLETS:
        a.symlink(f"bin/{applet}", "busybox")
    a.file("init", INIT.encode(), 0o755)
    a.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    a.file("etc/group", b"root:x:0:\n")
    a.file("etc/modules.order", "".join(os.path.basename(m) + "\n" for m in mods).encode())
    for m in mods:
        a.file("lib/modules/" + os.path.basename(m), open(os.path.join(moddir, m), "rb").read())
    for b, path in bins.items():
        a.file(b, open(path, "rb").read(), 0o755)
    for p, so in provs.items():
        a.file(f"etc/libibverbs.d/{p}.driver", open(os.path.join(root, f"etc/libibverbs.d/{p}.driver"), "rb").read())
        a.file(f"lib/aarch64-linux-gnu/libibverbs/lib{p}-rdmav34.so", open(so, "rb").read(), 0o755)
    for name, path in sorted(libs.items()):
        a.file(f"lib/aarch64-linux-gnu/{name}", open(path, "rb").read(), 0o755)
    a.symlink("lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu/ld-linux-aarch64.so.1")

    data = gzip.compress(a.finish(), 6, mtime=0)
    with open(os.path.join(out, "initramfs.gz"), "wb") as f:
        f.write(data)
    shutil.copyfile(os.path.join(root, f"boot/vmlinuz-{kver}"), os.path.join(out, "Image"))
    with open(os.path.join(out, "guest.txt"), "w") as f:
        f.write(f"kernel {kver}\nmodules {' '.join(os.path.basename(m) for m in mods)}\n"
                f"binaries {' '.join(os.path.basename(b) for b in bins)}\n"
                f"libraries {' '.join(sorted(libs))}\n")
    print(f"linux-rxe guest: kernel {kver}; modules {', '.join(os.path.basename(m) for m in mods)}; "
          f"{len(bins)} programs + {len(libs)} libraries; initramfs {len(data) // 1024} KiB")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: guest.py DIR")
    main(sys.argv[1])
