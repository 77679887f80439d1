#!/usr/bin/env bash
# Runs every test of Faultline: host unit tests of all crates and the QEMU
# boot tests (image/tests), which build each app's image and boot it.
# Installs QEMU first when it is missing; the Rust toolchain and target come
# from rust-toolchain.toml.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v qemu-system-aarch64 >/dev/null 2>&1; then
    echo "run-tests.sh: installing qemu-system-arm" >&2
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update
    $sudo apt-get install -y qemu-system-arm
fi

# Default members: the host-testable crates (apps are guest-only and are
# built by the boot tests).
exec cargo test "$@"
