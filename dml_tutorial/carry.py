"""A sweep point's finished trainings carried to another machine in one file, its *pack*.

A sweep point keeps each training it finishes in its run cache (``dml_tutorial.cli.point_runs``), and a resumed
point loads them instead of training them again. That cache lives on the machine that runs the sweep; where the
machine does not outlive the sitting (a cloud VM that is given back, a Colab runtime, a session's machine), a point
longer than a sitting would start from nothing every time. ``dml-tutorial sweep --pack`` writes each begun point's
finished trainings into ``<results>/<chapter>/<point>.runs.tar.gz``, beside the sweep's run files, where
``--commit`` commits it; the sweep unpacks it into the point's cache where it resumes the point, on any machine
(``--unpack`` unpacks without running, for a sweep run by an older checkout), and removes it with the point's run
file's commit.

A pack holds finished results only. It leaves out a training in progress (its ``.partial.pt``, at most one a
point) and a search trial's kept last state (``.state.pt``, 0.6 MB a trial on test bed II, kept for a longer trial
of the same training to go on from): a longer trial whose shorter one's state was not carried trains from its
first epoch to the same result (``experiment._go_on_from``). A cached result is loaded only under the settings,
seed and package version that made it (``experiment._cached``), so a pack made from another commit adds nothing
wrong: its files are simply not read.
"""
from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

#: A pack's name after its point's: ``glyphs2_seed-5.runs.tar.gz`` beside ``glyphs2_seed-5.json``.
SUFFIX = ".runs.tar.gz"
#: The cache files a pack leaves out (see the module's docstring).
UNFINISHED = (".partial.pt", ".state.pt")


def pack_path(results: Path, chapter: str, rid: str) -> Path:
    """Where the pack of the sweep point ``rid`` of ``chapter`` goes: beside its run file in ``results``."""
    return Path(results) / chapter / f"{rid}{SUFFIX}"


def _finished(name: str) -> bool:
    return name.endswith(".pt") and not name.endswith(UNFINISHED)


def finished(cache: Path) -> list[Path]:
    """The finished trainings a run cache holds (none where it does not exist)."""
    cache = Path(cache)
    return sorted(f for f in cache.rglob("*.pt") if f.is_file() and _finished(f.name)) if cache.is_dir() else []


def pack(cache: Path, to: Path) -> int:
    """Write the pack ``to`` of the finished trainings ``cache`` holds (paths relative to it; a file half-written
    is never among them: the cache writes each result to a temporary name first). Replaces an older pack whole,
    never leaves half of one. Returns how many trainings it holds."""
    files, to = finished(cache), Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    tmp = to.with_name(to.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for file in files:
            tar.add(file, arcname=file.relative_to(cache).as_posix(), recursive=False)
    tmp.replace(to)
    return len(files)


def count(pack_file: Path) -> int:
    """How many finished trainings the pack holds."""
    with tarfile.open(pack_file, "r:gz") as tar:
        return sum(m.isfile() and _finished(m.name) for m in tar.getmembers())


def unpack(pack_file: Path, cache: Path) -> int:
    """Add to ``cache`` each training the pack holds that the cache lacks (one already there stays: the same file
    name is the same training under the same settings). Every member must be a plain file under the cache, else
    nothing is written (``ValueError``). Returns how many it added."""
    cache = Path(cache)
    with tarfile.open(pack_file, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            name = PurePosixPath(member.name)
            if not member.isfile() or name.is_absolute() or ".." in name.parts or not _finished(name.name):
                raise ValueError(f"{pack_file}: {member.name!r} is not a finished training of a run cache; "
                                 "nothing was unpacked")
        added = 0
        for member in members:
            target = cache.joinpath(*PurePosixPath(member.name).parts)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(tar.extractfile(member).read())
            tmp.replace(target)
            added += 1
    return added
