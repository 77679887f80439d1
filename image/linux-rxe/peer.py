#!/usr/bin/env python3
"""A stand-in for the far end of ibv_{rc,uc,ud}_pingpong, with no RDMA at all.

  peer.py [--answer] ADDR LOG     (run in the "host side" namespace by guest.sh)

The pingpong examples exchange their queue pair's address over TCP (port
18515) before any RoCE packet: the client writes "LID:QPN:PSN:GID" as
"%04x:%06x:%06x:%s" (the GID as 32 hex digits, its 16 bytes in order) and a
NUL, 52 bytes in all; the server answers the same way; the client writes
"done\\0". The client then moves its QP to RTR/RTS toward the address it
was given and sends. This answers with a made-up QP at ADDR, so that the
Linux side puts RoCEv2 packets on the wire toward ADDR, and it binds UDP
port 4791 on ADDR so that those packets reach a plain UDP socket (and no
ICMP port-unreachable goes back). Everything is logged to LOG.

With --answer it also answers, as a minimal RoCEv2 end point over that plain
UDP socket: an RC message from the guest (its last packet, AckReq set) gets
an RC ACK, and every message gets one back of the same length and MTU (RC,
UC or UD, as the guest's), so that the pingpong client completes. The ICRC
of what it sends is computed with scapy over the IPv4 header Linux gives an
unconnected DF datagram: identification 0. rxe checks that ICRC over the
header it receives, so a completed pingpong shows that id 0 is right in that
direction.
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


GUEST = {}  # the QPN the guest gave in its last TCP exchange


def roce(src, dst, bth, rest):
    """The UDP payload of a RoCEv2 packet, ICRC over an IPv4 header with id 0 and DF."""
    from scapy.all import IP, UDP, Raw, raw
    from scapy.contrib.roce import BTH
    pkt = IP(src=src, dst=dst, id=0, flags="DF", ttl=64) / UDP(sport=4791, dport=4791) / \
        BTH(**bth) / Raw(rest)
    return raw(IP(raw(pkt))[UDP].payload)


def udp_sink(addr, f, answer):
    if answer:
        roce(addr, addr, dict(opcode=0x11), b"")  # import scapy now: it takes seconds
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: DF, id 0
    s.bind((addr, 4791))
    msgs = {}  # (source port) -> [mtu, bytes so far]
    answered = set()
    while True:
        data, src = s.recvfrom(65535)
        log(f, f"udp {src[0]}:{src[1]} {len(data)} bytes: {data[:16].hex()}...")
        if not answer or len(data) < 16:
            continue
        op, their_psn, ackreq = data[0], int.from_bytes(data[9:12], "big"), data[8] >> 7
        base, kind = op & 0xE0, op & 0x1F
        hdr = 12 + (8 if base == 0x60 else 0)
        size = len(data) - hdr - 4 - ((data[1] >> 4) & 3)
        m = msgs.setdefault(src[1], [size, 0])
        if kind in (0, 4):  # First, Only
            m[:] = [size, 0]
        m[1] += size
        qpn = GUEST.get("qpn")
        if qpn is None or kind not in (2, 4):  # not Last, not Only
            continue
        if base == 0 and ackreq:
            ack = roce(addr, src[0], dict(opcode=0x11, pkey=0xFFFF, dqpn=qpn, psn=their_psn),
                       bytes([0x1F]) + (1).to_bytes(3, "big"))
            s.sendto(ack, (src[0], 4791))
            log(f, f"sent RC ACK psn {their_psn:#x} ({len(ack)} bytes)")
        if (src[1], qpn) in answered:
            continue
        answered.add((src[1], qpn))
        psn = OUR_PSN  # what the guest's QP was told to expect
        mtu, total = m
        chunks = [bytes([0x7B]) * min(mtu, total - o) for o in range(0, total, mtu)] or [b""]
        for i, c in enumerate(chunks):
            last = i == len(chunks) - 1
            if len(chunks) == 1:
                k = 4
            else:
                k = 0 if i == 0 else (2 if last else 1)
            deth = (0x11111111).to_bytes(4, "big") + OUR_QPN.to_bytes(4, "big") if base == 0x60 else b""
            pkt = roce(addr, src[0], dict(opcode=base | k, pkey=0xFFFF, dqpn=qpn, psn=psn,
                                          ackreq=int(last and base == 0)), deth + c)
            s.sendto(pkt, (src[0], 4791))
            psn = (psn + 1) & 0xFFFFFF
        log(f, f"sent a {total}-byte message in {len(chunks)} packets (opcode base {base:#x})")


def main():
    answer = "--answer" in sys.argv
    addr, path = [a for a in sys.argv[1:] if a != "--answer"]
    f = open(path, "a")
    threading.Thread(target=udp_sink, args=(addr, f, answer), daemon=True).start()
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
            GUEST["qpn"] = int(theirs.split(b":")[1], 16)
            conn.sendall(ours)
            done = read_exact(conn, 5)
            log(f, f"answered {ours.rstrip(bytes(1)).decode()!r}; then {done!r}")


if __name__ == "__main__":
    main()
