#!/usr/bin/env bash
# What one request costs kvstore, in guest instructions: kvstore under
# QEMU's -icount shift=0 (guest time counts instructions, 1 ns each,
# independently of host load), redis-benchmark with 50 clients at
# pipeline 16, and the server's own busy time (INFO's used_cpu_user: time
# not spent waiting for an interrupt) before and after each test. The
# figure covers everything the guest does per request: the NIC, TCP,
# parsing, the command, its log record, the reply.
#
#   bench/kvcost.sh [TEST...]     # default: the tests of bench/kvstore.sh
#
# A TEST is one of redis-benchmark's own (set, get, ...), `evalsha`:
# EVALSHA of bench/kvstore.sh's script (one GET and one INCR), or `xadd`
# and `xrange`, bench/kvstore.sh's stream cells (XRANGE ... COUNT 10 of a
# stream that 1,000 XADDs filled first).
#
# Figures repeat within about 1% from run to run (how requests batch
# moves a little with the host). Output: one line per test, and
# target/bench/kvcost.log (kvstore's console).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. image/host-tools.sh
need_rust_toolchain
need_commands qemu-system-aarch64:qemu-system-arm redis-benchmark:redis-tools \
    redis-cli:redis-tools cc:gcc+libc6-dev clang:clang llvm-ar:llvm # clang: kvstore's Lua

tests=("$@")
if [[ ${#tests[@]} -eq 0 ]]; then
    # (LRANGE_100 is left out: redis-benchmark fills its list with LPUSHes
    # inside the same run.)
    tests=(set get incr mset lpush lpop sadd hset zadd)
fi
out=target/bench
mkdir -p "$out"
requests=20000
port=$((20000 + RANDOM % 20000))

cargo run -q --release -p faultline-image -- build kvstore 2>&1 | { grep -v "Finished\|^elf \|^bin \|^uimg \|^load " || true; }
# Its own fresh disk, so that nothing a user keeps in kvstore's disk is
# touched: the image, with the disk beside it, in a directory of its own.
dir=$(mktemp -d "$out/kvcost.XXXXXX")
trap 'kill "$qemu" 2>/dev/null || true; rm -rf "$dir"' EXIT
cp target/images/qemu-virt/kvstore.elf "$dir/"
truncate -s 1G "$dir/kvstore.disk"
preload=$out/listen-backlog.so
if [[ ! -f $preload || image/listen-backlog.c -nt $preload ]]; then
    cc -shared -fPIC -O2 -o "$preload" image/listen-backlog.c -ldl
fi
LD_PRELOAD=$PWD/$preload qemu-system-aarch64 -M virt,gic-version=2,iommu=smmuv3 \
    -cpu cortex-a53 -smp 4 -m 2G -display none -serial "file:$out/kvcost.log" \
    -monitor none -semihosting -no-reboot -icount shift=0 -kernel "$dir/kvstore.elf" \
    -drive "if=none,id=nvm,format=raw,file=$dir/kvstore.disk" -device nvme,drive=nvm,serial=faultline \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$port-:6379" -device virtio-net-pci,netdev=net0 &
qemu=$!
for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.2
done

busy() {
    redis-cli -p "$port" info cpu | tr -d '\r' | sed -n 's/^used_cpu_user:\(.*\)/\1/p'
}
printf '%-11s %12s\n' test "instr/request"
script="redis.call('GET', KEYS[1]) return redis.call('INCR', KEYS[1])"
for t in "${tests[@]}"; do
    case $t in
    evalsha)
        sha=$(redis-cli -p "$port" script load "$script")
        what=(EVALSHA "$sha" 1 "counter:__rand_int__")
        ;;
    xadd) what=(XADD mystream '*' field __rand_int__) ;;
    xrange)
        redis-benchmark -p "$port" -n 1000 -r 10000 -q XADD filled '*' field __rand_int__ >/dev/null 2>&1
        what=(XRANGE filled - + COUNT 10)
        ;;
    *) what=(-t "$t") ;;
    esac
    before=$(busy)
    redis-benchmark -p "$port" -n "$requests" -r 10000 -c 50 -P 16 -d 100 -q "${what[@]}" >/dev/null 2>&1
    after=$(busy)
    python3 -c "print('%-11s %12.0f' % ('$t', ($after - $before) * 1e9 / $requests))"
done
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$qemu" 2>/dev/null || true
