#!/usr/bin/env python3
"""Add a release to the Spack recipes: `release.py VERSION TARBALL` writes
version("VERSION", sha256="...") (the sha256 of TARBALL, the file published as
mpitempo-VERSION.tar.gz, made by `make dist`) into packaging/spack/packages/*/package.py, below
the line that marks where release versions go, and points `url` at that release."""
import hashlib
import re
import sys
from pathlib import Path

MARK = "# release versions (packaging/spack/release.py) go below this line"


def add_release(recipe: Path, version: str, sha256: str) -> None:
    text = recipe.read_text()
    if MARK not in text:
        sys.exit(f"release.py: {recipe} has no line '{MARK}'")
    text = re.sub(rf'\n    version\("{re.escape(version)}", sha256="[0-9a-f]*"\)', "", text)
    text = text.replace(MARK, f'{MARK}\n    version("{version}", sha256="{sha256}")', 1)
    text = re.sub(r'(url = "[^"]*/)mpitempo-[^"/]*\.tar\.gz"', rf'\1mpitempo-{version}.tar.gz"', text)
    recipe.write_text(text)


def main(argv) -> int:
    if len(argv) != 3 or not re.fullmatch(r"\d+(\.\d+)*", argv[1]):
        print("usage: release.py VERSION TARBALL   (VERSION like 0.1.0)", file=sys.stderr)
        return 2
    version, tarball = argv[1], Path(argv[2])
    if not tarball.is_file():
        print(f"release.py: no tarball '{tarball}'", file=sys.stderr)
        return 2
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    root = Path(__file__).resolve().parent / "packages"
    for recipe in sorted(root.glob("*/package.py")):
        add_release(recipe, version, sha)
        print(f"{recipe}: version {version} sha256 {sha}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
