"""LogP predictions of barrier runtimes (pure functions).

The model (Culler et al. 1993) with separate send and receive overheads, and
the constructs of Hoefler et al. 2005 (sec. 2.2):

    f_r = max(o_r, g)      f_s = max(o_s, g)      t_r = t_s = max(g, o_s + L + o_r)

``predict(algorithm, P, L, o_s, o_r, g, n)`` returns the predicted runtime in
seconds of one barrier on P processes: the time from the moment all processes
entered until the last one left (the quantity a clock-based scheme measures
when all processes start together). The formulas of the paper are used for the
central counter (4.1), combining tree (4.2), tournament (4.3) and
dissemination (4.4) barriers; the others are our derivations in the same
style (docs/barrier.md explains each). The library's MPI_Barrier ("barrier")
has no model: None.

All times in seconds; n is the arity of barrier:combining:N and the fan-in of
barrier:fway:N.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# algorithm name (the op without "barrier:" and without ":N") -> takes an arity
ALGORITHMS = {"central": False, "combining": True, "fway": True, "mcs": False, "tournament": False,
              "bst": False, "butterfly": False, "pairwise": False, "dissemination": False}
NATIVE = "barrier"   # the library's MPI_Barrier


@dataclass(frozen=True)
class LogP:
    L: float
    o_s: float
    o_r: float
    g: float

    @property
    def f_r(self) -> float:
        return max(self.o_r, self.g)

    @property
    def f_s(self) -> float:
        return max(self.o_s, self.g)

    @property
    def t_r(self) -> float:
        return max(self.g, self.o_s + self.L + self.o_r)

    @property
    def t_s(self) -> float:
        return max(self.g, self.o_s + self.L + self.o_r)


def ceil_log(n: int, p: int) -> int:
    """Smallest k with n^k >= p (0 for p <= 1)."""
    if n < 2:
        raise ValueError(f"invalid arity {n}: must be >= 2")
    k, x = 0, 1
    while x < p:
        x *= n
        k += 1
    return k


def heap_depth(arity: int, p: int) -> int:
    """Depth (edges) of rank p - 1 in the arity-ary heap-ordered tree of p ranks."""
    d, i = 0, p - 1
    while i > 0:
        i = (i - 1) // arity
        d += 1
    return d


def check(m: LogP, rtt: float | None = None, L_spread: float = 0.0, g_spread: float = 0.0) -> None:
    """The sanity checks of a measured parameter set; ValueError with a one-line reason. L may be
    below 0 by 10% of RTT/2 (timer noise: L is about 0 in shared memory), g below o_s by 10% of o_s;
    for parameters aggregated over mpiruns, by their spread over the mpiruns (``L_spread``,
    ``g_spread``: the interquartile ranges) when that is larger: a quantity about 0 whose sign
    changes from mpirun to mpirun is not negative."""
    for name in ("L", "o_s", "o_r", "g"):
        v = getattr(m, name)
        if not math.isfinite(v):
            raise ValueError(f"LogP parameter {name} = {v} is not a finite number")
    tol_L = max(0.1 * (rtt if rtt is not None else 0.0) / 2, L_spread or 0.0)
    if m.L < -tol_L:
        raise ValueError(f"LogP sanity check failed: L = {m.L * 1e6:.3f} us < 0 (RTT/2 = "
                         + (f"{rtt / 2 * 1e6:.3f} us " if rtt is not None else "")
                         + f"is less than o_s + o_r = {(m.o_s + m.o_r) * 1e6:.3f} us by more than the "
                         f"{tol_L * 1e6:.3f} us its noise allows)")
    if m.o_s < 0 or m.o_r < 0:
        raise ValueError(f"LogP sanity check failed: negative overhead (o_s = {m.o_s * 1e6:.3f} us, "
                         f"o_r = {m.o_r * 1e6:.3f} us)")
    if m.g < m.o_s - max(0.1 * m.o_s, g_spread or 0.0):
        raise ValueError(f"LogP sanity check failed: g = {m.g * 1e6:.3f} us < o_s = {m.o_s * 1e6:.3f} us "
                         "(a message train cannot be faster than its sender posts messages)")


def t_bc(m: LogP, p: int) -> float:
    """Binomial-tree broadcast from one process to the other p - 1 (Hoefler et al. 2005, 4.2)."""
    if p <= 1:
        return 0.0
    return m.o_s + (ceil_log(2, p) - 1) * m.t_s + m.L + m.o_r


def split(name: str) -> tuple[str, int | None]:
    """'barrier:combining:4' -> ('combining', 4); 'barrier:mcs' -> ('mcs', None); 'barrier' -> ('barrier', None).
    ValueError for anything else."""
    if name == NATIVE:
        return NATIVE, None
    parts = name.split(":")
    if len(parts) < 2 or parts[0] != "barrier" or parts[1] not in ALGORITHMS:
        allowed = ", ".join(["barrier"] + [f"barrier:{a}" + (":N" if ALGORITHMS[a] else "") for a in ALGORITHMS])
        raise ValueError(f"unknown barrier algorithm '{name}' (allowed: {allowed})")
    alg = parts[1]
    if ALGORITHMS[alg]:
        if len(parts) != 3:
            raise ValueError(f"algorithm '{name}' needs its arity: barrier:{alg}:N with N >= 2")
        try:
            n = int(parts[2])
        except ValueError:
            raise ValueError(f"invalid arity '{parts[2]}' in '{name}': expected an integer >= 2") from None
        if n < 2:
            raise ValueError(f"invalid arity {n} in '{name}': must be >= 2")
        return alg, n
    if len(parts) != 2:
        raise ValueError(f"algorithm 'barrier:{alg}' takes no parameter (got '{name}')")
    return alg, None


def predict(name: str, p: int, m: LogP) -> float | None:
    """Predicted runtime (s) of algorithm `name` (an op name) on p processes; None for MPI_Barrier."""
    alg, n = split(name)
    if p < 1:
        raise ValueError(f"invalid number of processes {p}: must be >= 1")
    if alg == NATIVE:
        return None
    if p == 1:
        return 0.0
    lg = ceil_log(2, p)
    if alg == "central":     # 4.1
        return 2 * (m.o_s + m.L + m.o_r) + (p - 2) * m.f_r + (p - 2) * m.f_s
    if alg == "combining":   # 4.2
        return (m.o_s + m.L + m.f_r * (n - 2) + m.o_r) * ceil_log(n, p) + t_bc(m, p)
    if alg == "tournament":  # 4.3
        return m.t_r * lg + t_bc(m, p)
    if alg == "dissemination":  # 4.4
        return max(m.t_r, m.t_s) * lg
    if alg == "fway":        # arrival as the combining tree, wake-up down the same f-ary tree
        k = ceil_log(n, p)
        return (m.o_s + m.L + m.f_r * (n - 2) + m.o_r) * k + k * (m.o_s + (n - 2) * m.f_s + m.L + m.o_r)
    # heap trees: per level one message (o_s + L + o_r), plus f_r per further child on the way up
    # and f_s per further child on the way down (at most P - 1 children in all)
    if alg == "mcs":         # 4-ary arrival tree, binary wake-up tree
        c4, c2 = min(4, p - 1), min(2, p - 1)
        return (heap_depth(4, p) * (m.o_s + m.L + m.o_r + (c4 - 1) * m.f_r)
                + heap_depth(2, p) * (m.o_s + (c2 - 1) * m.f_s + m.L + m.o_r))
    if alg == "bst":         # binary tree up and down
        d, c2 = heap_depth(2, p), min(2, p - 1)
        return d * (m.o_s + m.L + m.o_r + (c2 - 1) * m.f_r) + d * (m.o_s + (c2 - 1) * m.f_s + m.L + m.o_r)
    if alg == "pairwise":    # recursive doubling on P' = 2^floor(log2 P), surplus folded in and out
        q = 1 << (p.bit_length() - 1)
        extra = 0.0 if q == p else 2 * (m.o_s + m.L + m.o_r)
        return max(m.t_r, m.t_s) * (q.bit_length() - 1) + extra
    if alg == "butterfly":   # Q = 2^ceil(log2 P) identities; hosts of virtual ones exchange twice a round
        if (1 << lg) == p:
            return max(m.t_r, m.t_s) * lg
        return (lg - 1) * (m.t_r + m.f_s + m.f_r) + m.t_r
    raise AssertionError(alg)


def optimal_arity(p: int, m: LogP, arities=range(2, 17)) -> tuple[int, dict[int, float]]:
    """The combining-tree arity with the least predicted runtime on p processes (the smallest on
    ties), and the predictions by arity (the paper found n = 4 on its cluster)."""
    pred = {n: predict(f"barrier:combining:{n}", p, m) for n in arities}
    best = min(pred, key=lambda n: (pred[n], n))
    return best, pred


def dominant_term(name: str, p: int, m: LogP) -> tuple[str, float, int]:
    """(term, its model value in s, how often it occurs) of the term that dominates the prediction:
    used to say which part of the model a measurement departs from."""
    alg, n = split(name)
    lg = ceil_log(2, p) if p > 1 else 0
    if alg == "central":
        return "f_r + f_s (per process at the root)", m.f_r + m.f_s, max(p - 2, 1)
    if alg in ("combining", "fway"):
        return "o_s + L + o_r (per tree level)", m.o_s + m.L + m.o_r, 2 * ceil_log(n, p)
    if alg in ("tournament", "mcs", "bst"):
        return "o_s + L + o_r (per tree level, up and down)", m.o_s + m.L + m.o_r, 2 * lg
    return "t_r = max(g, o_s + L + o_r) (per round)", m.t_r, max(lg, 1)


def explain(name: str, p: int, m: LogP, measured_s: float, tolerance: float = 0.30) -> str | None:
    """None when the prediction is within `tolerance` of the measurement, else one sentence naming the
    dominant term of the model and the value the measurement implies for it."""
    pred = predict(name, p, m)
    if pred is None or not measured_s or pred <= 0:
        return None
    ratio = measured_s / pred
    if abs(ratio - 1) <= tolerance:
        return None
    term, value, count = dominant_term(name, p, m)
    implied = value + (measured_s - pred) / count
    return (f"measured {ratio:.2f}x the prediction: the model's {term} is {value * 1e6:.3f} us, the measurement "
            f"implies {implied * 1e6:.3f} us for it ({count} on the critical path)")


# The closest native algorithm of MPICH and Open MPI to each of ours, and the setting that selects it.
# MPICH: MPIR_CVAR_BARRIER_INTRA_ALGORITHM (MPICH 4: auto, nb, smp, k_dissemination, recexch);
# Open MPI coll/tuned: coll_tuned_barrier_algorithm 1 linear, 2 double ring, 3 recursive doubling,
# 4 Bruck, 5 two proc, 6 tree (with coll_tuned_use_dynamic_rules=1).
NATIVE_CLOSEST = {
    "central": ("Open MPI linear barrier (algorithm 1)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                "OMPI_MCA_coll_tuned_barrier_algorithm=1"),
    "combining": ("Open MPI tree barrier (algorithm 6)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                  "OMPI_MCA_coll_tuned_barrier_algorithm=6"),
    "fway": ("Open MPI tree barrier (algorithm 6)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
             "OMPI_MCA_coll_tuned_barrier_algorithm=6"),
    "mcs": ("Open MPI tree barrier (algorithm 6)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
            "OMPI_MCA_coll_tuned_barrier_algorithm=6"),
    "tournament": ("Open MPI tree barrier (algorithm 6)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                   "OMPI_MCA_coll_tuned_barrier_algorithm=6"),
    "bst": ("Open MPI tree barrier (algorithm 6)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
            "OMPI_MCA_coll_tuned_barrier_algorithm=6"),
    "butterfly": ("MPICH recursive exchange barrier (recexch)", "MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE=0 "
                  "MPIR_CVAR_BARRIER_INTRA_ALGORITHM=recexch"),
    "pairwise": ("Open MPI recursive doubling barrier (algorithm 3)", "OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                 "OMPI_MCA_coll_tuned_barrier_algorithm=3"),
    "dissemination": ("MPICH k-dissemination barrier (k=2) / Open MPI Bruck barrier (algorithm 4)",
                      "MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE=0 MPIR_CVAR_BARRIER_INTRA_ALGORITHM=k_dissemination "
                      "MPIR_CVAR_BARRIER_DISSEM_KVAL=2 "
                      "(MPICH); OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_barrier_algorithm=4 "
                      "(Open MPI)"),
    NATIVE: ("the library's default MPI_Barrier", "none (the default)"),
}


def native_for(name: str) -> tuple[str, str]:
    alg, _ = split(name)
    return NATIVE_CLOSEST[alg]


# The native algorithms that implement the same algorithm as one of ours, by library: measured next
# to ours by `mpitempo barrier` (configuration "native-<name>" of the barrier campaign, row
# "native:<name>"). name -> (our op it implements, extra settings beyond the algorithm's selection).
# MPICH: MPIR_CVAR_BARRIER_INTRA_ALGORITHM=<name> (with MPIR_CVAR_COLLECTIVE_FALLBACK=error);
# k_dissemination with k = 2 is the dissemination barrier, recexch (recursive exchange) with k = 2 is
# recursive doubling with the surplus ranks folded in and out (our pairwise exchange).
# Open MPI coll/tuned: coll_tuned_barrier_algorithm=<id of name>; linear = central counter (all report
# to 0, 0 releases all), recursive_doubling = pairwise exchange (surplus folded), bruck = dissemination
# (round k: to r + 2^k, from r - 2^k), tree = binomial arrival and binomial wake-up (our tournament).
NATIVE_SAME = {
    "mpich": {"k_dissemination": ("barrier:dissemination", {"MPIR_CVAR_BARRIER_DISSEM_KVAL": "2"}),
              "recexch": ("barrier:pairwise", {"MPIR_CVAR_BARRIER_RECEXCH_KVAL": "2"})},
    "openmpi": {"linear": ("barrier:central", {}),
                "recursive_doubling": ("barrier:pairwise", {}),
                "bruck": ("barrier:dissemination", {}),
                "tree": ("barrier:tournament", {})},
}
NATIVE_PREFIX = "native:"


def native_ours(name: str) -> str | None:
    """Our op that the native algorithm row 'native:<name>' implements (None when not a native row)."""
    if not name.startswith(NATIVE_PREFIX):
        return None
    alg = name[len(NATIVE_PREFIX):]
    for table in NATIVE_SAME.values():
        if alg in table:
            return table[alg][0]
    return None
