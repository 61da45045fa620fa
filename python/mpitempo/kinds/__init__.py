"""The kinds of run of the one pipeline: a new kind is a new module plus one line here."""
from __future__ import annotations

from mpitempo.errors import MtError
from mpitempo.kinds.base import Kind

_MODULES = {
    "bench": "mpitempo.kinds.bench",
    "imbalance": "mpitempo.kinds.imbalance",
    "clocks": "mpitempo.kinds.clocks",
    "pingpong": "mpitempo.kinds.pingpong",
    "tree": "mpitempo.kinds.tree",
    "tune": "mpitempo.kinds.tune",
    "logp": "mpitempo.kinds.logp",
    "barrier": "mpitempo.kinds.barrier",
    "trace": "mpitempo.kinds.trace",
}
NAMES = tuple(_MODULES)


def get(name: str) -> Kind:
    import importlib

    if name not in _MODULES:
        raise MtError(f"unknown kind '{name}' (allowed: {', '.join(NAMES)})")
    return importlib.import_module(_MODULES[name]).KIND


def of_campaign(root) -> Kind:
    """The kind of a campaign directory, from its campaign.toml (bench when absent)."""
    from pathlib import Path

    from mpitempo.io.safefs import check_not_link
    from mpitempo.io.safeload import MAX_TOML_BYTES, read_bytes

    spec = Path(root) / "campaign.toml"
    name = "bench"
    # from someone else: not through a link, not a FIFO (blocks) or a device (/dev/zero), at most 1 MiB
    if Path(root).is_dir() and check_not_link(spec, root, want="any", verb="read") is not None:
        for line in read_bytes(spec, MAX_TOML_BYTES).decode(errors="replace").splitlines():
            k, _, v = line.partition("=")
            if k.strip() == "kind":
                name = v.strip().strip('"')
                break
    return get(name)
