#!/usr/bin/env bash
# Runs the fuzz targets of the kvstore lib and the RDMA engine. Two modes:
#
#   fuzz/run.sh [TARGET ...]
#       The test (what ./run-tests.sh runs): each target tries a fixed
#       number of inputs from a fixed seed, starting from the committed
#       seeds (fuzz/seeds/<target>) alone, with address randomization
#       off and no corpus reloads: then every run of one clone tries
#       exactly the same inputs (a clone elsewhere builds other addresses,
#       so other inputs, as fixed), and a new crash comes from a change,
#       not from luck. Except roce_engine's: the engine draws its R_Keys
#       and ids from /dev/urandom, so its runs part after a few hundred
#       inputs. New crashes are --explore's job.
#
#   fuzz/run.sh --explore SECONDS [TARGET ...]
#       The search: each target for SECONDS with a new random seed,
#       starting from the seeds and what earlier searches learned
#       (fuzz/corpus/<target>, not committed), which it adds to.
#
# Either fails as soon as a target finds a crash, whose input cargo-fuzz
# leaves in fuzz/artifacts/<target>/ (fuzz/README.md: what to do with it).
# Needs the nightly toolchain and cargo-fuzz (run-tests.sh checks both).
# No sanitizer: the lib forbids unsafe code, and without ASan each target
# runs about twice as many inputs; debug assertions (overflow checks) on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

explore=
if [[ ${1:-} == --explore ]]; then
    explore=${2:?"usage: fuzz/run.sh --explore SECONDS [TARGET ...]"}
    shift 2
fi
targets=("$@")
((${#targets[@]})) || targets=(resp_parser command_engine log_replay superblock roce_engine)

# How many inputs the test tries per target: about 45 s each on the
# 2-core machine CI runs on (the targets' speeds differ a hundredfold).
runs_for() {
    case $1 in
    resp_parser) echo 900000 ;;
    command_engine) echo 15000 ;;
    log_replay) echo 600000 ;;
    superblock) echo 800000 ;;
    roce_engine) echo 32000 ;;
    *)
        echo "fuzz/run.sh: no such target: $1" >&2
        exit 2
        ;;
    esac
}

# fuzz/Cargo.lock is part of the source: a stale one fails here instead of
# being rewritten by the build (cargo fuzz has no --locked of its own).
cargo +nightly fetch --locked --manifest-path fuzz/Cargo.toml
echo "fuzz/run.sh: building ${targets[*]}" >&2
# All at once when all are asked for: the dependencies build in parallel.
if (($# == 0)); then
    cargo +nightly fuzz build --sanitizer none --debug-assertions
else
    for target in "${targets[@]}"; do
        cargo +nightly fuzz build --sanitizer none --debug-assertions "$target"
    done
fi

# libFuzzer keys its tables of compared values by code address, so the
# same inputs need the same addresses: run without ASLR where the machine
# allows it (a container's seccomp may not).
same_addresses=(setarch -R)
if ! setarch -R true 2>/dev/null; then
    echo "fuzz/run.sh: cannot turn address randomization off (setarch -R); runs will differ" >&2
    same_addresses=()
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in "${targets[@]}"; do
    if [[ -n $explore ]]; then
        echo "fuzz/run.sh: $target for ${explore}s" >&2
        corpus=fuzz/corpus/$target
        limit=(-max_total_time="$explore")
    else
        runs=$(runs_for "$target")
        echo "fuzz/run.sh: $target, $runs inputs from seed 1" >&2
        corpus=$scratch/$target
        # -reload=0: rereading the corpus directory each second would
        # rerun inputs at moments that depend on the machine's speed.
        limit=(-seed=1 -runs="$runs" -reload=0)
    fi
    mkdir -p "$corpus" fuzz/corpus
    # -timeout: one input taking 10 s is a hang (they take milliseconds).
    "${same_addresses[@]}" cargo +nightly fuzz run --sanitizer none --debug-assertions "$target" \
        "$corpus" "fuzz/seeds/$target" -- \
        "${limit[@]}" -timeout=10 -print_final_stats=1 \
        2>"fuzz/corpus/$target.log" || {
        # The panic's message comes before the input's dump, which can be
        # long: show both.
        grep -m1 -A3 "panicked at" "fuzz/corpus/$target.log" >&2 || true
        tail -n 40 "fuzz/corpus/$target.log" | cut -c1-300 >&2
        echo "fuzz/run.sh: $target crashed; the input is in fuzz/artifacts/$target/" >&2
        exit 1
    }
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "fuzz/corpus/$target.log" |
        sed "s/^/fuzz\/run.sh: $target: /" >&2
done
echo "fuzz/run.sh: ${#targets[@]} targets, no crash" >&2
