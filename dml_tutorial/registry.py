"""Pre-registration, checked by git: each claim's definition is committed before the runs that decide it.

Every claim of :data:`dml_tutorial.claims.CLAIMS` has one line in the registry, ``data/claims.jsonl``: what decides
its verdict (the compared table, rows and columns, the gate's control, the smallest effect of interest, the paper's
rows), never its prose. ``dml-tutorial report`` writes the registry from :mod:`dml_tutorial.claims`, and
``tests/test_registry.py`` fails while the committed registry and the code differ.

The line's last change, as ``git blame`` names it, is the claim's registration. A run decides a claim *as
registered* when that commit is an ancestor of (or is) the commit the run was made from: the definition was in the
tree before the run. Otherwise the verdict is *post hoc*, and the pages say so beside the word, with the first run
it followed (:func:`status`). A change to a definition (a column, a smallest effect, a gate) registers it anew:
runs made before the change are post hoc for it.

Git is needed to compute the status, not to read it: ``dml-tutorial report`` stores it in
``data/results/registration.json`` (in the wheel with the run files), which the pages and the findings boxes read;
the test recomputes it from git and fails where it is stale.

    python -c "from dml_tutorial import registry; print(registry.status(report.load_runs()))"
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

from .chapters import REPOSITORY

#: The registry (one JSON line per claim) and the stored status, relative to the repository.
REGISTRY = Path("data") / "claims.jsonl"
STATUS = Path("data") / "results" / "registration.json"
#: What the status says of a line that is not committed (``git blame``'s all-zero commit).
UNCOMMITTED = "0" * 40


def definition(chapter: str, claim) -> dict:
    """The fields of ``claim`` that decide its verdict, as one registry entry (its ``why`` is prose, left out)."""
    fields = ("table", "base", "row", "column", "control", "base_column", "gate", "gated", "smallest_effect",
              "paper_row", "paper_base")
    out = {"chapter": chapter, "claim": claim.text}
    out.update({f: _plain(getattr(claim, f)) for f in fields})
    return out


def _plain(value):
    """A claim's field as the registry writes it: a tuple as a list, a declared table by its title (as registered
    before tables had ids, so that no registered line changed)."""
    from .tables import Table

    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value.title if isinstance(value, Table) else value


def lines(claims_by_chapter: dict | None = None) -> list[str]:
    """The registry's lines, chapter by chapter in the registry's order (a stable order keeps blame exact)."""
    from .claims import CLAIMS

    listed = CLAIMS if claims_by_chapter is None else claims_by_chapter
    return [json.dumps(definition(chapter, c), ensure_ascii=False) for chapter, cs in listed.items() for c in cs]


def write(root: Path = REPOSITORY) -> Path:
    """Write the registry from :mod:`dml_tutorial.claims`; returns its path."""
    path = Path(root) / REGISTRY
    path.write_text("\n".join(lines()) + "\n")
    return path


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check)


def registered(root: Path = REPOSITORY) -> dict:
    """``{(chapter, claim text): (commit, date)}`` from ``git blame`` of the registry: the commit that last changed
    each line (:data:`UNCOMMITTED` for a line not committed yet, with no date)."""
    root = Path(root)
    if _git(root, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise RuntimeError(f"{root} is not a git clone: the registration of claims is read from git history")
    if not _git(root, "ls-files", "--", str(REGISTRY)).stdout.strip():  # never committed: nothing registered
        text = (root / REGISTRY).read_text() if (root / REGISTRY).exists() else ""
        return {(e["chapter"], e["claim"]): (UNCOMMITTED, None) for e in map(json.loads, filter(None, text.split("\n")))}
    out = _git(root, "blame", "--porcelain", "--", str(REGISTRY)).stdout.splitlines()
    found, dates, commit = {}, {}, None
    for line in out:
        head = line.split(" ")
        if len(head[0]) == 40 and all(ch in "0123456789abcdef" for ch in head[0]):
            commit = head[0]
        elif line.startswith("committer-time "):
            dates[commit] = int(line.split()[1])
        elif line.startswith("\t"):
            entry = json.loads(line[1:])
            found[(entry["chapter"], entry["claim"])] = commit
    return {key: (c, dates.get(c) if c != UNCOMMITTED else None) for key, c in found.items()}


@cache
def is_ancestor(first: str, then: str, root: Path = REPOSITORY) -> bool:
    """Whether commit ``first`` is ``then`` or one of its ancestors (``False`` where either is unknown here)."""
    if first == UNCOMMITTED:
        return False
    return _git(Path(root), "merge-base", "--is-ancestor", first, then, check=False).returncode == 0


def status(runs: list[dict], root: Path = REPOSITORY) -> dict:
    """For each claim and each profile whose runs record its table: ``{"chapter/profile/claim": {"registered":
    commit, "runs": [run commits, oldest first], "post hoc": bool, "after": the first run commit the registration
    did not precede, or None}}``. A run's commit is read without its ``-dirty`` mark: what matters is whether the
    definition was committed before the tree the run started from."""
    from .claims import CLAIMS
    from .tables import key

    reg = registered(root)
    out = {}
    for chapter, listed in CLAIMS.items():
        for claim in listed:
            commit = reg.get((chapter, claim.text), (UNCOMMITTED, None))[0]
            by_profile = {}
            for run in sorted(runs, key=lambda r: r["date"]):
                if run.get("chapter") == chapter and any(key(t) == claim.table.id for t in run["tables"]):
                    made = by_profile.setdefault(run.get("profile"), [])
                    if (c := run["commit"].removesuffix("-dirty")) not in made:
                        made.append(c)
            for profile, made in by_profile.items():
                before = [c for c in made if not is_ancestor(commit, c, Path(root))]
                out[f"{chapter}/{profile}/{claim.text}"] = {"registered": commit, "runs": made,
                                                           "post hoc": bool(before),
                                                           "after": before[0] if before else None}
    return out


def history(root: Path = REPOSITORY) -> dict:
    """``{(chapter, claim text): [(short commit, date, "added" | "changed" | "removed")]}``, oldest first: each
    commit that added, changed or removed the claim's registry entry, read from every committed version of the
    registry."""
    log = _git(Path(root), "log", "--reverse", "--format=%H %cs", "--", str(REGISTRY)).stdout.splitlines()
    seen, out = {}, {}
    for line in log:
        commit, date = line.split(" ", 1)
        text = _git(Path(root), "show", f"{commit}:{REGISTRY.as_posix()}", check=False).stdout
        now = {(e["chapter"], e["claim"]): e for e in map(json.loads, filter(None, text.splitlines()))}
        for key in now.keys() | seen.keys():
            what = ("added" if key not in seen else "removed" if key not in now else
                    "changed" if now[key] != seen[key] else None)
            if what:
                out.setdefault(key, []).append((commit[:7], date, what))
        seen = now
    return out


def compute(runs: list[dict], root: Path = REPOSITORY) -> dict:
    """What is stored: ``{"runs": status(runs), "history": {"chapter/claim": [[commit, date, what], ...]}}``."""
    return {"runs": status(runs, root),
            "history": {f"{c}/{t}": [list(e) for e in events] for (c, t), events in history(root).items()}}


def write_status(runs: list[dict], root: Path = REPOSITORY, path: Path | None = None) -> Path:
    """Store :func:`compute` for ``runs`` (the committed run files) where the pages and the wheel read it."""
    path = Path(root) / STATUS if path is None else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(compute(runs, root), indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return path


def stored(path: Path | None = None) -> dict:
    """The stored :func:`compute` (:data:`STATUS`, from the wheel where installed); empty where none is stored."""
    from .chapters import results_folder

    path = results_folder() / STATUS.name if path is None else Path(path)
    return json.loads(path.read_text()) if path.exists() else {"runs": {}, "history": {}}


def mark(entry: dict | None) -> str:
    """What a cell adds beside its word: ``", post hoc after e0f87c4"`` for a post hoc verdict, else ``""``."""
    return f", post hoc after {entry['after'][:7]}" if entry and entry.get("post hoc") else ""


def annotate(frame, chapter: str, profile: str | None, registration: dict | None):
    """``frame`` (:func:`dml_tutorial.claims.assess`) with a ``registration`` column: :func:`mark` for each row
    with a word, from ``registration`` (:func:`status` or :func:`stored`); ``None`` stays ``None``."""
    if frame is None:
        return None
    from .evidence import WORDS

    entries = (registration or {}).get("runs", {})
    return frame.assign(registration=[mark(entries.get(f"{chapter}/{profile}/{claim}")) if word in WORDS else ""
                                      for claim, word in zip(frame["claim"], frame["verdict"])])


def page(registration: dict) -> str:
    """The claims registry as a page: per chapter, each claim with its smallest effect, the commits that added or
    changed its definition, and each scale's runs, as registered or post hoc."""
    from .claims import CLAIMS, NAMES
    from .labels import label_tex

    lines = ["# The claims and their registration", "",
             "<!-- generated by `dml-tutorial report` from data/claims.jsonl and git: do not edit -->", "",
             ("Each claim's definition (compared rows and columns, gate, smallest effect of interest) is a line of "
              "`data/claims.jsonl`, written from `dml_tutorial/claims.py`. A verdict is printed plainly only where "
              "that line was committed before the commit each deciding run was made from (git ancestry, "
              "`dml_tutorial/registry.py`); elsewhere the verdict table adds *post hoc* and the first run it "
              "followed. The registry began after every run recorded so far, so every word on the first test beds "
              "is post hoc: the referee's audit that asked for it found claims defined, or gate columns moved, "
              "minutes after the runs that decided them. The next test bed starts from a committed registry."), ""]
    runs, history = registration.get("runs", {}), registration.get("history", {})
    for chapter, listed in CLAIMS.items():
        lines += [f"## {NAMES.get(chapter, chapter)}", "", "| claim | smallest effect | definition | runs |",
                  "|---|---|---|---|"]
        for claim in listed:
            events = "; ".join(f"{what} {c} ({d})" for c, d, what in history.get(f"{chapter}/{claim.text}", []))
            made = [f"{profile}: " + ", ".join(c[:7] for c in e["runs"]) +
                    (f" (post hoc after {e['after'][:7]})" if e["post hoc"] else " (registered before)")
                    for key, e in runs.items() for c_, profile, text in [key.split("/", 2)]
                    if c_ == chapter and text == claim.text]
            lines.append(f"| {label_tex(claim.text)} | {claim.smallest_effect:g} | {events or 'not committed yet'} | "
                         f"{'; '.join(made) or 'none yet'} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
