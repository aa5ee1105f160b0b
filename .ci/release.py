#!/usr/bin/env python3
"""The release step: every chapter's Colab install cell names the release commit (a ref that cannot move).

    python .ci/release.py pin [REF]   # write REF's full commit hash (default HEAD) into each install cell's RELEASE
    python .ci/release.py check       # each install cell's RELEASE is a commit here that carries this version

A release is three commits' work: set the version in pyproject.toml, dml_tutorial/__init__.py, CITATION.cff and
CHANGELOG.md's newest heading and commit it ("Release X"); run ``pin`` on that commit and commit the notebooks;
where the host publishes tags, ``git tag vX <that commit>`` as well (a tag can be moved or never pushed: the install
cells name the hash). A pinned commit whose version is not the package's is refused, so a version bump without a new
pin fails ``check`` (and tests/test_colab.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LINE = re.compile(r'^(    RELEASE = )"([^"]*)"(  # .*)?$', re.MULTILINE)


def git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


def version(ref: str | None = None) -> str:
    """The package version in ``pyproject.toml``, of the working tree or of commit ``ref``."""
    text = (ROOT / "pyproject.toml").read_text() if ref is None else git("show", f"{ref}:pyproject.toml")
    return tomllib.loads(text)["project"]["version"]


def install_cell(notebook: dict) -> dict:
    """A notebook's Colab install cell (tagged ``colab-install``)."""
    cells = [c for c in notebook["cells"] if "colab-install" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise SystemExit(f"expected one cell tagged colab-install, found {len(cells)}")
    return cells[0]


def pinned(path: Path) -> str:
    """The ref a notebook's install cell installs."""
    match = LINE.search("".join(install_cell(json.loads(path.read_text()))["source"]))
    if match is None:
        raise SystemExit(f"{path.name}: its install cell sets no RELEASE")
    return match.group(2)


def pin(ref: str = "HEAD", notebooks=NOTEBOOKS) -> str:
    """Write ``ref``'s full hash into each install cell (nothing else of the notebook changes); returns it."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    if version(commit) != version():
        raise SystemExit(f"{ref} ({commit[:12]}) is version {version(commit)}, the package here {version()}: "
                         "pin the release commit of this version")
    for path in notebooks:
        text = path.read_text()
        notebook = json.loads(text)
        cell = install_cell(notebook)
        source = LINE.sub(lambda m: f'{m.group(1)}"{commit}"{m.group(3) or ""}', "".join(cell["source"]), count=1)
        lines = source.split("\n")
        cell["source"] = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        out = json.dumps(notebook, indent=1, ensure_ascii=False)
        path.write_text(out + "\n" if text.endswith("\n") else out)
    return commit


def check(notebooks=NOTEBOOKS) -> list[str]:
    """What is wrong with the install cells' refs: each must be a full commit hash of this history that carries the
    package's version."""
    problems = []
    for path in notebooks:
        ref = pinned(path)
        if not re.fullmatch(r"[0-9a-f]{40}", ref):
            problems.append(f"{path.name}: RELEASE {ref!r} is not a commit hash (a tag or branch can move)")
        elif subprocess.run(["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True,
                            check=False).returncode:
            problems.append(f"{path.name}: RELEASE {ref[:12]} is not a commit of this repository")
        elif version(ref) != version():
            problems.append(f"{path.name}: RELEASE {ref[:12]} is version {version(ref)}, the package {version()}")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["pin"] and len(argv) <= 2:
        commit = pin(*argv[1:])
        print(f"{len(NOTEBOOKS)} install cells now install {commit} (version {version()})")
        return 0
    if argv == ["check"]:
        problems = check()
        print("\n".join(problems) or f"every install cell installs a commit of version {version()}")
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
