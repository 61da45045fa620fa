"""Parameters are defined once (params/params.def): the C core's option parsers, the Python campaign
parser and the click options must agree with it. This test fails when any of the three drifts."""
import json
import subprocess

import click
import pytest

from mpitempo import kinds
from mpitempo.cli import cli
from mpitempo.io import params as ptable
from mpitempo.io.campaign import build_campaign

APPS = {"bench": "mpitempo-bench", "clocks": "mpitempo-clocks", "pingpong": "mpitempo-pingpong", "tree": "mpitempo-tree",
        "logp": "mpitempo-logp"}
# command -> (app, table rows the command deliberately does not expose as an option of the same name)
COMMANDS = {"run": ("bench", {"seed"}), "clocks": ("clocks", {"seed"}), "pingpong": ("pingpong", {"loop"}),
            # tree: --tree FILE|PRESET (repeatable) stands for the tree parameters of a configuration
            "tree": ("tree", {"tree", "tree_map", "tree_hosts", "down_order"})}


def test_table_parses_and_is_unique():
    rows = ptable.table()
    assert len(rows) > 40
    for app in APPS:
        assert ptable.for_app(app)
    with pytest.raises(Exception, match="defined twice"):
        ptable.parse_def('MT_PARAM(x, INT, "1", "", 0, 9, MT_APP_BENCH, "h")\n'
                         'MT_PARAM(x, INT, "2", "", 0, 9, MT_APP_BENCH, "h")\n')
    with pytest.raises(Exception, match="unknown type"):
        ptable.parse_def('MT_PARAM(x, REAL, "1", "", 0, 9, MT_APP_BENCH, "h")\n')
    with pytest.raises(Exception, match="params.def:1: malformed"):
        ptable.parse_def('MT_PARAM(x, INT, "1", "")\n')


@pytest.mark.parametrize("app", list(APPS))
def test_c_core_compiled_the_same_table(build, app):
    """--list of each executable prints the rows it was compiled with: the same as the file."""
    r = subprocess.run([build.binary(APPS[app]), "--list"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    c_rows = {p["name"]: p for p in json.loads(r.stdout)["params"]}
    py_rows = ptable.for_app(app)
    assert list(c_rows) == list(py_rows)
    for name, p in py_rows.items():
        c = c_rows[name]
        assert (c["type"], c["default"], c["unit"], c["help"]) == (p.type, p.default, p.unit, p.help), name
        assert float(c["min"]) == pytest.approx(p.min) and float(c["max"]) == pytest.approx(p.max), name


@pytest.mark.parametrize("command", list(COMMANDS))
def test_click_options_come_from_the_table(command):
    app, hidden = COMMANDS[command]
    cmd = cli.get_command(click.Context(cli), command)
    opts = {o.name: o for o in cmd.params if isinstance(o, click.Option)}
    for name, p in ptable.for_app(app).items():
        if name in hidden:
            continue
        assert name in opts, f"{command} has no option for {name}"
        o = opts[name]
        assert p.flag in o.opts
        if p.type == "BOOL":
            assert o.is_flag
        else:
            want = {"INT": click.INT, "FLOAT": click.FLOAT}.get(p.type, click.STRING)
            assert o.type == want, name
        assert p.help[:20].lower() in o.help.lower()


@pytest.mark.parametrize("kind", ["bench", "clocks", "pingpong", "tree", "logp"])
def test_campaign_defaults_are_the_table_defaults(kind):
    from mpitempo.io.campaign import ADAPTIVE_EXP_TIME, ADAPTIVE_PRECISION

    c = build_campaign(None, kind=kind)
    k = kinds.get(kind)
    # `run` measures adaptively unless a fixed nrep is given (its --help says so): the table's defaults
    # are the core's (exactly nrep)
    adaptive = {"precision": ADAPTIVE_PRECISION, "exp_time": ADAPTIVE_EXP_TIME} if kind == "bench" else {}
    for name, p in k.params().items():
        if name in adaptive:
            assert c.params[name] == adaptive[name], name
        elif p.default is None:
            assert c.params[name] is None, name
        else:
            assert c.params[name] == k.normalise(name, p.default), name
    # every parameter reaches the core under its flag
    args = c.core_args(c.configs[0])
    for name, v in c.params.items():
        if v not in (None, False):
            assert k.params()[name].flag in args
