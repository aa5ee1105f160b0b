"""A sweep point's finished trainings carried to another machine in one file, its *pack*.

A sweep point keeps each training it finishes in its run cache (``dml_tutorial.cli.point_runs``), and a resumed
point loads them instead of training them again. That cache lives on the machine that runs the sweep; where the
machine does not outlive the sitting (a cloud VM that is given back, a Colab runtime, a session's machine), a point
longer than a sitting would start from nothing every time. ``dml-tutorial sweep --pack`` writes each begun point's
finished trainings into ``<results>/<chapter>/<point>.runs.tar.gz``, beside the sweep's run files, where
``--commit`` commits it; the sweep unpacks it into the point's cache where it resumes the point, on any machine
(``--unpack`` unpacks without running, for a sweep run by an older checkout), and removes it with the point's run
file's commit.

A pack holds finished results only, and of those the ones worth their bytes. It leaves out a training in progress
(its ``.partial.pt``, at most one a point), a search trial's kept last state (``.state.pt``, 1.3 MB a trial on test
bed II, kept for a longer trial of the same training to go on from: a longer trial whose shorter one's state was
not carried trains from its first epoch to the same result, ``experiment._go_on_from``), and a result larger than
:data:`SMALL` that holds more than :data:`BYTES_PER_SECOND` bytes for each second its training took (its
``metrics["seconds"]``): cheaper to train again than to keep in the repository's history. A search's trial travels
without its embeddings (:func:`carried`), which a resumed search never reads: it reads the trial's curve. The
bench's trial on test bed II took 20-40 s and weighs 0.8 MB in the cache (the embeddings of its 3,200 validation
images), 4 KB in a pack; a grid run of Table 2 of EPS, as large and as quick, is trained again. A cached result is
loaded only under the settings, seed and package version that made it (``experiment._cached``), so a pack made
from another commit adds nothing wrong: its files are simply not read.

A point that fine-tunes a pretrained start carries its start too (``pretrained/<start>.pt`` and its record, 0.4 MB
for test bed II's): each machine builds its own start, and another CPU family rounds differently, so without it the
rest of the point would train from other weights than its carried trainings. Where the machine that unpacks has
already built a different start of that name, nothing is unpacked and the error says what to remove.
"""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path, PurePosixPath

#: A pack's name after its point's: ``glyphs2_seed-5.runs.tar.gz`` beside ``glyphs2_seed-5.json``.
SUFFIX = ".runs.tar.gz"
#: The cache files a pack leaves out (see the module's docstring).
UNFINISHED = (".partial.pt", ".state.pt")
#: Where a pack keeps the point's pretrained start: as under the data root (``dml_tutorial.pretrain.FOLDER``).
START = "pretrained"
#: A result this small always travels; a larger one only where it holds at most :data:`BYTES_PER_SECOND` bytes for
#: each second of its training.
SMALL = 64 * 1024
BYTES_PER_SECOND = 10_000
#: What a search's trial travels without (:func:`carried`): its embeddings and predictions. The search reads only
#: the trial's curve, its history (``dml_tutorial.search._curve``).
UNREAD_BY_A_SEARCH = ("test_embeddings", "train_embeddings", "test_predictions")
#: A pack's budget: below the repository's 5 MiB limit for a tracked file; the results that bought the most seconds
#: of training per byte go first.
MAX_BYTES = 4 * 1024 * 1024


def pack_path(results: Path, chapter: str, rid: str) -> Path:
    """Where the pack of the sweep point ``rid`` of ``chapter`` goes: beside its run file in ``results``."""
    return Path(results) / chapter / f"{rid}{SUFFIX}"


def _finished(name: str) -> bool:
    return name.endswith(".pt") and not name.endswith(UNFINISHED)


def finished(cache: Path) -> list[Path]:
    """The finished trainings a run cache holds (none where it does not exist)."""
    cache = Path(cache)
    return sorted(f for f in cache.rglob("*.pt") if f.is_file() and _finished(f.name)) if cache.is_dir() else []


def search_trial(state: dict) -> bool:
    """Whether a cached result (:func:`dml_tutorial.experiment.cached_result`) is a search's trial: its spec's
    options name the ``"curve"`` its search reads (:func:`dml_tutorial.search.trial_spec`)."""
    spec = (state.get("settings") or {}).get("spec")
    return isinstance(spec, dict) and "curve" in (spec.get("options") or {})


def carried(file: Path) -> tuple[bytes | None, float | None]:
    """What a pack keeps of a finished result, and the seconds its training took (``None`` for a file that is not
    a cached result): the file as it is (``None``), but for a search's trial (:func:`search_trial`) the result
    without :data:`UNREAD_BY_A_SEARCH` (the bytes ``torch.save`` writes), which a resumed search never reads."""
    import torch

    from .experiment import cached_result

    state = cached_result(file)
    if state is None:
        return None, None
    seconds = float(state["metrics"]["seconds"])
    if not search_trial(state):
        return None, seconds
    buffer = io.BytesIO()
    torch.save({**state, **{k: None for k in UNREAD_BY_A_SEARCH if k in state}}, buffer)
    return buffer.getvalue(), seconds


def worth_carrying(file: Path, bytes_per_second: float = BYTES_PER_SECOND) -> bool:
    """Whether a finished result travels in a pack: small (:data:`SMALL`), or at most ``bytes_per_second`` bytes
    for each second its training took (a file that records no seconds, e.g. one written by other code, counts as
    none), as a pack keeps it (:func:`carried`)."""
    data, seconds = carried(file)
    return _worth(_size(file, data), seconds, bytes_per_second)


def _size(file: Path, data: bytes | None) -> int:
    return Path(file).stat().st_size if data is None else len(data)


def _worth(size: int, seconds: float | None, bytes_per_second: float) -> bool:
    return size <= SMALL or size <= (seconds or 0.0) * bytes_per_second


def pack(cache: Path, to: Path, start: tuple[Path, Path] | None = None,
         bytes_per_second: float = BYTES_PER_SECOND) -> tuple[int, int]:
    """Write the pack ``to`` of the finished trainings ``cache`` holds that are worth carrying (paths relative to
    it; :func:`worth_carrying` with ``bytes_per_second``; a file half-written is never among them: the cache writes
    each result to a temporary name first), and of the pretrained ``start`` its trainings began from (its weights
    and its record: ``dml_tutorial.pretrain.start_paths``), where given. Replaces an older pack whole, never leaves
    half of one; within :data:`MAX_BYTES` (sizes before compression, the start's first), the results with the
    most training seconds per byte first. Returns how many trainings it holds and how many it left out."""
    every, to = finished(cache), Path(to)
    kept = {f: carried(f) for f in every}
    size = {f: _size(f, data) for f, (data, _) in kept.items()}
    worth = sorted((f for f in every if _worth(size[f], kept[f][1], bytes_per_second)),
                   key=lambda f: -(kept[f][1] or 0.0) / max(size[f], 1))
    files, used = [], sum(Path(f).stat().st_size for f in start or ())
    for file in worth:  # within MAX_BYTES, before compression
        if used + size[file] <= MAX_BYTES:
            files.append(file)
            used += size[file]
    files.sort()
    to.parent.mkdir(parents=True, exist_ok=True)
    tmp = to.with_name(to.name + ".tmp")
    members = [(f, f.relative_to(cache).as_posix()) for f in files]
    members += [(f, f"{START}/{Path(f).name}") for f in start or ()]
    # the same files give the same bytes (no time or name in the gzip header, no owner in the tar), so that git
    # keeps a pack made again with no new training once
    with (open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
          tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar):
        for file, name in members:
            info = tar.gettarinfo(file, arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            data = kept[file][0] if file in kept else None  # a search's trial as carried, else the file
            data = Path(file).read_bytes() if data is None else data
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(to)
    return len(files), len(every) - len(files)


def count(pack_file: Path) -> int:
    """How many finished trainings the pack holds."""
    with tarfile.open(pack_file, "r:gz") as tar:
        return sum(m.isfile() and _finished(m.name) and not m.name.startswith(f"{START}/") for m in tar.getmembers())


def _target(member: tarfile.TarInfo, cache: Path, data_root: Path, pack_file: Path) -> Path:
    """Where a pack's member goes: a training into the cache, the start under the data root; a ``ValueError`` for
    anything else (a link, a path out of its folder, a file that is neither)."""
    name = PurePosixPath(member.name)
    is_start = len(name.parts) == 2 and name.parts[0] == START and name.suffix in (".pt", ".json")
    if not member.isfile() or name.is_absolute() or ".." in name.parts or not (is_start or _finished(name.name)):
        raise ValueError(f"{pack_file}: {member.name!r} is neither a finished training of a run cache nor a "
                         "pretrained start; nothing was unpacked")
    return Path(data_root).joinpath(*name.parts) if is_start else Path(cache).joinpath(*name.parts)


def unpack(pack_file: Path, cache: Path, data_root: Path = Path("data")) -> int:
    """Add to ``cache`` each training the pack holds that the cache lacks (one already there stays: the same file
    name is the same training under the same settings), and its pretrained start under ``data_root`` (the data
    root of the runs that will load it) where that lacks it. Every member must be a plain file in its place, and a
    start already under ``data_root`` must be the pack's own (the SHA-256 its record names), else nothing is
    written (``ValueError``). Returns how many trainings it added."""
    with tarfile.open(pack_file, "r:gz") as tar:
        members = [(member, _target(member, cache, data_root, pack_file)) for member in tar.getmembers()]
        for member, target in members:
            if member.name.endswith(".json") and target.exists():
                ours, theirs = json.loads(tar.extractfile(member).read()), json.loads(target.read_text())
                if ours.get("sha256") != theirs.get("sha256"):
                    raise ValueError(
                        f"{pack_file}: its trainings began from another build of the start {target.stem!r} "
                        f"(SHA-256 {str(ours.get('sha256'))[:12]}) than the one in {target.parent} "
                        f"({str(theirs.get('sha256'))[:12]}): remove {target.with_suffix('.pt')} and {target} to "
                        "go on from the pack's, or remove the pack to run the point afresh; nothing was unpacked")
        added = 0
        for member, target in members:
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(tar.extractfile(member).read())
            tmp.replace(target)
            added += _finished(member.name) and not member.name.startswith(f"{START}/")
    return added
