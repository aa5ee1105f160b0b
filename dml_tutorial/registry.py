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
#: The registered protocols (:mod:`dml_tutorial.protocol`: one JSON line per chapter and profile).
PROTOCOLS = Path("data") / "protocols.jsonl"
#: What was taken out of the evidence, and why (one JSON line each, never edited): run files a re-run replaced
#: (``dml-tutorial land --why``: ``{"kind": "runs", "chapter", "profile", "runs": [[file, commit]], "date",
#: "why"}``) and claims removed from the registry (``{"kind": "claim", "chapter", "claim", "date", "why"}``). The
#: registry page lists them, and ``tests/test_registry.py`` fails for a removed claim without its line.
RETIRED = Path("data") / "retired.jsonl"
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
    return {(e["chapter"], e["claim"]): (c, date) for e, c, date in _blame(root, REGISTRY)}


def _blame(root: Path, path: Path) -> list[tuple[dict, str, int | None]]:
    """``[(entry, commit, date)]``: each JSON line of ``path`` with the commit that last changed it (``git blame``)
    and that commit's date (``None`` for a line not committed yet)."""
    out = _git(root, "blame", "--porcelain", "--", str(path)).stdout.splitlines()
    found, dates, commit = [], {}, None
    for line in out:
        head = line.split(" ")
        if len(head[0]) == 40 and all(ch in "0123456789abcdef" for ch in head[0]):
            commit = head[0]
        elif line.startswith("committer-time "):
            dates[commit] = int(line.split()[1])
        elif line.startswith("\t"):
            found.append((json.loads(line[1:]), commit))
    return [(e, c, dates.get(c) if c != UNCOMMITTED else None) for e, c in found]


def registered_protocols(root: Path = REPOSITORY) -> dict:
    """``{(chapter, profile): (protocol hash, commit)}`` from ``git blame`` of the registered protocols
    (:data:`PROTOCOLS`); empty where none was ever committed."""
    if not _git(Path(root), "ls-files", "--", str(PROTOCOLS)).stdout.strip():
        return {}
    return {(e["chapter"], e["profile"]): (e["sha256"], c) for e, c, _ in _blame(Path(root), PROTOCOLS)}


def protocol_history(root: Path = REPOSITORY) -> dict:
    """``{(chapter, profile): [(protocol hash, words hash or None, commit)]}``, oldest first: each protocol ever
    committed to :data:`PROTOCOLS` with the first commit that held it (its registration) and the hash of its part
    that decides words (:func:`dml_tutorial.protocol.deciding`; from any committed line of that protocol that
    records it, ``None`` where none does)."""
    log = _git(Path(root), "log", "--reverse", "--format=%H", "--", str(PROTOCOLS)).stdout.split()
    out, words = {}, {}
    for commit in log:
        text = _git(Path(root), "show", f"{commit}:{PROTOCOLS.as_posix()}", check=False).stdout
        for e in map(json.loads, filter(None, text.splitlines())):
            key = (e["chapter"], e["profile"])
            if e["sha256"] not in [sha for sha, _ in out.get(key, [])]:
                out.setdefault(key, []).append((e["sha256"], commit))
            words[key, e["sha256"]] = words.get((key, e["sha256"])) or e.get("words")
    return {key: [(sha, words[key, sha], commit) for sha, commit in found] for key, found in out.items()}


@cache
def is_ancestor(first: str, then: str, root: Path = REPOSITORY) -> bool:
    """Whether commit ``first`` is ``then`` or one of its ancestors (``False`` where either is unknown here)."""
    if first == UNCOMMITTED:
        return False
    return _git(Path(root), "merge-base", "--is-ancestor", first, then, check=False).returncode == 0


#: Why a cell is post hoc (:func:`status`): its claim's definition, or its chapter's protocol.
LATE_DEFINITION = "the claim was defined after the run"
CHANGED_PROTOCOL = ("the run's protocol was not registered before it, or the claims or rule that decide its words "
                    "changed since")


def status(runs: list[dict], root: Path = REPOSITORY) -> dict:
    """For each claim and each profile whose runs record its table: ``{"chapter/profile/claim": {"registered":
    commit, "runs": [run commits, oldest first], "post hoc": bool, "after": the first run commit that makes it post
    hoc, or None, "why": why (None where it is not)}}``. A run is late for a claim where the claim's definition was
    not committed before the commit the run was made from (read without its ``-dirty`` mark), or, for a run that
    records its protocol's hash (:mod:`dml_tutorial.protocol`), where that hash was not registered for its
    chapter and profile in a commit before it, or where the part of the protocol that decides words (the family
    of claims and the rule, :func:`dml_tutorial.protocol.deciding`) is no longer the registered one's
    (:data:`CHANGED_PROTOCOL`). A later protocol, registered for the runs that will replace these, leaves them
    registered while it decides words the same way. A run made before run files recorded their protocol is judged
    by its definition alone."""
    from .claims import CLAIMS
    from .tables import key

    reg, protocols, history_ = registered(root), registered_protocols(root), protocol_history(root)
    out = {}
    for chapter, listed in CLAIMS.items():
        for claim in listed:
            commit = reg.get((chapter, claim.text), (UNCOMMITTED, None))[0]
            by_profile = {}
            for run in sorted(runs, key=lambda r: r["date"]):
                if run.get("chapter") == chapter and any(key(t) == claim.table.id for t in run["tables"]):
                    made = by_profile.setdefault(run.get("profile"), {})
                    made.setdefault(run["commit"].removesuffix("-dirty"), []).append(run.get("protocol"))
            for profile, made in by_profile.items():
                now = protocols.get((chapter, profile))
                late = {c: _late(commit, c, hashes, history_.get((chapter, profile), []), now and now[0], Path(root))
                        for c, hashes in made.items()}
                after = next((c for c, why in late.items() if why), None)
                out[f"{chapter}/{profile}/{claim.text}"] = {"registered": commit, "runs": list(made),
                                                           "post hoc": after is not None, "after": after,
                                                           "why": late[after] if after else None}
    return out


def _late(definition: str, run: str, hashes: list, registrations: list, current: str | None,
          root: Path) -> str | None:
    """Why runs made from commit ``run`` (recording the protocol ``hashes``) are late for a claim whose definition
    was committed in ``definition``, given the chapter's ``registrations`` (:func:`protocol_history`) and the
    protocol registered now (``current``, its hash); ``None`` where they are not."""
    if not is_ancestor(definition, run, root):
        return LATE_DEFINITION
    recorded = [h for h in hashes if h is not None]
    if not recorded:
        return None
    words = {sha: w for sha, w, _ in registrations}
    now = words.get(current)

    def registered_for(h):  # registered before the run, and deciding words as the protocol registered now does
        same_words = h == current or (now is not None and words.get(h) == now)
        return same_words and any(sha == h and is_ancestor(c, run, root) for sha, _, c in registrations)

    return None if all(registered_for(h) for h in recorded) else CHANGED_PROTOCOL


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
    """What a cell adds beside its word: ``", post hoc"`` for a post hoc verdict, else ``""``. The run it
    followed, a commit, is named once, on the registry page (:func:`page`), not in every cell that reads it."""
    return ", post hoc" if entry and entry.get("post hoc") else ""


def annotate(frame, chapter: str, profile: str | None, registration: dict | None):
    """``frame`` (:func:`dml_tutorial.claims.assess`) with a ``registration`` column: :func:`mark` for each row
    with a word, from ``registration`` (:func:`status` or :func:`stored`); ``None`` stays ``None``."""
    if frame is None:
        return None
    from .evidence import WORDS

    entries = (registration or {}).get("runs", {})
    return frame.assign(registration=[mark(entries.get(f"{chapter}/{profile}/{claim}")) if word in WORDS else ""
                                      for claim, word in zip(frame["claim"], frame["verdict"])])


def retire(entry: dict, path: Path | None = None) -> Path:
    """Append ``entry`` (:data:`RETIRED`'s form, its ``why`` said) to the retired list ``path`` (default the
    course's :data:`RETIRED`); returns its path."""
    if not str(entry.get("why", "")).strip() or entry.get("kind") not in ("runs", "claim"):
        raise ValueError(f"a retired entry is of kind 'runs' or 'claim' and says why, got {entry}")
    path = REPOSITORY / RETIRED if path is None else Path(path)
    with path.open("a") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return path


def retired(root: Path = REPOSITORY) -> list[dict]:
    """The entries of :data:`RETIRED`, oldest first (none where there is no file)."""
    path = Path(root) / RETIRED
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _retired_lines(entries: list[dict]) -> list[str]:
    """The registry page's section of what was replaced or removed, and why."""
    if not entries:
        return []
    lines = ["## Replaced runs and removed claims", "", "| when | what | why |", "|---|---|---|"]
    for e in entries:
        what = (f"{e['chapter']} / {e['profile']}: {len(e['runs'])} run files made from "
                f"{', '.join(sorted({c[:7] for _, c in e['runs']}))}" if e["kind"] == "runs"
                else f"{e['chapter']}: the claim *{e['claim']}*")
        lines.append(f"| {e.get('date', '')} | {what} | {e['why']} |")
    return lines + [""]


def _protocol_lines(root: Path) -> list[str]:
    """The registry page's list of the registered protocols (:mod:`dml_tutorial.protocol`)."""
    try:
        found, history_ = registered_protocols(root), protocol_history(root)
    except (RuntimeError, OSError, subprocess.CalledProcessError):  # no git clone here (an installed wheel)
        found, history_ = {}, {}
    if not found:
        return [f"No protocol is registered in this copy ({PROTOCOLS} under git).", ""]
    lines = ["## Protocols", "", ("Each chapter's protocol on a test bed that decides words (its settings, every "
             "run of its grid with each loss parameter, its seeds, its family of claims and the decision rule: "
             "`dml_tutorial/protocol.py`), by hash, each with the commit that registered it; the last of a chapter "
             "is the one its next runs are made under. A run file records the hash it ran under; its cells are post "
             "hoc where that protocol was not registered before it, or where the part that decides words (the "
             "claims and the rule, its own hash here) is no longer the current protocol's."), "",
             "| chapter | profile | protocol | deciding words | registered | now |", "|---|---|---|---|---|---|"]
    for (chapter, profile), (current, _) in found.items():
        for sha, words, commit in history_.get((chapter, profile), []):
            lines.append(f"| {chapter} | {profile} | `{sha[:12]}` | {f'`{words[:12]}`' if words else 'not recorded'} "
                         f"| {commit[:7]} | {'current' if sha == current else ''} |")
    return lines + [""]


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
              "`dml_tutorial/registry.py`); elsewhere the verdict table adds *post hoc*, and this page names the first "
              "run it followed. The registry began after every run recorded so far, so every word on the first test beds "
              "is post hoc: the referee's audit that asked for it found claims defined, or gate columns moved, "
              "minutes after the runs that decided them. The next test bed starts from a committed registry."), ""]
    runs, history = registration.get("runs", {}), registration.get("history", {})
    for chapter, listed in CLAIMS.items():
        lines += [f"## {NAMES.get(chapter, chapter)}", "", "| claim | smallest effect | definition | runs |",
                  "|---|---|---|---|"]
        for claim in listed:
            events = "; ".join(f"{what} {c} ({d})" for c, d, what in history.get(f"{chapter}/{claim.text}", []))
            made = [f"{profile}: " + ", ".join(c[:7] for c in e["runs"]) +
                    (f" (post hoc after {e['after'][:7]}" + (f": {e['why']})" if e.get("why") == CHANGED_PROTOCOL
                                                              else ")") if e["post hoc"] else " (registered before)")
                    for key, e in runs.items() for c_, profile, text in [key.split("/", 2)]
                    if c_ == chapter and text == claim.text]
            lines.append(f"| {label_tex(claim.text)} | {claim.smallest_effect:g} | {events or 'not committed yet'} | "
                         f"{'; '.join(made) or 'none yet'} |")
        lines.append("")
    lines += _protocol_lines(REPOSITORY) + _retired_lines(retired(REPOSITORY))
    return "\n".join(lines).rstrip() + "\n"
