#!/usr/bin/env bash
# Runs every fuzz target of the kvstore lib for SECONDS each (default 45),
# starting from the committed seeds (fuzz/seeds/<target>); fails as soon as
# one target finds a crash, whose input cargo-fuzz leaves in
# fuzz/artifacts/<target>/. What the fuzzer learns goes to
# fuzz/corpus/<target> (not committed), so later runs start further on.
#
#   fuzz/run.sh [SECONDS] [TARGET ...]
#
# Needs the nightly toolchain and cargo-fuzz (run-tests.sh checks both).
# No sanitizer: the lib forbids unsafe code, and without ASan each target
# runs about twice as many inputs; debug assertions (overflow checks) on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-45}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(resp_parser command_engine log_replay superblock roce_engine)

# fuzz/Cargo.lock is part of the source: a stale one fails here instead of
# being rewritten by the build (cargo fuzz has no --locked of its own).
cargo +nightly fetch --locked --manifest-path fuzz/Cargo.toml
echo "fuzz/run.sh: building ${targets[*]}" >&2
if (($# == 0)); then
    # All at once: the dependencies build in parallel, once.
    cargo +nightly fuzz build --sanitizer none --debug-assertions
else
    for target in "${targets[@]}"; do
        cargo +nightly fuzz build --sanitizer none --debug-assertions "$target"
    done
fi
for target in "${targets[@]}"; do
    echo "fuzz/run.sh: $target for ${seconds}s" >&2
    mkdir -p "fuzz/corpus/$target"
    # -timeout: one input taking 10 s is a hang (they take milliseconds).
    cargo +nightly fuzz run --sanitizer none --debug-assertions "$target" \
        "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        2>"fuzz/corpus/$target.log" || {
        tail -n 40 "fuzz/corpus/$target.log" >&2
        echo "fuzz/run.sh: $target crashed; the input is in fuzz/artifacts/$target/" >&2
        exit 1
    }
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "fuzz/corpus/$target.log" |
        sed "s/^/fuzz\/run.sh: $target: /" >&2
done
echo "fuzz/run.sh: ${#targets[@]} targets, no crash in ${seconds}s each" >&2
