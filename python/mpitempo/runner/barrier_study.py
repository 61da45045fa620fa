"""The study directory of `mpitempo barrier`: its two campaigns, started and resumed together.

DIR holds the barrier campaign (kind `barrier`: our algorithms, MPI_Barrier and the native
algorithms as configurations) and DIR/logp the LogP campaign (kind `logp`). DIR/barrier-study.json
is written first, before either campaign starts, and records the LogP campaign as it will run, so
that `mpitempo barrier --resume DIR` can continue a study interrupted at any point (also before
DIR/logp exists). Each campaign then resumes as `mpitempo run --resume` does: complete runs are
kept, missing and failed ones run again, and a campaign.toml that differs is refused.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from mpitempo.errors import MtError
from mpitempo.io.campaign import Campaign, build_campaign, load_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STUDY_FILE = "barrier-study.json"
LOGP_DIR = "logp"
FORMAT_VERSION = 1


def native_configs(build, procs: list[int]) -> tuple[list[dict], list[str]]:
    """The [[config]] tables of the native algorithms that implement one of ours (stats.logp.NATIVE_SAME)
    and that the library lists as selectable (runner.variants.catalogue, the discovery of `mpitempo tune`),
    each measuring MPI_Barrier with the environment that forces it; and notes on what is not measured."""
    from mpitempo.mpilib.variants import catalogue
    from mpitempo.stats import logp as model

    table = model.NATIVE_SAME.get(build.flavour)   # data keyed by the library's name (stats has no mpilib)
    if not table:
        return [], [f"native algorithms not measured: the MPI of {build.mpicc} is neither MPICH nor Open MPI"]
    try:
        cat = catalogue(build, ["barrier"], procs)
    except MtError as e:
        return [], [f"native algorithms not measured: {e}"]
    out, notes = [], []
    for name, (ours, extra) in table.items():
        alg = cat.find("barrier", name)
        if alg is None:
            notes.append(f"the {build.flavour} library lists no barrier algorithm '{name}' (that of {ours}): "
                         "not measured")
            continue
        env = dict(alg.env)
        env.update(extra)
        out.append({"name": f"native-{name}", "ops": ["barrier"], "env": env,
                    "description": f"MPI_Barrier forced to the library's {name} algorithm (that of {ours})"})
    return out, notes


def settings(bc: Campaign) -> dict[str, str]:
    """Row name 'native:<name>' -> the environment that selects it, from the campaign's configurations."""
    from mpitempo.analysis.barrier import NATIVE_CONFIG, row_name

    return {row_name(c.name, "barrier"): " ".join(f"{k}={v}" for k, v in c.env.items())
            for c in bc.configs if c.name.startswith(NATIVE_CONFIG)}


@dataclass
class Study:
    out: Path
    barrier: Campaign
    logp: Campaign
    resume: bool          # continue each campaign whose campaign.toml is in out (the others start)
    notes: list[str]
    yes: bool = False     # consent to the stored commands (runner.resume.consent)
    deadline: float | None = None   # --budget (runner.estimate.study_budget_gate): shared by both campaigns


def create(out: Path, bc: Campaign, lc: Campaign, notes: list[str]) -> Study:
    """A new study directory with its record (the campaigns are created when they run)."""
    exists = f"directory '{out}' already exists; choose a new -o or continue a study there with " \
             f"mpitempo barrier --resume {out}"
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise MtError(exists)
    rec = {"format_version": FORMAT_VERSION, "tool": "mpitempo barrier", "logp_dir": LOGP_DIR,
           "barrier_campaign": bc.to_toml(), "logp_campaign": lc.to_toml(), "notes": notes}
    from mpitempo.io.safefs import safe_write_text

    created = False
    try:
        if str(out.parent) not in ("", ".") and not out.parent.is_dir():
            out.parent.mkdir(parents=True)
        try:
            os.mkdir(out)   # one mkdir: of two studies started on one new directory, one gets it
            created = True
        except FileExistsError:
            pass   # an empty directory made for us; the campaign's exclusive lock decides who owns it
        fd = os.open(out / STUDY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        os.close(fd)
        safe_write_text(out / STUDY_FILE, json.dumps(rec, indent=1) + "\n", out)
    except FileExistsError:
        raise MtError(exists) from None
    except OSError as e:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise MtError(f"cannot create the study directory '{out}': {e.strerror}") from None
    return Study(out, bc, lc, False, notes)


def load(out: Path) -> Study:
    """The study in out, to resume; one-line errors for anything that is not a barrier study."""
    from mpitempo.io.safefs import campaign_entries_check, safe_read_text
    from mpitempo.runner.resume import RUNNER_FILES

    if not out.is_dir():
        raise MtError(f"cannot resume '{out}': no such directory")
    campaign_entries_check(out, (*RUNNER_FILES, STUDY_FILE, LOGP_DIR, "barrier.json", "barrier.png", "arity.png"))
    if (out / LOGP_DIR).is_dir():
        campaign_entries_check(out / LOGP_DIR, RUNNER_FILES)
    rec = None
    if (out / STUDY_FILE).exists():
        from mpitempo.io.safeload import load_json

        try:
            from mpitempo.io.safeload import MAX_JSON_BYTES, loads_json

            rec = loads_json(safe_read_text(out / STUDY_FILE, out, MAX_JSON_BYTES).encode(), STUDY_FILE)
        except (OSError, ValueError, MtError) as e:
            raise MtError(f"cannot resume '{out}': its {STUDY_FILE} is unreadable ({e})") from None
        if not isinstance(rec, dict) or rec.get("tool") != "mpitempo barrier":
            raise MtError(f"cannot resume '{out}': its {STUDY_FILE} is not the record of a barrier study")
        if rec.get("format_version", 0) > FORMAT_VERSION:
            raise MtError(f"cannot resume '{out}': its {STUDY_FILE} has format version {rec.get('format_version')}; "
                          f"this mpitempo reads version {FORMAT_VERSION}")
    spec_path = out / "campaign.toml"
    if spec_path.exists():
        spec = load_toml(spec_path)
    elif rec and isinstance(rec.get("barrier_campaign"), str):   # stopped before the campaign was created
        spec = _toml(out, rec["barrier_campaign"], "barrier")
    else:
        raise MtError(f"cannot resume '{out}': it is not a barrier study (no campaign.toml"
                      + (")" if rec else f" and no {STUDY_FILE})"))
    if spec.get("kind") != "barrier":
        raise MtError(f"cannot resume '{out}': it is not a barrier study but a campaign of kind "
                      f"'{spec.get('kind', 'bench')}' (continue that with: mpitempo run --resume {out})")
    bc = build_campaign(spec, kind="barrier")
    lpath = out / LOGP_DIR / "campaign.toml"
    if lpath.exists():
        lspec = load_toml(lpath)
    elif rec and isinstance(rec.get("logp_campaign"), str):
        lspec = _toml(out, rec["logp_campaign"], "LogP")
    else:
        raise MtError(f"cannot resume '{out}': it has neither {LOGP_DIR}/campaign.toml nor a {STUDY_FILE} "
                      "recording the LogP campaign")
    if lspec.get("kind") != "logp":
        raise MtError(f"cannot resume '{out}': {LOGP_DIR}/ holds a campaign of kind '{lspec.get('kind', 'bench')}', "
                      "not the LogP campaign of a barrier study")
    lc = build_campaign(lspec, kind="logp")
    return Study(out, bc, lc, True, list(rec.get("notes", [])) if rec else [])


def _toml(out: Path, text: str, what: str) -> dict:
    from mpitempo.io.toml_schema import check_campaign

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MtError(f"cannot resume '{out}': the {what} campaign in its {STUDY_FILE} is not valid TOML: {e}") \
            from None
    try:
        check_campaign(doc, f"the {what} campaign in '{out / STUDY_FILE}'")
    except MtError as e:
        raise MtError(f"cannot resume '{out}': {e}") from None
    return doc


def run(study: Study, quiet: bool, keep: bool) -> tuple[list[Path], list[Path]]:
    """Run (or resume) both campaigns; the complete run directories of each. Interrupted or failed
    mpiruns are an MtError naming how to continue (when the directory is kept)."""
    from mpitempo.io.rundir import find_runs
    from mpitempo.runner.execute import execute, first_failure

    out = study.out
    lout = out / LOGP_DIR
    steps = [(study.barrier, out, study.resume and (out / "campaign.toml").exists(), (STUDY_FILE,)),
             (study.logp, lout, study.resume and (lout / "campaign.toml").exists(), ())]
    found = []
    for c, d, resume, present in steps:
        counts = execute(c, d, resume=resume, quiet=quiet, given="its campaign.toml as this mpitempo reads it",
                         present=present, yes=study.yes, deadline=study.deadline)
        left = counts.get("budget_not_run")
        if left:   # named, never dropped silently; the analysis uses the mpiruns made
            how = f"; complete them with: mpitempo barrier --resume {out}" if keep else ""
            print(f"mpitempo: the --budget ran out in the {c.kind} campaign: {len(left)} mpirun(s) not run "
                  f"({', '.join(left[:6])}{', ...' if len(left) > 6 else ''}){how}", file=sys.stderr)
        hint = (f"; completed runs are kept in {out} (continue with: mpitempo barrier --resume {out})" if keep
                else " (without -o the study's directory is removed: give -o DIR to keep and resume it)")
        if counts.get("interrupted"):
            by = f" by {counts['interrupted']}" if isinstance(counts["interrupted"], str) else ""
            raise MtError(f"interrupted{by} in the {c.kind} campaign{hint}", code=130)
        if counts["failed"]:
            raise MtError(f"{counts['failed']} of {counts['total']} {c.kind} mpirun(s) failed: {first_failure(d)}"
                          + (f" (rerun them with: mpitempo barrier --resume {out})" if keep else ""))
        complete, _, _ = find_runs(d, c.kind_obj)
        found.append(complete)
    return found[0], found[1]
