# Host tools of Faultline's entry points, installed when missing.
#
# Sourced (not run) by run-qemu.sh, run-tests.sh and bench/*.sh; each calls
# the functions below before its first build or QEMU run, so a new machine
# needs no hand step. Every install says what it installs and why.
#
#   need_rust_toolchain        the toolchain of rust-toolchain.toml, with its
#                              aarch64-unknown-none target, rustfmt and clippy
#   need_commands CMD:PKG ...  Debian packages for the commands not on PATH
#   need_fuzz_tools            cargo-fuzz and the nightly toolchain (fuzz/run.sh)
#   need_packages PKG ...      Debian packages that ship no command (firmware
#                              such as u-boot-qemu), when not installed
#   need_python_redis          redis-py 5+ in target/pyenv (the Python client
#                              image/tests/python_client.rs drives kvstore with)
#   need_bullmq                Node.js and npm, and image/bullmq's packages
#                              (BullMQ and ioredis, image/tests/bullmq.rs)
#
# The image tool checks the guest target again before each guest build
# (image/src/toolchain.rs), for those who call it without these scripts.

# The repository root: rustup reads rust-toolchain.toml from here.
faultline_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Says what an entry point does on its own, prefixed with the script's name.
host_tools_say() {
    echo "$(basename "$0"): $*" >&2
}

# Stops with instructions when rustup is missing (nothing here can install it
# without the user's consent to a curl | sh), otherwise installs the pinned
# toolchain and its target and components when any of them is missing.
# `rustup toolchain install` with no argument reads rust-toolchain.toml;
# rustup adds a file's targets only when it installs the toolchain itself,
# which is why an existing toolchain without the target needs this call.
need_rust_toolchain() {
    if ! command -v rustup >/dev/null 2>&1; then
        cat >&2 <<'EOF'
Faultline needs Rust through rustup (https://rustup.rs), which is not installed:
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    . "$HOME/.cargo/env"
Then run this command again: it installs the toolchain pinned in rust-toolchain.toml.
EOF
        exit 1
    fi
    local installed
    installed=$(cd "$faultline_root" && rustup target list --installed 2>/dev/null) || installed=""
    if ! grep -qx aarch64-unknown-none <<<"$installed" ||
        ! (cd "$faultline_root" && cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1); then
        host_tools_say "installing the Rust toolchain of rust-toolchain.toml with its aarch64-unknown-none target (about 20 s)"
        (cd "$faultline_root" && rustup toolchain install) >&2
    fi
}

# Installs, in one apt-get run, the Debian package of every CMD:PKG pair
# whose command is not on PATH. A PKG may name several packages, joined by
# '+' (cc:gcc+libc6-dev).
need_commands() {
    local pair cmd pkgs pkg missing=()
    for pair in "$@"; do
        cmd=${pair%%:*}
        pkgs=${pair#*:}
        if ! command -v "$cmd" >/dev/null 2>&1; then
            for pkg in ${pkgs//+/ }; do
                [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
            done
        fi
    done
    ((${#missing[@]})) || return 0
    apt_install "missing commands" "${missing[@]}"
}

# Installs PKG... with apt-get (with sudo when not root), saying why (WHY).
apt_install() {
    local why=$1
    shift
    host_tools_say "installing $* with apt-get ($why; about a minute)"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@" >&2
}

# The fuzzing tools (fuzz/run.sh): cargo-fuzz, installed from crates.io when
# `cargo fuzz` is missing, and the nightly toolchain it builds with (only
# the fuzz targets use nightly; the product builds with rust-toolchain.toml).
# Nightly is not installed here: stops with a message when it is missing.
need_fuzz_tools() {
    if ! rustup toolchain list 2>/dev/null | grep -q '^nightly-'; then
        host_tools_say "the fuzz targets need Rust's nightly toolchain (libFuzzer instrumentation), which is not installed; install it with: rustup toolchain install nightly --profile minimal"
        exit 1
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        host_tools_say "installing cargo-fuzz with cargo install (cargo fuzz is missing; about two minutes)"
        cargo install cargo-fuzz --locked >&2
    fi
}

# Installs, in one apt-get run, every Debian PKG that dpkg does not report as
# installed: for packages with no command to look for on PATH (u-boot-qemu
# ships only U-Boot binaries, which image/tests/uboot.rs boots).
need_packages() {
    local pkg missing=()
    for pkg in "$@"; do
        [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == "install ok installed" ]] ||
            missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    apt_install "missing packages" "${missing[@]}"
}

# redis-py, the Python Redis client, version 5 or later, in a virtual
# environment of Faultline's own (target/pyenv): image/tests/python_client.rs
# drives kvstore with it, in the client's default protocol (RESP3 since
# redis-py 8) and in both RESP versions. Debian's python3-redis is 4.x, which
# speaks RESP2 only, so the client comes from PyPI with pip; python3 and its
# venv module come from Debian when missing. Installed when target/pyenv has
# no redis-py 5 or later.
need_python_redis() {
    local venv="$faultline_root/target/pyenv"
    if "$venv/bin/python" -c 'import sys, redis; sys.exit(int(redis.__version__.split(".")[0]) < 5)' 2>/dev/null; then
        return 0
    fi
    need_commands python3:python3
    host_tools_say "installing redis-py 5 or later (the Python Redis client) from PyPI into target/pyenv, for image/tests/python_client.rs (about 10 s)"
    # Debian's python3 makes virtual environments only with python3-venv
    # (its ensurepip is a stub without it).
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        need_packages python3-venv
        python3 -m venv "$venv" >&2
    fi
    "$venv/bin/pip" install -q 'redis>=5' >&2
}

# Node.js with npm, and the packages of image/bullmq (BullMQ and ioredis at
# the versions its package-lock.json pins) in image/bullmq/node_modules:
# image/tests/bullmq.rs runs image/bullmq/jobs.js, a BullMQ job queue, on
# kvstore. node and npm come from Debian when missing; the packages come from
# the npm registry with `npm ci` (exactly the lock file's versions) when
# node_modules is missing or was installed from another lock file (a copy of
# the lock file it was installed from is kept in node_modules). Install
# scripts are not run: the one package that has one (msgpackr-extract, an
# optional native speed-up of msgpackr) is not needed.
need_bullmq() {
    local dir="$faultline_root/image/bullmq"
    need_commands node:nodejs npm:npm || return 1
    if cmp -s "$dir/package-lock.json" "$dir/node_modules/.faultline-installed-lock.json"; then
        return 0
    fi
    host_tools_say "installing BullMQ and ioredis from the npm registry into image/bullmq/node_modules with npm ci, for image/tests/bullmq.rs (about 10 s)"
    if ! npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund >&2; then
        host_tools_say "npm ci in image/bullmq failed (is the npm registry reachable?)"
        return 1
    fi
    cp "$dir/package-lock.json" "$dir/node_modules/.faultline-installed-lock.json"
}
