#!/usr/bin/env python3
"""Draws dmabench's (or rdmabench's) CSV as an SVG: one panel per scenario and direction,
throughput of each policy relative to pin (including setup), per size.
Standard library only, so it runs on a fresh machine."""

import csv
import sys
from collections import defaultdict

POLICIES = ["pin", "prefault", "fault-aware", "fault-aware+prefetch"]
COLORS = {"pin": "#777777", "prefault": "#4477aa", "fault-aware": "#ee6677", "fault-aware+prefetch": "#228833"}


def size_label(n):
    n = int(n)
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"


def main(src, dst, title="dmabench"):
    rows = list(csv.DictReader(open(src)))
    panels = defaultdict(list)
    for r in rows:
        panels[(r["scenario"], r["direction"])].append(r)
    keys = sorted(panels, key=lambda k: (["warm", "cold", "sparse", "pressure"].index(k[0]), k[1]))
    pw, ph, cols = 420, 220, 2
    height = ph * ((len(keys) + cols - 1) // cols) + 60
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{pw * cols}" height="{height}" font-family="sans-serif" font-size="11">']
    svg.append(f'<text x="10" y="18" font-size="14">{title}: throughput relative to pin, setup included (log scale)</text>')
    for i, pol in enumerate(POLICIES):
        svg.append(f'<rect x="{10 + 170 * i}" y="28" width="10" height="10" fill="{COLORS[pol]}"/>')
        svg.append(f'<text x="{24 + 170 * i}" y="37">{pol}</text>')
    import math
    for n, key in enumerate(keys):
        x0, y0 = (n % cols) * pw + 40, (n // cols) * ph + 60
        w, h = pw - 60, ph - 50
        svg.append(f'<text x="{x0}" y="{y0 - 4}">{key[0]} {key[1]}</text>')
        svg.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#ccc"/>')
        cells = panels[key]
        sizes = sorted({int(r["size_bytes"]) for r in cells})
        lo, hi = math.log10(0.1), math.log10(100.0)
        ypos = lambda v: y0 + h - (min(max(math.log10(max(v, 1e-3)), lo), hi) - lo) / (hi - lo) * h
        for ref in (0.1, 1, 10, 100):
            y = ypos(ref)
            svg.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y}" y2="{y}" stroke="#eee"/>')
            svg.append(f'<text x="{x0 - 30}" y="{y + 4}">{ref:g}x</text>')
        group = w / max(len(sizes), 1)
        bar = group / (len(POLICIES) + 1)
        for si, size in enumerate(sizes):
            svg.append(f'<text x="{x0 + si * group + group / 2 - 10}" y="{y0 + h + 14}">{size_label(size)}</text>')
            for pi, pol in enumerate(POLICIES):
                r = next((c for c in cells if int(c["size_bytes"]) == size and c["policy"] == pol), None)
                if not r:
                    continue
                ratio = float(r["ratio_vs_pin"])
                y = ypos(ratio)
                bx = x0 + si * group + (pi + 0.5) * bar
                base = ypos(0.1)
                svg.append(f'<rect x="{bx:.1f}" y="{y:.1f}" width="{bar * 0.9:.1f}" height="{max(base - y, 0.5):.1f}" fill="{COLORS[pol]}"><title>{pol} {size_label(size)}: {ratio:.2f}x</title></rect>')
    svg.append("</svg>")
    open(dst, "w").write("\n".join(svg))


if __name__ == "__main__":
    main(*sys.argv[1:4])
