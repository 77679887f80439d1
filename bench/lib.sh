# Sourced by the benchmark drivers, from the repository root: what they all
# do before and around a QEMU run, kept in one place.

. image/host-tools.sh

# Installs the Rust toolchain and QEMU when missing, plus the commands named
# (`command:package` as `need_commands` takes them), and makes the output
# folder, target/bench, as `$out`.
bench_setup() {
    need_rust_toolchain
    need_commands qemu-system-aarch64:qemu-system-arm "$@"
    out=target/bench
    mkdir -p "$out"
}

# Three runs of `./run-qemu.sh APP ARGS...` under QEMU's -icount shift=0
# (guest time counts instructions), logged whole to `$out/NAME.log`; of each
# run's output only what `grep GREP_WORDS...` keeps is shown.
#   icount_runs NAME GREP_WORDS... -- APP ARGS...
icount_runs() {
    local name=$1 keep=()
    shift
    while [ "$1" != "--" ]; do
        keep+=("$1")
        shift
    done
    shift
    : > "$out/$name.log"
    for run in 1 2 3; do
        echo "== run $run" | tee -a "$out/$name.log"
        ./run-qemu.sh "$1" --qemu-arg -icount --qemu-arg shift=0 "${@:2}" 2>&1 |
            tr -d '\r' | tee -a "$out/$name.log" | grep "${keep[@]}"
    done
}

# The CSV between a log's `---- csv ----` and `---- end csv ----` lines,
# without a node prefix (`[n0] `), written to CSV and plotted to SVG.
#   csv_and_plot LOG CSV SVG [plot.py's extra words]
csv_and_plot() {
    local log=$1 csv=$2 svg=$3
    shift 3
    sed -n '/---- csv ----/,/---- end csv ----/p' "$log" | sed '1d;$d' | sed 's/^\[n0\] //' |
        tr -d '\r' > "$csv"
    python3 bench/plot.py "$csv" "$svg" "$@"
}
