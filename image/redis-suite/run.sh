#!/usr/bin/env bash
# Runs Redis's own test suite (Debian's redis 7.0 source package) against
# kvstore under QEMU, in the suite's external-server mode, and prints
# "N passed, N failed". Exits 0 only when nothing failed.
#
#   image/redis-suite/run.sh [--ci] [--port PORT] [UNIT ...]
#
#   --ci         as CI runs them: without the tests of pending-tests (they
#                need what kvstore does not have yet); default: every test
#   --port PORT  use the kvstore already listening on 127.0.0.1:PORT (it is
#                flushed: never point this at data you keep). Without it,
#                the boot test image/tests/redis_suite.rs boots a kvstore
#                of its own, on a disk of its own, and calls this script
#                back with --port.
#   UNIT ...     these units instead (e.g. unit/type/hash)
#
# What is left out, and why, lives next to this script: excluded-tags
# (whole tags, one line of reason each) and skipped-tests (single tests,
# grouped under the reason). What is let in: external-units, the units
# whose servers Redis tags external:skip though kvstore, an external
# server, can run their tests (one line of reason each). Each unit runs as its own runtest process with
# --durable, so one failing test never hides the ones after it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/image/host-tools.sh"

# Every unit the suite is asked to pass; CI runs them all, in this order.
UNITS=(
    unit/type/string unit/type/incr unit/type/hash unit/type/list
    unit/type/list-2 unit/type/list-3 unit/type/set unit/keyspace
    unit/expire unit/protocol unit/multi unit/pubsub unit/auth
    unit/info-command
    unit/type/zset
    unit/sort
    unit/hyperloglog unit/bitops unit/bitfield unit/geo
    unit/functions unit/scripting unit/slowlog unit/type/stream
    unit/type/stream-cgroups
    unit/pubsubshard
    unit/latency-monitor unit/info unit/introspection
    unit/introspection-2
    unit/dump
    unit/tracking
    unit/acl
)

mode=all port="" units=()
while (($#)); do
    case $1 in
    --ci) mode=ci ;;
    --port) port=$2; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) units+=("$1") ;;
    esac
    shift
done
if ((${#units[@]} == 0)); then
    units=("${UNITS[@]}")
fi

if [[ -z $port ]]; then
    # Boot kvstore through the test that owns its image and disk.
    export FAULTLINE_REDIS_SUITE_UNITS="${units[*]}"
    if [[ $mode == ci ]]; then export FAULTLINE_REDIS_SUITE_CI=1; fi
    exec cargo test -q -p faultline-image --test redis_suite -- --nocapture
fi

# tclsh runs the suite; dpkg-source unpacks Debian's source package.
need_commands tclsh8.6:tcl8.6 dpkg-source:dpkg-dev redis-cli:redis-tools

# Debian's redis source, fetched once into target/redis-suite/.
src_dir="$root/target/redis-suite"
suite=$(ls -d "$src_dir"/redis-7.0.*/ 2>/dev/null | head -n 1 || true)
if [[ -z $suite || ! -x $suite/runtest ]]; then
    host_tools_say "fetching Debian's redis source package (its tests/ is Redis's test suite)"
    # A deb-src entry for the mirrors the machine already uses.
    list=/etc/apt/sources.list.d/faultline-deb-src.sources
    if [[ ! -f $list ]]; then
        sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
        sources=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
        if grep -q '^Types: deb$' <<<"$sources"; then
            # deb822: each "Types: deb" stanza again as deb-src.
            awk 'BEGIN{RS="";ORS="\n\n"} /(^|\n)Types: deb(\n|$)/ {sub(/Types: deb/,"Types: deb-src"); print}' \
                /etc/apt/sources.list.d/*.sources | $sudo tee "$list" >/dev/null
        else
            grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
                $sudo tee "${list%.sources}.list" >/dev/null
        fi
        $sudo apt-get update -q >&2
    fi
    mkdir -p "$src_dir"
    (cd "$src_dir" && apt-get source -q redis >&2)
    suite=$(ls -d "$src_dir"/redis-7.0.*/ | head -n 1)
fi
suite=${suite%/}

tags=$(grep -v '^\s*\(#\|$\)' "$here/excluded-tags" | awk '{printf "-%s ", $1}')
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
# runtest takes one skip file: skipped-tests, and with --ci pending-tests
# too (tests of the CI units that need what kvstore does not have yet).
skipfile="$results/skip"
cat "$here/skipped-tests" >"$skipfile"
if [[ $mode == ci ]]; then cat "$here/pending-tests" >>"$skipfile"; fi
# The suite's own control socket listens on --baseport: a port nothing
# listens on, so that several runs (and other servers) can share the host.
baseport=""
for _ in $(seq 50); do
    candidate=$((20000 + RANDOM % 9000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
        baseport=$candidate
        break
    fi
done
[[ -n $baseport ]] || { echo "run.sh: no free port for the suite's control socket" >&2; exit 1; }
# Redis's runner gives each unit a fresh server; here one server serves
# them all, so each unit starts from the configuration the server had at
# the start (a unit may leave a setting behind: unit/type/list and
# unit/type/set raise proto-max-bulk-len to 10 GB, after which
# unit/protocol's oversized request is no longer refused).
declare -A initial_config=()
read_config() {
    local -n into=$1
    local name value
    while IFS= read -r name && IFS= read -r value; do
        into[$name]=$value
    done < <(redis-cli -h 127.0.0.1 -p "$port" --raw config get '*')
}
read_config initial_config
restore_config() {
    local -A now=()
    read_config now
    local name
    for name in "${!initial_config[@]}"; do
        if [[ ${now[$name]-} != "${initial_config[$name]}" ]]; then
            redis-cli -h 127.0.0.1 -p "$port" config set "$name" "${initial_config[$name]}" >/dev/null
        fi
    done
}
# ... and with the users it had then: only `default`, with every right and
# no password (unit/acl leaves users behind, and a later unit's ACL SETUSER
# of the same name would add to one of them).
restore_users() {
    local cli=(redis-cli -h 127.0.0.1 -p "$port")
    local user
    for user in $("${cli[@]}" --raw acl users); do
        if [[ $user != default ]]; then
            "${cli[@]}" acl deluser "$user" >/dev/null
        fi
    done
    "${cli[@]}" acl setuser default on nopass allkeys allchannels allcommands clearselectors >/dev/null
}
# The suite runs a unit of external-units as a copy (under tests/faultline/
# in the unpacked source, written anew each run) with the external:skip
# tag taken off its servers' tags: the unit's tests as Redis wrote them.
# A server with overrides keeps the tag: those are settings it starts with
# (an ACL file, its directory, `user` directives), which an external
# server, already running, cannot take.
external_units=$(grep -v '^\s*\(#\|$\)' "$here/external-units" | awk '{print $1}' || true)
suite_unit() {
    local unit=$1
    if ! grep -qxF "$unit" <<<"$external_units"; then
        echo "$unit"
        return
    fi
    mkdir -p "$suite/tests/faultline/$(dirname "$unit")"
    sed -E '/^\s*(start_server|tags) /{/overrides/!s/ ?external:skip//}' "$suite/tests/$unit.tcl" \
        >"$suite/tests/faultline/$unit.tcl"
    echo "faultline/$unit"
}
passed=0 failed=0
for unit in "${units[@]}"; do
    restore_config
    restore_users
    out="$results/$(tr / _ <<<"$unit").log"
    single=$(suite_unit "$unit")
    # --durable: a test that throws is counted as failed and the unit goes
    # on.
    (cd "$suite" && ./runtest --host 127.0.0.1 --port "$port" --baseport "$baseport" \
        --durable --single "$single" --tags "$tags" --skipfile "$skipfile" \
        --timeout 600) >"$out" 2>&1 || true
    clean=$(sed 's/\x1b\[[0-9;]*m//g' "$out")
    ok=$(grep -ac '^\[ok\]:' <<<"$clean" || true)
    bad=$(grep -acE '^\[(err|exception)\]:' <<<"$clean" || true)
    if ! grep -aq "\[1/1 done\]: $single " <<<"$clean"; then
        # The unit stopped before its end: count that as one failure more.
        bad=$((bad + 1))
        echo "run.sh: $unit did not finish; its last lines:" >&2
        tail -n 15 <<<"$clean" >&2
    fi
    grep -aE '^\[(err|exception)\]:' -A3 <<<"$clean" | grep -av '^--$' | cut -c1-300 >&2 || true
    echo "$unit: $ok passed, $bad failed"
    passed=$((passed + ok))
    failed=$((failed + bad))
done
echo "$passed passed, $failed failed"
((failed == 0))
