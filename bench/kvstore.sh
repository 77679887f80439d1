#!/usr/bin/env bash
# kvstore vs Redis 7 in Linux, on the same QEMU machine, in one run.
#
#   bench/kvstore.sh          # quick: short redis-benchmark runs, a few minutes
#   bench/kvstore.sh full     # longer runs
#   bench/kvstore.sh quick evalsha incr   # only these cells (BullMQ only if named)
#
# Builds kvstore with the image tool, and a Linux guest from Debian's arm64
# packages (kernel, redis-server and its libraries, busybox-static) with an
# initramfs made here (cached in target/bench/linux/). Both guests boot from
# the QEMU command line the image tool uses for kvstore; redis-benchmark
# (SET, GET, INCR, MSET, LPUSH, LPOP, SADD, HSET, ZADD, LRANGE_100, XADD,
# XRANGE, PFADD, GEOADD, GET over RESP3, and EVALSHA of a script doing one GET
# and one INCR; 50 clients; pipeline 1 and 16; 100 B and 4 KiB values) runs against each,
# cell by cell alternately; then BullMQ's throughput (image/bullmq/throughput.js:
# 2,000 jobs, two workers, jobs per second), three rounds alternately.
#
# Output: a table with ratios and the targets of issue 4 met or not;
# target/bench/kvstore.csv and target/bench/kvstore.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${1:-quick}
shift || true
case "$mode" in
    quick | full) ;;
    -h | --help)
        sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: bench/kvstore.sh [quick|full] [TEST...]" >&2
        exit 2
        ;;
esac

out=target/bench
linux=$out/linux
mkdir -p "$out" "$linux"

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    sudo="sudo"
fi

# Host tools, installed when missing.
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm redis-benchmark:redis-tools \
    python3:python3 mkfs.ext4:e2fsprogs dpkg-deb:dpkg cc:gcc+libc6-dev \
    clang:clang llvm-ar:llvm # kvstore's Lua 5.1 (libos/lua)
need_bullmq # the BullMQ throughput cell (image/bullmq/throughput.js)

# kvstore: the image, and the exact QEMU command the image tool would run,
# captured by a stand-in qemu-system-aarch64 that records its arguments.
echo "kvstore-bench: building kvstore"
cargo run -q --release -p faultline-image -- build kvstore 2>&1 | { grep -v Finished || true; }
kv_bin=target/images/qemu-virt/kvstore.bin
shim=$out/qemu-shim
mkdir -p "$shim"
cat >"$shim/qemu-system-aarch64" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\0' "\$a"; done > "$PWD/$out/kvstore-qemu.argv"
EOF
chmod +x "$shim/qemu-system-aarch64"
if ! PATH="$PWD/$shim:$PATH" cargo run -q --release -p faultline-image -- run kvstore --port 6379 \
    >"$out/kvstore-qemu.capture" 2>&1 || [[ ! -s $out/kvstore-qemu.argv ]]; then
    cat "$out/kvstore-qemu.capture" >&2
    echo "kvstore-bench: could not capture the QEMU command line" >&2
    exit 1
fi
rm -rf "$shim"

# The Linux guest: Debian's arm64 packages, downloaded once.
LINUX_PKGS=(busybox-static redis-server redis-tools libc6 libatomic1 libjemalloc2 liblzf1 libssl3
    libsystemd0 libcap2 libgcrypt20 libgpg-error0 liblz4-1 liblzma5 libzstd1 libstdc++6 libgcc-s1)
if [[ "$(cat "$linux/debs/.complete" 2>/dev/null)" != "${LINUX_PKGS[*]}" ]]; then
    echo "kvstore-bench: downloading Debian arm64 packages (once)"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        $sudo dpkg --add-architecture arm64
    fi
    $sudo apt-get update
    # The current Debian kernel: what the linux-image-arm64 metapackage depends on.
    kpkg=$(apt-cache depends linux-image-arm64:arm64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
    if [[ -z $kpkg ]]; then
        echo "kvstore-bench: no linux-image-*-arm64 package found" >&2
        exit 1
    fi
    rm -rf "$linux/debs" "$linux/root"
    mkdir -p "$linux/debs"
    pkgs=("$kpkg:arm64")
    for p in "${LINUX_PKGS[@]}"; do pkgs+=("$p:arm64"); done
    # apt's sandbox user cannot write into a root-owned work tree: download in /tmp.
    tmp=$(mktemp -d)
    chmod 755 "$tmp"
    if [[ -z $sudo ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
    (cd "$tmp" && $sudo apt-get -qq download "${pkgs[@]}")
    mv "$tmp"/*.deb "$linux/debs/"
    rm -rf "$tmp"
    echo "${LINUX_PKGS[*]}" >"$linux/debs/.complete"
    rm -rf "$linux/root"
fi
if [[ ! -f $linux/root/.complete ]]; then
    rm -rf "$linux/root"
    mkdir -p "$linux/root"
    for deb in "$linux"/debs/*.deb; do dpkg-deb -x "$deb" "$linux/root"; done
    touch "$linux/root/.complete"
fi
if [[ ! -f $linux/initramfs.gz || bench/kvbench.py -nt $linux/initramfs.gz ]]; then
    python3 bench/kvbench.py linux-guest "$linux"
fi

# QEMU's hostfwd listens with a backlog of 1; see image/listen-backlog.c.
preload=$out/listen-backlog.so
if [[ ! -f $preload || image/listen-backlog.c -nt $preload ]]; then
    cc -shared -fPIC -O2 -o "$preload" image/listen-backlog.c -ldl
fi

python3 bench/kvbench.py run --mode "$mode" --argv-file "$out/kvstore-qemu.argv" \
    --kvstore-bin "$kv_bin" --out "$out" --preload "$preload" "$@"
