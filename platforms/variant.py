#!/usr/bin/env python3
"""Write a variant of platforms/cluster64-fast.xml with an injected slow node and/or slow link.

SimGrid's <cluster> tag makes every node alike, so the variant spells the same cluster out host by
host (a zone with Floyd routing: one <host> and an up and a down <link> per node, routes from every
node to a switch through its up link and the backbone, and back through its down link) and changes
the named ones:

  --slow-host I:FACTOR     node I computes FACTOR times slower (speed / FACTOR)
  --slow-link I:LAT:BW     node I's private link has latency LAT and bandwidth BW (e.g. 20us:1.25GBps)

Everything else is cluster64-fast's: 12.5 GB/s and 1 us per private link, a 400 GB/s backbone of 0
latency, 100 Gflop/s per core, o_s = 0.3 us, o_r = 0.4 us, correction factors 1. Ranks of one node
talk through SimGrid's loopback (network/loopback-bw, -lat: 50 GB/s, 0.1 us, as on cluster64-fast).

  python3 platforms/variant.py --hosts 64 --slow-host 2:4 -o platforms/cluster64-fast-slownode.xml
  python3 platforms/variant.py --hosts 64 --slow-link 3:20us:1.25GBps -o platforms/cluster64-fast-slowlink.xml
"""
from __future__ import annotations

import argparse
import re
import sys

HEAD = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <!-- written by platforms/variant.py: {what}.
       cluster64-fast spelt out host by host ({hosts} nodes x {cores} cores, private links of {bw} and
       {lat} to a 400 GB/s backbone of 0 latency), correction factors 1, o_s 0.3 us, o_r 0.4 us. -->
  <config>
    <prop id="smpi/lat-factor" value="0:1"/>
    <prop id="smpi/bw-factor" value="0:1"/>
    <prop id="smpi/os" value="0:0.3e-6:0"/>
    <prop id="smpi/ois" value="0:0.3e-6:0"/>
    <prop id="smpi/or" value="0:0.4e-6:0"/>
    <prop id="network/loopback-bw" value="50e9"/>
    <prop id="network/loopback-lat" value="1e-7"/>
  </config>
  <zone id="fast" routing="Floyd">
    <router id="fast-switch"/>
    <link id="fast-backbone" bandwidth="400GBps" latency="0us"/>
"""
UNIT = re.compile(r"^[0-9]*\.?[0-9]+(e-?[0-9]+)?[a-zA-Z]*$")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64, help="nodes (default 64)")
    ap.add_argument("--cores", type=int, default=4, help="cores per node (default 4)")
    ap.add_argument("--speed", default="100Gf", help="speed of a core (default 100Gf)")
    ap.add_argument("--bw", default="12.5GBps", help="private link bandwidth (default 12.5GBps)")
    ap.add_argument("--lat", default="1us", help="private link latency (default 1us)")
    ap.add_argument("--slow-host", action="append", default=[], metavar="I:FACTOR")
    ap.add_argument("--slow-link", action="append", default=[], metavar="I:LAT:BW")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.hosts < 1 or a.cores < 1:
        ap.error("--hosts and --cores must be >= 1")
    m = re.match(r"^([0-9.]+)([A-Za-z]+)$", a.speed)
    if not m:
        ap.error(f"invalid --speed '{a.speed}': expected a number and a unit, e.g. 100Gf")
    slow_host, slow_link, what = {}, {}, []
    for s in a.slow_host:
        i, _, f = s.partition(":")
        try:
            i, f = int(i), float(f)
        except ValueError:
            ap.error(f"invalid --slow-host '{s}': expected I:FACTOR, e.g. 2:4")
        if not 0 <= i < a.hosts or not f >= 1:
            ap.error(f"invalid --slow-host '{s}': node 0..{a.hosts - 1}, factor >= 1")
        slow_host[i] = f
        what.append(f"node fast-{i} computes {f:g}x slower")
    for s in a.slow_link:
        parts = s.split(":")
        if len(parts) != 3 or not parts[0].isdigit() or not all(UNIT.match(p) for p in parts[1:]):
            ap.error(f"invalid --slow-link '{s}': expected I:LAT:BW, e.g. 3:20us:1.25GBps")
        i = int(parts[0])
        if not 0 <= i < a.hosts:
            ap.error(f"invalid --slow-link '{s}': node 0..{a.hosts - 1}")
        slow_link[i] = (parts[1], parts[2])
        what.append(f"node fast-{i}'s link has latency {parts[1]} and bandwidth {parts[2]}")
    val, unit = float(m.group(1)), m.group(2)
    out = [HEAD.format(what="; ".join(what) or "no injected fault", hosts=a.hosts, cores=a.cores, bw=a.bw,
                       lat=a.lat)]
    for i in range(a.hosts):
        speed = f"{val / slow_host[i]:g}{unit}" if i in slow_host else a.speed
        lat, bw = slow_link.get(i, (a.lat, a.bw))
        mark = "  <!-- injected -->" if i in slow_host or i in slow_link else ""
        out.append(f'    <host id="fast-{i}" speed="{speed}" core="{a.cores}"/>{mark}\n')
        out.append(f'    <link id="fast-{i}_up" bandwidth="{bw}" latency="{lat}"/>'
                   f'<link id="fast-{i}_down" bandwidth="{bw}" latency="{lat}"/>\n')
    for i in range(a.hosts):
        out.append(f'    <route src="fast-{i}" dst="fast-switch" symmetrical="NO"><link_ctn id="fast-{i}_up"/>'
                   f'<link_ctn id="fast-backbone"/></route>'
                   f'<route src="fast-switch" dst="fast-{i}" symmetrical="NO"><link_ctn id="fast-{i}_down"/></route>\n')
    out.append('  </zone>\n</platform>\n')
    with open(a.output, "w") as f:
        f.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
