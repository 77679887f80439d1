#!/usr/bin/env python3
"""A stand-in for the far end of ibv_{rc,uc,ud}_pingpong, with no RDMA at all.

  peer.py ADDR LOG     (run in the "host side" namespace by guest.sh)

The pingpong examples exchange their queue pair's address over TCP (port
18515) before any RoCE packet: the client writes "LID:QPN:PSN:GID" as
"%04x:%06x:%06x:%s" (the GID as 32 hex digits, its 16 bytes in order) and a
NUL, 52 bytes in all; the server answers the same way; the client writes
"done\\0". The client then moves its QP to RTR/RTS toward the address it
was given and sends. This answers with a made-up QP at ADDR, so that the
Linux side puts RoCEv2 packets on the wire toward ADDR, and it binds UDP
port 4791 on ADDR so that those packets reach a plain UDP socket (and no
ICMP port-unreachable goes back). Everything is logged to LOG.
"""

import socket
import sys
import threading
import time

MSG_LEN = len("0000:000000:000000:00000000000000000000000000000000") + 1
OUR_QPN = 0x0000D1
OUR_PSN = 0x00ABCD


def log(f, text):
    f.write(f"{time.time():.6f} {text}\n")
    f.flush()


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def udp_sink(addr, f):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 4791))
    while True:
        data, src = s.recvfrom(65535)
        log(f, f"udp {src[0]}:{src[1]} {len(data)} bytes: {data[:16].hex()}...")


def main():
    addr, path = sys.argv[1], sys.argv[2]
    f = open(path, "a")
    threading.Thread(target=udp_sink, args=(addr, f), daemon=True).start()
    gid = bytes(10) + b"\xff\xff" + socket.inet_aton(addr)
    ours = f"{0:04x}:{OUR_QPN:06x}:{OUR_PSN:06x}:{gid.hex()}".encode() + b"\0"
    assert len(ours) == MSG_LEN
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, 18515))
    srv.listen(4)
    log(f, f"listening on {addr}:18515 (tcp) and :4791 (udp)")
    while True:
        conn, src = srv.accept()
        with conn:
            theirs = read_exact(conn, MSG_LEN)
            log(f, f"tcp {src[0]}:{src[1]} sent {theirs.rstrip(bytes(1)).decode(errors='replace')!r}")
            if len(theirs) != MSG_LEN:
                continue
            conn.sendall(ours)
            done = read_exact(conn, 5)
            log(f, f"answered {ours.rstrip(bytes(1)).decode()!r}; then {done!r}")


if __name__ == "__main__":
    main()
