"""What `run --resume DIR` checks before it runs anything in a campaign directory.

* **The directory holds no links** where the runner writes (io.safefs).
* **One specification.** The campaign as given now (DIR/campaign.toml, or a campaign file and
  flags) is compared key by key, after normalisation, with DIR/campaign.toml and with the
  campaign's own record of what was run: ``spec.json``, written when the campaign is created
  (older campaigns: the core arguments in each run's launch.json). A changed value (an edited
  ``msizes`` or ``nrep``) is refused with the first differing key; a formatting-only edit
  (whitespace, comments, key order, quoting) is not a difference.
* **Consent for stored commands.** The mpicc, launcher template, compiler flags and every stored
  environment variable that is not on the allow-list of tuning variables (env_allowed: loader
  variables LD_PRELOAD, PATH, HOME, ..., the MPI launcher's agent variables HYDRA_*, OMPI_MCA_*agent*,
  any variable whose name says it names a program, library, file, directory or environment, and any
  unknown name) stored in campaign.toml are commands the resume will execute. When
  they differ from what this user gets by default, the commands are shown and run only with the
  user's consent: a yes/no question on a terminal, ``--yes`` in scripts; without either the
  resume is refused, naming the stored value.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io import safefs
from mpitempo.io.campaign import Campaign, _toml_value

SPEC_RECORD = "spec.json"
SPEC_FORMAT = 1
# what the runner writes at the top of a campaign directory
RUNNER_FILES = ("campaign.toml", ".mpitempo.lock", "runlog.jsonl", "order.json", "system-check.json",
                "dvfs.json", SPEC_RECORD, "slurm.json", "sbatch.sh", "timer-study.txt")
# environment variables that make the loader, a shell or an interpreter run other code, or name the
# directory whose dot files configure them (HOME: Open MPI reads $HOME/.openmpi/mca-params.conf, PRRTE
# $HOME/.prte/mca-params.conf, PMIx $HOME/.pmix/mca-params.conf, ssh $HOME/.ssh/config with its
# ProxyCommand), or choose which program a bare name runs (PATH: `srun`, `mpiexec` of a template,
# Hydra's ssh, a wrapper)
LOADER_VARS = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PATH", "BASH_ENV", "ENV", "PYTHONPATH",
               "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT",
               "RUBYLIB", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "DYLD_INSERT_LIBRARIES",
               "DYLD_LIBRARY_PATH", "GCONV_PATH", "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME",
               "ZDOTDIR", "SHELL", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "SSH_ASKPASS",
               "OPENSSL_CONF", "SLURM_CONF", "KRB5_CONFIG", "NLSPATH", "LOCPATH", "TMPDIR")
# variables through which the MPI's own launcher runs or loads another program: every Hydra setting
# (HYDRA_LAUNCHER_EXEC and HYDRA_BOOTSTRAP_EXEC name the program that starts the proxies, with
# HYDRA_HOST_FILE on any host), and the MCA parameters of Open MPI, PRRTE and PMIx that name an agent
# (plm_rsh_agent, orte_fork_agent: a command in front of every rank), a launch module, a plugin
# directory or a parameter file (which can set any of those)
_MCA = ("OMPI_MCA_", "ORTE_MCA_", "PRTE_MCA_", "PMIX_MCA_", "OPAL_MCA_")
_MCA_EXEC_WORDS = ("agent", "plm", "component_path", "param_files", "envar_file", "prefix", "hostfile")
# Any variable (of any MPI, PMIx, PRRTE, libfabric, UCX, Slurm or other library the ranks load, or
# mpitempo's tracer) whose name says it names a program, a library, a file, a directory, a search
# path or an environment to apply: Open MPI's mca_base_param_file_path, mca_base_override_param_file,
# mca_base_env_list (sets LD_PRELOAD by another name), orte_xterm, orte_base_user_debugger; OPAL_PREFIX
# and OPAL_LIBDIR (where Open MPI finds its components and its prted); PMIX_INSTALL_PREFIX; MPICH's
# MPIR_CVAR_*_FILE / *_DIR; Intel MPI's I_MPI_PMI_LIBRARY; FI_PROVIDER_PATH (libfabric loads every
# provider library in it); UCX_MODULE_DIR. The words are matched anywhere in the lower-cased name.
_NAME_WORDS = ("path", "file", "dir", "lib", "prefix", "exec", "agent", "launch", "bootstrap", "plugin", "module",
               "component", "preload", "audit", "conf", "home", "cmd", "command", "program", "shell", "script",
               "xterm", "debugger", "rsh", "ssh", "fork", "env", "plm", "daemon", "proxy", "askpass")
_SMPI_WORDS = ("lib", "path", "file", "dir", "plugin", "exec", "conf", "cmd", "command", "program", "script")
# files that only select among the library's own built-in collective algorithms (data, not code: they
# name no program, library or variable): written by `mpitempo tune` and stored by its campaigns
DATA_FILE_VARS = ("OMPI_MCA_coll_tuned_dynamic_rules_filename", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE",
                  "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE",
                  "MPIR_CVAR_CH4_POSIX_COLL_SELECTION_TUNING_JSON_FILE")
SMPI_CFG_VAR = "MPITEMPO_SMPI_CFG"   # smpirun --cfg=KEY:VALUE items (runner/launch.py)


# The ALLOW-list: what a received campaign's (or tuning file's) env may set without consent. Only the
# tuning variables of the MPI libraries and their transports, which choose among the library's own
# built-in algorithms, thresholds and components: MPICH's control variables (MPIR_CVAR_*, Cray MPICH's
# MPICH_*), the MCA parameters of Open MPI's collective, transport, messaging and one-sided frameworks
# (OMPI_MCA_coll*, btl, pml, mtl, osc, mpi: a component list such as OMPI_MCA_btl=self,vader selects
# among installed components), UCX_* and FI_* (transport tuning), Intel MPI's I_MPI_ADJUST_*, MVAPICH's
# MV2_*, OpenMP's OMP_*. Even there, a name that says it names a program, library, file, directory or
# search path (runs_code: UCX_MODULE_DIR, FI_PROVIDER_PATH, MPIR_CVAR_*_FILE, OMP_TOOL_LIBRARIES) needs
# consent, except the selection files mpitempo tune writes (DATA_FILE_VARS). Every other variable
# (LD_*, PATH, HYDRA_*, launcher agents, an unknown name) is shown and needs consent (--yes).
# docs/security.md lists the same; tests/py/test_hostile_trust.py checks the two agree.
ENV_ALLOW_PREFIXES = ("MPIR_CVAR_", "MPICH_", "UCX_", "FI_", "I_MPI_ADJUST_", "MV2_", "OMP_")
ENV_ALLOW_MCA = ("coll", "btl", "pml", "mtl", "osc", "mpi")   # OMPI_MCA_<framework> and OMPI_MCA_<framework>_*


def env_allowed(var: str, value: str = "") -> bool:
    """True when a received campaign or tuning file may set var (to value) without the user's consent:
    on the allow-list above and naming no code, path or file (see ENV_ALLOW_PREFIXES)."""
    if var in DATA_FILE_VARS:
        return True
    if var == SMPI_CFG_VAR:
        return not value_runs_code(var, value)
    listed = var.startswith(ENV_ALLOW_PREFIXES) or any(
        var == f"OMPI_MCA_{fw}" or var.startswith(f"OMPI_MCA_{fw}_") for fw in ENV_ALLOW_MCA)
    return listed and not runs_code(var)


def check_received_env(env: dict, where: str, yes: bool) -> None:
    """Refuse (one line naming the first such variable and --yes) a received set of variables that
    holds one not on the allow-list, unless the user consented with --yes. For files such as a
    tuning.env given to `tune --verify`, which apply the variables to every process of the job."""
    bad = sorted(k for k, v in env.items() if not env_allowed(k, str(v)))
    if bad and not yes:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise MtError(f"{where} sets {_esc(bad[0])}={_esc(repr(str(env[bad[0]])))}{more}, which is not a tuning "
                      "variable of the allow-list (MPIR_CVAR_*, OMPI_MCA_coll_*, ... docs/security.md): it can "
                      "run or load code; check the file, then give --yes to apply it")


def runs_code(var: str) -> bool:
    """True for an environment variable whose value makes the loader, a shell or the MPI launcher run
    or load other code, or read a file that can: a stored one is a command, shown and run only with
    consent."""
    if var in DATA_FILE_VARS or var == SMPI_CFG_VAR:
        return False
    if var in LOADER_VARS or var.startswith(("LD_", "DYLD_", "HYDRA_", "BASH_FUNC_")):
        return True
    if var.startswith(_MCA) and any(w in var.lower() for w in _MCA_EXEC_WORDS):
        return True
    return any(w in var.lower() for w in _NAME_WORDS)


def value_runs_code(var: str, value: str) -> bool:
    """runs_code, and for MPITEMPO_SMPI_CFG the smpirun options it holds: an item whose key names a
    library, path, file or plugin (smpi/privatize-libs loads libraries, path: a search path) counts."""
    if var == SMPI_CFG_VAR:
        return any(w in item.partition(":")[0].lower() for item in str(value).split() for w in _SMPI_WORDS)
    return runs_code(var)


def _env_commands(var: str, value: str) -> list[str]:
    """What a stored variable makes the resumed mpiruns run or read, for the consent text."""
    import shutil

    out = [f"every mpirun with {var}={shlex.quote(value)}"]
    if var == "PATH":
        found = [f"{n} -> {p}" for n in ("mpiexec", "mpirun", "srun", "ssh") if (p := shutil.which(n, path=value))]
        out.append("programs named without a directory resolve in it"
                   + (": " + ", ".join(found) if found else " (none of mpiexec, mpirun, srun, ssh is in it)"))
    elif var in ("HOME", "XDG_CONFIG_HOME"):
        out.append(f"Open MPI, PRRTE and PMIx read their mca-params.conf, and ssh its config, under {shlex.quote(value)}")
    return out


def spec_items(c: Campaign) -> list[tuple[str, object]]:
    """The normalised specification as (key, value) pairs, in the order campaign.toml lists them;
    keys of a configuration read "KEY in [[config]] 'NAME'"."""
    items: list[tuple[str, object]] = []
    for k in ("name", "kind", "np", "mpiruns", "seed", "order", "timeout_s", "governor"):
        items.append((k, getattr(c, k)))
    if c.max_mpiruns is not None:   # only adaptive campaigns have it: older records stay comparable
        items.append(("max_mpiruns", c.max_mpiruns))
    for k, v in c.params.items():
        items.append((k, v))
    items.append(("[[config]] names", [cfg.name for cfg in c.configs]))
    for cfg in c.configs:
        where = f" in [[config]] '{cfg.name}'"
        items.append(("binding" + where, cfg.binding))
        for k in ("description", "mpicc", "launcher", "cflags"):
            v = getattr(cfg, k)
            items.append((k + where, None if v in (None, "") and k != "cflags" else v))
        for k, v in cfg.params.items():
            items.append((k + where, v))
        items.append(("env" + where, dict(sorted(cfg.env.items()))))
    return [(k, _jsonable(v)) for k, v in items]


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def _show(key: str, v) -> str:
    name, _, where = key.partition(" in ")
    if v is None:
        text = f"{name} unset"
    elif isinstance(v, dict):
        text = f"{name} = {{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    else:
        try:
            text = f"{name} = {_toml_value(v)}"
        except TypeError:
            text = f"{name} = {json.dumps(v)}"
    return text + (f" in {where}" if where else "")


def first_difference(there: list[tuple[str, object]], now: list[tuple[str, object]],
                     there_word: str = "there", now_word: str = "now") -> str | None:
    """"'nrep = 10' there, 'nrep = 11' now" for the first key whose value differs, None when equal."""
    a, b = dict(there), dict(now)
    for key in list(dict.fromkeys([k for k, _ in there] + [k for k, _ in now])):
        if key not in a:
            return f"'{_show(key, b[key])}' only {now_word}"
        if key not in b:
            return f"'{_show(key, a[key])}' only {there_word}"
        if a[key] != b[key]:
            return f"'{_show(key, a[key])}' {there_word}, '{_show(key, b[key])}' {now_word}"
    return None


def write_record(outdir: Path, c: Campaign) -> None:
    """DIR/spec.json: the normalised specification the campaign was created with."""
    import secrets

    # campaign_id: each run's launch.json records it; readers refuse a run directory of another campaign
    doc = {"format_version": SPEC_FORMAT, "campaign_id": secrets.token_hex(16),
           "spec": [[k, v] for k, v in spec_items(c)]}
    safefs.safe_write_text(outdir / SPEC_RECORD, json.dumps(doc, indent=1) + "\n", root=outdir)


def _read_record(outdir: Path) -> list[tuple[str, object]] | None:
    p = outdir / SPEC_RECORD
    try:
        text = safefs.safe_read_text(p, outdir, limit=16 << 20)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise MtError(f"cannot read '{p}': {e.strerror}") from None
    try:
        doc = json.loads(text)
        if doc.get("format_version", 0) > SPEC_FORMAT:
            raise MtError(f"cannot resume '{outdir}': its {SPEC_RECORD} has format_version "
                          f"{doc.get('format_version')}; this mpitempo reads version {SPEC_FORMAT}")
        return [(str(k), v) for k, v in doc["spec"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise MtError(f"cannot resume '{outdir}': its {SPEC_RECORD} (the record of the specification the "
                      "campaign was run with) is damaged; restore it from a copy of the campaign") from None


def _launched_core_args(outdir: Path) -> list[tuple[str, str, list[str]]]:
    """(run id, config, core arguments) from the launch.json of every run that was launched."""
    out = []
    runs = outdir / "runs"
    if not runs.is_dir():
        return out
    for d in sorted(runs.iterdir()):
        try:
            rec = json.loads(safefs.safe_read_text(d / "launch.json", outdir, limit=4 << 20))
            argv = [str(a) for a in rec["launcher"]["argv"]]
            cfg = str(rec["config"])
        except (OSError, ValueError, KeyError, TypeError, safefs.UnsafePath):
            continue
        try:
            i = argv.index("--run-index") + 2
        except ValueError:
            continue
        end = next((j for j in range(i, len(argv)) if argv[j] in ("--seed", "--expect-np")), len(argv))
        out.append((d.name, cfg, argv[i:end]))
    return out


def _args_difference(ran: list[str], now: list[str]) -> str:
    def pairs(args):
        out, i = [], 0
        while i < len(args):
            if args[i].startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
                out.append((args[i], args[i + 1]))
                i += 2
            else:
                out.append((args[i], ""))
                i += 1
        return dict(out)
    a, b = pairs(ran), pairs(now)
    for k in list(dict.fromkeys([*a, *b])):
        if a.get(k) != b.get(k):
            key = k.lstrip("-").replace("-", "_")
            return (f"'{key} = {a[k] or 'true'}' when it ran" if k in a else f"'{key}' unset when it ran") + \
                   (f", '{key} = {b[k] or 'true'}' now" if k in b else f", '{key}' unset now")
    return "the core's arguments"


def campaign_toml_text(outdir: Path) -> str:
    """The text of DIR/campaign.toml, read without following a link."""
    path = outdir / "campaign.toml"
    try:
        return safefs.safe_read_text(path, outdir, limit=16 << 20)
    except FileNotFoundError:
        raise MtError(f"cannot resume '{outdir}': it has no campaign.toml (not a campaign directory)") from None
    except OSError as e:
        raise MtError(f"cannot read '{path}': {e.strerror}") from None


def _normalised_campaign(text: str, kind: str, path: Path) -> Campaign:
    """The campaign a campaign.toml describes (every key, canonical values): differences are then
    ones of values, never of layout."""
    import tomllib

    from mpitempo.io.campaign import build_campaign
    from mpitempo.io.toml_schema import check_campaign as check_toml_types

    try:
        spec = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"cannot resume: '{path}' is not valid TOML: {e}") from None
    try:
        check_toml_types(spec, f"campaign file '{path}'", kind)
    except MtError as e:
        raise MtError(f"cannot resume: {e}") from None
    try:
        return build_campaign(spec, kind=None if "kind" in spec else kind)
    except MtError as e:
        raise MtError(f"cannot resume: '{path}': {e}") from None


def check_spec(outdir: Path, c: Campaign, given: str) -> None:
    """Refuse a resume whose specification differs from the directory's campaign.toml or from the
    campaign's record of what was run, naming the first differing key."""
    spec_path = outdir / "campaign.toml"
    have = campaign_toml_text(outdir)
    stored = _normalised_campaign(have, c.kind, spec_path)
    now = spec_items(c)
    diff = first_difference(spec_items(stored), now)
    if diff:
        raise MtError(f"cannot resume '{outdir}': its campaign.toml differs from {given} ({diff}); "
                      "resume without changing the campaign")
    record = _read_record(outdir)
    if record is not None:
        diff = first_difference(record, now, "when it ran", "in campaign.toml")
        if diff:
            raise MtError(f"cannot resume '{outdir}': its campaign.toml was changed after the campaign started "
                          f"({diff}; {SPEC_RECORD} records what was run); a campaign mixes no two "
                          "specifications: restore campaign.toml, or start a new campaign with -o")
        return
    cfgs = {cfg.name: cfg for cfg in c.configs}
    for run_id, cfg_name, ran in _launched_core_args(outdir):
        cfg = cfgs.get(cfg_name)
        if cfg is None:
            raise MtError(f"cannot resume '{outdir}': run {run_id} ran configuration '{cfg_name}', which its "
                          "campaign.toml no longer has; restore campaign.toml, or start a new campaign with -o")
        if ran != c.core_args(cfg):
            raise MtError(f"cannot resume '{outdir}': its campaign.toml was changed after run {run_id} ran "
                          f"({_args_difference(ran, c.core_args(cfg))}; from its launch.json); a campaign mixes "
                          "no two specifications: restore campaign.toml, or start a new campaign with -o")


# -- consent ---------------------------------------------------------------------------------------

def _default_mpicc() -> str | None:
    from mpitempo.build import find_mpicc

    try:
        return find_mpicc(None)
    except MtError:
        return None


def _resolve_mpicc(mpicc: str) -> str:
    from mpitempo.build import find_mpicc

    try:
        return find_mpicc(mpicc)
    except MtError:
        return mpicc


def stored_commands(c: Campaign, outdir: Path, typed: frozenset = frozenset()) -> list[tuple[str, str, list[str]]]:
    """[(what, stored value, [commands it makes mpitempo run])] for every stored value that differs
    from this user's default and was not typed on this command line."""
    from mpitempo.build import find_mpiexec

    default_cc = _default_mpicc()
    found = []
    for cfg in c.configs:
        where = f" of [[config]] '{cfg.name}'" if len(c.configs) > 1 or cfg.name != "default" else ""
        mpiexec = "{mpiexec}"
        if cfg.mpicc and "mpicc" not in typed:
            cc = _resolve_mpicc(cfg.mpicc)
            if cc != default_cc:
                try:
                    mpiexec = find_mpiexec(cc)
                except MtError:
                    pass
                launcher = shlex.quote(mpiexec) if mpiexec != "{mpiexec}" else "the mpiexec beside it"
                cmds = [shlex.join([cc, "-show"]),
                        f"cmake -S <mpitempo's sources> -B <build cache> -DMPI_C_COMPILER={shlex.quote(cc)} "
                        "(and cmake --build: every compile runs it)",
                        f"{launcher} --version, and every mpirun through it"]
                found.append((f"mpicc{where}", cfg.mpicc, cmds))
        elif cfg.mpicc is None and default_cc:
            try:
                mpiexec = find_mpiexec(default_cc)
            except MtError:
                pass
        if cfg.cflags is not None and "cflags" not in typed:
            found.append((f"cflags{where}", cfg.cflags,
                          [f"the compiler wrapper with: {cfg.cflags}"]))
        if cfg.launcher and cfg.launcher not in ("mpiexec", "srun") and "launcher" not in typed:
            found.append((f"launcher{where}", cfg.launcher,
                          [_launch_text(c, cfg, outdir, mpiexec, trusted_build=not any(
                              w.startswith(("mpicc", "cflags")) and w.endswith(where) for w, _, _ in found))
                           + "   (the first mpirun, before --seed, --expect-np and --launch-json; the others differ in run directory and index)"]))
        for var in sorted(cfg.env):
            # a value equal to this user's own environment changes nothing: the mpiruns get it anyway
            if not env_allowed(var, cfg.env[var]) and "env" not in typed and os.environ.get(var) != cfg.env[var]:
                found.append((f"env {var}{where}", cfg.env[var], _env_commands(var, cfg.env[var])))
        if hasattr(c.kind_obj, "stored_commands"):   # a kind whose mpiruns run a stored program (trace: the application)
            found += [(w + where, v, cmds) for w, v, cmds in c.kind_obj.stored_commands(c, cfg, outdir)]
    return found


def _launch_text(c: Campaign, cfg, outdir: Path, mpiexec: str, trusted_build: bool) -> str:
    """The first mpirun of configuration cfg as it will be executed (its exact argv when the core can
    be found without running a stored compiler; else the template with the core's path left open)."""
    from mpitempo.runner.plan import plan

    first = next((r for r in plan(c) if r.config == cfg.name), None)
    np = first.np if first else c.np[0]
    rdir = str(outdir / "runs" / (first.run_id if first else "RUN"))
    if hasattr(c.kind_obj, "command_text"):   # not a core binary (trace: the application under the tracer)
        cmd = c.kind_obj.command_text(c, cfg, Path(rdir))
        text = cfg.launcher.replace("{mpiexec}", shlex.quote(mpiexec) if mpiexec != "{mpiexec}" else mpiexec)
        return text.replace("{np}", str(np)).replace("{cmd}", cmd)
    tail = ["--outdir", rdir, "--config", cfg.name, "--run-index", str(first.run_index if first else 0),
            *c.core_args(cfg)]
    if trusted_build:
        from mpitempo.build import ensure_build
        from mpitempo.runner.launch import make_launch

        try:
            b = ensure_build(cfg.build_mpicc, cflags=cfg.cflags)
            launch = make_launch(b, np, [b.binary(c.kind_obj.executable), *tail], cfg.launcher, cfg.env, cfg.binding,
                                 **cfg.platform_args)
            return shlex.join(launch.argv)
        except MtError:
            pass
    cmd = " ".join(shlex.quote(x) for x in [f"<core>/{c.kind_obj.executable}", *tail])
    text = cfg.launcher.replace("{mpiexec}", shlex.quote(mpiexec) if mpiexec != "{mpiexec}" else mpiexec)
    return text.replace("{np}", str(np)).replace("{cmd}", cmd)


def consent(c: Campaign, outdir: Path, yes: bool, typed: frozenset = frozenset(), stdin=None, out=None) -> None:
    """Show the stored commands that differ from the defaults and ask before running them (see the
    module's docstring); nothing is shown when there are none."""
    found = stored_commands(c, outdir, typed)
    if not found:
        return
    out = out or sys.stderr
    stdin = stdin or sys.stdin
    what, value, cmds = found[0]
    more = f" (and {len(found) - 1} more stored value(s))" if len(found) > 1 else ""
    if not yes and not (_isatty(stdin) and _isatty(out)):
        raise MtError(f"cannot resume '{outdir}' without your consent: its campaign.toml sets {what} "
                      f"{_esc(repr(value))}{more}, not your default; check campaign.toml, then resume with --yes "
                      "to run it (on a terminal, resuming shows the commands and asks)")
    print(f"mpitempo: the campaign in '{_esc(str(outdir))}' stores commands that differ from your "
          "defaults; resuming it runs:", file=out)
    for w, v, cs in found:
        print(f"  {w} = {_esc(repr(v))}", file=out)
        for cmd in cs:
            print(f"    {_esc(cmd)}", file=out)
    if yes:
        print("mpitempo: running them (--yes)", file=out, flush=True)
        return
    print("Run them? [y/N] ", end="", file=out, flush=True)
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise MtError(f"not resumed: you did not agree to run {what} {_esc(repr(value))} "
                      "stored in its campaign.toml")


def check_platform_digest(c: Campaign, outdir: Path) -> None:
    """A simulated campaign resumes only on the platform its runs were simulated on: the sha256 of
    each configuration's platform file now must equal the one recorded in every run's launch.json
    and meta.json (launcher.simulation.platform_sha256); a file replaced since is refused with both
    digests (the resumed runs would simulate another machine under the same name)."""
    now: dict[str, tuple[str, str]] = {}
    for cfg in c.configs:
        if cfg.platform:
            from mpitempo.io.platform import read_platform

            now[cfg.name] = (cfg.platform, read_platform(cfg.platform).sha256)
    runs = Path(outdir) / "runs"
    if not now or safefs.check_not_link(runs, outdir, want="dir", verb="read") is None:
        return
    for d in sorted(runs.iterdir()):
        name = None
        for fname in ("launch.json", "meta.json"):
            p = d / fname
            if safefs.check_not_link(p, outdir, verb="read") is None:
                continue
            try:
                rec = json.loads(safefs.safe_read_text(p, outdir, limit=64 << 20))
            except ValueError:
                continue   # a damaged record: the run is rerun (its files are checked elsewhere)
            if not isinstance(rec, dict):
                continue
            name = rec.get("config") if isinstance(rec.get("config"), str) else name
            digest = _find_key(rec, "platform_sha256")
            if name in now and isinstance(digest, str) and digest != now[name][1]:
                raise MtError(f"cannot resume '{outdir}': the platform file {_esc(repr(now[name][0]))} has sha256 "
                              f"{now[name][1]}, but runs/{_esc(d.name)}/{fname} was simulated on sha256 "
                              f"{_esc(digest)}: the file was replaced since; restore it, or start a new campaign "
                              "with -o")


def _find_key(obj, key: str, depth: int = 0):
    """The first value of key in a nested JSON object (depth-bounded)."""
    if depth > 8:
        return None
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key, depth + 1)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj[:64]:
            r = _find_key(v, key, depth + 1)
            if r is not None:
                return r
    return None


def _esc(text: str) -> str:
    """Control characters of a stored value shown escaped, never sent to the terminal."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


def _isatty(f) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError, OSError):
        return False
