#!/usr/bin/python3
"""What the RoCEv2 packets in a capture look like (run with Debian's python3 + scapy).

  wire.py CAPTURE.pcap

One line per RoCEv2 packet (UDP port 4791): time, IPv4 identification, DF,
TTL, TOS, UDP source port and length, the BTH (opcode, flags, P_Key, dest QP,
AckReq, PSN), and whether the ICRC checks: over the packet as captured, and
over the same packet with the IPv4 identification replaced by 0 (what a
receiver that only has a plain UDP socket, and so never sees the
identification, would have to assume). Then a summary.
"""

import sys
from collections import Counter

from scapy.all import IP, UDP, Raw, rdpcap, raw
from scapy.contrib.roce import BTH, opcode  # noqa: F401  (binds UDP 4791 to BTH)
from scapy.layers.l2 import ARP


def icrc_ok(pkt, ip_id=None):
    """True when the ICRC carried in pkt (an IP packet) is the one computed over it."""
    ip = IP(raw(pkt[IP]))
    if ip_id is not None:
        ip.id = ip_id
        ip.chksum = None
        ip = IP(raw(ip))
    carried = raw(ip[UDP].payload)[-4:]
    return ip[BTH].compute_icrc(None) == carried


def main(path):
    pkts = rdpcap(path)
    rows, ids, ttl, tos, df, sports, ops, pkeys, flags, ok, ok0, sizes = [], [], Counter(), Counter(), \
        Counter(), Counter(), Counter(), Counter(), Counter(), Counter(), Counter(), Counter()
    t0 = pkts[0].time if pkts else 0
    other = Counter()
    for p in pkts:
        if IP not in p or UDP not in p or p[UDP].dport != 4791:
            if ARP in p:
                other["arp"] += 1
            elif IP in p:
                other[f"ip proto {p[IP].proto}" + (f" dport {p[UDP].dport}" if UDP in p else "")
                      + (f" tcp {p.sprintf('%TCP.sport%->%TCP.dport%')}" if p[IP].proto == 6 else "")] += 1
            else:
                other[p.summary()] += 1
            continue
        ip, udp, bth = p[IP], p[UDP], p[BTH]
        good, good0 = icrc_ok(p), icrc_ok(p, 0)
        name = bth.sprintf("%BTH.opcode%")
        payload = len(udp.payload) - 12 - 4
        rows.append(f"{float(p.time - t0):9.6f} {ip.src}->{ip.dst} id={ip.id:#06x} "
                    f"{'DF' if ip.flags.DF else '--'} ttl={ip.ttl} tos={ip.tos:#04x} "
                    f"sport={udp.sport} ulen={udp.len} {name} se={bth.solicited} m={bth.migreq} "
                    f"pad={bth.padcount} tver={bth.version} pkey={bth.pkey:#06x} "
                    f"fecn={bth.fecn} becn={bth.becn} dqpn={bth.dqpn:#08x} a={bth.ackreq} "
                    f"psn={bth.psn:#08x} bytes_after_bth={payload} icrc={'ok' if good else 'BAD'} "
                    f"icrc_with_id0={'ok' if good0 else 'bad'}")
        ids.append((ip.dst, ip.id))
        ttl[ip.ttl] += 1
        tos[ip.tos] += 1
        df["DF" if ip.flags.DF else "no DF"] += 1
        sports[udp.sport] += 1
        ops[name] += 1
        pkeys[bth.pkey] += 1
        flags[f"se={bth.solicited} m={bth.migreq} pad={bth.padcount} tver={bth.version} "
              f"fecn={bth.fecn} becn={bth.becn} ackreq={bth.ackreq} op={name}"] += 1
        ok[good] += 1
        ok0[good0] += 1
        sizes[len(ip)] += 1
    print(f"{path}: {len(pkts)} frames, {len(rows)} RoCEv2 (UDP 4791)")
    for r in rows:
        print(r)
    if not rows:
        return
    print("\nsummary")
    print(f"  IPv4 identification, in order: {' '.join(f'{i:#06x}' for _, i in ids)}")
    diffs = [(b - a) & 0xFFFF for (_, a), (_, b) in zip(ids, ids[1:])]
    print(f"  differences between consecutive ids: {' '.join(str(d) for d in diffs)}")
    print(f"  DF: {dict(df)}; TTL: {dict(ttl)}; TOS: {dict(tos)}")
    print(f"  UDP source ports: {dict(sports)}")
    print(f"  opcodes: {dict(ops)}")
    print(f"  P_Keys: {', '.join(f'{k:#06x} x{n}' for k, n in pkeys.items())}")
    print(f"  IPv4 total lengths: {dict(sorted(sizes.items()))}")
    print(f"  ICRC over the packet as captured: {ok[True]} ok, {ok[False]} bad")
    print(f"  ICRC with the identification taken as 0: {ok0[True]} ok, {ok0[False]} bad")
    print("  BTH flag combinations:")
    for k, n in flags.items():
        print(f"    {n:3} x {k}")
    if other:
        print(f"  other frames: {dict(other)}")


if __name__ == "__main__":
    main(sys.argv[1])
