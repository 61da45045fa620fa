"""Synthetic campaign directories with known properties, for tests, benchmarks and for checking
the statistics without MPI.

``write_run`` writes one complete run (meta.json + measurements.csv, in the format of the C core);
``make_campaign`` writes a whole campaign with realistic shapes: a right-skewed body (lognormal),
a second mode, rare large outliers, and a per-mpirun effect (Hunold and Carpen-Amarie 2016, section 4: the mpirun is
a factor), with a known relative difference between configurations.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np


def _meta(config: str, run_index: int, nprocs: int, extra: dict | None) -> dict:
    m = {"format_version": 1, "tool": "mpitempo-synthetic", "config": config, "run_index": run_index,
         "start_time": f"2025-01-01T00:{run_index // 60 % 60:02d}:{run_index % 60:02d}Z", "nprocs": nprocs,
         "mpi": {"library": "SynthMPI 1.0"}, "timer": {"name": "monotonic", "resolution_s": 2e-8},
         "clock": {"sync": "none"}, "scheme": {"name": "barrier"}, "cache_policy": "warm",
         "build": {"compiler": "cc (synthetic)"}, "ranks": [{"rank": r, "host": "node0"} for r in range(nprocs)],
         "machine": {"frequency_governor": "performance"}}
    for k, v in (extra or {}).items():
        m[k] = v
    return m


def write_run(root, run_id: str, config: str, run_index: int, op, msize, runtime_s, nprocs: int = 2,
              valid=None, meta: dict | None = None, con=None, exp_meta=None) -> Path:
    """Write runs/<run_id>/{meta.json, measurements.csv}; op is an array of names (or one name).
    exp_meta: a function (op, msize) -> dict of extra keys of that experiment's meta.json entry
    (bytes_per_call, msgs_per_call, overlap, ...); with it, meta.json gets an ``experiments`` list
    (exp, op, msize, plus those keys) in the order of first appearance, as the C core writes it."""
    d = Path(root) / "runs" / run_id
    d.mkdir(parents=True, exist_ok=True)
    runtime_s = np.asarray(runtime_s, dtype=float)
    n = runtime_s.size
    op = np.asarray(op if not isinstance(op, str) else [op] * n)
    names, codes = np.unique(op, return_inverse=True)
    msize = np.broadcast_to(np.asarray(msize, dtype=np.int64), (n,)).copy()
    valid = np.ones(n, dtype=np.int8) if valid is None else np.asarray(valid, dtype=np.int8)
    # exp: position of the (op, msize) experiment in order of first appearance; rep: index within it
    key = codes.astype(np.int64) * (1 << 40) + msize
    ukeys, first, inv = np.unique(key, return_index=True, return_inverse=True)
    exp_of_key = np.argsort(np.argsort(first))
    exp = exp_of_key[inv].astype(np.int32)
    order = np.argsort(exp, kind="stable")
    rep = np.empty(n, dtype=np.int32)
    counts = np.bincount(exp)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rep[order] = np.arange(n) - np.repeat(starts, counts)
    cols = {"code": codes.astype(np.int32), "msize": msize, "exp": exp, "rep": rep, "runtime_s": runtime_s,
            "valid": valid}
    opnames = {"code": np.arange(names.size, dtype=np.int32), "name": names.astype(object)}
    con = con or duckdb.connect()
    con.register("_cols", cols)
    con.register("_ops", opnames)
    out = str(d / "measurements.csv").replace("'", "''")
    con.execute(f"""COPY (SELECT o.name AS op, c.msize, {int(nprocs)} AS nprocs, 'barrier' AS scheme, c.exp, c.rep,
                c.runtime_s, c.valid, c.runtime_s AS local_max_s
            FROM _cols c JOIN _ops o USING (code) ORDER BY c.exp, c.rep) TO '{out}' (HEADER, DELIMITER ',')""")
    con.unregister("_cols")
    con.unregister("_ops")
    m = _meta(config, run_index, nprocs, meta)
    if exp_meta is not None:
        exps = []
        for k in np.argsort(first):      # experiments in the order they first appear
            code, ms = divmod(int(ukeys[k]), 1 << 40)
            name = str(names[code])
            exps.append({"exp": len(exps), "op": name, "msize": int(ms), **(exp_meta(name, int(ms)) or {})})
        m["experiments"] = exps
    (d / "meta.json").write_text(json.dumps(m, indent=1))
    return d


def op_info(op: str, msize: int, nprocs: int = 2, window: int = 64) -> dict:
    """Plausible meta.json experiment keys of the new ops (for tests): bytes_per_call and
    msgs_per_call as the core's op info hooks report them (bw, put_bw, get_bw: window x msize;
    bibw: 2 x window x msize; mbw_mr: pairs x window x msize; synbw, pingping: msize; sendrecv:
    2 x msize; exchange: 4 x msize, as IMB counts them), 0 for latency ops."""
    pairs = max(1, nprocs // 2)
    per = {"bw": window, "put_bw": window, "get_bw": window, "bibw": 2 * window, "mbw_mr": pairs * window,
           "synbw": 1, "pingping": 1, "sendrecv": 2, "exchange": 4}
    k = per.get(op, 0)
    return {"bytes_per_call": float(k * msize), "msgs_per_call": float(k if op != "synbw" else 0)}


def base_time(op: str, msize: int) -> float:
    """A plausible latency model: 1 µs + 0.4 ns per byte, op-dependent factor."""
    f = {"allreduce": 1.6, "bcast": 1.0, "alltoall": 2.5, "barrier": 0.8}.get(op, 1.3)
    return f * (1e-6 + 0.4e-9 * msize)


def sample_runtimes(rng: np.random.Generator, n: int, base: float, sigma: float = 0.08, second_mode: float = 0.15,
                    p_second: float = 0.2, p_outlier: float = 0.005) -> np.ndarray:
    """Right-skewed runtimes: base x lognormal(0, sigma), a fraction p_second shifted up by
    second_mode, and a fraction p_outlier multiplied by 2..20 (OS noise)."""
    x = base * rng.lognormal(0.0, sigma, n)
    x *= np.where(rng.random(n) < p_second, 1.0 + second_mode, 1.0)
    out = rng.random(n) < p_outlier
    x[out] *= rng.uniform(2.0, 20.0, out.sum())
    return x


def make_campaign(root, configs: dict[str, float] | None = None, runs: int = 10, ops=("allreduce", "bcast"),
                  msizes=(8, 1024), nrep: int = 100, nprocs: int = 2, seed: int = 0, run_sd: float = 0.01,
                  meta: dict[str, dict] | None = None, name: str = "synthetic", exp_meta=None, **shape) -> Path:
    """A campaign with configurations {name: runtime factor} (e.g. {"A": 1.0, "B": 1.03} for a 3%
    difference), `runs` mpiruns each, every op x msize with nrep measurements per run.
    exp_meta: a function (config, run_index, op, msize) -> extra keys of that experiment in
    meta.json (see write_run; ``op_info`` gives bytes_per_call and msgs_per_call of the new ops)."""
    root = Path(root)
    configs = configs or {"A": 1.0, "B": 1.03}
    rng = np.random.default_rng(seed)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    (root / "campaign.toml").write_text(f'name = "{name}"\nmpiruns = {runs}\nnrep = {nrep}\n')
    con = duckdb.connect()
    exps = [(op, m) for op in ops for m in msizes]
    for i in range(runs):
        for cfg, factor in configs.items():
            run_effect = float(np.exp(rng.normal(0.0, run_sd)))
            order = rng.permutation(len(exps))
            op_col = np.repeat(np.array([exps[j][0] for j in order]), nrep)
            ms_col = np.repeat(np.array([exps[j][1] for j in order], dtype=np.int64), nrep)
            rt = np.concatenate([sample_runtimes(rng, nrep, base_time(*exps[j]) * factor * run_effect, **shape)
                                 for j in order])
            em = None if exp_meta is None else (lambda c, j: lambda o, m: exp_meta(c, j, o, m))(cfg, i)
            write_run(root, f"{cfg}-{i:03d}", cfg, i, op_col, ms_col, rt, nprocs=nprocs,
                      meta=(meta or {}).get(cfg), con=con, exp_meta=em)
    con.close()
    return root
