#!/usr/bin/env python3
"""kvstore vs Redis-in-Linux: the driver behind bench/kvstore.sh.

  kvbench.py linux-guest DIR            build DIR/Image and DIR/initramfs.gz from the
                                        arm64 .debs extracted in DIR/root
  kvbench.py run --mode quick|full ...  boot both guests, measure, print the table

The two guests are started from one QEMU command line, the one the image tool
uses for kvstore (captured by bench/kvstore.sh), with only the kernel, the
initramfs, the command line, the disk file and the forwarded host port swapped.
"""

import argparse
import csv
import gzip
import hashlib
import io
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time

KVER_RE = re.compile(r"^\d+\.\d+\.\d+-\d+-arm64$")

# Linux modules the guest needs (the rest is built in; see the kernel config):
# the PCI virtio transport and its NIC, the NVMe disk and ext4 on it.
# crc32c_generic is ext4's soft dependency (metadata checksums).
MODULES = ["virtio_pci", "virtio_net", "nvme", "crc32c_generic", "ext4"]

# Busybox applets init uses.
APPLETS = ["sh", "mount", "insmod", "ip", "sleep", "cat", "mkdir", "echo"]

REDIS_CONF = """\
# Written by bench/kvbench.py. Persistence as kvstore's default: an
# append-only log fsynced every second, no RDB snapshots.
bind 0.0.0.0
port 6379
protected-mode no
daemonize no
supervised no
dir /data
appendonly yes
appendfsync everysec
save ""
logfile ""
"""

INIT = """\
#!/bin/sh
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /etc/modules.order); do
    insmod /lib/modules/$m || echo "init: insmod $m failed"
done
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2
n=0
while [ ! -b /dev/nvme0n1 ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n + 1)); done
mount -t ext4 /dev/nvme0n1 /data || echo "init: no data disk; the log goes to the initramfs"
cd /data
# The kernel stamps the line written to /dev/kmsg: guest time to ready.
redis-server /etc/redis.conf 2>&1 | while IFS= read -r line; do
    echo "$line"
    case "$line" in
        *"Ready to accept connections"*) echo "<2>bench: redis-server ready" > /dev/kmsg ;;
    esac
done
"""


# ---------------------------------------------------------------- Linux guest


def elf_needed(path):
    """DT_NEEDED names of a 64-bit little-endian ELF file."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"{path}: not a 64-bit little-endian ELF")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for (_, sh_type, _, _, off, size, link, _, _, entsize) in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        stroff = sections[link][4]
        for i in range(size // (entsize or 16)):
            tag, val = struct.unpack_from("<qQ", data, off + i * 16)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", stroff + val)
                out.append(data[stroff + val:end].decode())
    return out


def find_lib(root, name):
    for d in ("lib/aarch64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib", "usr/lib"):
        p = os.path.join(root, d, name)
        if os.path.exists(p):
            return os.path.realpath(p)
    return None


def lib_closure(root, binary):
    """name -> host path of every shared library `binary` needs, transitively."""
    libs, todo = {}, [binary]
    while todo:
        for name in elf_needed(todo.pop()):
            if name in libs:
                continue
            p = find_lib(root, name)
            if p is None:
                raise SystemExit(f"linux guest: {name} (needed by redis-server) is in no extracted package; "
                                 "add its package to LINUX_PKGS in bench/kvstore.sh")
            libs[name] = p
            todo.append(p)
    return libs


def module_order(moddir):
    """Module files (relative to moddir) in load order: dependencies first."""
    files = {}
    for dirpath, _, names in os.walk(moddir):
        for n in names:
            if n.endswith(".ko"):
                files[n[:-3].replace("-", "_")] = os.path.relpath(os.path.join(dirpath, n), moddir)
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        if name not in files:
            raise SystemExit(f"linux guest: module {name} not found under {moddir}")
        info = open(os.path.join(moddir, files[name]), "rb").read()
        m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", info)
        for dep in (m.group(1).decode().split(",") if m and m.group(1) else []):
            visit(dep.replace("-", "_"))
        order.append(files[name])

    for name in MODULES:
        visit(name)
    return order


class Cpio:
    """A cpio archive in the "newc" format the kernel unpacks."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.ino = 1

    def _entry(self, name, mode, data=b"", nlink=1):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0))
        self.ino += 1
        self.buf.write(hdr.encode() + name_b)
        self.buf.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._entry(name, 0o040755, nlink=2)

    def file(self, name, data, mode=0o644):
        self._entry(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        self._entry(name, 0o120777, target.encode())

    def finish(self):
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


def build_linux_guest(out):
    root = os.path.join(out, "root")
    kvers = [v for v in os.listdir(os.path.join(root, "lib/modules")) if KVER_RE.match(v)]
    if len(kvers) != 1:
        raise SystemExit(f"linux guest: expected one kernel under {root}/lib/modules, found {kvers}")
    kver = kvers[0]
    moddir = os.path.join(root, "lib/modules", kver)
    mods = module_order(moddir)
    server = os.path.realpath(os.path.join(root, "usr/bin/redis-server"))
    libs = lib_closure(root, server)

    a = Cpio()
    for d in ("bin", "dev", "proc", "sys", "data", "etc", "tmp", "usr", "usr/bin", "lib",
              "lib/aarch64-linux-gnu", "lib/modules"):
        a.dir(d)
    a.file("bin/busybox", open(os.path.join(root, "bin/busybox"), "rb").read(), 0o755)
    for applet in APPLETS:
        a.symlink(f"bin/{applet}", "busybox")
    a.file("init", INIT.encode(), 0o755)
    a.file("etc/redis.conf", REDIS_CONF.encode())
    a.file("etc/modules.order", "".join(os.path.basename(m) + "\n" for m in mods).encode())
    for m in mods:
        a.file("lib/modules/" + os.path.basename(m), open(os.path.join(moddir, m), "rb").read())
    a.file("usr/bin/redis-server", open(server, "rb").read(), 0o755)
    for name, path in sorted(libs.items()):
        a.file(f"lib/aarch64-linux-gnu/{name}", open(path, "rb").read(), 0o755)
    a.symlink("lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu/ld-linux-aarch64.so.1")

    with open(os.path.join(out, "initramfs.gz"), "wb") as f:
        f.write(gzip.compress(a.finish(), 9, mtime=0))
    shutil.copyfile(os.path.join(root, f"boot/vmlinuz-{kver}"), os.path.join(out, "Image"))
    with open(os.path.join(out, "guest.txt"), "w") as f:
        f.write(f"kernel {kver}\nmodules {' '.join(os.path.basename(m) for m in mods)}\n"
                f"libraries {' '.join(sorted(libs))}\n")
    print(f"linux guest: kernel {kver}, modules {', '.join(os.path.basename(m) for m in mods)}; "
          f"redis-server + {len(libs)} libraries")


# ---------------------------------------------------------------- running


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(port, timeout=0.5):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Control:
    """One connection kept open to a guest for INFO, so that measuring does not
    open (and leave behind) a connection per test."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def command(self, *args):
        """Sends one command and returns its reply's first line (a bulk
        string's body is read and dropped)."""
        req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        self.sock.sendall(req)
        head = self._line()
        if head.startswith(b"$") and int(head[1:]) >= 0:
            self._line()
        if head.startswith(b"-"):
            raise OSError(f"{args[0].decode()}: {head.decode(errors='replace')}")
        return head

    def info_field(self, name):
        """An integer field of INFO stats, or None when the server has none."""
        self.sock.sendall(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n")
        head = self._line()
        if not head.startswith(b"$"):
            raise OSError(f"INFO: {head!r}")
        n = int(head[1:])
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buf += chunk
        body, self.buf = self.buf[:n].decode(errors="replace"), self.buf[n + 2:]
        m = re.search(rf"^{name}:(\d+)", body, re.M)
        return int(m.group(1)) if m else None

    def close(self):
        self.sock.close()


class Guest:
    def __init__(self, name, argv, env, ready_re, disk_maker, port):
        self.name, self.argv, self.env, self.ready_re = name, argv, env, ready_re
        self.disk_maker, self.port = disk_maker, port
        self.proc = self.control = None
        self.serial_path = None

    def boot(self, serial_path, timeout, fresh_disk=True):
        """Starts QEMU; returns (wall ms to first PONG, guest ms from the console)."""
        if fresh_disk:
            self.disk_maker()
        self.serial_path = serial_path
        serial = open(serial_path, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=serial,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wall = None
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                break
            if ping(self.port, 0.2):
                wall = (time.monotonic() - t0) * 1000
                break
            time.sleep(0.005)
        guest = None
        deadline = time.monotonic() + 5
        while wall is not None and guest is None and time.monotonic() < deadline:
            m = self.ready_re.search(open(serial_path, "rb").read().decode(errors="replace"))
            if m:
                guest = float(m.group(1)) * (1000 if "." in m.group(1) else 1)
            else:
                time.sleep(0.05)
        serial.close()
        if wall is None:
            self.stop()
            tail = open(serial_path, "rb").read().decode(errors="replace")[-3000:]
            raise SystemExit(f"{self.name}: no PONG within {timeout} s; console tail:\n{tail}")
        self.control = Control(self.port)
        return wall, guest

    def stop(self):
        if self.control:
            self.control.close()
            self.control = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


# Tests whose requests carry many values get fewer requests per run: MSET
# sets 10 keys, LRANGE_100 answers 100 elements (400 KB at 4 KiB values).
REQUEST_DIVISOR = {"mset": 4, "lrange_100": 20, "xrange": 4}

# A script doing one GET and one INCR, which the EVALSHA cell calls by its
# SHA-1 (each guest loads it just before the cell: a restart empties its
# script cache).
EVALSHA_SCRIPT = b"redis.call('GET', KEYS[1]) return redis.call('INCR', KEYS[1])"

# Cells redis-benchmark has no test of its own for: the command it sends
# instead (the part after its options). XRANGE reads the stream the XADD cell
# before it filled; GET_RESP3 is its GET test on connections that said
# HELLO 3.
CUSTOM = {
    "xadd": ["XADD", "mystream", "*", "field", "__rand_int__"],
    "xrange": ["XRANGE", "mystream", "-", "+", "COUNT", "10"],
    "evalsha": ["EVALSHA", hashlib.sha1(EVALSHA_SCRIPT).hexdigest(), "1", "counter:__rand_int__"],
    "pfadd": ["PFADD", "visitors", "visitor:__rand_int__"],
    "geoadd": ["GEOADD", "places", "13.361389", "38.115556", "place:__rand_int__"],
    "get_resp3": ["-3", "-t", "get"],
}
# The name redis-benchmark's CSV gives a cell whose name is not its command.
CSV_NAME = {"get_resp3": "GET"}

CSV_FIELDS = ("test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
              "p95_latency_ms", "p99_latency_ms", "max_latency_ms")


def bench_once(guest, test, p, d, clients, n, keyspace, logf):
    """One redis-benchmark run of one test: (row or None, errors, why)."""
    n //= REQUEST_DIVISOR.get(test, 1)
    if test == "evalsha":
        guest.control.command(b"SCRIPT", b"LOAD", EVALSHA_SCRIPT)
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(guest.port), "-c", str(clients),
            "-n", str(n), "-P", str(p), "-d", str(d), "-r", str(keyspace), "--csv"]
    argv += CUSTOM.get(test, ["-t", test])
    try:
        before = guest.control.info_field("total_error_replies")
    except OSError:
        before = None
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = f"{e.stdout or ''}{e.stderr or ''}\nredis-benchmark: timed out\n", -1
    secs = time.monotonic() - t0
    try:
        after = guest.control.info_field("total_error_replies")
    except OSError:
        after = None
    logf.write(f"\n## {guest.name}: {' '.join(argv)} (exit {rc}, {secs:.1f} s)\n{out}")
    logf.flush()
    # redis-benchmark 7 stops at the first error ("Error: ...", "Could not connect ...")
    # with a non-zero status; lines other than CSV are its error reports.
    noise = [l for l in out.splitlines() if l.strip() and not l.startswith('"')]
    server = after - before if before is not None and after is not None else 0
    row = None
    for rec in csv.reader(l for l in out.splitlines() if l.startswith('"')):
        if rec[0] != "test" and rec[0].split()[0] == CSV_NAME.get(test, test).upper():
            row = dict(zip(CSV_FIELDS, rec))
    errors = len(noise) + server + (1 if rc != 0 else 0) + (1 if row is None else 0)
    why = "; ".join(noise[:2]) or (f"exit {rc}" if rc else "")
    if server:
        why = (why + "; " if why else "") + f"{server} error replies"
    return row, errors, why


# BullMQ's throughput (jobs per second with two workers) against each guest:
# image/bullmq/throughput.js, rounds of it alternately on both guests.
BULLMQ_JOBS = 2000
BULLMQ_ROUNDS = 3


def bullmq_throughput(guest, logf):
    """One run of image/bullmq/throughput.js: (jobs/s, errors)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = ["node", os.path.join(root, "image", "bullmq", "throughput.js"), str(guest.port),
            str(BULLMQ_JOBS)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = f"{e.stdout or ''}{e.stderr or ''}\nthroughput.js: timed out\n", -1
    logf.write(f"\n## {guest.name}: {' '.join(argv)} (exit {rc})\n{out}")
    logf.flush()
    m = re.search(r"= (\d+) jobs/s", out)
    if rc != 0 or m is None:
        return 0.0, 1
    return float(m.group(1)), 0


def run_cell(guest, t, p, d, clients, requests, keyspace, logf):
    """One cell for one guest: (row, restarted). A run with errors is counted,
    the guest restarted, and the run done once more."""
    row, errors, why = bench_once(guest, t, p, d, clients, requests[p], keyspace, logf)
    restarted = False
    if row is None or errors:
        print(f"  {guest.name:8} {t.upper()} P={p} {d} B: {errors} errors ({why}); "
              f"restarting the guest and running it again", flush=True)
        logf.write(f"{guest.name}: restart after errors: {why}\n")
        guest.stop()
        # A fresh disk: replaying a long log would make the restart slow.
        guest.boot(guest.serial_path, timeout=120)
        restarted = True
        if t == "get":  # the keys GET reads, as the SET run before left them
            bench_once(guest, "set", p, d, clients, requests[p], keyspace, logf)
        row, errors2, _ = bench_once(guest, t, p, d, clients, requests[p], keyspace, logf)
        errors += errors2
    return {
        "rps": float(row["rps"]) if row else 0.0,
        "p50": float(row["p50_latency_ms"]) if row else float("nan"),
        "p99": float(row["p99_latency_ms"]) if row else float("nan"),
        "errors": errors,
    }, restarted


def swap(argv, **kw):
    """A copy of the captured kvstore command line with parts replaced."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "-kernel" and "kernel" in kw:
            out += ["-kernel", kw["kernel"]]
            i += 2
            continue
        if a == "-append":
            i += 2  # replaced below
            continue
        if a == "-drive" and "disk" in kw:
            out += ["-drive", re.sub(r"file=[^,]*", "file=" + kw["disk"], argv[i + 1])]
            i += 2
            continue
        if a == "-netdev" and "port" in kw:
            out += ["-netdev", re.sub(r"hostfwd=tcp:127\.0\.0\.1:\d+-", f"hostfwd=tcp:127.0.0.1:{kw['port']}-",
                                      argv[i + 1])]
            i += 2
            continue
        out.append(a)
        i += 1
    if "initrd" in kw:
        out += ["-initrd", kw["initrd"]]
    if kw.get("append"):
        out += ["-append", kw["append"]]
    return out


# Each guest's disk. A full run writes about 2.5 GB of log records (the
# 4 KiB MSETs alone 800 MB) and holds up to ~450 MB of live data (the list
# LPUSH builds); kvstore's log uses half of its disk while a rewrite can
# go to the other half, so 1 GiB ran out in the 4 KiB HSET cell.
DISK_BYTES = 4 << 30


def fresh_sparse(path, size=DISK_BYTES):
    if os.path.exists(path):
        os.remove(path)
    with open(path, "wb") as f:
        f.truncate(size)


def fresh_ext4(path):
    fresh_sparse(path)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", path],
                   check=True)


def fmt_ms(v):
    return "-" if v is None or v != v else (f"{v:.2f}" if v < 10 else f"{v:.1f}")


def run(args):
    out = args.out
    argv = open(args.argv_file, "rb").read().decode().split("\0")
    argv = ["qemu-system-aarch64"] + [a for a in argv if a != ""]
    has_append = "-append" in argv
    kv_append = argv[argv.index("-append") + 1] if has_append else None
    quick = args.mode == "quick"
    boots = 3 if quick else 5
    # Requests per run (fewer for MSET and LRANGE_100: REQUEST_DIVISOR).
    requests = {1: 3000, 16: 40000} if quick else {1: 20000, 16: 80000}
    # LPOP pops what the LPUSH cell before it pushed; XRANGE reads what XADD added.
    tests = ["set", "get", "incr", "mset", "lpush", "lpop", "sadd", "hset", "zadd", "lrange_100",
             "xadd", "xrange", "pfadd", "geoadd", "get_resp3", "evalsha"]
    only = [t.lower() for t in args.tests]
    unknown = sorted(set(only) - set(tests) - {"bullmq"})
    if unknown:
        sys.exit(f"kvbench: no such test: {', '.join(unknown)} (tests: {', '.join(tests)}, bullmq)")
    with_bullmq = not only or "bullmq" in only
    if only:
        tests = [t for t in tests if t in only]
    pipelines, sizes, clients, keyspace = [1, 16], [100, 4096], 50, 10000

    kport, lport = free_port(), free_port()
    while lport == kport:
        lport = free_port()
    kdisk, ldisk = os.path.join(out, "kvstore-bench.disk"), os.path.join(out, "linux-bench.ext4")
    linux_dir = os.path.join(out, "linux")
    image, initrd = os.path.join(linux_dir, "Image"), os.path.join(linux_dir, "initramfs.gz")
    kv_argv = swap(argv, disk=kdisk, port=kport, append=kv_append)
    lx_argv = swap(argv, kernel=image, initrd=initrd, disk=ldisk, port=lport,
                   append="console=ttyAMA0 quiet rdinit=/init")
    logf = open(os.path.join(out, "kvstore.log"), "w")
    logf.write(f"mode {args.mode}\nkvstore: {' '.join(kv_argv)}\nlinux:   {' '.join(lx_argv)}\n")
    env = dict(os.environ)
    if args.preload:
        env["LD_PRELOAD"] = os.path.abspath(args.preload)
        logf.write(f"both QEMUs run with LD_PRELOAD={env['LD_PRELOAD']} (listen backlog >= 128)\n")
    guests = [
        Guest("kvstore", kv_argv, env, re.compile(r"kvstore: ready on port \d+ \((\d+) ms after boot\)"),
              lambda: fresh_sparse(kdisk), kport),
        Guest("linux", lx_argv, env, re.compile(r"\[\s*(\d+\.\d+)\] bench: redis-server ready"),
              lambda: fresh_ext4(ldisk), lport),
    ]
    print(f"kvstore-bench: {args.mode}: {boots} boots each, then {'/'.join(t.upper() for t in tests)} alternately, "
          f"{clients} clients, pipeline {pipelines}, values {sizes} B, -n {requests[1]}/{requests[16]} "
          f"(P1/P16; MSET a quarter, LRANGE_100 a twentieth), "
          f"keys from {keyspace}", flush=True)
    boot, results, restarts = {}, {}, {}
    try:
        # Boot times: one guest up at a time.
        walls = {g.name: [] for g in guests}
        guest_ms = {g.name: [] for g in guests}
        for b in range(boots):
            for g in guests:
                wall, gms = g.boot(os.path.join(out, f"kvstore-{g.name}-console.txt"), timeout=120)
                g.stop()
                walls[g.name].append(wall)
                if gms is not None:
                    guest_ms[g.name].append(gms)
                logf.write(f"{g.name} boot {b + 1}: {wall:.0f} ms wall to PONG, guest {gms} ms\n")
                print(f"  {g.name:8} boot {b + 1}: {wall:.0f} ms to first PONG (guest: {fmt_ms(gms)} ms)",
                      flush=True)
        for g in guests:
            boot[g.name] = (statistics.median(walls[g.name]),
                            statistics.median(guest_ms[g.name]) if guest_ms[g.name] else None)
        # The matrix: both guests up (idle one waits for interrupts), cell by
        # cell alternately, so that both see the same host load.
        for g in guests:
            g.boot(os.path.join(out, f"kvstore-{g.name}-console.txt"), timeout=120)
            results[g.name], restarts[g.name] = {}, 0
            # Warm-up, not measured: first writes of the log, caches, allocator
            # (4 clients, so that it takes few of kvstore's connection slots).
            warm = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(g.port), "-c", "4", "-n", "2000",
                    "-r", str(keyspace), "-d", "100", "-t", "set", "--csv"]
            r = subprocess.run(warm, capture_output=True, text=True, timeout=300)
            logf.write(f"\n## {g.name} warm-up: {' '.join(warm)} (exit {r.returncode})\n{r.stdout}{r.stderr}")
        cell = 0
        for p in pipelines:
            for d in sizes:
                for t in tests:
                    for g in (guests if cell % 2 == 0 else guests[::-1]):
                        row, restarted = run_cell(g, t, p, d, clients, requests, keyspace, logf)
                        results[g.name][(t.upper(), p, d)] = row
                        restarts[g.name] += restarted
                    cell += 1
                    k, l = results["kvstore"][(t.upper(), p, d)], results["linux"][(t.upper(), p, d)]
                    print(f"  {t.upper():10} P={p:<2} {d:>4} B: kvstore {k['rps']:>7.0f}/s  "
                          f"linux {l['rps']:>7.0f}/s", flush=True)
        bullmq = {g.name: [] for g in guests}
        bullmq_errors = {g.name: 0 for g in guests}
        for r in range(BULLMQ_ROUNDS if with_bullmq else 0):
            for g in (guests if r % 2 == 0 else guests[::-1]):
                rate, errors = bullmq_throughput(g, logf)
                bullmq[g.name].append(rate)
                bullmq_errors[g.name] += errors
                print(f"  BULLMQ {BULLMQ_JOBS} jobs, round {r + 1}: {g.name} {rate:.0f} jobs/s", flush=True)
        for g in guests:
            g.stop()
            with open(os.path.join(out, f"kvstore-{g.name}-console.txt"), "rb") as f:
                logf.write(f"\n## {g.name} console (last boot)\n" + f.read().decode(errors="replace"))
    finally:
        for g in guests:
            g.stop()
        for p in (kdisk, ldisk):
            if os.path.exists(p):
                os.remove(p)

    kv, lx = results["kvstore"], results["linux"]
    keys = list(kv)
    with open(os.path.join(out, "kvstore.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "pipeline", "value_bytes", "kvstore_ops_s", "linux_ops_s", "ratio",
                    "kvstore_p50_ms", "kvstore_p99_ms", "linux_p50_ms", "linux_p99_ms",
                    "kvstore_errors", "linux_errors"])
        for k in keys:
            a, b = kv[k], lx[k]
            w.writerow([*k, f"{a['rps']:.0f}", f"{b['rps']:.0f}", f"{a['rps'] / b['rps']:.2f}" if b["rps"] else "",
                        a["p50"], a["p99"], b["p50"], b["p99"], a["errors"], b["errors"]])

    print()
    print(f"{'test':10} {'P':>2} {'value':>5}  {'kvstore/s':>9} {'linux/s':>9} {'ratio':>6}  "
          f"{'kv p50':>6} {'kv p99':>6}  {'lx p50':>6} {'lx p99':>6}  errors kv/lx")
    for k in keys:
        a, b = kv[k], lx[k]
        ratio = a["rps"] / b["rps"] if b["rps"] else float("nan")
        print(f"{k[0]:10} {k[1]:>2} {k[2]:>5}  {a['rps']:>9.0f} {b['rps']:>9.0f} {ratio:>5.2f}x  "
              f"{fmt_ms(a['p50']):>6} {fmt_ms(a['p99']):>6}  {fmt_ms(b['p50']):>6} {fmt_ms(b['p99']):>6}  "
              f"{a['errors']}/{b['errors']}")
    print("(ops/s; p50/p99 latency in ms as redis-benchmark reports them)")
    if with_bullmq:
        bk, bl = statistics.median(bullmq["kvstore"]), statistics.median(bullmq["linux"])
        print(f"{'BULLMQ':10} jobs/s (median of {BULLMQ_ROUNDS}, {BULLMQ_JOBS} jobs, two workers): "
              f"kvstore {bk:.0f}, linux {bl:.0f}, ratio {bk / bl if bl else float('nan'):.2f}x, "
              f"errors {bullmq_errors['kvstore']}/{bullmq_errors['linux']}")

    kv_bin = os.path.getsize(args.kvstore_bin)
    lx_img, lx_rd = os.path.getsize(image), os.path.getsize(initrd)
    print()
    print(f"{'':24} {'kvstore':>14} {'linux+redis':>14}")
    print(f"{'boot to first PONG':24} {boot['kvstore'][0]:>11.0f} ms {boot['linux'][0]:>11.0f} ms"
          f"   (median of {boots}, wall, QEMU start to PONG)")
    print(f"{'boot to ready, guest':24} {fmt_ms(boot['kvstore'][1]):>11} ms {fmt_ms(boot['linux'][1]):>11} ms"
          f"   (kvstore's ready line; kernel timestamp of redis' ready)")
    print(f"{'image size':24} {kv_bin / 1024:>10.0f} KiB {(lx_img + lx_rd) / 1024:>10.0f} KiB"
          f"   (kvstore.bin; Image {lx_img // 1024} KiB + initramfs {lx_rd // 1024} KiB)")
    print(f"{'ratio linux/kvstore':24} boot (wall) {boot['linux'][0] / boot['kvstore'][0]:.1f}x, "
          f"image {(lx_img + lx_rd) / kv_bin:.0f}x")

    ratios = [kv[k]["rps"] / lx[k]["rps"] for k in keys if lx[k]["rps"]]
    p99_ok = [k for k in keys if kv[k]["p99"] <= lx[k]["p99"]]
    kv_errs, lx_errs = sum(kv[k]["errors"] for k in keys), sum(lx[k]["errors"] for k in keys)

    def verdict(ok):
        return "met" if ok else "NOT MET"

    print()
    print("targets")
    print(f"  throughput >= 2x linux in every cell: min {min(ratios):.2f}x, geomean "
          f"{statistics.geometric_mean(ratios):.2f}x, {sum(r >= 2 for r in ratios)}/{len(keys)} cells  "
          f"{verdict(len(ratios) == len(keys) and min(ratios) >= 2)}")
    print(f"  p99 no worse than linux: {len(p99_ok)}/{len(keys)} cells  {verdict(len(p99_ok) == len(keys))}")
    g = boot["kvstore"][1]
    print(f"  boot to ready < 100 ms guest time: {fmt_ms(g)} ms  {verdict(g is not None and g < 100)}")
    print(f"  kvstore image < 2 MiB: {kv_bin / 1024:.0f} KiB  {verdict(kv_bin < 2 << 20)}")
    print(f"  zero redis-benchmark errors (kvstore): {kv_errs}, {restarts['kvstore']} restarts  "
          f"{verdict(kv_errs == 0)}   (linux: {lx_errs}, {restarts['linux']} restarts)")
    print(f"\nkvstore-bench: {os.path.join(out, 'kvstore.csv')}, {os.path.join(out, 'kvstore.log')}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("linux-guest")
    lg.add_argument("dir")
    r = sub.add_parser("run")
    r.add_argument("--mode", choices=["quick", "full"], default="quick")
    r.add_argument("--argv-file", required=True)
    r.add_argument("--kvstore-bin", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--preload", help="a shared object for LD_PRELOAD in both QEMUs")
    r.add_argument("tests", nargs="*", help="only these tests (and BullMQ only if named)")
    args = ap.parse_args()
    if args.cmd == "linux-guest":
        build_linux_guest(args.dir)
    else:
        run(args)


if __name__ == "__main__":
    main()
