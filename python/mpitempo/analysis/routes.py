"""Per-pair message latency from a SimGrid platform file's routes (docs/simulation.md).

The extended barrier model (stats/logp_sched.py) needs L for every pair of ranks. On a simulated
platform the latency of a route is the sum of the latencies of the links it crosses, and for the
cluster topologies SimGrid builds from one ``<cluster>`` element the routes follow from the
element's attributes:

* flat cluster (no ``topology``): node - private link - backbone - private link - node:
  ``2 lat + bb_lat``;
* ``FAT_TREE`` with ``topo_parameters="h;d1,...,dh;u1,...,uh;c1,...,ch"``: two nodes whose lowest
  common ancestor is at level k (they are in the same subtree of d1 ... dk nodes, not of
  d1 ... d(k-1)) are ``2 k`` links apart (up k, down k);
* ``TORUS`` with ``topo_parameters="D1,D2,..."``: node i has coordinates (i mod D1,
  (i / D1) mod D2, ...); dimension-order routing takes the shorter way round in every dimension,
  so the route has ``sum_d min(|a_d - b_d|, D_d - |a_d - b_d|)`` links;
* two ranks on one host: the ``loopback_lat`` (0 when the cluster declares none).

Every link of such a cluster has the element's ``lat``. Ranks are placed as `mpitempo` places
them (io/platform.hostfile): host after host in declaration order, ``ppn`` ranks per host (its
cores when ppn is None). A platform made of anything else (several clusters, zones, explicit
routes) has no derived routes here: `route_latency` returns None and the model keeps one L.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from mpitempo.io.platform import _radical

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0, "d": 86400.0,
          "w": 604800.0}


def parse_time(v: str | None) -> float:
    """SimGrid time value ('0.5us', '1e-6', '2ms') in seconds; 0 for None/empty."""
    if v is None or not str(v).strip():
        return 0.0
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([a-z]*)\s*", str(v))
    if not m or m.group(2) not in ("",) + tuple(_UNITS):
        raise ValueError(f"invalid SimGrid time '{v}' (expected a number with s, ms, us, ns or no unit)")
    return float(m.group(1)) * (_UNITS[m.group(2)] if m.group(2) else 1.0)


@dataclass(frozen=True)
class Routes:
    topology: str             # FLAT, FAT_TREE, TORUS
    lat: float                # per link (s)
    bb_lat: float             # backbone (flat cluster)
    loopback_lat: float
    params: tuple             # FAT_TREE: the down counts per level; TORUS: the dimensions
    per_host: int             # ranks per host (placement: host after host)
    nhosts: int

    def host(self, rank: int) -> int:
        return min(rank // self.per_host, self.nhosts - 1)

    def links(self, a: int, b: int) -> int:
        """Links between hosts a and b (0 when a == b)."""
        if a == b:
            return 0
        if self.topology == "FLAT":
            return 2
        if self.topology == "FAT_TREE":
            size = 1
            for k, d in enumerate(self.params, start=1):
                size *= d
                if a // size == b // size:
                    return 2 * k
            return 2 * len(self.params)
        hops, div = 0, 1
        for dim in self.params:
            x, y = (a // div) % dim, (b // div) % dim
            d = abs(x - y)
            hops += min(d, dim - d)
            div *= dim
        return hops

    def latency(self, i: int, j: int) -> float:
        """The route latency (s) between ranks i and j."""
        a, b = self.host(i), self.host(j)
        if a == b:
            return self.loopback_lat
        return self.links(a, b) * self.lat + (self.bb_lat if self.topology == "FLAT" else 0.0)


def routes(path: str | Path, ppn: int | None = None) -> Routes | None:
    """The routes of the ranks on the platform at `path` (placed as mpitempo places them), or None
    when the platform is not one <cluster> of a topology handled here."""
    root = ET.parse(str(path)).getroot()
    clusters = list(root.iter("cluster"))
    others = [el for el in root.iter() if el.tag in ("host", "cabinet", "route", "zoneRoute", "link")
              and el not in clusters]
    if len(clusters) != 1 or others:
        return None
    c = clusters[0]
    topo = (c.get("topology") or "FLAT").upper()
    try:
        lat, bb = parse_time(c.get("lat")), parse_time(c.get("bb_lat"))
        loop = parse_time(c.get("loopback_lat"))
        if topo == "FLAT":
            params: tuple = ()
        elif topo == "FAT_TREE":
            parts = (c.get("topo_parameters") or "").split(";")
            levels = int(parts[0])
            params = tuple(int(x) for x in parts[1].split(","))
            if len(params) != levels:
                return None
        elif topo == "TORUS":
            params = tuple(int(x) for x in (c.get("topo_parameters") or "").split(","))
        else:
            return None
    except (ValueError, IndexError):
        return None

    nhosts = len(_radical(c.get("radical", ""), "cluster"))
    per = int(c.get("core", "1") or 1)
    per = per if ppn is None else min(per, ppn)
    return Routes(topo, lat, bb, loop, params, per, nhosts)


def pair_latency(rt: Routes, L_measured: float, pairs: list[tuple[int, int]]):
    """L(i, j) for the model: the measured L moved by the route's difference from the routes of the
    pairs it was measured on (their median), so that L(i, j) = L_measured on those routes and the
    measurement's own part (the message size over the bandwidth, SMPI's per-message costs) is kept."""
    import statistics

    ref = statistics.median(rt.latency(a, b) for a, b in pairs) if pairs else 0.0

    def lat(i: int, j: int) -> float:
        return max(0.0, L_measured + rt.latency(i, j) - ref)

    return lat, ref
