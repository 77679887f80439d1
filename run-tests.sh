#!/usr/bin/env bash
# Runs every test of Faultline: formatting and lints, host unit tests of all
# crates, and the QEMU boot tests (image/tests), which build each app's image
# and boot it.
#
# Installs first what is missing: the Rust toolchain of rust-toolchain.toml
# with its aarch64-unknown-none target, QEMU, Redis's client tools (the
# kvstore tests drive the server with redis-cli and redis-benchmark),
# redis-server (the differential test compares kvstore with it), a C
# compiler (the image tool's listen-backlog shim, and Lua 5.1 for the host
# tests), clang and llvm-ar (Lua 5.1 for the guest: libos/lua), iproute2 and util-linux
# (each node's RDMA engine in a network namespace), tcpdump, tshark and
# python3-scapy (the RoCEv2 wire-format test), U-Boot for QEMU virt
# (u-boot-qemu, booted by image/tests/uboot.rs), cargo-fuzz (the
# fuzzing step; it needs the nightly toolchain, which must be installed),
# redis-py, the Python Redis client, from PyPI into target/pyenv
# (image/tests/python_client.rs), and Node.js with BullMQ from the npm
# registry into image/bullmq/node_modules (image/tests/bullmq.rs).
# Extra arguments go to `cargo test` (e.g. ./run-tests.sh -p faultline-dma).
# Every build is --locked: a Cargo.lock (or fuzz/Cargo.lock) that does not
# match the manifests fails the run instead of being rewritten.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
. image/host-tools.sh

need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm \
    redis-benchmark:redis-tools redis-cli:redis-tools \
    redis-server:redis-server \
    cc:gcc+libc6-dev pgrep:procps clang:clang llvm-ar:llvm \
    ip:iproute2 unshare:util-linux nsenter:util-linux \
    tcpdump:tcpdump tshark:tshark
need_fuzz_tools
need_packages u-boot-qemu # U-Boot for QEMU virt (image/tests/uboot.rs)
# scapy's RoCE layer checks the engine's ICRCs (image/tests/roce_wire.py).
need_packages python3-scapy
need_python_redis         # redis-py 5+ (image/tests/python_client.rs)
need_bullmq               # Node.js and BullMQ (image/tests/bullmq.rs)

step() { echo "run-tests.sh: $*" >&2; }

step "cargo fmt --check"
cargo fmt --all --check

# Clippy over the host crates, then over the guest crates as the image tool
# builds them (aarch64-unknown-none, release, once per board, in the board's
# target directory so the boot tests reuse what it compiled). Warnings are
# errors; the workspace [lints] table in Cargo.toml says what is checked.
step "cargo clippy (host crates)"
cargo clippy --locked --all-targets -- -D warnings
guest=(-p libos)
for dir in apps/*/; do
    guest+=(-p "$(basename "$dir")")
done
for board in qemu-virt zcu102; do
    step "cargo clippy (guest, $board)"
    cargo clippy --locked --release --target aarch64-unknown-none --features "libos/$board" \
        --target-dir "target/guest/$board" "${guest[@]}" -- -D warnings
done

# Coverage-guided fuzzing of the kvstore lib (fuzz/README.md): each target
# tries a fixed number of inputs (about 45 s) from a fixed seed, starting
# from the committed seeds, so every run of a clone tries the same inputs
# (all but roce_engine's, whose engine draws random keys); a crash fails it.
step "fuzzing kvstore and the RDMA engine (5 targets, about 45 s each)"
fuzz/run.sh

# Host unit tests of the default members (apps are guest-only and are built
# by the boot tests), then the boot tests themselves.
step "cargo test"
exec cargo test --locked "$@"
