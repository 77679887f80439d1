#!/usr/bin/python3
"""Checks a capture of RoCEv2 packets with an implementation we did not
write: scapy's RoCE layer recomputes each packet's ICRC.

usage: roce_wire.py CAPTURE.pcap
Prints "N packets, N ICRCs right" and exits 1 if any differs or none.
"""
import sys

from scapy.all import UDP, rdpcap, raw
from scapy.contrib.roce import BTH

packets = [p for p in rdpcap(sys.argv[1]) if p.haslayer(UDP) and p[UDP].dport == 4791]
good = 0
for i, p in enumerate(packets):
    bth = BTH(raw(p[UDP].payload))
    # Rebuild the layer under its IP/UDP so scapy computes the ICRC itself.
    body = raw(p[UDP].payload)
    p[UDP].remove_payload()
    p[UDP].add_payload(BTH(body))
    want = p[BTH].compute_icrc(body[:-4] + b"\0\0\0\0")
    if want == body[-4:]:
        good += 1
    else:
        print(f"packet {i}: ICRC {body[-4:].hex()}, scapy computes {want.hex()}")
print(f"{len(packets)} packets, {good} ICRCs right")
sys.exit(0 if packets and good == len(packets) else 1)
