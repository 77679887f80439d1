#!/usr/bin/env bash
# Build a Faultline app for a board and boot it under QEMU.
#
# A thin wrapper: it makes sure QEMU and cargo are there, then hands over to the
# `faultline-image run` command (image/), which builds the image, starts QEMU and
# exits with the guest's status (124 when --timeout kills it).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: ./run-qemu.sh APP [--board qemu-virt|zcu102] [--smp N] [--el2] [--timeout SECS]
                         [--qemu-arg ARG]... [--port PORT] [--nodes N [--loss F] [--mtu M]]
                         [--disk-size SIZE] [--uboot] [-- APP ARGS...]

  APP              an app under apps/ (./run-qemu.sh --list shows them)
  --board BOARD    qemu-virt (default) or zcu102
  --smp N          CPUs (qemu-virt: 1-8, default 4; zcu102: always 4)
  --el2            start the CPUs at EL2 (QEMU virtualization=on)
  --timeout SECS   kill QEMU after SECS seconds; exit status 124
  --qemu-arg ARG   extra QEMU argument, e.g. --qemu-arg -s --qemu-arg -S (repeatable)
  --port PORT      forward 127.0.0.1:PORT to the guest's 6379 (kvstore: 6379 by default)
  --nodes N        boot N nodes joined by RDMA engines (hw/rdma-engine); output
                   lines are prefixed [nR]; fails if any node fails or hangs
  --loss F         with --nodes: drop this fraction of RoCE packets (tests)
  --mtu M          with --nodes: the engines' path MTU (256..4096; default 1024)
  --disk-size SIZE the NVMe disk beside the image (qemu-virt): created this big
                   (default 1G) or grown to it, never shrunk; e.g. 4G
  --uboot          boot through U-Boot (qemu-virt, Debian's u-boot-qemu): QEMU
                   starts U-Boot, which boots the app's .uimg with bootm
  -- ARGS          the app's command line (embedded in the image; -append on qemu-virt)

Exits with the guest's exit status.
EOF
}

case "${1:-}" in
    -h | --help | help)
        usage
        exit 0
        ;;
    "")
        usage >&2
        exit 2
        ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")"
# The pinned toolchain with the guest target, QEMU, a C compiler for the
# image tool's listen-backlog shim (kvstore), and clang with llvm-ar for
# kvstore's Lua 5.1 (libos/lua): installed when missing.
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm cc:gcc+libc6-dev clang:clang llvm-ar:llvm \
    ip:iproute2 unshare:util-linux nsenter:util-linux # --nodes: engines in namespaces
# kvstore's client tools, which its manual talks to it with (redis-cli).
[[ ${1:-} == kvstore ]] && need_commands redis-cli:redis-tools
# U-Boot for QEMU virt, with --uboot (before any `--`: later ones are the app's).
for arg in "$@"; do
    [[ $arg == -- ]] && break
    [[ $arg == --uboot ]] && need_packages u-boot-qemu
done

if [[ $1 == --list ]]; then
    exec cargo run -q --release -p faultline-image -- list
fi

exec cargo run -q --release -p faultline-image -- run "$@"
