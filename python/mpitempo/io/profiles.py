"""Apply ``--like osu|imb`` and the OSU/IMB benchmark names of ``ops`` to a campaign (io/opnames.py has the
table; docs/methods.md, "Profiles: --like osu and --like imb", says what each profile sets and why).

Per configuration: the names in ``ops`` become mpitempo ops (``osu_iallreduce`` -> ``iallreduce_overlap``,
``iallreduce``) and imply their suite's profile; each op is matched with the suite's benchmark it
measures (a plain op with its default one, e.g. ``multi_lat`` -> ``osu_multi_lat``, unless the settings
given choose another, ``osu_latency`` with ``--scheme loop`` on 2 ranks); the benchmarks' settings are
set; a setting two benchmarks need with different values, a value given that contradicts one, a
process count a benchmark does not run on, an op the suite has no benchmark for, an unknown profile:
each is refused in one line (MtError) before anything is created. The profile itself is recorded
(``like``, a measurement parameter: campaign.toml, and every run's meta.json through the core).
"""
from __future__ import annotations

from mpitempo.errors import MtError
from mpitempo.io import opnames
from mpitempo.io.opnames import PROFILES, SHORT, SUITES, Benchmark

PROFILE_KINDS = ("bench", "pingpong")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _show(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return "unset" if v is None else str(v)


def _same(key: str, a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or key == "in_place":
        return bool(a) == bool(b)
    return str(a) == str(b)


def check_like(value, given: "_Given | None" = None) -> str | None:
    """A profile name (or None); an unknown one is refused naming where it was given and the allowed ones."""
    if value is None or value == "":
        return None
    if str(value).lower() not in PROFILES:
        what = f"--like '{value}'" if given is None else given.label("like", f"'{value}'")
        raise MtError(f"unknown profile {what} (allowed: {', '.join(PROFILES)}; "
                      "docs/methods.md#profiles-like-osu-and-like-imb)")
    return str(value).lower()


class _Given:
    """Which parameter values of one configuration were given (a flag, the campaign file, its
    [[config]] table) rather than defaulted, and how to name them in a message."""

    def __init__(self, overrides: dict, raw: dict, cfg_keys: set, cfg_name: str, many: bool):
        self.overrides, self.raw, self.cfg_keys, self.cfg_name, self.many = overrides, raw, cfg_keys, cfg_name, many

    def given(self, key: str) -> bool:
        return key in self.overrides or key in self.cfg_keys or key in self.raw

    def label(self, key: str, value) -> str:
        if key in self.overrides:
            return f"{_flag(key)} {_show(value)}"
        if key in self.cfg_keys:
            return f"{key} = {_show(value)} in [[config]] '{self.cfg_name}'"
        return f"{key} = {_show(value)} in the campaign file"

    @property
    def where(self) -> str:
        return f" (config '{self.cfg_name}')" if self.many else ""


def _expand(tokens: list[str], like: str | None, given: _Given) -> tuple[list[str], dict[str, Benchmark], set[str]]:
    """(mpitempo ops, {op: the benchmark a suite name chose}, suites the names imply). A name of a
    benchmark mpitempo has no op for is refused with why."""
    ops: list[str] = []
    chosen: dict[str, Benchmark] = {}
    suites: set[str] = set()
    origin: dict[str, str] = {}
    for tok in tokens:
        b = opnames.lookup(tok)
        if b is None:
            if tok in origin and origin[tok] != tok:
                continue        # iallreduce after osu_iallreduce: once
            ops.append(tok)     # an op name (twice: refused by the registry check), or unknown: named there
            origin[tok] = tok
            continue
        if not b.ops:
            raise MtError(f"{b.op_name}: not implemented ({b.why}){given.where}")
        suites.add(b.suite)
        for op in b.ops:
            if op in origin and origin[op] != tok:
                if op in chosen and (chosen[op].settings != b.settings or chosen[op].np != b.np):
                    raise MtError(f"{origin[op]} and {tok} both measure op '{op}' with different definitions"
                                  f"{given.where}: give one of them")
                continue        # osu_iallreduce and iallreduce: iallreduce once
            origin[op] = tok
            ops.append(op)
            chosen[op] = b
    if len(suites) > 1:
        names = [t for t in tokens if opnames.lookup(t) is not None]
        raise MtError(f"ops mix OSU and IMB names ({', '.join(names)}){given.where}: a campaign follows one "
                      "profile; measure them in two campaigns")
    if suites and like and like not in suites:
        other = next(iter(suites))
        name = next(t for t in tokens if opnames.lookup(t) is not None)
        raise MtError(f"{opnames.lookup(name).op_name} is an {SUITES[other]} benchmark but the profile is "
                      f"--like {like}{given.where}: give {SHORT[like]} names with --like {like}, or --like {other}")
    return ops, chosen, suites


def _conflict(b: Benchmark, key: str, want, got_label: str, like: str, alt: str = "") -> MtError:
    meaning = opnames.MEANING.get(key, {}).get(want, f"has {key} {_show(want)}")
    allowed = (f"leave {_flag(key)} out" if want is None or want is False else
               f"{_flag(key)} or leave it out" if want is True else
               f"{_flag(key)} {_show(want)} or leave it out")
    return MtError(f"{got_label} contradicts --like {like}: {b.op_name} {meaning} (allowed with --like {like}: "
                   f"{allowed}; or drop --like){alt}")


def _contradiction(b: Benchmark, p: dict, given: _Given) -> tuple[str, object] | None:
    for key, want in b.settings.items():
        if key not in p:
            continue
        if given.given(key) and not _same(key, p[key], want) and not (want is None and p[key] is None):
            return key, want
    return None


def _pick(op: str, like: str, p: dict, given: _Given, nps: list[int]) -> Benchmark:
    """The suite's benchmark of a plain op: the first one the given settings and process counts allow."""
    cands = opnames.of_op(op, like)
    if not cands:
        return None
    for b in cands:
        if _contradiction(b, p, given) is None and all(b.np_problem(n) is None for n in nps):
            return b
    return cands[0]     # refused below, with the default's reason


def apply_bench(like: str | None, p: dict, given: _Given, nps: list[int]) -> dict:
    """The values of one configuration of a bench campaign: ops resolved, like, and the profile's
    settings; MtError for every refusal."""
    ops, chosen, suites = _expand(list(p.get("ops") or []), like, given)
    like = like or (next(iter(suites)) if suites else None)
    out = {"ops": ops, "like": like}
    if like is None:
        return out
    benches: list[tuple[str, Benchmark]] = []
    for op in ops:
        b = chosen.get(op) or _pick(op, like, p, given, nps)
        if b is None:
            raise MtError(f"op '{op}' has no {SUITES[like]} counterpart{given.where}: --like {like} applies to "
                          f"the ops {SHORT[like]} measures (docs/methods.md#profiles-like-osu-and-like-imb)")
        benches.append((op, b))
    # process counts the suite's benchmark runs on
    for op, b in benches:
        for n in nps:
            why = b.np_problem(n)
            if why:
                alt = ""
                if b.name == "osu_latency" or (b.suite == "osu" and op == "multi_lat"):
                    alt = " (osu_multi_lat, op multi_lat with the barrier scheme, runs every pair of an even number)"
                raise MtError(f"{b.op_name} runs on {why} in {SHORT[like]}, but np is {n}{given.where}{alt}")
    # one value per setting
    need: dict[str, tuple[object, Benchmark]] = {}
    for op, b in benches:
        for key, want in b.settings.items():
            if key in need and not _same(key, need[key][0], want):
                v0, b0 = need[key]
                raise MtError(f"--like {like}: {b0.op_name} and {b.op_name} need different {_flag(key)} "
                              f"({_show(v0)}, {_show(want)}) and a configuration has one{given.where}: measure them "
                              "in two campaigns, or in two [[config]] tables each with its ops")
            need.setdefault(key, (want, b))
    # nothing given contradicts them
    for key, (want, b) in need.items():
        if key not in p:
            continue
        if given.given(key) and not _same(key, p[key], want) and not (want is None and p[key] is None):
            alt = ""
            if b.suite == "osu" and b.name == "osu_multi_lat" and key == "scheme":
                alt = " (osu_latency, a loop on exactly 2 ranks, is --scheme loop)"
            raise _conflict(b, key, want, given.label(key, p[key]), like, alt)
        out[key] = want
    return out


def apply_pingpong(like: str | None, p: dict, given: _Given) -> dict:
    out = {"like": like}
    if like is None:
        return out
    b = opnames.PINGPONG.get(like)
    if b is None:
        raise MtError(f"mpitempo pingpong --like {like}: not implemented ({opnames.PINGPONG_WHY[like]})")
    for key, want in b.settings.items():
        if given.given(key) and p.get(key) is not None and not _same(key, p.get(key), want):
            raise _conflict(b, key, want, given.label(key, p[key]), like)
        if want is not None:
            out[key] = want
    return out


def _list(v) -> list:
    return v if isinstance(v, list) else []


def apply(kind_name: str, params: dict, configs: list, raw: dict, overrides: dict, nps: list[int]) -> None:
    """Resolve the OSU/IMB names and apply the profiles of every configuration of a campaign, in place:
    a value all configurations share goes to the campaign's params, others to each [[config]]."""
    uses = [c for c in configs if c.params.get("like", params.get("like")) not in (None, "")]
    names = [t for c in configs for t in _list(c.params.get("ops", params.get("ops"))) if opnames.suite_of_name(t)]
    if kind_name not in PROFILE_KINDS:
        if uses:
            raise MtError(f"like (a profile) applies to campaigns of kind bench (mpitempo run) and pingpong, "
                          f"not '{kind_name}'")
        return
    if kind_name == "pingpong" and not uses:
        return
    if kind_name == "bench" and not uses and not names:
        return
    many = len(configs) > 1
    values = []
    for c in configs:
        p = dict(params)
        p.update(c.params)
        given = _Given(overrides, raw, set(c.params), c.name, many)
        like = check_like(p.get("like"), given)
        if kind_name == "bench":
            values.append(apply_bench(like, p, given, nps))
        else:
            values.append(apply_pingpong(like, p, given))
    keys = list(dict.fromkeys(k for v in values for k in v))
    for key in keys:
        vals = [v.get(key, "\0absent") for v in values]
        if all(x != "\0absent" for x in vals) and all(x == vals[0] for x in vals):
            params[key] = vals[0]
            for c in configs:
                c.params.pop(key, None)
            continue
        for c, v in zip(configs, values):
            if v.get(key) is not None:     # None: unset, as the campaign's own value (TOML has no null)
                c.params[key] = v[key]
        if key == "ops":   # the campaign's own list, the default of a [[config]] without ops: names resolved too
            params["ops"] = _expand(_list(params.get("ops")), None, _Given(overrides, raw, set(), "", False))[0]
