"""Options shared by every command, so that each keeps one name everywhere."""
from __future__ import annotations

from dataclasses import replace

import click

from mpitempo.mpilib import smpi

class FiniteFloatRange(click.FloatRange):
    """click's FloatRange without NaN and the infinities: NaN compares false with every bound, so
    FloatRange(0, 1) alone accepts --alpha nan."""

    def convert(self, value, param, ctx):
        import math

        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number{self._range_text()}", param, ctx)
        return super().convert(rv, param, ctx)

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.min is None and self.max is None:
            self.name = "float"          # --help: FLOAT, not FLOAT RANGE

    def _describe_range(self) -> str:
        """The range in --help ('0<x<1'); nothing without bounds (click would print 'x<=None')."""
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()

    def _range_text(self) -> str:
        if self.min is None and self.max is None:
            return ""
        lo = "" if self.min is None else f"{self.min:g} {'<' if self.min_open else '<='} "
        hi = "" if self.max is None else f" {'<' if self.max_open else '<='} {self.max:g}"
        return f" (allowed: {lo}x{hi})"


FINITE = FiniteFloatRange()


class TypedFloat(float):
    """A float that remembers the text it was given as (``typed``): a later range check can name the
    value as the user typed it ('1e400'), not as Python prints it ('inf')."""

    typed: str

    def __new__(cls, value, typed: str):
        self = super().__new__(cls, value)
        self.typed = typed
        return self


class TypedFloatParam(click.ParamType):
    """A float option whose value keeps its text (TypedFloat), for checks made after parsing."""

    name = "float"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        rv = click.FLOAT.convert(value, param, ctx)
        return TypedFloat(rv, str(value))


TYPED_FLOAT = TypedFloatParam()

np_option = click.option("-n", "--np", "np", type=click.IntRange(min=1), default=None,
                         help="Number of MPI ranks. [default: 2]")
launcher_option = click.option(
    "--launcher", default=None, metavar="TEMPLATE",
    help="'mpiexec' (default: the mpiexec of the MPI the core was built with, binding ranks to cores), "
         "'srun' (Slurm, with the PMI plugin of that MPI), or a command template with {np} and {cmd} "
         "(and {mpiexec}), e.g. \"mpirun -n {np} ./wrap.sh {cmd}\".")
mpicc_option = click.option("--mpicc", default=None, metavar="PATH",
                            help="MPI compiler wrapper to build with. [default: mpicc on PATH]")
platform_option = click.option(
    "--platform", default=None, metavar="FILE.xml",
    help="Run on a simulated platform: a SimGrid platform file (e.g. platforms/fattree256.xml). The core is "
         "built with SimGrid's smpicc and launched by smpirun; the times are the model's, labelled 'simulated' "
         "everywhere (docs/simulation.md).")
platform_oversubscribe_option = click.option(
    "--platform-oversubscribe", is_flag=True, default=None,
    help="With --platform: allow more ranks than the platform has cores (several ranks share a simulated core).")
smpi_selector_option = click.option(
    "--smpi-selector", type=click.Choice(list(smpi.SELECTORS)), default=None,
    help="With --platform: SMPI's algorithm selection (smpi/coll-selector), MPICH's or Open MPI's, measured as "
         "the default and kept under every forced algorithm. [default: mpich]")
platform_ppn_option = click.option(
    "--platform-ppn", type=click.IntRange(min=1), default=None, metavar="N",
    help="With --platform: at most N ranks per simulated host (1: every rank on its own node). [default: one per core]")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
timer_option = click.option("--timer", default=None, metavar="NAME",
                            help="monotonic (default), monotonic_raw, realtime, gettimeofday, rdtscp, wtime.")
filter_option = click.option("--filter", "filter_kind", type=click.Choice(["tukey", "cutcoef", "none"]),
                             default="tukey", show_default=True,
                             help="Outlier filter per mpirun and experiment, applied at analysis time "
                                  "(raw data are kept): Tukey fences, or x <= cut_coef x median (Luecke et al. 2009).")


def _check_filter_value(key):
    """A callback checking --tukey-k / --cut-coef as soon as it is parsed: before a campaign is opened
    (which may write its columnar copies), with the value named as typed."""
    def check(ctx, param, value):
        if value is not None:
            from mpitempo.stats.outliers import Filter

            Filter("none", **{key: value})
        return value
    return check


tukey_k_option = click.option("--tukey-k", type=TYPED_FLOAT, default=1.5, show_default=True, metavar="K",
                              callback=_check_filter_value("k"),
                              help="Tukey fence factor: keep Q1 - K*IQR .. Q3 + K*IQR.")
cut_coef_option = click.option("--cut-coef", type=TYPED_FLOAT, default=2.0, show_default=True, metavar="C",
                               callback=_check_filter_value("cut_coef"),
                               help="cutcoef filter: keep x <= C x median (C > 1).")


def filter_options(f):
    """--filter, --tukey-k, --cut-coef."""
    return filter_option(tukey_k_option(cut_coef_option(f)))


def make_filter(filter_kind, tukey_k, cut_coef):
    from mpitempo.stats.outliers import Filter

    return Filter(filter_kind, tukey_k, cut_coef)


def _param_help(p) -> str:
    if p.type == "BOOL":
        return p.help[:1].upper() + p.help[1:] + "."
    # a value with its own unit or suffix (10us, 4K) is not followed by the table's unit
    unit = p.unit and p.type not in ('DURATION', 'SIZE', 'PERCENT') and not str(p.default)[-1:].isalpha()
    dflt = f"  [default: {p.default}{' ' + p.unit if unit else ''}]" if p.default is not None else ""
    return p.help[:1].upper() + p.help[1:] + "." + dflt


_METAVAR = {"INT": "N", "INT_AUTO": "N|auto", "PERCENT": "P%|off", "FLOAT": "X", "DURATION": "T", "SIZE": "SIZE", "LIST": "LIST", "STR": "NAME"}


def param_options(app: str, only=None, exclude=(), defaults: dict | None = None):
    """click options generated from the rows of params/params.def for one executable: the flag, type,
    help and default come from the table (``defaults`` overrides the default a command shows).
    Every option defaults to None, so that a campaign file or the kind's default fills it."""
    from mpitempo.io import params as ptable

    rows = [p for name, p in ptable.for_app(app).items()
            if name not in exclude and (only is None or name in only)]

    def deco(f):
        for p in reversed(rows):
            if defaults and p.name in defaults:
                p = replace(p, default=str(defaults[p.name]))
            if p.type == "BOOL":
                opt = click.option(p.flag, p.name, is_flag=True, default=None, help=_param_help(p))
            else:
                typ = {"INT": click.INT, "FLOAT": click.FLOAT}.get(p.type, click.STRING)
                opt = click.option(p.flag, p.name, type=typ, default=None, metavar=_METAVAR[p.type],
                                   help=_param_help(p))
            f = opt(f)
        return f
    return deco


def budget_options(f):
    """--budget and --estimate of a campaign-shaped command (runner.estimate.budget_gate)."""
    f = click.option("--estimate", "estimate_only", is_flag=True,
                     help="Calibrate, print the estimate of the campaign's duration and stop (nothing is created).")(f)
    f = click.option("--budget", default=None, metavar="T",
                     help="Time for the whole campaign, e.g. 90s, 5m, 1h: a short calibration first prints an "
                          "estimate; a budget the campaign cannot fit is refused before anything is created; no "
                          "mpirun is started that would end after it, and the ones left out are named.")(f)
    return f
