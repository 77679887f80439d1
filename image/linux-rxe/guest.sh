#!/usr/bin/env bash
# A Debian arm64 Linux guest with soft-RoCE (rdma_rxe) on a bridge like the
# one image/src/netns.rs makes, and a capture of its RoCEv2 packets.
#
#   image/linux-rxe/guest.sh build    # download (once) and build the guest only
#   image/linux-rxe/guest.sh probe    # default: build, boot, capture, analyse
#   image/linux-rxe/guest.sh shell    # build, boot, a shell on the guest console
#
# The guest (cached in target/linux-rxe/): Debian's arm64 kernel, busybox,
# the rdma_rxe modules, iproute2's rdma tool, libibverbs + the rxe provider,
# ibverbs-utils and perftest, in an initramfs made by guest.py. It boots
# under qemu-system-aarch64 (virt, TCG) with a virtio-net NIC on a TAP in a
# bridge namespace:
#
#   namespace "bridge"              namespace "host side"
#    br0 ── vh ═══ veth ═══════════ veth-h  10.47.0.1/24, MTU 9000
#        └─ tap0 ══ QEMU ══ guest eth0      10.47.0.9/24, MTU 9000, rxe0
#
# probe: in the host-side namespace, tcpdump writes target/linux-rxe/rxe.pcap
# and peer.py plays the far end of ibv_{rc,uc,ud}_pingpong (the TCP address
# exchange, and a minimal RoCEv2 answer on a UDP socket unless RXE_ANSWER=0);
# the guest runs those clients toward 10.47.0.1;
# wire.py then prints what the RoCEv2 packets look like
# (target/linux-rxe/wire.txt). The guest's console: target/linux-rxe/console.txt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

mode=${1:-probe}
case "$mode" in
    build | probe | shell) ;;
    -h | --help)
        sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: image/linux-rxe/guest.sh [build|probe|shell]" >&2
        exit 2
        ;;
esac
if [[ $(id -u) -ne 0 ]]; then
    echo "linux-rxe: needs root (network namespaces, TAP, apt-get)" >&2
    exit 1
fi

out=target/linux-rxe
mkdir -p "$out"
here=image/linux-rxe

. image/host-tools.sh
need_commands qemu-system-aarch64:qemu-system-arm dpkg-deb:dpkg tcpdump:tcpdump \
    unshare:util-linux nsenter:util-linux ip:iproute2 aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu
pyscapy=/usr/bin/python3
if ! $pyscapy -c 'import scapy.contrib.roce' 2>/dev/null; then
    apt-get install -y -qq python3-scapy >/dev/null
fi

# Debian's arm64 packages, downloaded once. The kernel is the one the
# linux-image-arm64 metapackage depends on; the rest is what the programs in
# guest.py need (guest.py stops, naming the library, when one is missing).
PKGS=(busybox-static libc6 rdma-core libibverbs1 libibverbs-dev ibverbs-providers ibverbs-utils perftest
    libibumad3 librdmacm1 libpci3 libudev1 zlib1g libnl-3-200 libnl-route-3-200
    iproute2 libbsd0 libmd0 libcap2 libmnl0 libelf1 libbpf1 libselinux1 libpcre2-8-0)
if [[ "$(cat "$out/debs/.complete" 2>/dev/null)" != "${PKGS[*]}" ]]; then
    echo "linux-rxe: downloading Debian arm64 packages (once)"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64
        apt-get update -qq
    fi
    kpkg=$(apt-cache depends linux-image-arm64:arm64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
    if [[ -z $kpkg ]]; then
        apt-get update -qq
        kpkg=$(apt-cache depends linux-image-arm64:arm64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
    fi
    if [[ -z $kpkg ]]; then
        echo "linux-rxe: no linux-image-*-arm64 package found" >&2
        exit 1
    fi
    pkgs=("$kpkg:arm64")
    for p in "${PKGS[@]}"; do pkgs+=("$p:arm64"); done
    # apt's sandbox user cannot write into a root-owned work tree: download in /tmp.
    tmp=$(mktemp -d)
    chmod 755 "$tmp"
    if id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
    (cd "$tmp" && apt-get -qq download "${pkgs[@]}")
    rm -rf "$out/debs" "$out/root"
    mkdir -p "$out/debs"
    mv "$tmp"/*.deb "$out/debs/"
    rm -rf "$tmp"
    echo "${PKGS[*]}" >"$out/debs/.complete"
fi
if [[ ! -f $out/root/.complete || $out/debs/.complete -nt $out/root/.complete ]]; then
    rm -rf "$out/root"
    mkdir -p "$out/root"
    for deb in "$out"/debs/*.deb; do dpkg-deb -x "$deb" "$out/root"; done
    touch "$out/root/.complete"
fi
# Our own verbs program (verbs_probe.c), built against the guest's libibverbs.
if [[ ! -x $out/verbs_probe || $here/verbs_probe.c -nt $out/verbs_probe || $out/root/.complete -nt $out/verbs_probe ]]; then
    aarch64-linux-gnu-gcc -O2 -Wall -Wextra -Werror -o "$out/verbs_probe" $here/verbs_probe.c \
        -I "$out/root/usr/include" -L "$out/root/usr/lib/aarch64-linux-gnu" \
        -Wl,-rpath-link,"$out/root/usr/lib/aarch64-linux-gnu" -Wl,-rpath-link,"$out/root/lib/aarch64-linux-gnu" -libverbs
fi
if [[ ! -f $out/initramfs.gz || $here/guest.py -nt $out/initramfs.gz || bench/kvbench.py -nt $out/initramfs.gz ||
    $out/root/.complete -nt $out/initramfs.gz || $out/verbs_probe -nt $out/initramfs.gz ]]; then
    python3 $here/guest.py "$out"
fi
[[ $mode == build ]] && exit 0

# The link: a namespace for the bridge, one for the host side, each held by
# a sleep; when they are killed the namespaces, the bridge, the veth pair
# and the TAP go with them.
holders=()
cleanup() {
    for p in "${pids[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null || true; done
    for p in "${holders[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null || true; done
}
pids=()
trap cleanup EXIT
holder() {
    unshare --net -- sleep infinity </dev/null >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 200); do
        if [[ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/self/ns/net)" &&
            "$(readlink /proc/$pid/exe)" == */sleep ]]; then
            echo "$pid"
            return
        fi
        sleep 0.01
    done
    echo "linux-rxe: unshare --net made no namespace" >&2
    exit 1
}
in_ns() { local pid=$1; shift; nsenter -t "$pid" -n -- "$@"; }
br=$(holder)
holders+=("$br")
host=$(holder)
holders+=("$host")
in_ns "$br" ip link set lo up
in_ns "$br" ip link add br0 type bridge
in_ns "$br" ip link set br0 up
in_ns "$br" ip tuntap add tap0 mode tap
in_ns "$br" ip link set tap0 mtu 9000 master br0 up
in_ns "$br" ip link add vh mtu 9000 type veth peer name veth-h netns "$host"
in_ns "$br" ip link set vh master br0 up
in_ns "$host" ip link set lo up
in_ns "$host" ip link set veth-h mtu 9000 up
in_ns "$host" ip addr add 10.47.0.1/24 dev veth-h

qemu=(qemu-system-aarch64 -M virt -cpu cortex-a57 -smp 2 -m 1G
    -display none -monitor none -no-reboot
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no
    -device virtio-net-pci,netdev=n0,mac=52:54:00:2f:00:09,host_mtu=9000
    -kernel "$out/Image" -initrd "$out/initramfs.gz"
    -append "console=ttyAMA0 rdinit=/init rxe.task=$mode rxe.addr=10.47.0.9 rxe.peer=10.47.0.1")

if [[ $mode == shell ]]; then
    echo "linux-rxe: booting; host side: nsenter -t $host -n  (10.47.0.1); Ctrl-A X quits QEMU"
    in_ns "$br" "${qemu[@]}" -serial mon:stdio
    exit 0
fi

rm -f "$out/rxe.pcap" "$out/peer.log"
# RXE_ANSWER=0: peer.py only does the TCP exchange, and rxe's packets go
# unacknowledged (retransmissions); by default it answers them.
answer=--answer
[[ ${RXE_ANSWER:-1} == 0 ]] && answer=
nsenter -t "$host" -n -- tcpdump -i veth-h -s 0 -U -w "$out/rxe.pcap" 2>"$out/tcpdump.log" &
pids+=($!)
nsenter -t "$host" -n -- /usr/bin/python3 $here/peer.py $answer 10.47.0.1 "$out/peer.log" &
pids+=($!)
sleep 1
echo "linux-rxe: booting the guest (console: $out/console.txt)"
start=$(date +%s)
if ! timeout 600 nsenter -t "$br" -n -- "${qemu[@]}" -serial stdio </dev/null >"$out/console.txt" 2>&1; then
    echo "linux-rxe: QEMU failed or timed out after $(($(date +%s) - start)) s; see $out/console.txt" >&2
fi
echo "linux-rxe: guest ran for $(($(date +%s) - start)) s"
sleep 1
kill "${pids[@]}" 2>/dev/null || true
pids=()
sleep 0.5
grep -E '^(rxe-guest|gid |===)|PORT_ACTIVE|state:|active_mtu|Failed|local address|remote address' \
    "$out/console.txt" || true
$pyscapy $here/wire.py "$out/rxe.pcap" | tee "$out/wire.txt"
